// Package nodes carries the Engine's actions out on real machines. An
// Executor launches job steps on named nodes, signals them, reports their
// exits and, after horad restarts, re-attaches to what kept running.
//
// Every step is supervised node-side by a shepherd that outlives horad: it
// holds the step's process group, enforces the time limit (TERM, grace, KILL)
// and writes the exit status into a node-side state directory. horad therefore
// never needs to be the parent of a job to learn how it ended.
package nodes

import (
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// StepKey names one supervised process tree: a job's batch step
// (Step == -1) or one chunk of a divisible job, in one run of the job.
//
// Run is the job's restart count when the step was launched. A requeued
// job runs again under the same job and step numbers; the run keeps the
// runs apart on the node (step directory, unit name, staged data, status),
// so that nothing of an earlier run — its end, its Forget, its status —
// can ever be taken for the new run's. LegacyRun marks a step left by a
// horad that did not number runs.
type StepKey struct {
	Job  int64
	Step int
	Run  int
}

// LegacyRun is the Run of a step whose node-side name carries no run
// number: it was launched by a horad that did not number runs, and stands
// for the current run of its job.
const LegacyRun = -1

// LaunchSpec is everything a node needs to run one step. Paths are absolute
// and already expanded (%j, %x, ...) by the controller.
type LaunchSpec struct {
	Key     StepKey
	Node    string   // node to run on
	Script  []byte   // batch script body, written node-side and executed
	Args    []string // script arguments
	WorkDir string
	Stdout  string // file, created or truncated (appended when Append)
	Stderr  string // "" = same file as Stdout
	Stdin   string // "" = /dev/null
	Append  bool
	// SharedOutput: other steps write the same files (a divisible job's
	// chunks): every write goes to the end, also after a truncating open,
	// so that no step overwrites another's lines.
	SharedOutput bool
	Env          []string // complete environment, KEY=VALUE
	UID          uint32
	GID          uint32
	User         string
	// TimeLimit is enforced node-side: TERM at the limit, KILL after KillWait.
	// 0 = no limit.
	TimeLimit time.Duration
	KillWait  time.Duration
	// CPUs (the node's CPU ids) and MemMB (0 = no limit) are the step's
	// allocation, which the executor enforces (cgroups locally, the
	// systemd scope's AllowedCPUs/MemoryMax over SSH); none for a job that
	// holds its nodes whole.
	CPUs  []int `json:"cpus,omitempty"`
	MemMB int64 `json:"mem_mb,omitempty"`
	// GPUs are the indices of the node's GPUs given to the step, of the
	// node's NodeGPUs: the local executor denies the others' device nodes
	// (NVIDIA's major 195, minor = index) with the devices cgroup.
	GPUs     []int `json:"gpus,omitempty"`
	NodeGPUs int   `json:"node_gpus,omitempty"`
	// MemCgroup is set by the local executor for its shepherd: the memory
	// cgroup whose oom_kill count tells an OOM end.
	MemCgroup string `json:"mem_cgroup,omitempty"`
}

// StepState is what the node-side state says about a step.
type StepState int

const (
	StepRunning StepState = iota
	StepExited            // ended; ExitCode/Signal valid
	StepLost              // the state is gone or unreadable (node failure)
)

// Status describes one step as the node reports it.
type Status struct {
	Key      StepKey
	Node     string
	State    StepState
	ExitCode int  // exit status when it exited normally
	Signal   int  // terminating signal, 0 if none
	TimedOut bool // killed by the shepherd at the time limit
	Pid      int  // process group leader of the step; 0 for a lost step whose job process never started
	OOM      bool // the kernel killed some of its processes for exceeding its memory
	// MaxRSSKB and CPU are the job process's peak resident memory (KiB)
	// and user+system CPU time, its reaped children included, where the
	// executor measures them (local); 0 otherwise.
	MaxRSSKB int64
	CPU      time.Duration
	Started  time.Time
	Ended    time.Time
	Err      string // launch failure text (e.g. cannot open output file)
}

// Executor runs steps on nodes. Implementations: local (this machine, the
// embedded default) and ssh (ordinary Linux hosts, nothing installed).
type Executor interface {
	// Launch starts a step and returns once the shepherd holds it (the
	// step's first line may still be starting).
	Launch(ctx context.Context, spec LaunchSpec) error
	// Signal delivers sig to the step's whole process group.
	Signal(ctx context.Context, node string, key StepKey, sig Signum) error
	// Terminate sends TERM, then KILL after grace, to the step's process group.
	Terminate(ctx context.Context, node string, key StepKey, grace time.Duration) error
	// Reattach lists every step the node-side state knows on the given nodes,
	// running or ended while horad was away, and resumes watching the running ones.
	Reattach(ctx context.Context, nodes []string) ([]Status, error)
	// Forget removes the node-side state of an ended step once horad has
	// recorded its end durably.
	Forget(ctx context.Context, node string, key StepKey) error
	// Exits delivers one Status per step that ends (State StepExited or
	// StepLost). The channel stays open until Close.
	Exits() <-chan Status
	// Close stops watching; running steps are left running.
	Close() error
}

// TaskSpec is one task of a job step that horad starts on an SSH node for
// an srun running on the submit host (docs/steps.md, "SSH nodes").
type TaskSpec struct {
	Node     string
	Key      StepKey // the step the task belongs to
	Task     int     // the task's id in the step (SLURM_PROCID)
	UID, GID uint32  // the job's owner: horad's record, never the client's word
	WorkDir  string
	Env      []string // exactly the task's environment (KEY=VALUE)
	Argv     []string
	CPUs     []int // AllowedCPUs of the task's scope; none: not restricted
	MemMB    int64 // MemoryMax of the task's scope; 0: not restricted
	// StepMemMB is the step's own --mem on the node (0: none): all its
	// tasks there share one memory group of that limit where the node has
	// no systemd but the cgroup v1 memory hierarchy (EndStepMemory reads
	// and removes it); under systemd it caps each task's scope instead.
	StepMemMB int64
	// GPUs are the job's GPUs on the node, of the node's NodeGPUs: without
	// systemd the tasks run in a devices group of the step that denies
	// the others, as the batch step does (LaunchSpec.GPUs).
	GPUs     []int
	NodeGPUs int
	// Stdin is the task's standard input; nil gives it /dev/null.
	Stdin io.Reader
	// Signals are delivered to the task's process while it runs (HUP,
	// INT, QUIT, TERM, USR1, USR2, ALRM, CONT, STOP, TSTP; others are
	// dropped: KILL is cancelling RunTask's context). nil: none.
	Signals <-chan Signum
	// Pty runs the task on a pseudo-terminal of its node (srun --pty,
	// qsub -I): Stdin is what is typed on it, and the task's stdout and
	// stderr both come back as stdout. nil: pipes.
	Pty *Pty
}

// Pty is a task's pseudo-terminal: the caller's terminal type and window
// size, and the window's later sizes as the caller's terminal changes.
type Pty struct {
	Term       string
	Rows, Cols int
	Resize     <-chan Winsize
}

// Winsize is a terminal's size in characters.
type Winsize struct{ Rows, Cols int }

// TaskExit is how a task ended: its exit code, or the signal that killed it.
type TaskExit struct {
	Code   int
	Signal Signum // 0 unless killed by a signal
}

// TaskRunner is an executor that starts single tasks of a step itself and
// streams their output back (nodes/ssh: over the pooled connections), for
// steps whose srun cannot fork on the step's nodes.
type TaskRunner interface {
	RunTask(ctx context.Context, spec TaskSpec, stdout, stderr io.Writer) (TaskExit, error)
}

// StepCgrouper is an executor that gives a step started outside it (an
// srun step's tasks, forked by srun) a memory limit of its own: a memory
// cgroup below the job's batch step's, so both limits hold (nodes/local).
type StepCgrouper interface {
	// EnterStepMemory puts pids in the step's memory group on node,
	// created with a limit of memMB (no swap beyond it).
	EnterStepMemory(node string, key StepKey, memMB int64, pids []int) error
	// EndStepMemory returns the group's oom_kill count and removes it
	// (what is left in it is killed first).
	EndStepMemory(node string, key StepKey) int
}

// Callbacker is an executor whose nodes cannot reach horad's socket
// directly (nodes/ssh): it keeps a socket on each node forwarded to horad
// and hands over the connections made to it. Such connections carry no
// peer credentials; horad authenticates their requests itself.
type Callbacker interface {
	// CallbackPath is the socket's path on node ("" for an unknown node).
	CallbackPath(node string) string
	// ServeCallbacks starts forwarding every node's socket until the
	// executor closes; accept is called in a goroutine of its own for
	// each connection.
	ServeCallbacks(accept func(node string, c net.Conn)) error
}

// Signum is a POSIX signal number (syscall.Signal values on Linux).
type Signum int

// NodeEvent is an up/down transition of a node, as a health prober sees it.
type NodeEvent struct {
	Node string
	Up   bool
	Err  error // why the node is down
}

// HealthReporter is implemented by executors that watch their nodes' health
// (ssh). The controller turns the events into NodeDown/NodeUp for the
// Engine and the node states sinfo shows. The channel must be drained.
type HealthReporter interface {
	NodeEvents() <-chan NodeEvent
}

// StageSpec is one byte range of a divisible job's input, to be placed on
// the node of the chunk that will read it.
type StageSpec struct {
	Key  StepKey
	Node string
	// UID and GID own the node-side file; it is readable by that user only.
	UID uint32
	GID uint32
	// Data yields exactly Size bytes (fewer is an error and leaves no file).
	Data io.Reader
	Size int64
}

// Stager is implemented by executors that can send a chunk's data to its
// node before the chunk starts (divisible jobs with --input). It is
// optional so that Executor stays stable: a controller without a Stager
// refuses --input. The node-side file lives with the step's state and is
// removed by Forget.
type Stager interface {
	// Stage writes the data into a new node-side file for the step and
	// returns its path on the node.
	Stage(ctx context.Context, spec StageSpec) (path string, err error)
}

// StagedCleaner is implemented by Stagers that can remove staged data left
// on a node by a transfer that horad's crash cut short (its step's start
// was never recorded, or the step was never launched, so nothing will
// Forget it). horad calls it at recovery, on the partition's staging
// channel, so no transfer runs meanwhile. Optional, like Stager.
type StagedCleaner interface {
	// CleanStaged removes from node the staged data, complete or partial,
	// of every step not in keep.
	CleanStaged(ctx context.Context, node string, keep []StepKey) error
}

// LimitSetter is implemented by executors whose node-side time limit can be
// moved while a step runs. horad uses it when it resumes a suspended job,
// so that the suspended time does not count toward the limit.
type LimitSetter interface {
	// SetTimeLimit makes limit (counted from the step's start) the step's
	// time limit; a limit already past ends the step as timed out at once.
	SetTimeLimit(ctx context.Context, node string, key StepKey, limit time.Duration) error
}

// NodeResources is what a node has, as probed on it: online CPUs (nproc),
// MemTotal in MiB and NVIDIA GPU devices (/dev/nvidiaN).
type NodeResources struct {
	CPUs  int
	MemMB int64
	GPUs  int
}

// ResourceProber is implemented by executors that can read a node's
// resources on the node itself (ssh), for nodes whose hora.toml entry
// leaves them out.
type ResourceProber interface {
	ProbeResources(ctx context.Context, node string) (NodeResources, error)
}

// NodeSystem is what `scontrol show node` says of a node's system: its
// kernel as `uname -s -r -v` prints it (Slurm's OS=) and when it booted.
type NodeSystem struct {
	OS   string
	Boot time.Time
}

// SystemReader is implemented by executors that know their nodes' systems;
// ok is false for a node not read yet (an SSH node before its first probe).
type SystemReader interface {
	NodeSystem(node string) (sys NodeSystem, ok bool)
}

// ParseBootTime reads the boot time from /proc/stat's "btime" line.
func ParseBootTime(procStat string) (time.Time, bool) {
	for _, ln := range strings.Split(procStat, "\n") {
		if rest, ok := strings.CutPrefix(ln, "btime "); ok {
			if s, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64); err == nil && s > 0 {
				return time.Unix(s, 0), true
			}
		}
	}
	return time.Time{}, false
}

