package dlt

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Task is a divisible real-time task τ(A, σ, D) with its absolute deadline.
type Task struct {
	ID       int64
	Arrival  float64 // A
	Size     float64 // σ, data units
	Deadline float64 // A + D (absolute)
}

// Chunk is one subtask sent to one node: data [Offset, Offset+Size) of task
// Task, numbered Step 0, 1, 2 … per task. Its transmission starts at Start
// and holds the channel until Start + ST + Size·Cms; the node is busy until
// End = Start + ST + SC + Size(Cms+Cps), the planned completion.
type Chunk struct {
	Task   int64
	Step   int
	Node   int
	Offset float64
	Size   float64
	Start  float64
	End    float64
}

// Refusal is a negative admission decision. EarliestDeadline is a deadline the
// same test would have accepted at the same instant (0 if none was found).
type Refusal struct {
	Task             int64
	Reason           string
	EarliestDeadline float64
}

func (r *Refusal) Error() string {
	if r.EarliestDeadline > 0 {
		return fmt.Sprintf("dlt: task %d refused: %s (earliest guaranteed deadline %g)", r.Task, r.Reason, r.EarliestDeadline)
	}
	return fmt.Sprintf("dlt: task %d refused: %s", r.Task, r.Reason)
}

// algorithm is one admission algorithm with the dispatcher that goes with it.
type algorithm interface {
	// admit tests t at time now; with commit it also queues t.
	admit(s *Scheduler, now float64, t Task, commit bool) (ok bool, reason string)
	// dispatch appends the chunks that start at now.
	dispatch(s *Scheduler, now float64, out []Chunk) []Chunk
	// next is the earliest time ≥ the last dispatch at which dispatch could
	// emit something (Inf if nothing is queued).
	next(s *Scheduler) float64
	// remove forgets a queued task that has not started.
	remove(s *Scheduler, id int64) bool
	queued() int
	// guaranteed reports whether admitted tasks are guaranteed their deadline.
	guaranteed() bool
}

// Algorithms lists the admission algorithms by name; the first is the default.
var Algorithms = []string{"ac-fast", "ac-fast-ref", "edf-dlt", "mcdf", "fifo-an", "fifo-mn", "edf-an", "edf-mn", "fifo-anna", "edf-anna"}

// DefaultAlgorithm is the admission algorithm of an empty name.
const DefaultAlgorithm = "ac-fast"

// Guaranteed reports whether algorithm name claims that admitted tasks meet
// their deadlines (all but the -anna baselines).
func Guaranteed(name string) bool { return !strings.HasSuffix(name, "-anna") }

// Scheduler is the DLT scheduler of one cluster of N identical nodes and one
// head node with a single channel: admission, dispatch and feedback.
type Scheduler struct {
	m    Model
	n    int
	alg  algorithm
	name string

	nodeFree   []float64 // when each node is expected to be free
	chanFree   float64   // when the channel (P₀) is free
	running    []*Chunk  // chunk running on each node, nil if none
	overrun    []bool    // node runs a chunk past its planned end
	killing    []bool    // its overrunning chunk was handed out to be killed
	tasks      map[int64]*taskState
	seq        uint64
	last       float64 // now of the last call
	dispatched float64 // now of the last Dispatch
	est        *Estimator
	down       []bool // node lost (NodeDown): nodeFree is +Inf while down
	ndown      int
	// noEarliest skips the earliest-deadline search of refusals (bulk tests).
	noEarliest bool
}

type taskState struct {
	t      Task
	key    key
	left   float64 // σ not yet dispatched
	offset float64
	step   int
	open   int    // chunks dispatched and not finished
	redo   []span // ranges of chunks lost with their node, sent again first
}

// span is a range of a task's load.
type span struct{ off, size float64 }

