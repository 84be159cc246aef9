// Package api holds the wire types of horad's socket protocol: HTTP/1.1 + JSON
// on a Unix socket, versioned paths under /v1. The client binary and the daemon
// both import it, so it must stay free of I/O and heavy dependencies.
//
// The caller's identity never travels in these types: horad takes it from the
// kernel (SO_PEERCRED) on every connection.
package api

import "strings"

// Paths of the protocol. Every path is versioned so that a newer client can
// detect an older daemon by a 404 instead of misreading a body.
const (
	PathSubmit     = "/v1/jobs/submit"  // POST SubmitRequest → SubmitResponse
	PathJobs       = "/v1/jobs"         // GET ?id=&user=&state=&partition=&name=&all=1 → JobsResponse
	PathCancel     = "/v1/jobs/cancel"  // POST CancelRequest → CancelResponse
	PathHold       = "/v1/jobs/hold"    // POST ControlRequest → CancelResponse
	PathRelease    = "/v1/jobs/release" // POST ControlRequest → CancelResponse
	PathNodes      = "/v1/nodes"        // GET → NodesResponse
	PathPartitions = "/v1/partitions"   // GET → PartitionsResponse
	PathPing       = "/v1/ping"         // GET → PingResponse
	PathUpdate     = "/v1/jobs/update"  // POST JobUpdateRequest → CancelResponse
	PathConfig     = "/v1/config"       // GET → ConfigResponse

	PathReservations      = "/v1/reservations"        // GET ?name= → ReservationsResponse
	PathReservationCreate = "/v1/reservations/create" // POST ReservationRequest → ReservationResponse
	PathReservationUpdate = "/v1/reservations/update" // POST ReservationRequest → ReservationResponse
	PathReservationDelete = "/v1/reservations/delete" // POST ReservationRequest (Name) → ReservationResponse
	PathFree              = "/v1/free"                // GET ?partition=&from=&to= → FreeResponse

	PathStats  = "/v1/stats"        // GET → StatsResponse
	PathBackup = "/v1/admin/backup" // GET → the database (application/vnd.sqlite3); root and operators only
	// PathReconfigure re-reads hora.toml, as SIGHUP does (scontrol
	// reconfigure); root and operators only.
	PathReconfigure = "/v1/admin/reconfigure" // POST → ReconfigureResponse
)

// ReconfigureResponse answers a reconfiguration that was carried out.
type ReconfigureResponse struct {
	Config string `json:"config"` // the file read
}

// StatsResponse is horad's state in numbers: `hora stats`, systemd's STATUS.
type StatsResponse struct {
	Version         string  `json:"version"`
	Pending         int     `json:"pending"`
	Running         int     `json:"running"`
	Suspended       int     `json:"suspended"`
	Nodes           int     `json:"nodes"`
	NodesDown       int     `json:"nodes_down"`
	LastPass        int64   `json:"last_pass"`         // Unix time of the last scheduling pass; 0 = none yet
	LastPassSeconds float64 `json:"last_pass_seconds"` // its duration
	LastReload      int64   `json:"last_reload"`       // Unix time; 0 = never
	Started         int64   `json:"started"`           // Unix time horad started
}

// NoLimit is the TimeLimit of a job that asked for none (Slurm's UNLIMITED,
// INFINITE, 0 or -1).
const NoLimit int64 = -1

// JobState is the Slurm long state name; Compact gives the two-letter code.
type JobState string

// Job states, spelled as Slurm 22.05 spells them (squeue %T, sacct State).
const (
	StatePending    JobState = "PENDING"
	StateRunning    JobState = "RUNNING"
	StateSuspended  JobState = "SUSPENDED"
	StateCompleting JobState = "COMPLETING"
	StateCompleted  JobState = "COMPLETED"
	StateCancelled  JobState = "CANCELLED"
	StateFailed     JobState = "FAILED"
	StateTimeout    JobState = "TIMEOUT"
	StateNodeFail   JobState = "NODE_FAIL"
	StatePreempted  JobState = "PREEMPTED"
	StateBootFail   JobState = "BOOT_FAIL"
	StateDeadline   JobState = "DEADLINE"
	StateOOM        JobState = "OUT_OF_MEMORY"
)

