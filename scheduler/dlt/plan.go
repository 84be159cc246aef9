package dlt

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// planner is the family of algorithms that build an exact schedule at
// admission and dispatch it as planned (rt-dlt-2005 §5 and §6, EDF-DLT of
// dlt-feedback §3.1): every admission re-plans all admitted tasks that have
// not started, plus the new one, from the nodes' and channel's free times; the
// new task is admitted iff every planned task ends by its deadline. A task
// whose first chunk has started is committed: its chunks are fixed.
//
//	order: fifo (admission order), edf (deadline), mcdf (max cost derivative)
//	rule:  an (all nodes, wait for them), mn (minimum nodes, wait for them),
//	       iit (minimum nodes, each used from the moment it is free)
//	ac:    false for the -anna baselines (always admit, plan with all nodes)
type planner struct {
	order string
	rule  string
	ac    bool
	pend  []*ptask // admitted, not committed, in plan order
	emit  []Chunk  // committed chunks not yet started, by Start
}

type ptask struct {
	ts     *taskState
	chunks []pchunk
}

type pchunk struct {
	node             int
	start, size, end float64
}

func newPlanner(name string) (*planner, error) {
	p := map[string]*planner{
		"edf-dlt":   {order: "edf", rule: "iit", ac: true},
		"mcdf":      {order: "mcdf", rule: "mn", ac: true},
		"fifo-an":   {order: "fifo", rule: "an", ac: true},
		"fifo-mn":   {order: "fifo", rule: "mn", ac: true},
		"edf-an":    {order: "edf", rule: "an", ac: true},
		"edf-mn":    {order: "edf", rule: "mn", ac: true},
		"fifo-anna": {order: "fifo", rule: "an"},
		"edf-anna":  {order: "edf", rule: "an"},
	}[name]
	if p == nil {
		return nil, fmt.Errorf("dlt: unknown admission algorithm %q (known: %v)", name, Algorithms)
	}
	return p, nil
}

func (p *planner) guaranteed() bool { return p.ac }
func (p *planner) queued() int {
	n := len(p.pend)
	seen := map[int64]bool{}
	for _, c := range p.emit {
		seen[c.Task] = true
	}
	return n + len(seen)
}

// state is the cluster as a plan sees it.
type state struct {
	r []float64 // node free times
	c float64   // channel free time
}

func (st *state) sorted() []int {
	idx := make([]int, len(st.r))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if x := cmp.Compare(st.r[a], st.r[b]); x != 0 {
			return x
		}
		return a - b
	})
	return idx
}

func (st *state) take(ch []pchunk, m Model) {
	for _, c := range ch {
		st.r[c.node] = c.end
		st.c = max(st.c, c.start+m.SendTime(c.size))
	}
}

func (p *planner) admit(s *Scheduler, now float64, t Task, commit bool) (bool, string) {
	if t.Deadline <= now && p.ac {
		return false, "deadline in the past"
	}
	nt := &taskState{t: t, key: key{d: t.Deadline, seq: s.seq + 1}, left: t.Size}
	tasks := append(slices.Clone(ptasks(p.pend)), nt)
	plan, ok, why := p.plan(s, now, tasks)
	if !ok {
		return false, why
	}
	if commit {
		ts := s.addTask(t)
		for _, pt := range plan {
			if pt.ts == nt {
				pt.ts = ts
			}
		}
		p.pend = plan
	}
	return true, ""
}

func ptasks(pp []*ptask) []*taskState {
	out := make([]*taskState, len(pp))
	for i, pt := range pp {
		out[i] = pt.ts
	}
	return out
}

func (p *planner) base(s *Scheduler, now float64) *state {
	st := &state{r: make([]float64, s.n), c: max(s.chanFree, now)}
	for i := range st.r {
		st.r[i] = max(s.nodeFree[i], now)
	}
	return st
}

// plan schedules tasks from the committed state; ok false if a deadline
// would be missed (only with admission control).
func (p *planner) plan(s *Scheduler, now float64, tasks []*taskState) ([]*ptask, bool, string) {
	st := p.base(s, now)
	n := s.avail() // down nodes are free at +Inf and sort last: the first n are up
	if n == 0 && len(tasks) > 0 {
		return nil, false, "no node is up"
	}
	if p.order == "mcdf" {
		return p.planMCDF(s, st, tasks)
	}
	switch p.order {
	case "edf":
		slices.SortStableFunc(tasks, func(a, b *taskState) int {
			if a.key.less(b.key) {
				return -1
			}
			if b.key.less(a.key) {
				return 1
			}
			return 0
		})
	case "fifo":
		slices.SortStableFunc(tasks, func(a, b *taskState) int { return cmp.Compare(a.key.seq, b.key.seq) })
	}
	out := make([]*ptask, 0, len(tasks))
	for _, ts := range tasks {
		var ch []pchunk
		switch {
		case !p.ac || p.rule == "an":
			ch = placeAN(s.m, n, ts.left, st)
		case p.rule == "mn":
			ch = placeMN(s.m, n, ts.left, ts.t.Deadline, st)
		default:
			ch = placeIIT(s.m, n, ts.left, ts.t.Deadline, st)
		}
		if ch == nil || (p.ac && lastEnd(ch) > ts.t.Deadline) {
			return nil, false, fmt.Sprintf("%s-%s: task %d cannot end by its deadline", p.order, p.rule, ts.t.ID)
		}
		st.take(ch, s.m)
		out = append(out, &ptask{ts: ts, chunks: ch})
	}
	return out, true, ""
}

