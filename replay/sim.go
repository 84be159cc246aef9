package replay

import (
	"container/heap"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"hora/replay/internal/refsched"
	"hora/scheduler"
)

// Scheduler is what the simulator needs of scheduler.Engine: one ordered
// stream of events in, actions out.
type Scheduler interface {
	Handle(ev scheduler.Event) []scheduler.Action
}

// batcher is implemented by an Engine that can take the events of one
// instant together and schedule once after them (scheduler.Engine).
type batcher interface {
	HandleBatch(now float64, evs []scheduler.Event) ([]scheduler.Action, error)
}

// waker is implemented by an Engine that wants a Tick at a future time
// (begin times, pending deadlines).
type waker interface{ NextWakeup() float64 }

// Options configure a simulation.
type Options struct {
	// Policy is "easy" (default for logs) or "fcfs" — the batch policy with
	// that backfilling — or the name of a registered scheduler policy
	// ("reserve", "dlt", ...). "" keeps the policy of the workload's
	// cluster (a generator's) or of Config.
	Policy string
	// Params override the default partition's policy parameters (e.g.
	// "admission" for dlt, "strategy" for reserve).
	Params map[string]string
	// RTShare, when > 0, adds RTPartition: the reserve policy on the default
	// partition's nodes with the RT share s = RTShare (--rt-class: a log's
	// RT class beside its best effort, under --ratio).
	RTShare      float64
	Procs        int  // machine size in processors; 0 = the workload's
	CoresPerNode int  // processors per node; 0 = 1
	KillAtLimit  bool // end a job at its requested time if it runs longer
	// Dependencies makes SWF field 17 (preceding job) a dependency: a job
	// waits until its preceding job has ended and field 18 (think time)
	// seconds more, in the simulation's own time (scheduler/gate.go), as
	// horad resolves --dependency=afterany:ID+think.
	Dependencies bool
	// PerCPU schedules each rigid job by processors (one task of one CPU
	// per processor) on shared nodes of CoresPerNode CPUs, through the
	// Engine's consumable-resource arithmetic, instead of on
	// ceil(procs/cores) whole nodes.
	PerCPU bool
	// Config, if set, is the cluster to simulate (nodes, partitions and
	// their policies, e.g. from hora.toml); jobs go to its default partition.
	// Otherwise the workload's Cluster, otherwise Procs/CoresPerNode nodes in
	// one batch partition.
	Config *scheduler.Config
	// ChunkScale multiplies the planned length (Start.Expect − now) of every
	// chunk of a divisible job (0 = 1: chunks end as planned), and
	// ChunkJitter p multiplies it again by a uniform factor in [1−p, 1+p]
	// drawn from Seed: the actual costs the estimates did not foresee.
	ChunkScale  float64
	ChunkJitter float64
	Seed        uint64
	// Engine selects the scheduler: "hora" (scheduler.Engine, the default)
	// or "reference" (replay/internal/refsched, an independent oracle).
	Engine string
	// Ties is the rule for events of the same instant (see the kinds
	// below): "pyss", "ends-first" or "per-event"; "" picks "pyss" for the
	// batch policy (whose reference is pyss) and "per-event" for the others.
	Ties string
	// Progress, if set, is called now and then with the jobs finished so far.
	Progress func(done, total int)
}

// Result is what happened to one job.
type Result struct {
	Admitted bool
	Rejected bool
	Ended    bool   // ended by the scheduler (End action), e.g. DEADLINE while pending
	Reason   string // rejection or End reason
	Started  bool
	Start    float64 // first step's start
	End      float64 // when its last step left its nodes (or it was ended pending)
	Nodes    int     // nodes of a rigid job; nodes used by the chunks of a divisible one
	Chunks   int     // chunks run (divisible jobs)
	Busy     float64 // node-seconds its steps held nodes
	Killed   bool    // stopped at its requested time (--kill-at-limit) or by the scheduler
	// Retries is how many times the start of the request was moved on by
	// Δt before it was placed (thesis Table 5.3); set by Coallocate only.
	Retries int
}

// Outcome is a finished simulation: Results[i] belongs to Workload.Jobs[i].
type Outcome struct {
	Workload *Workload
	Opts     Options
	Label    string // the policy as configured, e.g. "easy", "reserve/min-lip"
	Nodes    int    // simulated nodes
	Cores    int    // processors per node
	Results  []Result
	Events   int // events handed to the scheduler
	// Retries says that Results carry retry counts (Coallocate), and
	// Unbooked counts the jobs Coallocate could not book as logged.
	Retries  bool
	Unbooked int
}