var compactStates = map[JobState]string{
	StatePending: "PD", StateRunning: "R", StateSuspended: "S", StateCompleting: "CG",
	StateCompleted: "CD", StateCancelled: "CA", StateFailed: "F", StateTimeout: "TO",
	StateNodeFail: "NF", StatePreempted: "PR", StateBootFail: "BF", StateDeadline: "DL",
	StateOOM: "OOM",
}

// AllStates lists every state in Slurm's order, for parsing -t/--states.
var AllStates = []JobState{StatePending, StateRunning, StateSuspended, StateCompleted,
	StateCancelled, StateFailed, StateTimeout, StateNodeFail, StatePreempted,
	StateBootFail, StateDeadline, StateOOM, StateCompleting}

// Compact returns the short state code (PD, R, CD, ...).
func (s JobState) Compact() string {
	if c, ok := compactStates[s]; ok {
		return c
	}
	return string(s)
}

// Finished reports whether the job has reached a final state.
func (s JobState) Finished() bool {
	switch s {
	case StatePending, StateRunning, StateSuspended, StateCompleting:
		return false
	}
	return true
}

// ParseState accepts a long or compact state name, case-insensitively.
func ParseState(s string) (JobState, bool) {
	u := strings.ToUpper(strings.TrimSpace(s))
	for _, st := range AllStates {
		if string(st) == u || compactStates[st] == u {
			return st, true
		}
	}
	return "", false
}

