package dlt

import "math"

// acFast is AC-FAST (ac-fast-2009 Algorithms 1–3) with the MNA dispatcher
// (§4.2). The admission controller assumes all-node assignment (ANA): the
// admitted tasks run one after the other on all N nodes in EDF order; each
// queued task records its ANA completion C and the queue answers "C of the
// predecessor" and "slack_min of the successors" (eq. 3–4).
//
// Readings (README.md): the task being dispatched is pinned at the front
// (cur) so that the admission order is the dispatch order; when no queued
// task precedes a new one, its start is the ANA completion of the work
// already handed out (lastC), not its arrival; adjust runs when the queue is
// empty and the cluster is not, and counts idleness only since the last
// arrival at an empty cluster (base, the proof's A_b).
type acFast struct {
	q     twq
	cur   *taskState // head being dispatched; nil if none
	curC  float64    // its ANA completion
	lastC float64    // ANA completion of the last task fully dispatched
	base  float64    // A_b: the last arrival at an empty cluster
}

func (a *acFast) guaranteed() bool { return true }

func (a *acFast) queued() int {
	n := a.q.len()
	if a.cur != nil {
		n++
	}
	return n
}

// anaExec is the ANA execution time 𝓔(σ, N) (ac-fast-2009 eq. 1); with
// setup costs, on the number of nodes that minimises it (Theorem 5.2).
func anaExec(m Model, sigma float64, n int) float64 {
	return m.Exec(sigma, m.BestN(sigma, n))
}

func (a *acFast) admit(s *Scheduler, now float64, t Task, commit bool) (bool, string) {
	return a.admitTS(s, now, t, commit, nil)
}

// admitTS is admit; with ts it re-admits that existing task (its rest,
// ts.left, under its own key) after the admission view was rebuilt (node
// loss, recheck).
func (a *acFast) admitTS(s *Scheduler, now float64, t Task, commit bool, ts *taskState) (bool, string) {
	// Algorithm 1 lines 1–4: the head node must be free before the deadline.
	if t.Deadline <= s.chanFree || t.Deadline <= now {
		return false, "deadline before the head node is free"
	}
	if s.avail() == 0 {
		return false, "no node is up"
	}
	e := anaExec(s.m, t.Size, s.avail()) // line 7, on the nodes that are up
	if math.IsInf(e, 0) {
		return false, "load cannot be partitioned"
	}
	k := key{d: t.Deadline, seq: s.seq + 1}
	if ts != nil {
		k = ts.key
	}
	// Lines 8–10: τ.𝓔 must fit in the slack of every task after it.
	if e > a.q.succMinSlack(k) {
		return false, "would make an admitted task miss its deadline"
	}
	// Lines 11–19: the start in the ANA view. lc is the ANA completion of
	// the work before the queue; at an empty queue the idle task of
	// Algorithm 3 joins that work for good (the proof's idle tasks τ̄).
	lc := a.lastC
	if a.q.len() == 0 && a.cur == nil {
		if s.idle(now) {
			lc = now // τ arrives at an empty cluster: τ_b, the view starts afresh
		} else {
			lc += a.adjust(s, now) // lines 15–17, Algorithm 3
		}
	}
	var st float64
	if c, ok := a.q.pred(k); ok {
		st = c
	} else if a.cur != nil {
		st = a.curC
	} else {
		st = lc
	}
	st = max(st, t.Arrival) // line 18
	if t.Deadline-st < e {  // line 20
		return false, "deadline too close"
	}
	if !commit {
		return true, ""
	}
	if a.q.len() == 0 && a.cur == nil {
		if s.idle(now) {
			a.base = now
		}
		a.lastC = lc
	}
	if ts == nil {
		ts = s.addTask(t)
	}
	a.q.insert(entry{k: ts.key, id: t.ID, c: st + e, e: e}) // lines 23–25
	a.q.addAfter(ts.key, e)                                 // lines 26–29, Algorithm 2
	return true, ""
}

