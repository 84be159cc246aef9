package api

// Job steps created by srun inside an allocation (docs/steps.md). horad
// grants and records a step; srun starts its tasks itself, as the calling
// user, on the allocation's local nodes, and reports how they ended.
const (
	PathStepCreate  = "/v1/steps/create"  // POST StepRequest → StepGrant
	PathStepStarted = "/v1/steps/started" // POST StepStarted → StepEndResponse
	PathStepEnd     = "/v1/steps/end"     // POST StepEnd → StepEndResponse
	PathStepRun     = "/v1/steps/run"     // POST StepRun → a stream of StepFrame (SSH nodes)
	PathStepInput   = "/v1/steps/input"   // POST StepInput → StepEndResponse (SSH nodes)
	PathStepSignal  = "/v1/steps/signal"  // POST StepSignal → StepEndResponse (SSH nodes)
	PathAllocDone   = "/v1/jobs/complete" // POST AllocDone → CancelResponse
	PathAllocEnv    = "/v1/jobs/env"      // GET ?id= → AllocEnv
)

// AllocEnv is the environment salloc gives its command and srun gives the
// tasks of an allocation it created: the SLURM_* variables of the job.
type AllocEnv struct {
	Env Environ `json:"env"`
}

// Error codes of step creation.
const (
	// CodeStepBusy: the step fits the allocation but not now (other steps
	// hold its CPUs); srun retries ("Requested nodes are busy").
	CodeStepBusy = "NodesBusy"
	// CodeConfiguring: the allocation is being set up; srun retries
	// silently (Slurm's ESLURM_PROLOG_RUNNING).
	CodeConfiguring = "Configuring"
	// CodeTooManyCPUs: "More processors requested than permitted".
	CodeTooManyCPUs = "TooManyProcessors"
	// CodePending: the job has no allocation yet.
	CodePending = "JobPending"
)

// StepRequest asks for a step of a running job. Zero fields take Slurm's
// defaults: one node, one task per node, one CPU per task, block layout.
type StepRequest struct {
	JobID         int64    `json:"job_id"`
	Name          string   `json:"name,omitempty"` // the command's name (sacct JobName)
	Nodes         int      `json:"nodes,omitempty"`
	NTasks        int      `json:"ntasks,omitempty"`
	NTasksPerNode int      `json:"ntasks_per_node,omitempty"`
	CPUsPerTask   int      `json:"cpus_per_task,omitempty"`
	NodeList      []string `json:"nodelist,omitempty"` // -w: these nodes of the allocation
	Exclude       []string `json:"exclude,omitempty"`  // -x
	Cyclic        bool     `json:"cyclic,omitempty"`   // -m cyclic (else block)
	Exact         bool     `json:"exact,omitempty"`    // only the CPUs the tasks need
	Overlap       bool     `json:"overlap,omitempty"`  // share CPUs with other steps
	Overcommit    bool     `json:"overcommit,omitempty"`
	// TimeLimit (seconds, srun -t): horad ends the step TIMEOUT when it
	// runs longer (the job's own limit still applies).
	TimeLimit int64 `json:"time_limit,omitempty"`
	// MemMB (srun --mem inside an allocation): the step's memory per
	// node, enforced by its own memory cgroup on local nodes.
	MemMB int64 `json:"mem_mb,omitempty"`
}

// StepGrant is a created step and its task layout.
type StepGrant struct {
	JobID  int64    `json:"job_id"`
	StepID int      `json:"step_id"`
	Nodes  []string `json:"nodes"`
	// TaskNode gives, for each task id, the index in Nodes of its node.
	TaskNode []int `json:"task_node"`
	// CPUs are the CPUs of each node given to the step.
	CPUs      []int  `json:"cpus"`
	Partition string `json:"partition"`
	// Env is the job's SLURM_* environment (as AllocEnv), for tasks of
	// an srun started outside the batch script.
	Env Environ `json:"env,omitempty"`
	// Remote: the step's nodes are SSH hosts; srun does not fork the
	// tasks but asks horad to run them (PathStepRun, docs/steps.md).
	Remote bool `json:"remote,omitempty"`
	// MemGate: the step has its own memory limit; srun holds its tasks
	// before their program until StepStarted, with their pids per node,
	// has put them in the step's memory cgroup.
	MemGate bool `json:"mem_gate,omitempty"`
}