// New builds a scheduler of nodes identical nodes with the named admission
// algorithm ("" = ac-fast).
func New(name string, m Model, nodes int) (*Scheduler, error) {
	if name == "" {
		name = DefaultAlgorithm
	}
	if nodes < 1 {
		return nil, fmt.Errorf("dlt: %d nodes, want ≥ 1", nodes)
	}
	if !(m.Cms >= 0) || !(m.Cps > 0) || !(m.ST >= 0) || !(m.SC >= 0) || math.IsInf(m.Cms+m.Cps+m.ST+m.SC, 0) {
		return nil, fmt.Errorf("dlt: bad cost model %+v (want cms ≥ 0, cps > 0, st ≥ 0, sc ≥ 0, finite)", m)
	}
	s := &Scheduler{m: m, n: nodes, name: name, nodeFree: make([]float64, nodes), dispatched: math.Inf(-1),
		running: make([]*Chunk, nodes), overrun: make([]bool, nodes), killing: make([]bool, nodes), tasks: map[int64]*taskState{},
		down: make([]bool, nodes)}
	switch name {
	case "ac-fast":
		s.alg = &acFast{q: &treapTWQ{}}
	case "ac-fast-ref":
		s.alg = &acFast{q: &sliceTWQ{}}
	default:
		p, err := newPlanner(name)
		if err != nil {
			return nil, err
		}
		s.alg = p
	}
	return s, nil
}

// Name is the admission algorithm's name.
func (s *Scheduler) Name() string { return s.name }

// Model is the cost model the scheduler currently plans with.
func (s *Scheduler) Model() Model { return s.m }

// Nodes is N.
func (s *Scheduler) Nodes() int { return s.n }

// Queued is the number of admitted tasks not yet fully dispatched.
func (s *Scheduler) Queued() int { return s.alg.queued() }

// Guaranteed reports whether the algorithm guarantees admitted deadlines.
func (s *Scheduler) Guaranteed() bool { return s.alg.guaranteed() }

// SetEstimator makes measured chunk times (Finished) update the model.
func (s *Scheduler) SetEstimator(e *Estimator) { s.est = e }

func (s *Scheduler) tick(now float64) float64 {
	if now < s.last {
		now = s.last
	}
	s.last = now
	return now
}

// Admit decides on task t at time now. Chunks due at now are not started by
// Admit: call Dispatch after it. A refusal is a *Refusal with the earliest
// deadline found by bisection with the same test (see README.md).
func (s *Scheduler) Admit(now float64, t Task) error {
	now = s.tick(now)
	if _, dup := s.tasks[t.ID]; dup {
		return &Refusal{Task: t.ID, Reason: "duplicate task id"}
	}
	if !(t.Size > 0) || math.IsInf(t.Size, 0) {
		return &Refusal{Task: t.ID, Reason: "load must be positive and finite"}
	}
	t.Arrival = now
	ok, reason := s.alg.admit(s, now, t, true)
	if ok {
		return nil
	}
	r := &Refusal{Task: t.ID, Reason: reason}
	if !s.noEarliest {
		r.EarliestDeadline = s.earliest(now, t)
	}
	return r
}

// Test is Admit without effect: whether t would be admitted now.
func (s *Scheduler) Test(now float64, t Task) bool {
	now = max(now, s.last)
	t.Arrival = now
	ok, _ := s.alg.admit(s, now, t, false)
	return ok
}