func lastEnd(ch []pchunk) float64 {
	e := math.Inf(-1)
	for _, c := range ch {
		e = max(e, c.end)
	}
	return e
}

// opr lays the optimal partition (rt-dlt-2005 §4) of σ over nodes from t:
// transmissions back to back, node j's starting after those of nodes < j.
func opr(m Model, sigma float64, nodes []int, t float64) []pchunk {
	parts := m.Partition(sigma, len(nodes))
	if parts == nil {
		return nil
	}
	// Fractions below 1e-12 of σ (β^j underflowing on many nodes) are folded
	// into the first, largest one instead of being sent as empty chunks.
	k := len(parts)
	for k > 1 && parts[k-1] < 1e-12*sigma {
		parts[0] += parts[k-1]
		k--
	}
	out := make([]pchunk, k)
	for j, sz := range parts[:k] {
		out[j] = pchunk{node: nodes[j], start: t, size: sz, end: t + m.ChunkTime(sz)}
		t += m.SendTime(sz)
	}
	return out
}

// placeAN waits for all nodes (n* with setup costs, Theorem 5.2).
func placeAN(m Model, n int, sigma float64, st *state) []pchunk {
	k := m.BestN(sigma, n)
	idx := st.sorted()
	t := max(st.c, st.r[idx[k-1]])
	return opr(m, sigma, idx[:k], t)
}

// placeMN is rt-dlt-2005's minimum-node rule: the first instant t_k (a node
// free time, or later the channel) at which n_min(t_k) nodes are free.
func placeMN(m Model, n int, sigma, d float64, st *state) []pchunk {
	idx := st.sorted()
	for k := 1; k <= n; k++ {
		t := max(st.c, st.r[idx[k-1]])
		avail := k
		for avail < n && st.r[idx[avail]] <= t {
			avail++
		}
		need, ok := m.NMin(sigma, d-t, n)
		if !ok {
			return nil // later starts need even more
		}
		if need <= avail {
			return opr(m, sigma, idx[:need], t)
		}
	}
	return nil
}

