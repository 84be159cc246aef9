package scheduler

import (
	"fmt"
	"slices"
	"strings"
)

// Policy owns the schedule of one partition. The Engine owns the nodes and
// the job table; the policy owns the order in which pending jobs get them.
// Every method is one concern, so that policies as different as a FCFS queue
// (batch), divisible-load admission (dlt) and submit-time booking (reserve)
// fit the same shape. A policy is built by its PolicyFactory with a handle on
// its *Partition, through which it reads node state and starts work.
//
// Ownership: the *Job passed to Admit and Restore belongs to the Engine and
// stays valid until the job leaves (Remove, End, or done in StepFinished). The
// Engine sets Job.Held itself before it calls Hold or Release. A policy must
// not keep a job after it tells the Engine it is done with it.
//
// Determinism: a policy sees time only through `now`, must not iterate maps
// where order shows, and must give the same answers to the same calls.
type Policy interface {
	// Admit accepts a new pending job or refuses it with an *AdmissionError
	// (Verdict Never or NotNow). The Engine has already resolved the
	// partition, the node count and the time limit (TimeLimit > 0).
	Admit(now float64, j *Job) error
	// Restore re-creates a job after a restart without admission. A running
	// job already holds its nodes (step BatchStep) in the Partition.
	Restore(now float64, j *Job, running bool)
	// Remove forgets a job: a pending job is cancelled; for a running job it
	// means "start nothing more for it" (the driver kills what runs and the
	// Engine frees the nodes on Finished without calling the policy again).
	Remove(now float64, id JobID)
	// Hold and Release tell the policy that Job.Held changed.
	Hold(now float64, id JobID)
	Release(now float64, id JobID)
	// StepFinished reports that a step ended (its nodes are already free).
	// The policy answers whether the job has nothing more to run.
	StepFinished(now float64, id JobID, step int, failed bool) (done bool)
	// Schedule is a scheduling pass: start what may start now through
	// Partition.Start, end what can no longer run through Partition.End.
	Schedule(now float64)
	// Test says when and where j would start, changing nothing
	// (sbatch --test-only). j is not in the queue; treat it as the last job.
	Test(now float64, j *Job) (start float64, nodes []string, err error)
	// Reason is the Slurm reason code of a pending job the policy holds
	// ("Priority", "Resources", "BeginTime", "JobHeldUser", ...), "" if unknown.
	Reason(id JobID) string
	// Pending appends the policy's pending jobs in the order it would serve
	// them (squeue's order) to dst.
	Pending(dst []JobID) []JobID
	// NextWakeup is the earliest time after the last call at which a Tick
	// could change anything (a begin time, a deadline); Inf if none. It must
	// be later than the `now` of the last pass, or a driver would spin.
	NextWakeup() float64
}

// PolicyFactory builds the policy of one partition. It validates the
// partition's policy-specific settings (Backfill, Params) and returns an
// error that names the bad setting.
type PolicyFactory func(p *Partition) (Policy, error)

// registry is written only from init functions (RegisterPolicy) and read
// afterwards, so it needs no lock.
var registry = map[string]PolicyFactory{}

// RegisterPolicy makes a policy selectable by PartitionSpec.Policy. Policy
// packages call it from init; scheduler never imports them (that would be a
// cycle), so a driver blank-imports the ones it offers:
//
//	import _ "hora/scheduler/batch"
func RegisterPolicy(name string, f PolicyFactory) {
	if name == "" || f == nil {
		panic("scheduler: RegisterPolicy with empty name or nil factory")
	}
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("scheduler: policy %q registered twice", name))
	}
	registry[name] = f
}

// Policies lists the registered policy names, sorted.
func Policies() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func lookupPolicy(name string) (PolicyFactory, error) {
	if f, ok := registry[name]; ok {
		return f, nil
	}
	known := Policies()
	hint := "none registered; blank-import hora/scheduler/batch"
	if len(known) > 0 {
		hint = "registered: " + strings.Join(known, ", ")
	}
	return nil, fmt.Errorf("unknown policy %q (%s)", name, hint)
}

// Measurer is implemented by policies that learn from a step's measured
// transfer and compute times (dlt). The Engine calls StepMeasured just
// before StepFinished when a Finished event carries them.
type Measurer interface {
	StepMeasured(now float64, id JobID, step int, transfer, compute float64)
}

// NodeFailer is implemented by policies that treat a step lost to its node
// or launch apart from a step that failed by itself (dlt re-sends the data
// of such a chunk). The Engine calls StepNodeFailed just before
// StepFinished when a Finished event has NodeFail set.
type NodeFailer interface {
	StepNodeFailed(now float64, id JobID, step int)
}

// ChunkRestorer is implemented by policies that run jobs as chunks (dlt):
// after a restart a running job's chunks are re-attached one by one (the
// Engine has allocated their nodes, step = chunk step) and the rest of its
// load continues from done.
type ChunkRestorer interface {
	RestoreChunks(now float64, j *Job, chunks []RestoredChunk, done float64, nextStep int)
}

// NodeWatcher is implemented by policies whose guarantees depend on the
// partition's capacity (dlt): the Engine tells them when node i of the
// partition goes down or comes back, after updating the Partition.
type NodeWatcher interface {
	NodeChanged(now float64, i int, down bool)
}

// RunningReasoner is implemented by policies that can give a running job a
// reason (a divisible job whose deadline is no longer guaranteed); "" = none.
type RunningReasoner interface {
	RunningReason(id JobID) string
}

// Planner is implemented by policies that book jobs ahead of time
// (reservations): they can say when a pending job is planned to start, which
// `squeue --start` shows. Policies that only queue (batch) need not.
type Planner interface {
	PlannedStart(id JobID) (start float64, ok bool)
}

// NodeSharer is implemented by policies that schedule jobs' resource
// requests (CPUs, memory, gres) on shared nodes (tres.go). Jobs of other
// policies get whole nodes: as many as their request needs.
type NodeSharer interface {
	SharesNodes() bool
}