// earliest searches the earliest deadline the admission test accepts: an
// exponential search for a feasible deadline, then bisection to a relative
// precision of 1e-9. It is the earliest when the test is monotone in the
// deadline; otherwise it is still a deadline the test accepts.
func (s *Scheduler) earliest(now float64, t Task) float64 {
	test := func(d float64) bool {
		u := t
		u.Deadline = d
		ok, _ := s.alg.admit(s, now, u, false)
		return ok
	}
	lo := now
	span := max(s.m.Exec(t.Size, s.m.BestN(t.Size, s.n)), 1e-9)
	hi := now + span
	for k := 0; !test(hi); k++ {
		if k > 200 || math.IsInf(hi, 0) {
			return 0
		}
		lo = hi
		span *= 2
		hi = now + span
	}
	for range 100 {
		if hi-lo <= 1e-9*max(1, math.Abs(hi)) {
			break
		}
		mid := lo + (hi-lo)/2
		if test(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// Dispatch returns the chunks that start at now (transmission begins at now).
func (s *Scheduler) Dispatch(now float64) []Chunk {
	now = s.tick(now)
	s.dispatched = now
	out := s.alg.dispatch(s, now, nil)
	for i := range out {
		c := out[i]
		if s.overrun[c.Node] || s.running[c.Node] != nil {
			panic(fmt.Sprintf("dlt: chunk on busy node %d (kill the overrun first)", c.Node))
		}
		cc := c
		s.running[c.Node] = &cc
		if ts := s.tasks[c.Task]; ts != nil {
			ts.open++
		}
	}
	return out
}

// Kills lists the overrunning chunks that must be killed at now: a chunk
// that runs past its planned end may continue until its node is wanted
// (dlt-feedback §3.2: it may not make an admitted task miss its deadline nor
// block an admission; the planners and AC-FAST count an overrunning node as
// free for admission, so "wanted" is the dispatcher's need). The driver kills
// them and reports each with Finished, which frees the node. Call Kills, then
// Dispatch, after every event.
func (s *Scheduler) Kills(now float64) []Chunk {
	now = s.tick(now)
	var out []Chunk
	for i, c := range s.running {
		if c != nil && overdue(c.End) <= now && !s.overrun[i] {
			s.overrun[i] = true
		}
	}
	for _, i := range s.wanted(now) {
		s.killing[i] = true
		out = append(out, *s.running[i])
	}
	return out
}

// wanted lists the overrunning nodes the dispatcher needs at now: for a
// planner, those with a chunk due; for MNA, one when the channel is free, a
// task waits and no node is free.
func (s *Scheduler) wanted(now float64) []int {
	var out []int
	if p, ok := s.alg.(*planner); ok {
		for _, i := range p.dueNodes(now) {
			if s.overrun[i] && !s.killing[i] && !slices.Contains(out, i) {
				out = append(out, i)
			}
		}
		return out
	}
	if s.alg.queued() == 0 || s.chanFree > now {
		return nil
	}
	for i := range s.n {
		if (s.running[i] == nil && s.nodeFree[i] <= now) || s.killing[i] {
			return nil // a node is free, or one is being freed
		}
	}
	for i := range s.n {
		if s.overrun[i] {
			return []int{i}
		}
	}
	return nil
}

// Finished reports that the chunk on node ended at now (completed, failed or
// killed). An early end (underrun) frees the node at once; a completed
// chunk's duration feeds the estimator. It returns whether the task has
// nothing more to run.
func (s *Scheduler) Finished(now float64, node int) (taskDone bool) {
	now = s.tick(now)
	if node < 0 || node >= s.n || s.running[node] == nil {
		return false
	}
	return s.finish(now, node, !s.killing[node], s.killing[node])
}

// FinishedMeasured is Finished for a chunk whose transfer and run were
// measured apart (staged input): the estimator learns Cms and Cps each from
// its own time (Estimator.ObserveSplit) instead of from now − start.
func (s *Scheduler) FinishedMeasured(now float64, node int, transfer, compute float64) (taskDone bool) {
	now = s.tick(now)
	if node < 0 || node >= s.n || s.running[node] == nil {
		return false
	}
	if s.est != nil && !s.killing[node] && s.running[node].Size > 0 {
		s.est.ObserveSplit(s.m, s.running[node].Size, transfer, compute)
		s.m = s.est.Apply(s.m)
	}
	return s.finish(now, node, false, s.killing[node])
}

func (s *Scheduler) finish(now float64, node int, measured, killed bool) bool {
	c := s.running[node]
	s.running[node] = nil
	s.overrun[node] = false
	s.killing[node] = false
	if measured && s.est != nil && !killed && c.Size > 0 {
		s.est.Observe(s.m, c.Size, now-c.Start)
		s.m = s.est.Apply(s.m)
	}
	if p, ok := s.alg.(*planner); ok {
		p.released(s, node, c, now)
	} else {
		s.nodeFree[node] = now // an underrun frees the node at once
	}
	if s.down[node] {
		s.nodeFree[node] = math.Inf(1)
	}
	ts := s.tasks[c.Task]
	if ts == nil {
		return true
	}
	ts.open--
	if ts.open == 0 && ts.left <= 0 {
		delete(s.tasks, c.Task)
		return true
	}
	return false
}

// Next is the earliest time after the last call at which Dispatch or Kills
// could do something (Inf if nothing is queued): a node or the channel
// becoming free, a planned chunk, a running chunk passing its planned end.
func (s *Scheduler) Next() float64 {
	t := s.alg.next(s)
	if t <= s.last && s.dispatched == s.last {
		t = math.Inf(1) // due now but blocked: waits for a completion or a kill
	}
	if s.alg.queued() > 0 {
		for i, c := range s.running {
			if c != nil && !s.overrun[i] {
				t = min(t, overdue(c.End))
			}
		}
	}
	return t
}

// overdue is when a chunk planned to end at end counts as overrunning: a
// relative tolerance of 1e-9 absorbs rounding of the driver's clock.
func overdue(end float64) float64 { return end + 1e-9*max(1, math.Abs(end)) }

// Remove forgets a task that has not started; it reports whether it did.
func (s *Scheduler) Remove(id int64) bool {
	if !s.alg.remove(s, id) {
		return false
	}
	delete(s.tasks, id)
	return true
}

// Drop forgets whatever of task id is not dispatched yet, started or not
// (a cancelled running job: "start nothing more"). Chunks already running
// still report Finished.
func (s *Scheduler) Drop(id int64) {
	ts := s.tasks[id]
	if ts == nil {
		return
	}
	if s.alg.remove(s, id) {
		delete(s.tasks, id)
		return
	}
	switch a := s.alg.(type) {
	case *acFast:
		if a.cur == ts {
			ts.left = 0
			a.done(s)
		}
	case *planner:
		kept := a.emit[:0]
		for _, c := range a.emit {
			if c.Task != id {
				kept = append(kept, c)
			}
		}
		a.emit = kept
	}
	ts.left = 0
	if ts.open == 0 {
		delete(s.tasks, id)
	}
}

// Waiting lists the admitted tasks no chunk of which has started, in the
// order the scheduler would serve them (EDF; FIFO for fifo-*).
func (s *Scheduler) Waiting(dst []int64) []int64 {
	var ws []*taskState
	for _, ts := range s.tasks {
		if ts.step == 0 && ts.left > 0 {
			ws = append(ws, ts)
		}
	}
	fifo := strings.HasPrefix(s.name, "fifo")
	slices.SortFunc(ws, func(a, b *taskState) int {
		if !fifo && a.key.d != b.key.d {
			if a.key.d < b.key.d {
				return -1
			}
			return 1
		}
		return cmpU(a.key.seq, b.key.seq)
	})
	for _, ts := range ws {
		dst = append(dst, ts.t.ID)
	}
	return dst
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Left is the load of task id not yet dispatched (0 if unknown).
func (s *Scheduler) Left(id int64) float64 {
	if ts := s.tasks[id]; ts != nil {
		return ts.left
	}
	return 0
}

func (s *Scheduler) addTask(t Task) *taskState {
	s.seq++
	ts := &taskState{t: t, key: key{d: t.Deadline, seq: s.seq}, left: t.Size}
	s.tasks[t.ID] = ts
	return ts
}

// cut numbers the next chunk of ts: size on node, transmission from start.
func (s *Scheduler) cut(ts *taskState, node int, start, size float64) Chunk {
	if len(ts.redo) > 0 {
		// A range lost with its node goes first, as its own chunk.
		sp := &ts.redo[0]
		if size >= sp.size*(1-1e-12) {
			size = sp.size
		}
		c := Chunk{Task: ts.t.ID, Step: ts.step, Node: node, Offset: sp.off, Size: size,
			Start: start, End: start + s.m.ChunkTime(size)}
		sp.off, sp.size = sp.off+size, sp.size-size
		if sp.size <= 0 {
			ts.redo = ts.redo[1:]
		}
		ts.step++
		ts.left = max(ts.left-size, 0)
		return c
	}
	if size >= ts.left*(1-1e-12) {
		size = ts.left
	}
	c := Chunk{Task: ts.t.ID, Step: ts.step, Node: node, Offset: ts.offset, Size: size,
		Start: start, End: start + s.m.ChunkTime(size)}
	ts.step++
	ts.offset += size
	ts.left = max(ts.left-size, 0)
	return c
}