// Name is the step's node-side name, used for its state directory, its
// staged data and (dots as dashes) its systemd unit: "<job>.<step>.r<run>",
// the batch step (-1) spelled "batch" as Slurm does, e.g. "42.batch.r1" or
// "42.3.r0". A LegacyRun step has no run part ("42.batch").
func (k StepKey) Name() string {
	s := strconv.FormatInt(k.Job, 10) + "."
	if k.Step == -1 {
		s += "batch"
	} else {
		s += strconv.Itoa(k.Step)
	}
	if k.Run != LegacyRun {
		s += ".r" + strconv.Itoa(k.Run)
	}
	return s
}

// ParseStepName is the inverse of StepKey.Name; names of anything else
// (temporary files, directories that are not steps) are refused.
func ParseStepName(name string) (StepKey, bool) {
	j, rest, ok := strings.Cut(name, ".")
	if !ok {
		return StepKey{}, false
	}
	job, err := strconv.ParseInt(j, 10, 64)
	if err != nil || job < 0 {
		return StepKey{}, false
	}
	st, run, numbered := strings.Cut(rest, ".")
	k := StepKey{Job: job, Run: LegacyRun}
	if st == "batch" {
		k.Step = -1
	} else if k.Step, err = strconv.Atoi(st); err != nil || k.Step < 0 {
		return StepKey{}, false
	}
	if numbered {
		r, ok := strings.CutPrefix(run, "r")
		if !ok {
			return StepKey{}, false
		}
		if k.Run, err = strconv.Atoi(r); err != nil || k.Run < 0 || strconv.Itoa(k.Run) != r {
			return StepKey{}, false
		}
	}
	if k.Name() != name { // "+1", "007": one spelling per step
		return StepKey{}, false
	}
	return k, true
}