// adjust is Algorithm 3: the load the idle node time before `now` could have
// processed, σ_idle = TotalIdle/(Cms+Cps), run on all N nodes:
// w = σ_idle(1−β)/(1−β^N)(Cms+Cps). Idle time is counted from
// max(P_i free, P₀ free, A_b). It is O(N) and runs only at an empty queue.
func (a *acFast) adjust(s *Scheduler, now float64) float64 {
	total := 0.0
	for i := range s.n {
		if s.down[i] {
			continue
		}
		r := max(s.nodeFree[i], s.chanFree, a.base)
		if s.running[i] != nil {
			r = max(r, s.running[i].End)
		}
		total += max(now-r, 0)
	}
	lin := Model{Cms: s.m.Cms, Cps: s.m.Cps, Share: s.m.Share} // w has no setup cost
	return lin.Exec(total/lin.unit(), max(s.avail(), 1))
}

// idle reports an empty cluster: channel and every node free by now.
func (s *Scheduler) idle(now float64) bool {
	if s.chanFree > now {
		return false
	}
	for i := range s.n {
		if s.running[i] != nil || (s.nodeFree[i] > now && !s.down[i]) {
			return false
		}
	}
	return true
}

// dispatch is the MNA dispatcher (ac-fast-2009 §4.2): while the channel and a
// node are free, the head of the EDF queue gets a chunk
// σ̂ = min((A+D−now−ST−SC)/(Cms+Cps), σ_left) on the lowest free node, sized
// to end by the deadline (ST, SC: the setup costs of that one chunk).
func (a *acFast) dispatch(s *Scheduler, now float64, out []Chunk) []Chunk {
	for s.chanFree <= now && a.queued() > 0 {
		node := -1
		for i := range s.n {
			if s.running[i] == nil && !s.overrun[i] && s.nodeFree[i] <= now && !busyIn(out, i) {
				node = i
				break
			}
		}
		if node < 0 {
			break
		}
		if a.cur == nil {
			e, _ := a.q.popMin()
			a.cur, a.curC = s.tasks[e.id], e.c
		}
		ts := a.cur
		size := min((ts.t.Deadline-now-s.m.ST-s.m.SC)/s.m.unit(), ts.left)
		if size <= 0 {
			// Only reachable when estimates were exceeded: the rest of the
			// task cannot end by its deadline; drop it.
			ts.left = 0
			a.done(s)
			continue
		}
		c := s.cut(ts, node, now, size)
		// σ̂ ends by the deadline in exact arithmetic; now + σ̂(Cms+Cps) may
		// round one ulp past it (and cut's snap to σ_left adds ≤ 1e-12
		// relative). The planned end is the deadline then, or a driver that
		// runs the chunk to its planned end sees a miss.
		c.End = min(c.End, ts.t.Deadline)
		s.chanFree = now + s.m.SendTime(c.Size)
		s.nodeFree[node] = c.End
		out = append(out, c)
		if ts.left <= 0 {
			a.done(s)
		}
	}
	return out
}

func (a *acFast) done(s *Scheduler) {
	a.lastC = a.curC
	if a.cur.open == 0 && a.cur.step == 0 {
		delete(s.tasks, a.cur.t.ID)
	}
	a.cur = nil
}

func busyIn(out []Chunk, node int) bool {
	for _, c := range out {
		if c.Node == node {
			return true
		}
	}
	return false
}

func (a *acFast) next(s *Scheduler) float64 {
	if a.queued() == 0 {
		return math.Inf(1)
	}
	t := math.Inf(1)
	for i := range s.n {
		if s.running[i] == nil && !s.overrun[i] {
			t = math.Min(t, s.nodeFree[i])
		}
	}
	return max(t, s.chanFree, s.last)
}

func (a *acFast) remove(s *Scheduler, id int64) bool {
	ts := s.tasks[id]
	if ts == nil || ts == a.cur || ts.step > 0 {
		return false
	}
	// The successors keep their C: a pessimistic view stays sound.
	return a.q.remove(ts.key)
}
