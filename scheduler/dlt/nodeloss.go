package dlt

import (
	"math"
	"slices"

	"hora/scheduler"
)

// Node loss (NodeDown) and return (NodeUp). A down node counts as busy
// forever (nodeFree = +Inf), so no plan, Fill or dispatch uses it, and
// AC-FAST's all-node view uses the nodes that are up (avail). On every
// change the admission view is rebuilt with the new capacity (recheck):
// tasks that can no longer be guaranteed are taken out of it and reported,
// so the guarantee of every other task stays sound.

func (s *Scheduler) avail() int { return s.n - s.ndown }

// Down reports whether node is out of service.
func (s *Scheduler) Down(node int) bool { return node >= 0 && node < s.n && s.down[node] }

// SetNode marks node down (up = false) or back in service at now and
// rechecks every admitted task. It returns, in service order, the tasks
// that can no longer be guaranteed: a task none of whose chunks started is
// removed from the scheduler (the caller may Admit it again later); a task
// being dispatched stays (it is dispatched best-effort: chunks are still
// sized to end by its deadline, what cannot is dropped).
func (s *Scheduler) SetNode(now float64, node int, up bool) []int64 {
	now = s.tick(now)
	if node < 0 || node >= s.n || s.down[node] == !up {
		return nil
	}
	s.down[node] = !up
	if up {
		s.ndown--
		s.nodeFree[node] = now
		if c := s.running[node]; c != nil {
			s.nodeFree[node] = max(c.End, now) // back before its chunk was reported
		}
	} else {
		s.ndown++
		s.nodeFree[node] = math.Inf(1)
	}
	return s.recheck(now)
}

// Lost reports that the chunk on node ended because its node was lost: its
// range is sent again (first, as its own chunk) if the task can still be
// guaranteed with it; otherwise the range is dropped and the task reported
// like SetNode's. It returns whether the task has nothing more to run.
func (s *Scheduler) Lost(now float64, node int) (taskDone bool, unguaranteed []int64) {
	now = s.tick(now)
	if node < 0 || node >= s.n || s.running[node] == nil {
		return false, nil
	}
	c := s.running[node]
	if ts := s.tasks[c.Task]; ts != nil && c.Size > 0 {
		ts.redo = append(ts.redo, span{c.Offset, c.Size})
		ts.left += c.Size
		switch a := s.alg.(type) {
		case *acFast:
			if ts != a.cur && !a.queuedTask(ts) {
				a.q.insert(entry{k: ts.key, id: ts.t.ID, c: ts.t.Deadline, e: 0})
			}
		case *planner:
			if !slices.ContainsFunc(a.pend, func(pt *ptask) bool { return pt.ts == ts }) {
				a.pend = append(a.pend, &ptask{ts: ts})
			}
		}
	}
	s.killing[node] = true // not a measurement
	done := s.finish(now, node, false, true)
	return done, s.recheck(now)
}

// recheck rebuilds the admission view from the committed work and re-admits
// every task not fully dispatched, in service order, with the nodes that
// are up. Those refused are dropped from the view (see SetNode).
func (s *Scheduler) recheck(now float64) []int64 {
	switch a := s.alg.(type) {
	case *acFast:
		return a.recheck(s, now)
	case *planner:
		return a.recheck(s, now)
	}
	return nil
}

func (a *acFast) queuedTask(ts *taskState) bool {
	found := false
	a.q.each(func(e entry) { found = found || e.id == ts.t.ID })
	return found
}