// JobSpec is what a user asks for: the parsed sbatch/qsub command line merged
// with SBATCH_* variables and #SBATCH/#PBS directives. Times are Unix seconds,
// durations seconds. Zero means "not given" unless a comment says otherwise.
type JobSpec struct {
	Name        string   `json:"name"`
	Script      string   `json:"script"`              // body of the batch script
	Command     string   `json:"command,omitempty"`   // script path as given (scontrol Command=)
	Args        []string `json:"args,omitempty"`      // script arguments
	WorkDir     string   `json:"work_dir"`            // absolute
	Stdout      string   `json:"stdout,omitempty"`    // pattern (%j ...), "" = slurm-%j.out
	Stderr      string   `json:"stderr,omitempty"`    // pattern, "" = with stdout
	Stdin       string   `json:"stdin,omitempty"`     // "" = /dev/null
	Env         Environ  `json:"env,omitempty"`       // KEY=VALUE exported to the job
	Export      string   `json:"export,omitempty"`    // --export as given (ALL, NONE, list)
	Partition   string   `json:"partition,omitempty"` // "" = default partition
	Nodes       int      `json:"nodes,omitempty"`     // -N minimum; 0 = 1
	NodesMax    int      `json:"nodes_max,omitempty"` // -N min-max upper bound
	NTasks      int      `json:"ntasks,omitempty"`    // -n
	CPUsPerTask int      `json:"cpus_per_task,omitempty"`
	MemMB       int64    `json:"mem_mb,omitempty"`
	TimeLimit   int64    `json:"time_limit,omitempty"` // seconds; 0 = partition default; NoLimit
	TimeMin     int64    `json:"time_min,omitempty"`
	Begin       int64    `json:"begin,omitempty"`    // earliest start, Unix s
	Deadline    int64    `json:"deadline,omitempty"` // Unix s
	Hold        bool     `json:"hold,omitempty"`
	Requeue     bool     `json:"requeue,omitempty"`
	NoRequeue   bool     `json:"no_requeue,omitempty"` // --no-requeue given; neither flag = the cluster's job_requeue
	Load        float64  `json:"load,omitempty"`       // divisible load σ in data units; 0 = not divisible
	Input       string   `json:"input,omitempty"`      // file whose bytes are the load
	// A periodic real-time job (--rt-frame, docs/mix.md): a frame every
	// RTFrame seconds, a buffer of RTBuffer frames, RTWork[k] seconds of
	// CPU per frame for process k. RTFrame 0 = not periodic.
	RTFrame  float64   `json:"rt_frame,omitempty"`
	RTBuffer int       `json:"rt_buffer,omitempty"`
	RTWork   []float64 `json:"rt_work,omitempty"`
	// RTMisses is how many frames the periodic job has missed so far, as
	// the job itself reports it (hora does not see frames): scontrol update
	// JobId=$SLURM_JOB_ID RTMisses=N from inside the job. 0 at submission.
	RTMisses    int    `json:"rt_misses,omitempty"`
	Reservation string `json:"reservation,omitempty"`
	Account     string `json:"account,omitempty"`
	QOS         string `json:"qos,omitempty"`
	Comment     string `json:"comment,omitempty"`
	SubmitHost  string `json:"submit_host,omitempty"`
	OpenAppend  bool   `json:"open_append,omitempty"` // --open-mode=append
	// MailType is --mail-type's events, upper case, comma-separated
	// (BEGIN,END,FAIL,REQUEUE,TIME_LIMIT,... ; ALL; "" or NONE: no mail);
	// MailUser is --mail-user (default the job's owner).
	MailType string `json:"mail_type,omitempty"`
	MailUser string `json:"mail_user,omitempty"`
	// Alloc marks an allocation made by salloc or srun: no batch script
	// runs; the allocation lasts until its client releases it.
	Alloc bool `json:"alloc,omitempty"`
	// Array is --array as given ("0-15%4"); horad creates one job per task.
	Array string `json:"array,omitempty"`
	// Dependency is --dependency as given; KillOnInvalidDep is
	// --kill-on-invalid-dep ("yes", "no"; "" = the cluster's default).
	Dependency       string `json:"dependency,omitempty"`
	KillOnInvalidDep string `json:"kill_on_invalid_dep,omitempty"`
	// Nice is --nice / scontrol update Nice= (shown, and lowers Priority).
	Nice int `json:"nice,omitempty"`
	// Signal is --signal as given ("B:USR1@30"): sent before the time limit.
	Signal string `json:"signal,omitempty"`

	// Consumable resources (Slurm's select/cons_tres; docs/resources.md).
	// A job that sets none of them, and no -n/-c/--mem, gets whole nodes.
	NTasksPerNode int    `json:"ntasks_per_node,omitempty"`
	MemAll        bool   `json:"mem_all,omitempty"`     // --mem=0: all the memory of each node
	MemPerCPU     int64  `json:"mem_per_cpu,omitempty"` // MiB
	MemPerGPU     int64  `json:"mem_per_gpu,omitempty"` // MiB
	Gres          string `json:"gres,omitempty"`        // per node, normalised: "gpu:a100:2,nvme:1"
	GPUs          string `json:"gpus,omitempty"`        // --gpus [type:]n for the whole job
	GPUsPerNode   string `json:"gpus_per_node,omitempty"`
	GPUsPerTask   string `json:"gpus_per_task,omitempty"`
	CPUsPerGPU    int    `json:"cpus_per_gpu,omitempty"`
	Exclusive     string `json:"exclusive,omitempty"` // "", "node" (--exclusive), "user"
	Oversubscribe bool   `json:"oversubscribe,omitempty"`
	NodeList      string `json:"nodelist,omitempty"`   // -w hostlist, expanded and recompressed
	Exclude       string `json:"exclude,omitempty"`    // -x hostlist
	Constraint    string `json:"constraint,omitempty"` // -C features: a, a&b, a|b
	MinCPUs       int    `json:"mincpus,omitempty"`
	NoMultithread bool   `json:"no_multithread,omitempty"` // --hint=nomultithread
	// PBS is set on jobs submitted with qsub: they get PBS's job
	// environment (PBS_JOBID, PBS_NODEFILE, TMPDIR, ...) beside Slurm's.
	PBS *PBSSpec `json:"pbs,omitempty"`
}

// WantsResources reports whether the spec asks for consumable resources
// rather than whole nodes (any of -n, -c, --ntasks-per-node, --mem*, gres,
// GPUs, --mincpus, --hint=nomultithread); --exclusive alone keeps whole nodes.
func (s *JobSpec) WantsResources() bool {
	return s.NTasks > 0 || s.CPUsPerTask > 0 || s.NTasksPerNode > 0 || s.MemMB > 0 || s.MemAll ||
		s.MemPerCPU > 0 || s.MemPerGPU > 0 || s.Gres != "" || s.GPUs != "" || s.GPUsPerNode != "" ||
		s.GPUsPerTask != "" || s.CPUsPerGPU > 0 || s.MinCPUs > 0 || s.NoMultithread || s.Exclusive == "user"
}

