package replay

import (
	"container/heap"
	"context"
	"fmt"
	"math"

	"hora/replay/internal/refsched"
	"hora/scheduler"
)

// Scheduler is what the simulator needs of scheduler.Engine: one ordered
// stream of events in, actions out.
type Scheduler interface {
	Handle(ev scheduler.Event) []scheduler.Action
}

// waker is implemented by an Engine that wants a Tick at a future time
// (begin times, pending deadlines).
type waker interface{ NextWakeup() float64 }

// Options configure a simulation.
type Options struct {
	Policy       string // "easy" (default) or "fcfs"
	Procs        int    // machine size in processors; 0 = the workload's
	CoresPerNode int    // processors per node; 0 = 1
	KillAtLimit  bool   // end a job at its requested time if it runs longer
	// Engine selects the scheduler: "hora" (scheduler.Engine, the default)
	// or "reference" (replay/internal/refsched, an independent oracle).
	Engine string
	// SubmitsFirst reverses the tie rule (submissions at t before
	// terminations at t); for measuring the rule's effect only.
	SubmitsFirst bool
	// Progress, if set, is called now and then with the jobs finished so far.
	Progress func(done, total int)
}

// Result is what happened to one job.
type Result struct {
	Admitted bool
	Rejected bool
	Reason   string // rejection or End reason
	Started  bool
	Start    float64
	End      float64 // when it left its nodes (or was ended pending)
	Nodes    int
	Killed   bool // stopped at its requested time (--kill-at-limit)
}

// Outcome is a finished simulation: Results[i] belongs to Workload.Jobs[i].
type Outcome struct {
	Workload *Workload
	Opts     Options
	Nodes    int // simulated nodes
	Cores    int // processors per node
	Results  []Result
	Events   int // events handed to the scheduler
}

// Event kinds, in the order they are processed at equal times. The tie rule:
// at the same instant, terminations come first, then submissions, then ticks;
// within a kind, lower job ids first. So a job submitted at t sees the nodes
// freed at t, as on a real system where a node that became idle at t is idle
// when a request arrives at t. The scheduler runs after every event, as
// pyss does (after every submission and every termination).
const (
	kindFinish = iota
	kindSubmit
	kindTick
)