// recheck for AC-FAST: all work handed out ends by the latest planned end
// of a chunk running on a node that is up (every chunk is sized to end by
// its task's deadline; a lost chunk's range comes back as a task's redo),
// which becomes lastC; the pinned head keeps dispatching and its ANA
// completion is taken as its deadline (C ≤ D when it is guaranteed; a
// pessimistic, sound view). It is guaranteed iff the exact capacity of the
// nodes up by its deadline (Fill) holds its rest. The queued tasks are then
// admitted again in order (Algorithm 1 with N = the nodes up).
func (a *acFast) recheck(s *Scheduler, now float64) []int64 {
	var out []int64
	last := now
	for i, c := range s.running {
		if c != nil && !s.down[i] { // a chunk on a lost node will not end there
			last = max(last, c.End)
		}
	}
	a.lastC = max(a.lastC, last)
	a.base = max(a.base, now)
	if a.cur != nil {
		a.curC = max(a.curC, a.cur.t.Deadline)
		if !s.fits(now, a.cur) {
			out = append(out, a.cur.t.ID)
		}
	}
	var queued []*taskState
	for {
		e, ok := a.q.popMin()
		if !ok {
			break
		}
		if ts := s.tasks[e.id]; ts != nil {
			queued = append(queued, ts)
		}
	}
	for _, ts := range queued {
		t := Task{ID: ts.t.ID, Arrival: now, Size: ts.left, Deadline: ts.t.Deadline}
		if ok, _ := a.admitTS(s, now, t, true, ts); !ok {
			out = append(out, ts.t.ID)
			s.unguarantee(ts)
		}
	}
	return out
}

// fits reports whether the rest of ts can end by its deadline on the nodes
// up, from their free times, with the one channel (Model.Fill).
func (s *Scheduler) fits(now float64, ts *taskState) bool {
	r := make([]float64, s.n)
	for i := range r {
		r[i] = max(s.nodeFree[i], now)
	}
	slices.Sort(r)
	return s.m.Fill(r, max(s.chanFree, now), ts.t.Deadline, nil) >= ts.left*(1-1e-12)
}

// unguarantee drops a refused task from the scheduler: a task that never
// started is forgotten; one with chunks out keeps them and gets nothing
// more (its lost ranges and rest are dropped).
func (s *Scheduler) unguarantee(ts *taskState) {
	if ts.step == 0 && ts.open == 0 {
		delete(s.tasks, ts.t.ID)
		return
	}
	ts.left, ts.redo = 0, nil
	if ts.open == 0 {
		delete(s.tasks, ts.t.ID)
	}
}

// recheck for the planners: committed chunks not yet started on a node that
// is down go back to their task (redo), and everything not committed is
// planned again from the nodes' free times; while the plan misses a
// deadline, the last task in plan order is dropped.
func (p *planner) recheck(s *Scheduler, now float64) []int64 {
	kept := p.emit[:0]
	for _, c := range p.emit {
		ts := s.tasks[c.Task]
		if !s.down[c.Node] || ts == nil {
			kept = append(kept, c)
			continue
		}
		ts.redo = append(ts.redo, span{c.Offset, c.Size})
		ts.left += c.Size
		if !slices.ContainsFunc(p.pend, func(pt *ptask) bool { return pt.ts == ts }) {
			p.pend = append(p.pend, &ptask{ts: ts})
		}
	}
	p.emit = kept
	var out []int64
	tasks := ptasks(p.pend)
	for len(tasks) > 0 {
		plan, ok, _ := p.plan(s, now, tasks)
		if ok || !p.ac {
			p.pend = plan
			return out
		}
		ts := tasks[len(tasks)-1]
		tasks = tasks[:len(tasks)-1]
		out = append(out, ts.t.ID)
		s.unguarantee(ts)
	}
	p.pend = nil
	return out
}

// NodeChanged is scheduler.NodeWatcher: the partition's capacity changed,
// every guarantee is checked again. A node the Engine declares down after
// it was suspect (or booked) is already out of service here: nothing
// changes.
func (pl *Policy) NodeChanged(now float64, i int, down bool) {
	pl.now = now
	delete(pl.suspect, i)
	pl.engDown[i] = down
	pl.sync(now, i)
}

// sync puts node i in or out of the scheduler's service: out while the
// Engine has it down, it is suspect (a chunk failed to launch there) or
// another partition holds a booking on it (reading 24). On a change every
// guarantee is checked again (SetNode).
func (pl *Policy) sync(now float64, i int) {
	_, suspect := pl.suspect[i]
	out := pl.engDown[i] || suspect || i < len(pl.booked) && pl.booked[i]
	if pl.s.Down(i) == out {
		return
	}
	clear(pl.atRisk)
	pl.unguaranteed(pl.s.SetNode(now, i, !out))
}