// NodeAlloc is what a job holds on one node: the CPU ids (0-based, the
// node's numbering), memory and generic resources, and the tasks laid out
// there. Whole-node jobs have no NodeAlloc.
type NodeAlloc struct {
	Node  string `json:"node"`
	CPUs  []int  `json:"cpus"`
	MemMB int64  `json:"mem_mb,omitempty"`
	Tasks int    `json:"tasks"`
	// Gres is Slurm's per-node text, "gpu:a100:2(IDX:0-1),nvme:1"; GPUs
	// the indices of the node's GPUs (CUDA_VISIBLE_DEVICES).
	Gres string `json:"gres,omitempty"`
	GPUs []int  `json:"gpus,omitempty"`
}

// PBSSpec is what a qsub'd job needs beyond the common spec.
type PBSSpec struct {
	Server  string `json:"server"`  // job ids read <seq>.<server>
	Flavour string `json:"flavour"` // "openpbs" or "torque" at submission
	Queue   string `json:"queue,omitempty"`
	// PPN is Torque's processors per node (nodes=N:ppn=P), for
	// PBS_NUM_PPN and the lines of PBS_NODEFILE; 0 = the CPUs asked for.
	PPN int `json:"ppn,omitempty"`
	// Shell is qsub -S: the interpreter of the script ("" = its #! line,
	// else the owner's shell).
	Shell string `json:"shell,omitempty"`
}

// Job is a job as horad knows it: the spec plus what happened to it.
type Job struct {
	ID           int64    `json:"id"`
	Spec         JobSpec  `json:"spec"`
	UID          uint32   `json:"uid"`
	GID          uint32   `json:"gid"`
	User         string   `json:"user"`
	Group        string   `json:"group"`
	State        JobState `json:"state"`
	Reason       string   `json:"reason"` // Slurm reason code: None, Priority, Resources, JobHeldUser, ...
	Priority     int64    `json:"priority"`
	SubmitTime   int64    `json:"submit_time"`
	EligibleTime int64    `json:"eligible_time,omitempty"`
	StartTime    int64    `json:"start_time,omitempty"` // 0 = not started
	// ExpectedStart is, for a pending job booked ahead (reservations), when
	// it is planned to start; squeue %S shows it as Slurm shows expected starts.
	ExpectedStart int64    `json:"expected_start,omitempty"`
	EndTime       int64    `json:"end_time,omitempty"` // 0 = not ended
	Nodes         []string `json:"nodes,omitempty"`    // allocated nodes
	ExitCode      int      `json:"exit_code"`
	Signal        int      `json:"signal"`
	CancelledBy   int64    `json:"cancelled_by"` // uid, -1 = not cancelled
	Restarts      int      `json:"restarts,omitempty"`
	// SuspendTime is when the job was last suspended or resumed in this run
	// (scontrol SuspendTime), SuspendedSecs the seconds it has been suspended
	// in this run before its current state; neither counts toward its limit.
	SuspendTime   int64  `json:"suspend_time,omitempty"`
	SuspendedSecs int64  `json:"suspended_secs,omitempty"`
	Steps         []Step `json:"steps,omitempty"`       // chunks of a divisible job (sacct JOBID.N)
	StdoutPath    string `json:"stdout_path,omitempty"` // expanded
	StderrPath    string `json:"stderr_path,omitempty"`
	// ArrayJobID is the array this job is a task of (0 = none; the array's
	// id is its first task's job id) and ArrayTaskID its task id.
	ArrayJobID  int64 `json:"array_job_id,omitempty"`
	ArrayTaskID int64 `json:"array_task_id,omitempty"`
	// ArrayThrottle is the array's %N (0 = none); ArrayPending, on the
	// array's first task in a folded listing, the ids of the pending tasks
	// it stands for (squeue 7_[3-15%4]). Both set by horad, not stored.
	ArrayThrottle int     `json:"array_throttle,omitempty"`
	ArrayPending  []int64 `json:"array_pending,omitempty"`
	// Dependency is what is left of the job's dependency in Slurm's form
	// ("afterok:7(unfulfilled)"), "" when none (set by horad).
	Dependency string `json:"dependency,omitempty"`
	// Alloc is the per-node allocation of a job that asked for resources
	// (in the order of Nodes); nil for whole-node jobs.
	Alloc []NodeAlloc `json:"alloc,omitempty"`
	// MaxRSSKB and TotalCPUMs are the batch step's peak resident memory
	// (KiB) and user+system CPU time (ms), measured where the node can
	// (sacct MaxRSS, TotalCPU); 0 = not measured.
	MaxRSSKB   int64 `json:"max_rss_kb,omitempty"`
	TotalCPUMs int64 `json:"total_cpu_ms,omitempty"`
}