type event struct {
	t    float64
	kind int
	id   scheduler.JobID
	idx  int32 // job index, −1 for ticks
	gen  int32 // start generation, to ignore finishes of requeued jobs
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	a, b := &h[i], &h[j]
	if a.t != b.t {
		return a.t < b.t
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	if a.id != b.id {
		return a.id < b.id
	}
	return a.idx < b.idx
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// newEngine builds the scheduler.Engine; set by engine_hora.go once the
// Engine exists, so the rest of the simulator does not depend on its
// constructor's exact shape.
var newEngine func(cfg scheduler.Config) (Scheduler, error)

// Simulate replays w through the scheduler selected by opt.
func Simulate(ctx context.Context, w *Workload, opt Options) (*Outcome, error) {
	if opt.Policy == "" {
		opt.Policy = "easy"
	}
	if opt.Policy != "easy" && opt.Policy != "fcfs" {
		return nil, fmt.Errorf("unknown policy %q (want fcfs or easy)", opt.Policy)
	}
	cores := max(opt.CoresPerNode, 1)
	procs := opt.Procs
	if procs == 0 {
		procs = w.Procs
	}
	nnodes := procs / cores
	if nnodes < 1 {
		return nil, fmt.Errorf("machine of %d processors has no node of %d cores", procs, cores)
	}
	cfg := scheduler.Config{}
	names := make([]string, nnodes)
	nodeIdx := make(map[string]int, nnodes)
	for i := range names {
		names[i] = fmt.Sprintf("sim%05d", i+1)
		nodeIdx[names[i]] = i
		cfg.Nodes = append(cfg.Nodes, scheduler.NodeSpec{Name: names[i], CPUs: cores})
	}
	cfg.Partitions = []scheduler.PartitionSpec{{Name: "replay", Nodes: names, Policy: "batch",
		Default: true, MaxTime: scheduler.Inf, DefaultTime: scheduler.Inf, Backfill: opt.Policy}}

	var sch Scheduler
	var err error
	switch opt.Engine {
	case "", "hora":
		if newEngine == nil {
			return nil, fmt.Errorf("scheduler.Engine is not built into this binary yet (use --engine=reference)")
		}
		sch, err = newEngine(cfg)
	case "reference":
		sch, err = refsched.New(cfg, opt.Policy)
	default:
		err = fmt.Errorf("unknown engine %q (want hora or reference)", opt.Engine)
	}
	if err != nil {
		return nil, err
	}
	wk, _ := sch.(waker)

	out := &Outcome{Workload: w, Opts: opt, Nodes: nnodes, Cores: cores, Results: make([]Result, len(w.Jobs))}
	byID := make(map[scheduler.JobID]int32, len(w.Jobs))
	h := make(eventHeap, 0, len(w.Jobs)+64)
	for i := range w.Jobs {
		j := &w.Jobs[i]
		byID[j.ID] = int32(i)
		h = append(h, event{t: j.Submit, kind: kindSubmit, id: j.ID, idx: int32(i)})
	}
	heap.Init(&h)
	if opt.SubmitsFirst {
		for i := range h {
			if h[i].kind == kindSubmit {
				h[i].kind = -1
			}
		}
		heap.Init(&h)
	}
	busy := make([]int32, nnodes) // job index + 1 on each node, 0 = idle
	gen := make([]int32, len(w.Jobs))
	alloc := make([][]int, len(w.Jobs))
	running := 0
	done := 0
	nextTick := math.Inf(1)
	clock := math.Inf(-1) // the virtual clock: time of the event being handled

	release := func(i int32) {
		for _, n := range alloc[i] {
			busy[n] = 0
		}
		alloc[i] = nil
		running--
	}
	var apply func(now float64, acts []scheduler.Action) error
	apply = func(now float64, acts []scheduler.Action) error {
		for _, a := range acts {
			switch a := a.(type) {
			case scheduler.Admit:
				i, ok := byID[a.ID]
				if !ok {
					return fmt.Errorf("t=%.0f: Admit of unknown job %d", now, a.ID)
				}
				out.Results[i].Admitted = true
			case scheduler.Reject:
				i, ok := byID[a.ID]
				if !ok {
					return fmt.Errorf("t=%.0f: Reject of unknown job %d", now, a.ID)
				}
				r := &out.Results[i]
				r.Rejected, r.End = true, now
				if a.Err != nil {
					r.Reason = a.Err.Message
				}
				done++
			case scheduler.Start:
				i, ok := byID[a.ID]
				if !ok {
					return fmt.Errorf("t=%.0f: Start of unknown job %d", now, a.ID)
				}
				if a.Step != scheduler.BatchStep {
					return fmt.Errorf("t=%.0f: job %d: chunk starts are not simulated yet", now, a.ID)
				}
				r, j := &out.Results[i], &w.Jobs[i]
				if alloc[i] != nil {
					return fmt.Errorf("t=%.0f: job %d started twice", now, a.ID)
				}
				if len(a.Nodes) != ceilDiv(j.Procs, cores) {
					return fmt.Errorf("t=%.0f: job %d started on %d nodes, asked for %d", now, a.ID, len(a.Nodes), ceilDiv(j.Procs, cores))
				}
				ns := make([]int, len(a.Nodes))
				for k, name := range a.Nodes {
					n, ok := nodeIdx[name]
					if !ok {
						return fmt.Errorf("t=%.0f: job %d started on unknown node %q", now, a.ID, name)
					}
					if busy[n] != 0 {
						return fmt.Errorf("t=%.0f: job %d started on node %s, busy with job %d", now, a.ID, name, w.Jobs[busy[n]-1].ID)
					}
					busy[n] = i + 1
					ns[k] = n
				}
				alloc[i] = ns
				running++
				if !r.Started {
					r.Start = now
				}
				r.Started, r.Nodes = true, len(ns)
				run := j.Run
				if opt.KillAtLimit && run > j.Limit {
					run, r.Killed = j.Limit, true
				}
				gen[i]++
				heap.Push(&h, event{t: now + run, kind: kindFinish, id: j.ID, idx: i, gen: gen[i]})
			case scheduler.End:
				i, ok := byID[a.ID]
				if !ok {
					return fmt.Errorf("t=%.0f: End of unknown job %d", now, a.ID)
				}
				r := &out.Results[i]
				r.Reason = a.State
				if alloc[i] != nil {
					// Killed while running: it leaves its nodes now.
					gen[i]++
					heap.Push(&h, event{t: now, kind: kindFinish, id: a.ID, idx: i, gen: gen[i]})
					r.Killed = true
				} else {
					r.End = now
					done++
				}
			case scheduler.Requeue:
				i, ok := byID[a.ID]
				if !ok || alloc[i] == nil {
					return fmt.Errorf("t=%.0f: Requeue of job %d, not running", now, a.ID)
				}
				release(i)
				gen[i]++ // its pending finish no longer counts
			case scheduler.Signal:
				// Time-sharing signals do not change a simulated batch job.
			}
		}
		return nil
	}

	for h.Len() > 0 {
		if out.Events&0xfff == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if opt.Progress != nil {
				opt.Progress(done, len(w.Jobs))
			}
		}
		if wk != nil && nextTick > clock && nextTick < h[0].t {
			now := nextTick
			clock = now
			nextTick = math.Inf(1)
			out.Events++
			if err := apply(now, sch.Handle(scheduler.Tick{Now: now})); err != nil {
				return nil, err
			}
			nextTick = wk.NextWakeup()
			continue
		}
		ev := heap.Pop(&h).(event)
		clock = ev.t
		var acts []scheduler.Action
		switch {
		case ev.kind == kindFinish:
			if ev.gen != gen[ev.idx] {
				continue
			}
			release(ev.idx)
			r := &out.Results[ev.idx]
			r.End = ev.t
			done++
			acts = sch.Handle(scheduler.Finished{Now: ev.t, ID: ev.id, Step: scheduler.BatchStep, Failed: r.Killed})
		default: // submission
			j := &w.Jobs[ev.idx]
			sj := scheduler.Job{ID: j.ID, Partition: "replay", User: j.User, Nodes: ceilDiv(j.Procs, cores),
				TimeLimit: j.Limit, Submit: j.Submit, Deadline: j.Deadline}
			acts = sch.Handle(scheduler.Submit{Now: ev.t, Job: sj})
		}
		out.Events++
		if err := apply(ev.t, acts); err != nil {
			return nil, err
		}
		if wk != nil {
			nextTick = wk.NextWakeup()
		}
	}
	if opt.Progress != nil {
		opt.Progress(done, len(w.Jobs))
	}
	if running != 0 {
		return nil, fmt.Errorf("simulation ended with %d jobs on nodes", running)
	}
	return out, nil
}
