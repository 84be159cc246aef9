package dlt

import (
	"fmt"
	"math"
	"slices"

	"hora/scheduler"
)

// Resume re-creates, after a restart of the driver, a task some of whose
// chunks ran before: running holds the chunks still running (Task, Step,
// Node, Offset, Size, Start; End is recomputed from the model), done the
// load already handed out, next the next step number. The rest of the load,
// σ − done, is admitted anew at now with the task's deadline, after the
// running chunks (their nodes are busy until their planned ends, and for
// AC-FAST's all-node view the work handed out completes at the latest of
// those ends). A refusal leaves the running chunks tracked and nothing more
// to dispatch: the caller decides what becomes of the task.
func (s *Scheduler) Resume(now float64, t Task, running []Chunk, done float64, next int) error {
	return s.ResumeLost(now, t, running, nil, done, next)
}

// ResumeLost is Resume with the ranges of chunks that never reached their
// node before the restart (lost, Offset and Size only): they count in the
// rest to admit and are sent first, as their own chunks, like a range lost
// with its node (reading 21). A refusal drops them with the rest.
func (s *Scheduler) ResumeLost(now float64, t Task, running, lost []Chunk, done float64, next int) error {
	now = s.tick(now)
	if _, dup := s.tasks[t.ID]; dup {
		return &Refusal{Task: t.ID, Reason: "duplicate task id"}
	}
	last := now
	for _, c := range running {
		if c.Node < 0 || c.Node >= s.n || s.running[c.Node] != nil {
			return fmt.Errorf("dlt: resume of task %d: node %d unknown or busy", t.ID, c.Node)
		}
		c.Task = t.ID
		c.End = c.Start + s.m.ChunkTime(c.Size)
		cc := c
		s.running[c.Node] = &cc
		s.nodeFree[c.Node] = max(s.nodeFree[c.Node], c.End)
		last = max(last, c.End)
	}
	left := t.Size - done
	if left <= 1e-9*t.Size {
		left = 0
	}
	var redo []span
	for _, c := range lost {
		if c.Size > 0 {
			redo = append(redo, span{c.Offset, c.Size})
			left += c.Size
		}
	}
	var err error
	a, isAC := s.alg.(*acFast)
	switch {
	case left <= 1e-9*t.Size:
		left = 0
		if isAC {
			a.lastC = max(a.lastC, last) // the work handed out ends by then
		}
	case isAC && a.cur == nil && a.q.len() == 0:
		// The task was AC-FAST's pinned head (it was being dispatched), and
		// becomes it again. Its ANA completion from admission is not kept;
		// its deadline bounds it (C ≤ D), a pessimistic and so sound view
		// for later admissions. Whether the rest still ends by the deadline
		// is the exact capacity of the nodes from their free times with the
		// one channel (Fill), which is what MNA then dispatches.
		r := make([]float64, s.n)
		for i := range r {
			r[i] = max(s.nodeFree[i], now)
		}
		slices.Sort(r)
		if s.m.Fill(r, max(s.chanFree, now), t.Deadline, nil) >= left*(1-1e-12) {
			ts := s.addTask(Task{ID: t.ID, Arrival: now, Size: left, Deadline: t.Deadline})
			a.cur, a.curC = ts, t.Deadline
		} else {
			err = &Refusal{Task: t.ID, Reason: "the rest of the load cannot end by the deadline"}
		}
	default:
		// A planner re-plans from the nodes' free times (the running chunks
		// included); AC-FAST with tasks already queued admits the rest as a
		// new task behind them (sound, possibly refused).
		if isAC {
			a.lastC = max(a.lastC, last)
		}
		err = s.Admit(now, Task{ID: t.ID, Size: left, Deadline: t.Deadline})
	}
	ts := s.tasks[t.ID]
	if ts == nil {
		ts = s.addTask(Task{ID: t.ID, Arrival: now, Size: left, Deadline: t.Deadline})
		ts.left = 0
	}
	ts.offset, ts.step, ts.open = done, next, len(running)
	if ts.left > 0 {
		ts.redo = redo
	}
	if len(running) == 0 && ts.left <= 0 {
		delete(s.tasks, t.ID)
	}
	return err
}

// RestoreChunks re-attaches a running divisible job after a restart
// (scheduler.ChunkRestorer): its running chunks hold their nodes, the rest
// of its load is admitted anew. If the rest can no longer be guaranteed, it
// is not run at all (the job ends when its running chunks do, DEADLINE in
// the controller, because its load was not all processed); guarantees
// given to other jobs are never traded for it.
func (pl *Policy) RestoreChunks(now float64, j *scheduler.Job, chunks []scheduler.RestoredChunk, done float64, next int) {
	pl.now = now
	idx := map[string]int{}
	for i := range pl.p.Len() {
		idx[pl.p.Name(i)] = i
	}
	var run, lost []Chunk
	for _, c := range chunks {
		if c.Lost {
			lost = append(lost, Chunk{Step: c.Step, Node: -1, Offset: c.Offset, Size: c.Size})
			continue
		}
		if i, ok := idx[c.Node]; ok {
			run = append(run, Chunk{Step: c.Step, Node: i, Offset: c.Offset, Size: c.Size, Start: c.Start})
		}
	}
	load, deadline := j.Load, j.Deadline
	if !(load > 0) || math.IsInf(load, 0) || !(deadline > 0) {
		load, deadline, lost = done, now, nil // not a valid divisible job: run nothing more
	}
	err := pl.s.ResumeLost(now, Task{ID: int64(j.ID), Size: load, Deadline: deadline}, run, lost, done, next)
	for _, c := range run {
		pl.steps[stepKey{j.ID, c.Step}] = c.Node
	}
	pl.job[j.ID] = j
	switch {
	case err == nil && pl.s.Left(int64(j.ID)) > 0, len(run) > 0:
		pl.jobs[j.ID] = true
	default:
		pl.expire = append(pl.expire, j.ID) // nothing runs and nothing may: DEADLINE
	}
}
