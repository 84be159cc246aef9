package schedtest

import (
	"cmp"
	"math"
	"slices"

	"hora/scheduler"
)

// TB is what the Harness needs of *testing.T, *testing.B and *rapid.T.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Record is one event and the actions the Engine returned for it.
type Record struct {
	Now     float64
	Event   scheduler.Event
	Actions []scheduler.Action
}

// Started is a Start as the Harness applied it.
type Started struct {
	At float64
	scheduler.Start
}

type stepKey struct {
	id   scheduler.JobID
	step int
}

type finish struct {
	t   float64
	key stepKey
}

// Harness drives an Engine in virtual time the way controller and replay
// do: it sends events, applies Starts by marking the steps running, sends
// Finished when a step's run time is up, and Ticks at NextWakeup. It fails
// the test on a Start that gives a node to two running steps or a down
// node, and on a NextWakeup that does not move time forward.
type Harness struct {
	tb  TB
	Eng *scheduler.Engine
	Now float64
	// Log has every event and its actions, unless NoLog is set (benchmarks).
	Log   []Record
	NoLog bool
	// Starts has every Start in order; Ends and Rejects by job.
	Starts  []Started
	Ends    map[scheduler.JobID]scheduler.End
	Rejects map[scheduler.JobID]*scheduler.AdmissionError
	// Events counts the events sent.
	Events int

	runs    map[scheduler.JobID]float64
	owner   map[string]stepKey
	down    map[string]bool
	running map[stepKey][]string
	pending []finish // sorted by (t, id, step)
	// specs and shares check resource starts (Start.Alloc): no CPU id
	// twice on a node, no more CPUs, memory or gres than the node has.
	specs  map[string]scheduler.NodeSpec
	shares map[string]map[stepKey]scheduler.NodeAlloc
	// perCPU is how many jobs may hold one CPU of a node at once: the
	// largest OverSubscribe count of its partitions (1 when none shares).
	perCPU map[string]int
}

// New builds an Engine for cfg and a Harness around it.
func New(tb TB, cfg scheduler.Config) *Harness {
	tb.Helper()
	eng, err := scheduler.New(cfg)
	if err != nil {
		tb.Fatalf("scheduler.New: %v", err)
	}
	specs := map[string]scheduler.NodeSpec{}
	perCPU := map[string]int{}
	for _, n := range cfg.Nodes {
		specs[n.Name] = n
		perCPU[n.Name] = 1
	}
	for _, p := range cfg.Partitions {
		o, _ := scheduler.ParseOverSubscribe(p.OverSubscribe)
		for _, n := range p.Nodes {
			perCPU[n] = max(perCPU[n], o.Jobs)
		}
	}
	return &Harness{
		tb: tb, Eng: eng, specs: specs, shares: map[string]map[stepKey]scheduler.NodeAlloc{}, perCPU: perCPU,
		Ends:    map[scheduler.JobID]scheduler.End{},
		Rejects: map[scheduler.JobID]*scheduler.AdmissionError{},
		runs:    map[scheduler.JobID]float64{},
		owner:   map[string]stepKey{},
		down:    map[string]bool{},
		running: map[stepKey][]string{},
	}
}