// placeIIT is EDF-DLT's node rule with inserted idle time removed: the fewest
// nodes that, each used from its own free time (single channel, in free-time
// order, Model.Fill), finish σ by d; then the common end C ≤ d at which they
// finish σ exactly (optimal partitioning rule), found by bisection.
func placeIIT(m Model, n int, sigma, d float64, st *state) []pchunk {
	idx := st.sorted()
	rs := make([]float64, n)
	for i := range rs {
		rs[i] = st.r[idx[i]]
	}
	if m.Fill(rs, st.c, d, nil) < sigma {
		return nil
	}
	lo, hi := 1, n
	for lo < hi {
		mid := (lo + hi) / 2
		if m.Fill(rs[:mid], st.c, d, nil) >= sigma {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	k := lo
	a, b := max(st.c, rs[0]), d
	for range 80 {
		mid := a + (b-a)/2
		if m.Fill(rs[:k], st.c, mid, nil) >= sigma {
			b = mid
		} else {
			a = mid
		}
		if b-a <= 1e-12*max(1, math.Abs(b)) {
			break
		}
	}
	var out []pchunk
	left := sigma
	m.Fill(rs[:k], st.c, b, func(i int, start, size float64) {
		if left <= 0 {
			return
		}
		size = min(size, left)
		left -= size
		out = append(out, pchunk{node: idx[i], start: start, size: size, end: start + m.ChunkTime(size)})
	})
	if left > 1e-9*sigma {
		return nil
	}
	if left > 0 { // bisection residue: give it to the last chunk if it still fits
		out[len(out)-1].size += left
		out[len(out)-1].end = out[len(out)-1].start + m.ChunkTime(out[len(out)-1].size)
	}
	return out
}

// planMCDF is rt-dlt-2005's Schedulability_Test: at each decision instant t
// (a node free time; never before the channel is free) compute n_min(t) and
// DC = W(n_min+1) − W(n_min) for every unscheduled task; refuse if some
// n_min(t) > N; start the task of largest DC among those whose n_min fits the
// free nodes; with a single channel, one task per instant, the next instant
// being when the channel is free again.
func (p *planner) planMCDF(s *Scheduler, st *state, tasks []*taskState) ([]*ptask, bool, string) {
	m, n := s.m, s.avail() // down nodes (free at +Inf) sort last
	uns := slices.Clone(tasks)
	out := make([]*ptask, 0, len(tasks))
	t := st.c
	for len(uns) > 0 {
		idx := st.sorted()
		t = max(t, st.c, st.r[idx[0]])
		avail := 0
		for avail < n && st.r[idx[avail]] <= t {
			avail++
		}
		best, bestN, bestDC := -1, 0, math.Inf(-1)
		for i, ts := range uns {
			need, ok := m.NMin(ts.left, ts.t.Deadline-t, n)
			if !ok {
				return nil, false, fmt.Sprintf("mcdf: task %d cannot end by its deadline", ts.t.ID)
			}
			if need > avail {
				continue
			}
			dc := m.Cost(ts.left, need+1) - m.Cost(ts.left, need)
			if dc > bestDC || (dc == bestDC && ts.key.less(uns[best].key)) {
				best, bestN, bestDC = i, need, dc
			}
		}
		if best < 0 {
			nt := math.Inf(1) // next node free time after t
			for _, j := range idx {
				if st.r[j] > t {
					nt = st.r[j]
					break
				}
			}
			if math.IsInf(nt, 1) {
				return nil, false, "mcdf: no instant fits"
			}
			t = nt
			continue
		}
		ch := opr(m, uns[best].left, idx[:bestN], t)
		if ch == nil {
			return nil, false, "mcdf: partition"
		}
		st.take(ch, m)
		out = append(out, &ptask{ts: uns[best], chunks: ch})
		uns = slices.Delete(uns, best, best+1)
	}
	// Dispatch commits in start order.
	slices.SortStableFunc(out, func(a, b *ptask) int { return cmp.Compare(a.first(), b.first()) })
	return out, true, ""
}

func (pt *ptask) first() float64 {
	f := math.Inf(1)
	for _, c := range pt.chunks {
		f = min(f, c.start)
	}
	return f
}

// dispatch commits the tasks whose first chunk is due and starts the chunks
// due at now.
func (p *planner) dispatch(s *Scheduler, now float64, out []Chunk) []Chunk {
	for len(p.pend) > 0 && p.pend[0].first() <= now {
		pt := p.pend[0]
		p.pend = p.pend[1:]
		slices.SortStableFunc(pt.chunks, func(a, b pchunk) int { return cmp.Compare(a.start, b.start) })
		for _, c := range pt.chunks {
			if pt.ts.left <= 0 {
				break // rounding: the earlier chunks already carry all of σ
			}
			ch := s.cut(pt.ts, c.node, c.start, c.size)
			p.emit = append(p.emit, ch)
			s.nodeFree[c.node] = max(s.nodeFree[c.node], ch.End)
			s.chanFree = max(s.chanFree, c.start+s.m.SendTime(c.size))
		}
		slices.SortStableFunc(p.emit, func(a, b Chunk) int { return cmp.Compare(a.Start, b.Start) })
	}
	kept := p.emit[:0]
	for _, c := range p.emit {
		if c.Start <= now && s.running[c.Node] == nil && !busyIn(out, c.Node) {
			out = append(out, c)
		} else {
			kept = append(kept, c)
		}
	}
	p.emit = kept
	return out
}

// dueNodes lists the nodes of the chunks due by now.
func (p *planner) dueNodes(now float64) []int {
	var out []int
	for _, c := range p.emit {
		if c.Start <= now {
			out = append(out, c.Node)
		}
	}
	if len(p.pend) > 0 && p.pend[0].first() <= now {
		for _, c := range p.pend[0].chunks {
			if c.start <= now {
				out = append(out, c.node)
			}
		}
	}
	return out
}

func (p *planner) released(s *Scheduler, node int, c *Chunk, now float64) {
	if s.nodeFree[node] <= c.End {
		s.nodeFree[node] = now // nothing else committed on it: free at once
	}
}

func (p *planner) next(s *Scheduler) float64 {
	t := math.Inf(1)
	if len(p.emit) > 0 {
		t = p.emit[0].Start
	}
	if len(p.pend) > 0 {
		t = min(t, p.pend[0].first())
	}
	return max(t, s.last)
}

func (p *planner) remove(s *Scheduler, id int64) bool {
	for i, pt := range p.pend {
		if pt.ts.t.ID == id {
			p.pend = slices.Delete(p.pend, i, i+1)
			return true
		}
	}
	return false
}