// StepRun asks horad to run the tasks of a granted remote step on its
// nodes, as the job's owner, and stream their output back.
type StepRun struct {
	JobID  int64      `json:"job_id"`
	StepID int        `json:"step_id"`
	Tasks  []StepTask `json:"tasks"`
}

// StepTask is one task of a StepRun.
type StepTask struct {
	ID      int      `json:"id"`
	Node    string   `json:"node"` // one of the grant's nodes
	Argv    []string `json:"argv"`
	Env     Environ  `json:"env"`
	WorkDir string   `json:"workdir"`
	// Stdin: the task reads what srun sends with StepInput; without it
	// the task's stdin is /dev/null.
	Stdin bool `json:"stdin,omitempty"`
	// Pty: the task runs on a pseudo-terminal of its node (srun --pty,
	// qsub -I); its stdin (Stdin set) is what is typed, and all its
	// output comes back on stream 1.
	Pty *StepPty `json:"pty,omitempty"`
}

// StepPty is the caller's terminal: its type ($TERM) and size.
type StepPty struct {
	Term string `json:"term,omitempty"`
	Rows int    `json:"rows,omitempty"`
	Cols int    `json:"cols,omitempty"`
}

// StepInput is a piece of a remote task's stdin, in order; EOF ends it.
type StepInput struct {
	JobID  int64  `json:"job_id"`
	StepID int    `json:"step_id"`
	Task   int    `json:"task"`
	Data   []byte `json:"data,omitempty"`
	EOF    bool   `json:"eof,omitempty"`
	// Resize, for a task on a pty: the caller's terminal is now this
	// size (Term unused); sent alone, without Data.
	Resize *StepPty `json:"resize,omitempty"`
}

// StepSignal forwards a signal to every task of a remote step.
type StepSignal struct {
	JobID  int64 `json:"job_id"`
	StepID int   `json:"step_id"`
	Signal int   `json:"signal"`
}

// StepFrame is one line of a StepRun's answer: output of a task (Stream 1
// stdout, 2 stderr) or its end (End: Exit or Signal; Error when horad
// could not run it at all).
type StepFrame struct {
	Task   int    `json:"t"`
	Stream int    `json:"s,omitempty"`
	Data   []byte `json:"d,omitempty"`
	End    bool   `json:"end,omitempty"`
	Exit   int    `json:"exit,omitempty"`
	Signal int    `json:"sig,omitempty"`
	Error  string `json:"err,omitempty"`
}

// StepStarted tells horad the process group holding a step's tasks, so
// that scancel JOBID.STEP can signal them.
type StepStarted struct {
	JobID  int64 `json:"job_id"`
	StepID int   `json:"step_id"`
	Pgid   int   `json:"pgid"`
	// NodePids: the tasks' pids by node, for a MemGate step.
	NodePids map[string][]int `json:"node_pids,omitempty"`
}

// StepEnd reports how a step's tasks ended: Slurm's rule already applied
// (the largest signal if any task was signalled, else the largest exit).
type StepEnd struct {
	JobID    int64 `json:"job_id"`
	StepID   int   `json:"step_id"`
	ExitCode int   `json:"exit_code"`
	Signal   int   `json:"signal"`
}

// StepEndResponse gives the step's recorded state (CANCELLED when scancel
// ended it first).
type StepEndResponse struct {
	State JobState `json:"state"`
	// OOMKills counts the tasks the kernel killed for the step's --mem
	// (its memory cgroup's oom_kill), for srun's slurmstepd line.
	OOMKills int `json:"oom_kills,omitempty"`
}

// AllocDone releases an allocation made by salloc or srun (Slurm's
// slurm_complete_job): the job ends with ExitCode.
type AllocDone struct {
	JobID    int64 `json:"job_id"`
	ExitCode int   `json:"exit_code"`
	Signal   int   `json:"signal"`
}

// StepRef names one step of a job (scancel JOBID.STEP).
type StepRef struct {
	Job  int64 `json:"job"`
	Step int   `json:"step"`
}