// Tie rules: the order of the events of one instant, and after which of
// them the scheduler runs a pass. Submissions of an instant always go in
// job id order, one pass after each; terminations in the order their steps
// started (gen).
//
//   - TiesPyss: submissions at t first, then the terminations, grouped as
//     pyss sees them (tieGroups). This is pyss' order (its events of one
//     instant go by creation order, and the submissions were all made
//     before the run), and with it hora's EASY starts every job of the
//     pyss reference schedules of KTH, CTC and SDSC at the same second
//     (docs/reproductions, section 3).
//   - TiesEndsFirst: the terminations first, grouped as above, then the
//     submissions; a job submitted at t is admitted knowing every node
//     freed at t.
//   - TiesPerEvent: the terminations first, then the submissions, a pass
//     after every single event (the Engine's per-event API, as horad
//     drives it); the rule for the policies other than batch, whose
//     published reproductions were measured with it.
const (
	TiesPyss      = "pyss"
	TiesEndsFirst = "ends-first"
	TiesPerEvent  = "per-event"
)

// Event kinds, in the order they are processed at equal times.
const (
	kindSubmitFirst = iota - 1 // a submission under TiesPyss
	kindFinish
	kindSubmit
)

type event struct {
	t    float64
	kind int
	id   scheduler.JobID
	idx  int32 // job index, −1 for ticks
	step int32 // BatchStep or a chunk number
	gen  int32 // start generation, to ignore finishes of requeued or killed steps
	// atLimit: the step ends at the very time the scheduler expected
	// (its Expect, start + time limit for a batch job).
	atLimit bool
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
	if a.gen != b.gen {
		// Terminations in the order their jobs started (submissions
		// have gen 0 and fall through to the job id).
		return a.gen < b.gen
	}
	if a.id != b.id {
		return a.id < b.id
	}
	if a.idx != b.idx {
		return a.idx < b.idx
	}
	return a.step < b.step
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

// machine is the cluster a simulation runs: the Engine's config and how
// the simulator maps a job's processors to nodes.
type machine struct {
	cfg   scheduler.Config
	cores int
	label string
}

// batchFlavours are the Options.Policy values that mean the batch policy.
var batchFlavours = []string{"easy", "fcfs"}

// buildMachine chooses the cluster (Options.Config, the workload's Cluster,
// or a batch machine of Procs/CoresPerNode nodes) and applies the policy and
// parameter overrides to its default partition.
func buildMachine(w *Workload, opt Options) (*machine, error) {
	m := &machine{cores: max(opt.CoresPerNode, 1)}
	var src *scheduler.Config
	switch {
	case opt.Config != nil:
		src = opt.Config
	case w.Cluster != nil:
		src = w.Cluster
	}
	if src == nil {
		procs := opt.Procs
		if procs == 0 {
			procs = w.Procs
		}
		nnodes := procs / m.cores
		if nnodes < 1 {
			return nil, fmt.Errorf("machine of %d processors has no node of %d cores", procs, m.cores)
		}
		names := make([]string, nnodes)
		for i := range names {
			names[i] = fmt.Sprintf("sim%05d", i+1)
			m.cfg.Nodes = append(m.cfg.Nodes, scheduler.NodeSpec{Name: names[i], CPUs: m.cores})
		}
		m.cfg.Partitions = []scheduler.PartitionSpec{{Name: "replay", Nodes: names, Policy: "batch",
			Default: true, MaxTime: scheduler.Inf, DefaultTime: scheduler.Inf, Backfill: "easy"}}
	} else {
		if len(src.Partitions) == 0 {
			return nil, fmt.Errorf("cluster has no partition")
		}
		m.cfg.Nodes = slices.Clone(src.Nodes)
		for _, ps := range src.Partitions {
			ps.Nodes = slices.Clone(ps.Nodes)
			ps.Params = maps.Clone(ps.Params)
			m.cfg.Partitions = append(m.cfg.Partitions, ps)
		}
	}
	def := &m.cfg.Partitions[0]
	for i := range m.cfg.Partitions {
		if m.cfg.Partitions[i].Default {
			def = &m.cfg.Partitions[i]
		}
	}
	switch pol := opt.Policy; {
	case pol == "":
	case slices.Contains(batchFlavours, pol):
		def.Policy, def.Backfill = "batch", pol
	case pol == "batch" || slices.Contains(scheduler.Policies(), pol):
		def.Policy = pol
	default:
		return nil, fmt.Errorf("unknown policy %q (want fcfs, easy or a registered policy: %s)", pol,
			strings.Join(scheduler.Policies(), ", "))
	}
	if len(opt.Params) > 0 {
		if def.Params == nil {
			def.Params = map[string]string{}
		}
		maps.Copy(def.Params, opt.Params)
	}
	m.label = policyLabel(def)
	if opt.RTShare > 0 {
		m.cfg.Partitions = append(m.cfg.Partitions, scheduler.PartitionSpec{Name: RTPartition,
			Nodes: slices.Clone(def.Nodes), Policy: "reserve", MaxTime: scheduler.Inf, DefaultTime: scheduler.Inf,
			Params: map[string]string{"share": strconv.FormatFloat(opt.RTShare, 'g', -1, 64)}})
		m.label += " + " + RTPartition + ": reserve"
	}
	return m, nil
}

// policyLabel names a partition's policy as a report shows it: the batch
// flavour ("easy", "fcfs"), or the policy with its admission or strategy
// ("dlt/ac-fast", "reserve/min-lip").
func policyLabel(ps *scheduler.PartitionSpec) string {
	if ps.Policy == "" || ps.Policy == "batch" {
		if ps.Backfill == "" {
			return "easy"
		}
		return ps.Backfill
	}
	for _, k := range []string{"admission", "strategy"} {
		if v := ps.Params[k]; v != "" {
			return ps.Policy + "/" + v
		}
	}
	return ps.Policy
}

type stepKey struct {
	idx  int32
	step int32
}

// Simulate replays w through the scheduler selected by opt.
func Simulate(ctx context.Context, w *Workload, opt Options) (*Outcome, error) {
	m, err := buildMachine(w, opt)
	if err != nil {
		return nil, err
	}
	cfg, cores := m.cfg, m.cores
	if opt.Policy == "" {
		opt.Policy = m.label
	}
	nnodes := len(cfg.Nodes)
	nodeIdx := make(map[string]int, nnodes)
	rate := make([]float64, nnodes)
	for i, n := range cfg.Nodes {
		nodeIdx[n.Name] = i
		rate[i] = n.Rate
		if rate[i] <= 0 {
			rate[i] = 1
		}
	}
	scale := opt.ChunkScale
	if scale == 0 {
		scale = 1
	}
	if scale < 0 || opt.ChunkJitter < 0 || opt.ChunkJitter >= 1 {
		return nil, fmt.Errorf("chunk scale %g and jitter %g: want scale > 0 and 0 ≤ jitter < 1", scale, opt.ChunkJitter)
	}
	jitter := newRand(opt.Seed)

	var sch Scheduler
	switch opt.Engine {
	case "", "hora":
		if newEngine == nil {
			return nil, fmt.Errorf("scheduler.Engine is not built into this binary yet (use --engine=reference)")
		}
		sch, err = newEngine(cfg)
	case "reference":
		if len(cfg.Partitions) != 1 || cfg.Partitions[0].Policy != "batch" {
			return nil, fmt.Errorf("the reference engine simulates one batch partition only")
		}
		if opt.PerCPU {
			return nil, fmt.Errorf("the reference engine allocates whole nodes only (no --per-cpu)")
		}
		sch, err = refsched.New(cfg, cfg.Partitions[0].Backfill)
	default:
		err = fmt.Errorf("unknown engine %q (want hora or reference)", opt.Engine)
	}
	if err != nil {
		return nil, err
	}
	if k, ok := sch.(interface{ KeepOutcomes() }); ok && opt.Dependencies {
		// A preceding job usually ends before its follower is submitted.
		k.KeepOutcomes()
	}
	wk, _ := sch.(waker)
	bs, _ := sch.(batcher)
	ties := opt.Ties
	if ties == "" {
		ties = TiesPerEvent
		if len(cfg.Partitions) == 1 && cfg.Partitions[0].Policy == "batch" {
			ties = TiesPyss
		}
	}
	switch ties {
	case TiesPyss, TiesEndsFirst:
	case TiesPerEvent:
		bs = nil
	default:
		return nil, fmt.Errorf("unknown tie rule %q (want %s, %s or %s)", ties, TiesPyss, TiesEndsFirst, TiesPerEvent)
	}
	var (
		evs    []scheduler.Event
		fin    []event
		groups [][]event
	)
	loops := -1

	out := &Outcome{Workload: w, Opts: opt, Label: m.label, Nodes: nnodes, Cores: cores,
		Results: make([]Result, len(w.Jobs))}
	byID := make(map[scheduler.JobID]int32, len(w.Jobs))
	h := make(eventHeap, 0, len(w.Jobs)+64)
	for i := range w.Jobs {
		j := &w.Jobs[i]
		if _, dup := byID[j.ID]; dup {
			return nil, fmt.Errorf("job id %d appears twice in the workload", j.ID)
		}
		byID[j.ID] = int32(i)
		h = append(h, event{t: j.Submit, kind: kindSubmit, id: j.ID, idx: int32(i), step: scheduler.BatchStep})
	}
	if ties == TiesPyss {
		for i := range h {
			h[i].kind = kindSubmitFirst
		}
	}
	heap.Init(&h)
	type stepRec struct {
		nodes []int
		cpus  []int // per node, CPUs held by a step on shared nodes (PerCPU); nil = whole nodes
		start float64
		gen   int32
	}
	busy := make([]int32, nnodes)  // job index + 1 on each node, 0 = idle
	usedCPU := make([]int, nnodes) // CPUs held by steps on shared nodes
	steps := map[stepKey]*stepRec{}
	jobSteps := make([]int32, len(w.Jobs))  // running steps per job
	usedNodes := make([][]int, len(w.Jobs)) // distinct nodes a divisible job used
	var gen int32
	done := 0
	nextTick := math.Inf(1)
	clock := math.Inf(-1)    // the virtual clock: time of the event being handled
	lastTick := math.Inf(-1) // time of the last Tick delivered
	// due reports whether the wakeup asked for is still to be delivered. It
	// may equal the clock: a policy's wakeup is only later than its last
	// pass, and an event that ran no pass (a refused Submit at the second a
	// booking starts) leaves that start due now. One Tick per instant, so an
	// engine that keeps asking for now does not spin.
	due := func() bool {
		return finite(nextTick) && (nextTick > clock || nextTick == clock && lastTick < clock)
	}

	release := func(k stepKey, now float64) {
		st := steps[k]
		held := float64(len(st.nodes))
		if st.cpus != nil {
			// Node-seconds of shared nodes: the fraction of each node held.
			held = 0
			for x, n := range st.nodes {
				usedCPU[n] -= st.cpus[x]
				held += float64(st.cpus[x]) / float64(cores)
			}
		} else {
			for _, n := range st.nodes {
				busy[n] = 0
			}
		}
		r := &out.Results[k.idx]
		r.Busy += held * (now - st.start)
		r.End = max(r.End, now)
		delete(steps, k)
		jobSteps[k.idx]--
	}
	// finish frees a step's nodes and makes its Finished event.
	finish := func(ev event) scheduler.Event {
		release(stepKey{idx: ev.idx, step: ev.step}, ev.t)
		if ev.step == scheduler.BatchStep || jobSteps[ev.idx] == 0 {
			done++
		}
		return scheduler.Finished{Now: ev.t, ID: ev.id, Step: int(ev.step), Failed: out.Results[ev.idx].Killed}
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
				r, j := &out.Results[i], &w.Jobs[i]
				k := stepKey{idx: i, step: int32(a.Step)}
				if steps[k] != nil {
					return fmt.Errorf("t=%.0f: job %d step %d started twice", now, a.ID, a.Step)
				}
				if len(a.Nodes) == 0 {
					return fmt.Errorf("t=%.0f: job %d step %d started on no node", now, a.ID, a.Step)
				}
				var cpus []int
				if len(a.Alloc) > 0 {
					total := 0
					cpus = make([]int, len(a.Alloc))
					for x, al := range a.Alloc {
						cpus[x] = len(al.CPUs)
						total += cpus[x]
					}
					if total != j.Procs {
						return fmt.Errorf("t=%.0f: job %d started on %d CPUs, asked for %d", now, a.ID, total, j.Procs)
					}
				} else if a.Step == scheduler.BatchStep && len(a.Nodes) != ceilDiv(j.Procs, cores) {
					return fmt.Errorf("t=%.0f: job %d started on %d nodes, asked for %d", now, a.ID, len(a.Nodes), ceilDiv(j.Procs, cores))
				}
				ns := make([]int, len(a.Nodes))
				slowest := math.Inf(1)
				for x, name := range a.Nodes {
					n, ok := nodeIdx[name]
					if !ok {
						return fmt.Errorf("t=%.0f: job %d started on unknown node %q", now, a.ID, name)
					}
					if busy[n] != 0 {
						return fmt.Errorf("t=%.0f: job %d started on node %s, busy with job %d", now, a.ID, name, w.Jobs[busy[n]-1].ID)
					}
					if cpus != nil {
						if usedCPU[n]+cpus[x] > cores {
							return fmt.Errorf("t=%.0f: job %d overcommits node %s: %d+%d of %d CPUs", now, a.ID, name, usedCPU[n], cpus[x], cores)
						}
						usedCPU[n] += cpus[x]
					} else {
						if usedCPU[n] != 0 {
							return fmt.Errorf("t=%.0f: job %d took node %s whole while it is shared", now, a.ID, name)
						}
						busy[n] = i + 1
					}
					ns[x] = n
					slowest = min(slowest, rate[n])
				}
				gen++
				steps[k] = &stepRec{nodes: ns, cpus: cpus, start: now, gen: gen}
				jobSteps[i]++
				if !r.Started {
					r.Start = now
				}
				r.Started = true
				var end float64
				if a.Step == scheduler.BatchStep {
					r.Nodes = len(ns)
					// A node of rate μ takes Run/μ (thesis §4.1); a job on
					// several nodes goes at the pace of the slowest.
					run := j.Run / slowest
					if opt.KillAtLimit && run > j.Limit {
						run, r.Killed = j.Limit, true
					}
					end = now + run
				} else {
					// A chunk of a divisible job: it takes what the
					// policy planned, perturbed if asked.
					if !finite(a.Expect) || a.Expect < now {
						return fmt.Errorf("t=%.0f: job %d chunk %d has no planned end (Expect %v)", now, a.ID, a.Step, a.Expect)
					}
					f := scale
					if opt.ChunkJitter > 0 {
						f *= 1 + opt.ChunkJitter*(2*jitter.Float64()-1)
					}
					end = now + (a.Expect-now)*f
					if f == 1 {
						// As planned: at Expect itself (now + (Expect − now)
						// may round one ulp past it, past a deadline).
						end = a.Expect
					}
					r.Chunks++
					for _, n := range ns {
						if !slices.Contains(usedNodes[i], n) {
							usedNodes[i] = append(usedNodes[i], n)
						}
					}
					r.Nodes = len(usedNodes[i])
				}
				heap.Push(&h, event{t: end, kind: kindFinish, id: j.ID, idx: i, step: int32(a.Step), gen: gen, atLimit: end == a.Expect})
			case scheduler.End:
				i, ok := byID[a.ID]
				if !ok {
					return fmt.Errorf("t=%.0f: End of unknown job %d", now, a.ID)
				}
				r := &out.Results[i]
				r.Reason, r.Ended = a.State, true
				if jobSteps[i] > 0 {
					// Killed while running: its steps leave their nodes now.
					for k, st := range steps {
						if k.idx == i {
							gen++
							st.gen = gen
							heap.Push(&h, event{t: now, kind: kindFinish, id: a.ID, idx: i, step: k.step, gen: gen})
						}
					}
					r.Killed = true
				} else {
					r.End = now
					done++
				}
			case scheduler.Requeue:
				i, ok := byID[a.ID]
				k := stepKey{idx: i, step: scheduler.BatchStep}
				if !ok || steps[k] == nil {
					return fmt.Errorf("t=%.0f: Requeue of job %d, not running", now, a.ID)
				}
				// Its pending finish no longer counts: the step is gone.
				release(k, now)
			case scheduler.Signal:
				// Time-sharing signals do not change a simulated job.
			}
		}
		return nil
	}

	for h.Len() > 0 || (wk != nil && due()) {
		loops++
		if loops&0xfff == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if opt.Progress != nil {
				opt.Progress(done, len(w.Jobs))
			}
		}
		if wk != nil && due() && (h.Len() == 0 || nextTick < h[0].t) {
			now := nextTick
			clock, lastTick = now, now
			nextTick = math.Inf(1)
			out.Events++
			if err := apply(now, sch.Handle(scheduler.Tick{Now: now})); err != nil {
				return nil, err
			}
			nextTick = wk.NextWakeup()
			continue
		}
		t := h[0].t
		clock = t
		if h[0].kind == kindFinish && bs != nil {
			// The terminations at t, in the order their jobs started.
			fin = fin[:0]
			for h.Len() > 0 && h[0].t == t && h[0].kind == kindFinish {
				ev := heap.Pop(&h).(event)
				if st := steps[stepKey{idx: ev.idx, step: ev.step}]; st != nil && st.gen == ev.gen {
					fin = append(fin, ev)
				}
			}
			// The tie rule of pyss (see tieGroups): the first pass at t
			// sees every step that ends at its expected end, and the
			// first termination; each other early end gets its own pass.
			for _, g := range tieGroups(fin, groups[:0]) {
				evs = evs[:0]
				for _, ev := range g {
					evs = append(evs, finish(ev))
				}
				acts, err := bs.HandleBatch(t, evs)
				if err != nil {
					return nil, err
				}
				out.Events += len(evs)
				if err := apply(t, acts); err != nil {
					return nil, err
				}
			}
			if wk != nil {
				nextTick = wk.NextWakeup()
			}
			continue
		}
		ev := heap.Pop(&h).(event)
		var acts []scheduler.Action
		switch {
		case ev.kind == kindFinish:
			st := steps[stepKey{idx: ev.idx, step: ev.step}]
			if st == nil || st.gen != ev.gen {
				continue
			}
			acts = sch.Handle(finish(ev))
		default: // submission
			j := &w.Jobs[ev.idx]
			sj := scheduler.Job{ID: j.ID, User: j.User, Nodes: ceilDiv(j.Procs, cores),
				TimeLimit: j.Limit, Submit: j.Submit, Begin: j.Begin, Deadline: j.Deadline, Load: j.Load,
				Partition: j.Partition}
			if j.Load > 0 {
				// A divisible job asks for no node count nor time: the
				// policy sizes its chunks (DESIGN.md §1).
				sj.Nodes, sj.TimeLimit = 0, 0
			} else if opt.PerCPU {
				sj.Nodes = 1
				sj.Req = &scheduler.Request{NTasks: max(j.Procs, 1), CPUsPerTask: 1}
			}
			if opt.Dependencies && j.Record.Preceding > 0 {
				sj.Dep = &scheduler.Dependency{Terms: []scheduler.DepTerm{{Kind: scheduler.DepAfterAny,
					Targets: []scheduler.JobID{scheduler.JobID(j.Record.Preceding)}, Delay: float64(max(j.Record.Think, 0))}}}
			}
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
		opt.Progress(min(done, len(w.Jobs)), len(w.Jobs))
	}
	if len(steps) != 0 {
		return nil, fmt.Errorf("simulation ended with %d steps on nodes", len(steps))
	}
	return out, nil
}

// tieGroups splits the terminations of one instant, in start order, into
// the groups after each of which the scheduler runs a pass, so as to see
// what pyss sees (Gaussier et al., SC'15; data/swf/easy-reference). pyss
// runs its scheduler after every termination, but its free-processor
// profile already counts free, at t, the processors of every job whose
// estimate ends at t, whether or not that job's termination event has been
// handled. So the first pass at t sees all the steps that end at their
// expected end (atLimit) and the first termination in start order; each
// later early termination frees its nodes for the pass after it, and the
// passes after later at-limit terminations change nothing. Terminations
// of the same instant in pyss come in the order their events were made,
// which is the order their jobs started.
func tieGroups(fin []event, dst [][]event) [][]event {
	if len(fin) == 0 {
		return dst
	}
	first := make([]event, 0, len(fin))
	first = append(first, fin[0])
	for _, ev := range fin[1:] {
		if ev.atLimit {
			first = append(first, ev)
		}
	}
	dst = append(dst, first)
	for _, ev := range fin[1:] {
		if !ev.atLimit {
			dst = append(dst, []event{ev})
		}
	}
	return dst
}
