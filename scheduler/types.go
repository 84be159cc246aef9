// Package scheduler is hora's pure decision core: events in, actions out.
//
// The Engine has no goroutines, reads no clock and does no I/O. Every event
// carries the driver's notion of "now" (Unix seconds in horad, trace seconds in
// replay), so the same code runs live under the controller and in virtual time
// under the simulator (DESIGN.md §3). Each partition routes its jobs to one
// Policy (batch, dlt, reserve) chosen by configuration.
package scheduler

import (
	"fmt"
	"hora/scheduler/mix"
	"math"
)

// Inf stands for "no limit" (a duration) or "never" (a time).
var Inf = math.Inf(1)

// JobID identifies a job; horad allocates them, the Engine never invents one.
type JobID int64

// BatchStep is the Step of the single process of a rigid job (Slurm's batch
// step). Divisible jobs run chunks numbered 0, 1, 2, ...
const BatchStep = -1

// Job is what the Engine needs to know about a job to schedule it.
type Job struct {
	ID          JobID
	Partition   string  // resolved by the driver; "" = the default partition
	User        uint32  // for fairness and reservations' access lists
	Nodes       int     // requested node count, ≥ 1
	TimeLimit   float64 // seconds the job may run; Inf = unlimited
	Submit      float64 // submit time
	Begin       float64 // earliest start; 0 = none
	Deadline    float64 // must end by; 0 = none
	Load        float64 // divisible load σ (data units); 0 = rigid job
	Held        bool    // user hold (JobHeldUser)
	Reservation string  // run inside this named reservation
	// Priority orders a partition's pending jobs, higher first, before
	// Submit (the batch policy; Slurm's priority/basic with scontrol
	// update Nice=/Priority= and scontrol top). 0 for every job (replay)
	// leaves the order FCFS.
	Priority int64

	// Name is the job name, which singleton dependencies compare.
	Name string
	// Array is the job array this job is a task of (0 = none) and
	// ArrayLimit that array's throttle (%N; 0 = none): the Engine keeps
	// at most ArrayLimit of its tasks in the policy at once (gate.go).
	Array      JobID
	ArrayLimit int
	// Dep is the job's dependency (nil = none) and KillOnInvalidDep ends
	// the job, instead of keeping it pending, when Dep can never hold.
	Dep              *Dependency
	KillOnInvalidDep bool
	// Signal, when set, is sent to the running job SignalBefore seconds
	// before its time limit (sbatch --signal): a Signal action, so that
	// replay sees it too.
	Signal       string
	SignalBefore float64
	// Req is the consumable-resource request (tres.go); nil = whole nodes.
	Req *Request
	// Periodic makes a periodic real-time job (periodic.go); nil = not.
	Periodic *Periodic
}

// NodeSpec describes one node of the cluster.
type NodeSpec struct {
	Name string
	CPUs int
	Rate float64 // relative speed for heterogeneous nodes; 0 = 1
	// Sockets × Cores × Threads = CPUs when set (Threads is what
	// --hint=nomultithread counts); MemMB the memory jobs may use.
	Sockets, Cores, Threads int
	MemMB                   int64
	Gres                    []GresDef
	Features                []string
}

// PartitionSpec describes one partition: its nodes and the policy that owns
// their schedule.
type PartitionSpec struct {
	Name        string
	Nodes       []string // node names, in configuration order
	Policy      string   // "batch" (default), "dlt", "reserve"
	Default     bool
	MaxTime     float64 // Inf = unlimited
	DefaultTime float64 // applied when a job gives no limit; Inf = unlimited
	// MaxNodes caps the nodes of one job; a job above it stays PENDING with
	// reason PartitionNodeLimit (Slurm's MaxNodes). 0 = unlimited.
	MaxNodes int
	// Backfill selects the batch flavour: "easy" (default) or "fcfs".
	Backfill string
	// DefMemPerCPU (MiB) is the memory of a job that names none, per CPU;
	// 0 = such a job holds no memory (not counted, not limited).
	// MaxMemPerNode (MiB, 0 = none) refuses larger jobs at submit.
	DefMemPerCPU, MaxMemPerNode int64
	// OverSubscribe: "" or "NO" (CPUs are never shared), "EXCLUSIVE"
	// (every job takes whole nodes), "YES[:N]" (a job that asks -s shares
	// each CPU with up to N-1 other such jobs), "FORCE[:N]" (every resource
	// job does); N defaults to 4 (ParseOverSubscribe, docs/resources.md).
	OverSubscribe string
	// Params holds policy-specific settings (e.g. dlt: cms, cps, admission;
	// reserve: strategy), already validated by the config layer.
	Params map[string]string
}