// Handle sends ev (at ev.When(), which must not go back in time), applies
// and returns its actions.
func (h *Harness) Handle(ev scheduler.Event) []scheduler.Action {
	h.tb.Helper()
	if ev.When() < h.Now {
		h.tb.Fatalf("event %T at %v before now %v", ev, ev.When(), h.Now)
	}
	h.Now = ev.When()
	h.Events++
	switch ev := ev.(type) {
	case scheduler.NodeDown:
		h.down[ev.Node] = true
	case scheduler.NodeUp:
		delete(h.down, ev.Node)
	case scheduler.Finished:
		// Also when sent directly (with measured times) rather than by Finish.
		k := stepKey{ev.ID, ev.Step}
		h.forget(k)
	case scheduler.Restore:
		if ev.Running {
			k := stepKey{ev.Job.ID, scheduler.BatchStep}
			for _, n := range ev.Nodes {
				h.owner[n] = k
			}
			h.running[k] = ev.Nodes
			for _, c := range ev.Chunks {
				if c.Lost { // never reached its node: holds none
					continue
				}
				k := stepKey{ev.Job.ID, c.Step}
				h.owner[c.Node] = k
				h.running[k] = []string{c.Node}
			}
		}
	}
	acts := h.Eng.Handle(ev)
	if !h.NoLog {
		h.Log = append(h.Log, Record{Now: h.Now, Event: ev, Actions: acts})
	}
	for _, a := range acts {
		switch a := a.(type) {
		case scheduler.Start:
			h.apply(a)
		case scheduler.End:
			h.Ends[a.ID] = a
		case scheduler.Reject:
			h.Rejects[a.ID] = a.Err
		}
	}
	return acts
}

// forget drops a step's nodes and shares.
func (h *Harness) forget(k stepKey) {
	for _, n := range h.running[k] {
		if h.owner[n] == k {
			delete(h.owner, n)
		}
		delete(h.shares[n], k)
	}
	delete(h.running, k)
}

// share checks and records a resource start on one node.
func (h *Harness) share(k stepKey, a scheduler.NodeAlloc) {
	h.tb.Helper()
	n := a.Node
	if o, busy := h.owner[n]; busy {
		h.tb.Fatalf("t=%v: job %d step %d shares %s, which job %d step %d holds whole", h.Now, k.id, k.step, n, o.id, o.step)
	}
	if h.down[n] {
		h.tb.Fatalf("t=%v: job %d started on down node %s", h.Now, k.id, n)
	}
	spec := h.specs[n]
	if h.shares[n] == nil {
		h.shares[n] = map[stepKey]scheduler.NodeAlloc{}
	}
	h.shares[n][k] = a
	ids := map[int]int{}
	mem := int64(0)
	gres := map[string]int{}
	for _, o := range h.shares[n] {
		for _, id := range o.CPUs {
			if ids[id] >= h.perCPU[n] || id < 0 || id >= spec.CPUs {
				h.tb.Fatalf("t=%v: job %d: CPU %d of %s given more than %d times or out of range", h.Now, k.id, id, n, h.perCPU[n])
			}
			ids[id]++
		}
		mem += o.MemMB
		for _, g := range o.Gres {
			gres[g.Name+":"+g.Type] += g.Count
		}
	}
	if mem > spec.MemMB {
		h.tb.Fatalf("t=%v: memory of %s overcommitted: %d > %d MiB", h.Now, n, mem, spec.MemMB)
	}
	for key, c := range gres {
		have := 0
		for _, d := range spec.Gres {
			if d.Name+":"+d.Type == key {
				have += d.Count
			}
		}
		if c > have {
			h.tb.Fatalf("t=%v: gres %s of %s overcommitted: %d > %d", h.Now, key, n, c, have)
		}
	}
}

func (h *Harness) apply(s scheduler.Start) {
	h.tb.Helper()
	k := stepKey{s.ID, s.Step}
	for _, a := range s.Alloc {
		h.share(k, a)
	}
	for _, n := range s.Nodes {
		if len(s.Alloc) > 0 {
			break // shares, checked above
		}
		if len(h.shares[n]) > 0 {
			h.tb.Fatalf("t=%v: job %d step %d took %s whole while it holds shares", h.Now, s.ID, s.Step, n)
		}
		if o, busy := h.owner[n]; busy {
			h.tb.Fatalf("t=%v: job %d step %d started on %s, which runs job %d step %d", h.Now, s.ID, s.Step, n, o.id, o.step)
		}
		if h.down[n] {
			h.tb.Fatalf("t=%v: job %d started on down node %s", h.Now, s.ID, n)
		}
		h.owner[n] = k
	}
	h.running[k] = s.Nodes
	h.Starts = append(h.Starts, Started{At: h.Now, Start: s})
	if d, ok := h.runs[s.ID]; ok && d >= 0 {
		f := finish{t: h.Now + d, key: k}
		i, _ := slices.BinarySearchFunc(h.pending, f, cmpFinish)
		h.pending = slices.Insert(h.pending, i, f)
	}
}