// Step is one chunk of a divisible real-time job or one srun step, shown
// by sacct as JOBID.N. An srun step's Node is its compressed node list.
type Step struct {
	Index     int      `json:"index"`
	Node      string   `json:"node"`
	Name      string   `json:"name,omitempty"`   // srun: the command's name
	NTasks    int      `json:"ntasks,omitempty"` // srun: number of tasks
	CPUs      int      `json:"cpus,omitempty"`   // srun: CPUs held on all its nodes
	State     JobState `json:"state"`
	Offset    float64  `json:"offset"`
	Size      float64  `json:"size"`
	StartTime int64    `json:"start_time,omitempty"`
	EndTime   int64    `json:"end_time,omitempty"`
	ExitCode  int      `json:"exit_code"`
	Signal    int      `json:"signal"`
	TimeLimit int64    `json:"time_limit,omitempty"` // srun -t, seconds (0 = the job's): re-armed after a restart
}

// SubmitRequest asks horad to queue a job (or, with TestOnly, to say when it
// would start without creating it).
type SubmitRequest struct {
	Spec     JobSpec `json:"spec"`
	TestOnly bool    `json:"test_only,omitempty"`
}

// SubmitResponse answers a SubmitRequest.
type SubmitResponse struct {
	JobID     int64    `json:"job_id"`
	StartTime int64    `json:"start_time,omitempty"` // TestOnly: expected start
	Nodes     []string `json:"nodes,omitempty"`      // TestOnly: expected nodes
	Partition string   `json:"partition,omitempty"`
	CPUs      int      `json:"cpus,omitempty"`
}

// JobsResponse lists jobs, ordered by id.
type JobsResponse struct {
	Jobs []Job `json:"jobs"`
}

// CancelRequest selects jobs by id and/or filters (ANDed, as scancel does)
// and sends them a signal; Signal 0 means cancel (TERM, grace, KILL).
type CancelRequest struct {
	IDs        []int64    `json:"ids,omitempty"`
	Steps      []StepRef  `json:"steps,omitempty"` // JOBID.STEP: these steps only
	Signal     int        `json:"signal,omitempty"`
	Users      []string   `json:"users,omitempty"`
	Names      []string   `json:"names,omitempty"`
	States     []JobState `json:"states,omitempty"`
	Partitions []string   `json:"partitions,omitempty"`
	// Filtered is true when the client used anything but bare ids; unknown ids
	// are then errors (scancel's two code paths, COMPAT.md §4).
	Filtered bool `json:"filtered,omitempty"`
	// Tasks selects array tasks ("7_3", "7_[1-3]"); an id in IDs that names
	// an array selects all its tasks, as in Slurm.
	Tasks []TaskSel `json:"tasks,omitempty"`
}

// JobUpdateRequest is scontrol update JobId=… (or JobName=… without a
// JobId, which selects the jobs of that name): the fields given, nil for
// those left alone. Times are Unix seconds, durations seconds.
type JobUpdateRequest struct {
	IDs    []int64   `json:"ids,omitempty"`
	Tasks  []TaskSel `json:"tasks,omitempty"`
	ByName string    `json:"by_name,omitempty"`

	TimeLimit     *int64  `json:"time_limit,omitempty"` // NoLimit for UNLIMITED
	Name          *string `json:"name,omitempty"`
	Partition     *string `json:"partition,omitempty"`
	Nodes         *int    `json:"nodes,omitempty"`
	Dependency    *string `json:"dependency,omitempty"`
	Begin         *int64  `json:"begin,omitempty"`
	Deadline      *int64  `json:"deadline,omitempty"`
	Comment       *string `json:"comment,omitempty"`
	Nice          *int    `json:"nice,omitempty"`
	Priority      *int64  `json:"priority,omitempty"`
	Features      *string `json:"features,omitempty"`
	ArrayThrottle *int    `json:"array_throttle,omitempty"`
	RTMisses      *int    `json:"rt_misses,omitempty"` // a periodic job's missed frames so far
	Exclude       *string `json:"exclude,omitempty"`   // ExcNodeList
	// Top is scontrol top: IDs, in their order, take the highest
	// priorities among their owner's pending jobs of their partition.
	Top bool `json:"top,omitempty"`
}