// Config is the static shape of the cluster.
type Config struct {
	Nodes      []NodeSpec
	Partitions []PartitionSpec
	// Ratio is the fairness ratio x:y of [mix]; periodic RT jobs are
	// admitted against the share x/(x+y). Zero = 1:0 (no [mix]).
	Ratio mix.Ratio
	// Gang, when set ([mix] mode gang), makes periodic RT admission the
	// 1GS rows test of be-rt-mix-2001 §4.4 (mix.GangAdmit) instead of the
	// TDM/PS utilisation test (mix.Loads).
	Gang *GangSpec
}

// GangSpec is the 1GS matrix periodic jobs are admitted into: M rows,
// quantum Q and row switch δ in seconds.
type GangSpec struct {
	Rows          int
	Quantum, Sync float64
}

// Event is an input to the Engine. Every event carries Now.
type Event interface{ When() float64 }

// Submit offers a new job. The Engine answers with Admit or Reject (and maybe
// Starts) in the same call.
type Submit struct {
	Now float64
	Job Job
}

// Cancel removes a job, pending or running. For a running job the driver
// stops the processes; the Engine frees the nodes on the Finished event.
type Cancel struct {
	Now float64
	ID  JobID
}

// Hold and Release set and clear a user hold on a pending job.
type Hold struct {
	Now float64
	ID  JobID
}

// Release clears a hold.
type Release struct {
	Now float64
	ID  JobID
}

// Finished reports that a job (Step == BatchStep) or one chunk of a divisible
// job ended, for whatever reason. Measured times feed back into estimates.
type Finished struct {
	Now  float64
	ID   JobID
	Step int
	// Failed is true when the step did not complete its work (non-zero exit,
	// signal, timeout, node failure).
	Failed bool
	// NodeFail is true when the step failed because of its node or its
	// launch (unreachable node, staging or launch error, node lost), not
	// because of its own exit status. Policies that implement NodeFailer
	// hear of it.
	NodeFail bool
	// Requeue is true when the job goes back to pending (scontrol requeue,
	// a node failure with --requeue; the driver Restores it next): the jobs
	// that depend on it keep waiting for its next run.
	Requeue bool
	// Transfer and Compute are measured seconds of a chunk whose data was
	// sent before it ran (0 = not measured): the time of the transfer and
	// of the run. Policies that implement Measurer learn from them.
	Transfer, Compute float64
}

// NodeDown takes a node out of service; NodeUp returns it.
type NodeDown struct {
	Now  float64
	Node string
}

// NodeUp returns a node to service.
type NodeUp struct {
	Now  float64
	Node string
}

// Tick lets time pass: begin times, deadlines of pending jobs, rotations.
type Tick struct{ Now float64 }

// Restore re-creates a job that the store knows, after a restart, without
// admission (it was admitted before the crash). Running jobs keep their nodes.
type Restore struct {
	Now     float64
	Job     Job
	Running bool
	Nodes   []string // allocated nodes when Running
	Started float64  // start time when Running
	// Alloc is a running resource job's allocation (nil: whole nodes).
	Alloc []NodeAlloc
	// A running divisible job (policy a ChunkRestorer) comes back with the
	// chunks still running on their nodes, the load already handed out
	// (Done: the next chunk's offset) and the next step number.
	Chunks   []RestoredChunk
	Done     float64
	NextStep int
}