func cmpFinish(a, b finish) int {
	return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.key.id, b.key.id), cmp.Compare(a.key.step, b.key.step))
}

// Submit sends a Submit of the built job at the harness's current time (the
// job's Submit time is kept as built, or set to now when 0) and remembers
// its run time.
func (h *Harness) Submit(b *JobBuilder) []scheduler.Action {
	h.tb.Helper()
	j := b.Build()
	if j.Submit == 0 {
		j.Submit = h.Now
	}
	h.runs[j.ID] = b.run
	return h.Handle(scheduler.Submit{Now: h.Now, Job: j})
}

// SetRun sets (or changes, before it starts) a job's actual run time.
func (h *Harness) SetRun(id scheduler.JobID, d float64) { h.runs[id] = d }

// Finish ends a running step now, as its driver would report it.
func (h *Harness) Finish(id scheduler.JobID, step int, failed bool) []scheduler.Action {
	h.tb.Helper()
	k := stepKey{id, step}
	h.forget(k)
	if i := slices.IndexFunc(h.pending, func(f finish) bool { return f.key == k }); i >= 0 {
		h.pending = slices.Delete(h.pending, i, i+1)
	}
	return h.Handle(scheduler.Finished{Now: h.Now, ID: id, Step: step, Failed: failed})
}

// Running reports whether a step runs in the harness.
func (h *Harness) Running(id scheduler.JobID, step int) bool {
	_, ok := h.running[stepKey{id, step}]
	return ok
}

// Advance lets virtual time pass up to t: steps whose run time is up finish
// and the Engine gets a Tick at each NextWakeup. Finishes come before a Tick
// at the same time.
func (h *Harness) Advance(t float64) {
	h.tb.Helper()
	stuck := 0
	for {
		tf := math.Inf(1)
		if len(h.pending) > 0 {
			tf = h.pending[0].t
		}
		tw := h.Eng.NextWakeup()
		next := min(tf, tw)
		if next > t || math.IsInf(next, 1) {
			break
		}
		if tf <= tw {
			f := h.pending[0]
			h.Now = max(h.Now, f.t)
			h.Finish(f.key.id, f.key.step, false)
			stuck = 0
			continue
		}
		if tw <= h.Now {
			if stuck++; stuck > 2 {
				h.tb.Fatalf("NextWakeup stuck at %v (now %v)", tw, h.Now)
			}
		}
		h.Handle(scheduler.Tick{Now: max(h.Now, tw)})
	}
	if t > h.Now && !math.IsInf(t, 1) {
		h.Now = t
	}
}

// Play submits the jobs at their Submit times, in (Submit, ID) order, letting
// time pass between them, then runs until nothing is left to happen.
func (h *Harness) Play(jobs ...*JobBuilder) {
	h.tb.Helper()
	jobs = slices.Clone(jobs)
	slices.SortStableFunc(jobs, func(a, b *JobBuilder) int {
		return cmp.Or(cmp.Compare(a.j.Submit, b.j.Submit), cmp.Compare(a.j.ID, b.j.ID))
	})
	for _, b := range jobs {
		h.Advance(b.j.Submit)
		h.Submit(b)
	}
	h.Advance(math.Inf(1))
}

// StartOf returns the first Start of a job.
func (h *Harness) StartOf(id scheduler.JobID) (Started, bool) {
	for _, s := range h.Starts {
		if s.ID == id {
			return s, true
		}
	}
	return Started{}, false
}
