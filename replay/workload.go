// Package replay is hora's second driver of scheduler.Engine (DESIGN.md §3):
// it replays a workload — a historic SWF log, or a paper's synthetic workload
// — through the Engine in virtual time, applies the Engine's actions to
// simulated nodes (whole jobs, or the chunks of divisible jobs), and reports
// the metrics scheduling studies use.
//
// The flow is: Workload (FromSWF or a Generator, optionally AddAdvance and
// AddDeadlines) → Simulate (event heap, virtual clock, simulated nodes,
// Engine) → Outcome (one Result per job) → Summarize (metrics, per class and
// per size bin) → reports (Markdown, JSON, CSV, SVG, SWF). CompareRuns and
// CompareMain put several policies side by side; Reproduce regenerates
// docs/reproductions. Coallocate is the thesis' chapter 5 replay without the
// Engine: each request co-allocated by scheduler/reserve at its submission.
package replay

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"hora/replay/swf"
	"hora/scheduler"
)

// Job is one job of a workload, in trace seconds.
type Job struct {
	ID       scheduler.JobID // unique within the workload; the SWF job number for logs
	Submit   float64
	Run      float64 // actual run time, what the simulated node takes
	Limit    float64 // requested time, what the scheduler sees; scheduler.Inf = none
	Procs    int     // processors asked for
	User     uint32
	Deadline float64 // absolute; 0 = none (best-effort job)
	Begin    float64 // earliest start (advance reservation's ready time); 0 = none
	// Partition is where the job is submitted; "" = the default partition
	// (RTPartition for a log's RT class, --rt-class).
	Partition string
	// Load is the divisible load σ of a divisible real-time job (DLT); 0 for
	// a rigid job. A divisible job's Run is its work on one node, E(σ, 1).
	Load float64
	// RecordedWait is the wait time written in the log (-1 unknown); used by
	// --as-recorded.
	RecordedWait float64
	Record       swf.Record // the source record, for --out-swf
}

// Class is "RT" for a job with a deadline, "BE" otherwise.
func (j *Job) Class() string {
	if j.Deadline > 0 {
		return "RT"
	}
	return "BE"
}

// Workload is an ordered set of jobs and the machine they ran on.
type Workload struct {
	Name     string
	Procs    int // machine size in processors (header MaxProcs for logs)
	Jobs     []Job
	Header   swf.Header
	SWFStats *swf.Stats // nil for synthetic workloads
	// Cluster, when set, is the machine and partition (policy and params)
	// the workload was made for: a generator's cluster. Nil for logs, which
	// run on Procs/CoresPerNode nodes in one batch partition.
	Cluster *scheduler.Config
	// Offered is the load the generator aimed at (0 for logs), and Doc says
	// how the workload was made, for reports.
	Offered float64
	Doc     string
	// Ramp is how far ahead of its submission a job may be booked (a
	// generator's horizon): steady-state utilization is measured from the
	// first submission + Ramp to the last submission.
	Ramp float64
}

// FromSWF converts a parsed log's records to a workload, sorted by (submit,
// job number). The machine size is the header's MaxProcs, or the largest job
// when the header gives none.
func FromSWF(lg *swf.Log) (*Workload, error) {
	w := &Workload{Name: lg.Name, Procs: int(lg.MaxProcs()), Header: lg.Header, SWFStats: &lg.Stats}
	w.Jobs = make([]Job, 0, len(lg.Records))
	seen := make(map[scheduler.JobID]bool, len(lg.Records))
	for _, r := range lg.Records {
		id := scheduler.JobID(r.Job)
		if seen[id] {
			return nil, fmt.Errorf("%s: job number %d appears twice", lg.Name, r.Job)
		}
		seen[id] = true
		limit := float64(r.ReqTime)
		if r.ReqTime <= 0 {
			limit = scheduler.Inf
		}
		user := uint32(0)
		if r.User > 0 {
			user = uint32(r.User)
		}
		w.Jobs = append(w.Jobs, Job{ID: id, Submit: float64(r.Submit), Run: float64(r.Run), Limit: limit,
			Procs: int(r.Procs()), User: user, RecordedWait: float64(r.Wait), Record: r})
		if p := int(r.Procs()); w.Procs == 0 || (lg.MaxProcs() == 0 && p > w.Procs) {
			w.Procs = max(w.Procs, p)
		}
	}
	slices.SortStableFunc(w.Jobs, func(a, b Job) int {
		if a.Submit != b.Submit {
			if a.Submit < b.Submit {
				return -1
			}
			return 1
		}
		return int(a.ID - b.ID)
	})
	return w, nil
}

// Generator makes a synthetic workload. This is the extension point for the
// paper workloads (`--synthetic rt-dlt-2005|ac-fast-2009|castillo-ch3|
// castillo-ch4`): each registers itself with Register from its own file and
// draws every random number from rng, so a seed fixes the workload.
type Generator interface {
	// Generate returns a workload; params are the generator's own settings
	// (e.g. "load=0.8"), validated by the generator.
	Generate(rng *rand.Rand, params map[string]string) (*Workload, error)
	// Doc is a one-line description for --help.
	Doc() string
}

var generators = map[string]Generator{}

// Register adds a named workload generator.
func Register(name string, g Generator) { generators[name] = g }

// Generators lists the registered generator names, sorted.
func Generators() []string {
	names := make([]string, 0, len(generators))
	for n := range generators {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Generate makes the named synthetic workload from seed and params.
func Generate(name string, seed uint64, params map[string]string) (*Workload, error) {
	g, ok := generators[name]
	if !ok {
		known := Generators()
		if len(known) == 0 {
			return nil, fmt.Errorf("synthetic workload %q: no generator is implemented yet", name)
		}
		return nil, fmt.Errorf("synthetic workload %q unknown (known: %s)", name, strings.Join(known, ", "))
	}
	return g.Generate(newRand(seed), params)
}

// newRand is the one way replay seeds math/rand/v2: a seed fixes the stream.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func finite(x float64) bool { return !math.IsInf(x, 0) && !math.IsNaN(x) }