// TaskSel names tasks of a job array by their task ids.
type TaskSel struct {
	Array int64   `json:"array"`
	Tasks []int64 `json:"tasks"`
}

// ControlRequest names jobs for hold/release.
type ControlRequest struct {
	IDs   []int64   `json:"ids"`
	Tasks []TaskSel `json:"tasks,omitempty"` // array tasks, as in CancelRequest
	// UserHold makes hold a user hold (scontrol uhold: JobHeldUser, which
	// the owner may release) even when an operator asks; Hold makes
	// requeue leave the job held (scontrol requeuehold).
	UserHold bool `json:"user_hold,omitempty"`
	Hold     bool `json:"hold,omitempty"`
}

// JobResult is the outcome for one job of a multi-job request.
type JobResult struct {
	ID    int64  `json:"id"`
	Error string `json:"error,omitempty"` // Slurm strerror text, e.g. "Invalid job id specified"
	Code  string `json:"code,omitempty"`
}

// CancelResponse gives one result per job touched or named.
type CancelResponse struct {
	Results []JobResult `json:"results"`
}

// Node is one compute node as sinfo/scontrol show it.
type Node struct {
	Name     string `json:"name"`
	Address  string `json:"address,omitempty"`
	CPUs     int    `json:"cpus"`
	MemoryMB int64  `json:"memory_mb"`
	// Sockets, CoresPerSocket, ThreadsPerCore: CPUs = their product.
	Sockets        int      `json:"sockets,omitempty"`
	CoresPerSocket int      `json:"cores_per_socket,omitempty"`
	ThreadsPerCore int      `json:"threads_per_core,omitempty"`
	Gres           string   `json:"gres,omitempty"` // "gpu:a100:2,nvme:1"
	Features       []string `json:"features,omitempty"`
	// AllocCPUs, AllocMemMB and AllocGres are what running jobs hold
	// (a whole-node job holds everything).
	AllocCPUs  int     `json:"alloc_cpus,omitempty"`
	AllocMemMB int64   `json:"alloc_mem_mb,omitempty"`
	AllocGres  string  `json:"alloc_gres,omitempty"`
	FreeMemMB  int64   `json:"free_mem_mb,omitempty"` // measured on the node; 0 = unknown
	CPULoad    float64 `json:"cpu_load,omitempty"`
	Rate       float64 `json:"rate,omitempty"`
	State      string  `json:"state"` // idle, allocated, mixed, down, drained, draining
	Reason     string  `json:"reason,omitempty"`
	ReasonUser string  `json:"reason_user,omitempty"` // who set Reason (sinfo %u)
	ReasonTime int64   `json:"reason_time,omitempty"` // when, Unix s (sinfo %H)
	// Drain is set on a drained or draining node, also when it is down
	// (scontrol show node State=DOWN+DRAIN); NotResponding when the health
	// prober cannot reach it (Slurm's "*" suffix).
	Drain         bool     `json:"drain,omitempty"`
	NotResponding bool     `json:"not_responding,omitempty"`
	Partitions    []string `json:"partitions"`
	Jobs          []int64  `json:"jobs,omitempty"`

	// OS is the node's kernel (uname -s -r -v; "" = not known yet),
	// BootTime when it booted, StartTime when horad began to serve it (Slurm's
	// SlurmdStartTime) and LastBusy when it last ran a job (now if it runs
	// one), all Unix s (0 = unknown).
	OS        string `json:"os,omitempty"`
	BootTime  int64  `json:"boot_time,omitempty"`
	StartTime int64  `json:"start_time,omitempty"`
	LastBusy  int64  `json:"last_busy,omitempty"`

	// Reserved: the node is in an advance reservation active now (Slurm's
	// NODE_STATE_RES); an idle one then has State "reserved".
	Reserved bool `json:"reserved,omitempty"`
	// Maint: the reservation has Flags=MAINT (Slurm's NODE_STATE_MAINT);
	// an idle node then has State "maint".
	Maint bool `json:"maint,omitempty"`
}

// NodesResponse lists nodes in configuration order.
type NodesResponse struct {
	Nodes []Node `json:"nodes"`
}