// RestoredChunk is a chunk found running on its node after a restart, or,
// with Lost, one whose start was recorded but which never reached its node
// (its range is to be run again if the job can still be guaranteed; it
// holds no node).
type RestoredChunk struct {
	Step         int
	Node         string
	Offset, Size float64
	Start        float64
	Lost         bool
}

func (e Submit) When() float64   { return e.Now }
func (e Cancel) When() float64   { return e.Now }
func (e Hold) When() float64     { return e.Now }
func (e Release) When() float64  { return e.Now }
func (e Finished) When() float64 { return e.Now }
func (e NodeDown) When() float64 { return e.Now }
func (e NodeUp) When() float64   { return e.Now }
func (e Tick) When() float64     { return e.Now }
func (e Restore) When() float64  { return e.Now }

// Action is an output of the Engine, for the driver to carry out.
type Action interface{ action() }

// Admit confirms that a submitted job is accepted (and, for real-time jobs,
// that its deadline is guaranteed).
type Admit struct{ ID JobID }

// Reject refuses a submitted job; the Engine keeps nothing of it.
type Reject struct {
	ID  JobID
	Err *AdmissionError
}

// Start runs a job (Step == BatchStep, on all Nodes, the script on Nodes[0])
// or one chunk of a divisible job (Step ≥ 0 on Nodes[0], data [Offset, Offset+Size)).
type Start struct {
	ID     JobID
	Step   int
	Nodes  []string
	Offset float64
	Size   float64
	// Expect is when the Engine plans the step to end (start + limit, or the
	// chunk's planned completion); Inf when unlimited.
	Expect float64
	// Alloc is, for a job that asked for resources, what it holds on each
	// of Nodes (same order); nil when it holds the nodes whole.
	Alloc []NodeAlloc
}

// Signal asks the driver to signal a running job's processes (e.g. SIGSTOP and
// SIGCONT for time-sharing, TERM for an overrun that threatens a deadline).
type Signal struct {
	ID   JobID
	Step int
	Sig  string // "STOP", "CONT", "TERM", "KILL"
}

// End finishes a job that will not run (or run further): a pending job whose
// deadline can no longer be met (State DEADLINE), or a job killed by policy.
type End struct {
	ID     JobID
	State  string // Slurm long state name, e.g. "DEADLINE"
	Reason string // Slurm reason, e.g. "DeadLine"
}

// Requeue puts a running job back to pending (node failure with --requeue).
type Requeue struct{ ID JobID }

func (Admit) action()   {}
func (Reject) action()  {}
func (Start) action()   {}
func (Signal) action()  {}
func (End) action()     {}
func (Requeue) action() {}

// Verdict says whether a refusal could change with time: "not now" versus
// "never". For admission control the difference is the whole point.
type Verdict int

const (
	// Never: the job can never be accepted as asked (too many nodes, limit
	// above the partition's maximum, unknown partition).
	Never Verdict = iota
	// NotNow: the job cannot be guaranteed now; Earliest says what could be.
	NotNow
)

// AdmissionError is a refusal with a reason a user can read. Message is the
// Slurm strerror text sbatch prints after "Batch job submission failed: ".
type AdmissionError struct {
	Verdict Verdict
	Code    string // api.Code* identifier
	Message string
	// EarliestDeadline is, for a refused deadline, the earliest deadline the
	// scheduler could have guaranteed (0 = none known).
	EarliestDeadline float64
	// EarliestStart is, for a refused booking, the earliest feasible start.
	EarliestStart float64
}

func (e *AdmissionError) Error() string {
	if e.EarliestDeadline > 0 {
		return fmt.Sprintf("%s (earliest guaranteed deadline %.0f)", e.Message, e.EarliestDeadline)
	}
	return e.Message
}
