// Package refsched is a small, independent FCFS and EASY-backfilling
// scheduler written directly from the algorithm's definition (Lifka 1995;
// Mu'alem and Feitelson 2001): FCFS order, a reservation for the head job
// only, and any later job may start now if it does not delay that
// reservation. It speaks the scheduler package's events and actions so the
// simulator can drive it exactly like scheduler.Engine.
//
// It is an oracle for cross-checking the Engine's batch policy on real logs
// (`hora replay --engine=reference`), not a policy of hora: it knows rigid
// jobs on identical nodes and nothing else (no partitions, deadlines, holds).
package refsched

import (
	"fmt"
	"slices"

	"hora/scheduler"
)

// Sched is the reference scheduler.
type Sched struct {
	easy    bool
	names   []string
	free    []int // indices of idle nodes, used as a stack
	queue   []*job
	running []*job // unordered
	jobs    map[scheduler.JobID]*job
	maxN    int
}

type job struct {
	id    scheduler.JobID
	nodes int
	limit float64
	start float64
	alloc []int
}

// New returns a scheduler for the nodes of cfg; backfill is "easy" or "fcfs".
func New(cfg scheduler.Config, backfill string) (*Sched, error) {
	if backfill != "easy" && backfill != "fcfs" {
		return nil, fmt.Errorf("refsched: unknown policy %q", backfill)
	}
	s := &Sched{easy: backfill == "easy", jobs: map[scheduler.JobID]*job{}}
	for i, n := range cfg.Nodes {
		s.names = append(s.names, n.Name)
		s.free = append(s.free, len(cfg.Nodes)-1-i) // pop gives node 0 first
	}
	s.maxN = len(cfg.Nodes)
	return s, nil
}

// Handle applies one event and returns the resulting actions.
func (s *Sched) Handle(ev scheduler.Event) []scheduler.Action {
	var out []scheduler.Action
	switch e := ev.(type) {
	case scheduler.Submit:
		if e.Job.Nodes < 1 || e.Job.Nodes > s.maxN {
			return []scheduler.Action{scheduler.Reject{ID: e.Job.ID, Err: &scheduler.AdmissionError{
				Verdict: scheduler.Never, Code: "NodeCount", Message: "Requested node configuration is not available"}}}
		}
		j := &job{id: e.Job.ID, nodes: e.Job.Nodes, limit: e.Job.TimeLimit}
		s.jobs[j.id] = j
		s.queue = append(s.queue, j)
		out = append(out, scheduler.Admit{ID: j.id})
	case scheduler.Finished:
		j := s.jobs[e.ID]
		if j == nil || j.alloc == nil {
			return nil
		}
		delete(s.jobs, e.ID)
		s.free = append(s.free, j.alloc...)
		i := slices.Index(s.running, j)
		s.running[i] = s.running[len(s.running)-1]
		s.running = s.running[:len(s.running)-1]
	default:
		return nil
	}
	return s.schedule(ev.When(), out)
}

func (s *Sched) start(now float64, j *job, out []scheduler.Action) []scheduler.Action {
	j.start = now
	j.alloc = slices.Clone(s.free[len(s.free)-j.nodes:])
	s.free = s.free[:len(s.free)-j.nodes]
	s.running = append(s.running, j)
	names := make([]string, len(j.alloc))
	for i, n := range j.alloc {
		names[i] = s.names[n]
	}
	return append(out, scheduler.Start{ID: j.id, Step: scheduler.BatchStep, Nodes: names, Expect: now + j.limit})
}

func (s *Sched) schedule(now float64, out []scheduler.Action) []scheduler.Action {
	// Start jobs from the head while they fit.
	for len(s.queue) > 0 && s.queue[0].nodes <= len(s.free) {
		out = s.start(now, s.queue[0], out)
		s.queue = s.queue[1:]
	}
	if !s.easy || len(s.queue) < 2 {
		return out
	}
	// Reservation for the head: the earliest time enough nodes are free if
	// running jobs end at their limits (a job past its limit is expected to
	// end now), and the nodes left over at that time ("extra").
	head := s.queue[0]
	ends := make([]*job, len(s.running))
	copy(ends, s.running)
	slices.SortFunc(ends, func(a, b *job) int {
		ea, eb := max(now, a.start+a.limit), max(now, b.start+b.limit)
		if ea != eb {
			if ea < eb {
				return -1
			}
			return 1
		}
		return int(a.id - b.id)
	})
	avail := len(s.free)
	shadow := now
	for k, r := range ends {
		avail += r.nodes
		shadow = max(now, r.start+r.limit)
		if avail >= head.nodes {
			// Jobs ending at the same instant free their nodes too.
			for _, q := range ends[k+1:] {
				if max(now, q.start+q.limit) != shadow {
					break
				}
				avail += q.nodes
			}
			break
		}
	}
	extra := avail - head.nodes
	kept := s.queue[:1]
	for _, j := range s.queue[1:] {
		if len(s.free) == 0 || j.nodes > len(s.free) {
			kept = append(kept, j)
			continue
		}
		switch {
		case now+j.limit <= shadow:
			out = s.start(now, j, out)
		case j.nodes <= extra:
			extra -= j.nodes
			out = s.start(now, j, out)
		default:
			kept = append(kept, j)
		}
	}
	s.queue = kept
	return out
}