// Partition is one partition as sinfo/scontrol show it.
type Partition struct {
	Name        string   `json:"name"`
	Default     bool     `json:"default"`
	State       string   `json:"state"` // up, down
	Policy      string   `json:"policy"`
	Nodes       []string `json:"nodes"`
	MaxTime     int64    `json:"max_time"`     // seconds, NoLimit
	DefaultTime int64    `json:"default_time"` // seconds, NoLimit
	// DefMemPerCPU and MaxMemPerNode (MiB, 0 = none); OverSubscribe as
	// `scontrol show partition` prints it: NO, EXCLUSIVE, YES:N or FORCE:N
	// ("" is NO).
	DefMemPerCPU  int64  `json:"def_mem_per_cpu,omitempty"`
	MaxMemPerNode int64  `json:"max_mem_per_node,omitempty"`
	OverSubscribe string `json:"oversubscribe,omitempty"`
}

// JobOverSubscribe is a job's OverSubscribe as `scontrol show job` and
// squeue %h print it (Slurm's job_share_string of the job's share value,
// reported against the partition's current setting): YES when the job
// asked -s or its partition is FORCE:N with N > 1; USER with
// --exclusive=user; NO with --exclusive or a partition OverSubscribe=
// EXCLUSIVE; OK otherwise. partition is Partition.OverSubscribe.
func JobOverSubscribe(partition string, s *JobSpec) string {
	switch {
	case s.Oversubscribe:
		return "YES"
	case s.Exclusive == "user":
		return "USER"
	case s.Exclusive != "":
		return "NO"
	case strings.HasPrefix(partition, "FORCE:") && partition != "FORCE:1":
		return "YES"
	case partition == "EXCLUSIVE":
		return "NO"
	}
	return "OK"
}

// PartitionsResponse lists partitions in configuration order.
type PartitionsResponse struct {
	Partitions []Partition `json:"partitions"`
}

// PingResponse identifies the daemon.
type PingResponse struct {
	Version     string `json:"version"`
	ClusterName string `json:"cluster_name"`
	Now         int64  `json:"now"`
	// PBSFlavour ("openpbs" or "torque") and PBSServer come from hora.toml's
	// [pbs]: the PBS commands take their texts and job-id suffix from them.
	PBSFlavour string `json:"pbs_flavour,omitempty"`
	PBSServer  string `json:"pbs_server,omitempty"`
}

// ConfigResponse is horad's configuration as `scontrol show config` lists
// it: Slurm's keys, in Slurm's order, with hora's real values.
type ConfigResponse struct {
	Pairs []ConfigPair `json:"pairs"`
	Now   int64        `json:"now"`
	Host  string       `json:"host"` // where horad runs (the "is UP" line)
}

// ConfigPair is one line of `scontrol show config`.
type ConfigPair struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Reservation is an advance reservation (scontrol create reservation): Nodes
// of Partition set aside for [StartTime, EndTime) for Users. Times are Unix
// seconds.
type Reservation struct {
	Name      string   `json:"name"`
	Partition string   `json:"partition"`
	StartTime int64    `json:"start_time"`
	EndTime   int64    `json:"end_time"`
	Nodes     []string `json:"nodes"`
	Users     []string `json:"users"`
	Flags     []string `json:"flags,omitempty"`
}

// ReservationRequest creates, updates or deletes a reservation. On create
// either Nodes or NodeCount is given; on update, fields left zero keep their
// value (Set names the fields given, so that an update can tell "not given"
// from empty), and AddUsers/RemoveUsers are Users+= and Users-=.
type ReservationRequest struct {
	Name        string   `json:"name"`
	Partition   string   `json:"partition,omitempty"`
	StartTime   int64    `json:"start_time,omitempty"`
	EndTime     int64    `json:"end_time,omitempty"`
	Duration    int64    `json:"duration,omitempty"` // seconds, with StartTime when EndTime is 0
	Nodes       []string `json:"nodes,omitempty"`
	NodeCount   int      `json:"node_count,omitempty"`
	Users       []string `json:"users,omitempty"`
	AddUsers    []string `json:"add_users,omitempty"`
	RemoveUsers []string `json:"remove_users,omitempty"`
	Flags       []string `json:"flags,omitempty"`
	Set         []string `json:"set,omitempty"` // update: the keys given, lower case (starttime, endtime, duration, nodes, nodecnt, users)

	// AddNodes and RemoveNodes are update's Nodes+= and Nodes-=.
	AddNodes    []string `json:"add_nodes,omitempty"`
	RemoveNodes []string `json:"remove_nodes,omitempty"`
}