// syncBooked takes out of service the nodes on which another partition's
// policy holds a booking that has not ended (scheduler.Booker), and returns
// those whose bookings have all ended. O(N) per pass, only when a node of
// the partition is shared with a booking policy.
func (pl *Policy) syncBooked(now float64) {
	if !pl.p.Shared() {
		return
	}
	ver := pl.p.BookedVersion()
	if pl.booked != nil && ver == pl.bookVer && now < pl.bookWake {
		return // no booking changed and none has ended since the last scan
	}
	if pl.booked == nil {
		pl.booked = make([]bool, pl.p.Len())
	}
	pl.bookVer, pl.bookWake = ver, math.Inf(1)
	for i := range pl.booked {
		pl.bookBuf = pl.p.Booked(i, now, pl.bookBuf[:0])
		for _, w := range pl.bookBuf {
			pl.bookWake = min(pl.bookWake, w.End)
		}
		if b := len(pl.bookBuf) > 0; b != pl.booked[i] {
			pl.booked[i] = b
			pl.sync(now, i)
		}
	}
}

// unguaranteed files the tasks the scheduler could no longer guarantee:
// still dispatching (atRisk) or taken out (lost, waiting for capacity).
func (pl *Policy) unguaranteed(ids []int64) {
	for _, t := range ids {
		id := scheduler.JobID(t)
		if pl.s.tasks[t] != nil || pl.hasSteps(id) {
			pl.atRisk[id] = true
			continue
		}
		if j := pl.job[id]; j != nil {
			pl.lost[id] = j
		}
	}
}

// StepNodeFailed is scheduler.NodeFailer: the step's node or launch failed
// (not its script); StepFinished, which follows, treats it as lost with its
// node.
func (pl *Policy) StepNodeFailed(now float64, id scheduler.JobID, step int) {
	pl.now = now
	pl.nodeFail[stepKey{id, step}] = true
}

// endSuspects returns to service the suspect nodes whose time is up: the
// Engine never declared them down, so they are taken as fine.
func (pl *Policy) endSuspects(now float64) {
	var back []int
	for i, until := range pl.suspect {
		if until <= now {
			back = append(back, i)
		}
	}
	slices.Sort(back) // map order must not change the outcome
	for _, i := range back {
		delete(pl.suspect, i)
		pl.sync(now, i)
	}
}

// Suspect reports whether node i is out of service because a chunk failed
// to launch there while the Engine has it up.
func (pl *Policy) Suspect(i int) bool { _, ok := pl.suspect[i]; return ok }

func (pl *Policy) lostIDs() []scheduler.JobID {
	ids := make([]scheduler.JobID, 0, len(pl.lost))
	for id := range pl.lost {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// retryLost admits the lost jobs again when the capacity allows (their
// guarantee is back, the reason clears), in job order; one whose deadline
// has come ends DEADLINE.
func (pl *Policy) retryLost(now float64) {
	for _, id := range pl.lostIDs() {
		j := pl.lost[id]
		if now >= j.Deadline {
			delete(pl.lost, id)
			delete(pl.jobs, id)
			delete(pl.job, id)
			_ = pl.p.End(id, scheduler.JobStateDeadline, scheduler.ReasonDeadline)
			continue
		}
		t, ae := pl.task(now, j)
		if ae != nil {
			continue
		}
		pl.s.noEarliest = true
		err := pl.s.Admit(now, t)
		pl.s.noEarliest = false
		if err == nil {
			delete(pl.lost, id)
			pl.jobs[id] = true
		}
	}
}

// RunningReason is scheduler.RunningReasoner: a running job dispatched
// best-effort after a node loss shows ReasonNodeLost.
func (pl *Policy) RunningReason(id scheduler.JobID) string {
	if pl.atRisk[id] {
		return ReasonNodeLost
	}
	return ""
}