// ReservationResponse answers a reservation change with its new state.
type ReservationResponse struct {
	Reservation Reservation `json:"reservation"`
	// EarliestStart is set when the request could not be booked: the
	// earliest start at which the same window would fit (Unix s).
	EarliestStart int64 `json:"earliest_start,omitempty"`
}

// ReservationsResponse lists reservations by name.
type ReservationsResponse struct {
	Reservations []Reservation `json:"reservations"`
	Now          int64         `json:"now"`
}

// FreeResponse is the range search: the nodes of Partition idle (nothing
// booked, no reservation) through [From, To).
type FreeResponse struct {
	Partition string   `json:"partition"`
	From      int64    `json:"from"`
	To        int64    `json:"to"`
	Nodes     []string `json:"nodes"`
	Total     int      `json:"total"` // nodes in the partition
}

// Error is the body of every non-2xx answer. Message is the Slurm strerror
// text where one exists, so clients can print it verbatim.
type Error struct {
	Message string `json:"error"`
	Code    string `json:"code,omitempty"`
	// Earliest is set when a deadline could not be guaranteed: the earliest
	// deadline (Unix s) that would have been.
	Earliest int64 `json:"earliest,omitempty"`
	// EarliestStart is set when a booking was refused: the earliest start
	// (Unix s) at which it would have fit.
	EarliestStart int64 `json:"earliest_start,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Error codes: stable identifiers beside the human text.
const (
	CodeInvalidJobID     = "InvalidJobID"
	CodeAccessDenied     = "AccessDenied"
	CodeAlreadyDone      = "AlreadyDone"
	CodeInvalidPartition = "InvalidPartition"
	CodeInvalidNodeCount = "InvalidNodeCount"
	CodeInvalidTimeLimit = "InvalidTimeLimit"
	CodeBadRequest       = "BadRequest"
	CodeDeadline         = "DeadlineNotGuaranteed"
	CodeInternal         = "Internal"
	// CodeTryAgain: refused for now (Slurm's EAGAIN, e.g. MaxJobCount
	// reached); sbatch sleeps and retries.
	CodeTryAgain = "TryAgain"
	// CodeSubmitLimit: the user's submit limit (Slurm's
	// ESLURM_ACCOUNTING_POLICY).
	CodeSubmitLimit = "SubmitLimit"
	// CodeRateLimited: the user's request rate limit (Slurm's
	// SLURMCTLD_COMMUNICATIONS_BACKOFF); nothing was done, and the client
	// sleeps and sends the request again.
	CodeRateLimited = "RateLimited"
	CodeReservation = "ReservationInvalid"
	// CodeTimeout is set by the client itself, never sent by horad: no
	// answer came within the message timeout (Slurm's MessageTimeout).
	CodeTimeout = "Timeout"
)

// MsgSocketTimeout is Slurm's strerror text for ESLURM_SOCKET_TIMEOUT-like
// failures (SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT), which its commands print
// when slurmctld does not answer within MessageTimeout.
const MsgSocketTimeout = "Socket timed out on send/recv operation"

// BriefJob is the part of a job that a brief listing (JobFilter.Brief)
// carries: what selects a job (owner, state, queue, name, account,
// resources, times), none of its paths, command, script or environment.
func BriefJob(j *Job) Job {
	return Job{ID: j.ID, UID: j.UID, GID: j.GID, User: j.User, State: j.State, Reason: j.Reason,
		SubmitTime: j.SubmitTime, EligibleTime: j.EligibleTime, StartTime: j.StartTime, EndTime: j.EndTime,
		CancelledBy: j.CancelledBy, Nodes: j.Nodes, ArrayJobID: j.ArrayJobID, ArrayTaskID: j.ArrayTaskID,
		Spec: JobSpec{Name: j.Spec.Name, Partition: j.Spec.Partition, Account: j.Spec.Account, TimeLimit: j.Spec.TimeLimit,
			Begin: j.Spec.Begin, Nodes: j.Spec.Nodes, NTasks: j.Spec.NTasks, CPUsPerTask: j.Spec.CPUsPerTask, MemMB: j.Spec.MemMB}}
}
