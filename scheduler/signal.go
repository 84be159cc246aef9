package scheduler

import (
	"math"
	"slices"
)

// sigTimer is a --signal delivery: sig to job id at time at.
type sigTimer struct {
	at  float64
	id  JobID
	sig string
}

// armSignal (re)schedules the --signal of a running job whose batch step is
// expected to end at expect. A delivery whose time has already passed is
// made at the next pass, once.
func (e *Engine) armSignal(r *jobRec, expect float64) {
	if r.job.Signal == "" || math.IsInf(expect, 1) || r.gate.signalled {
		return
	}
	e.sigs = slices.DeleteFunc(e.sigs, func(s sigTimer) bool { return s.id == r.job.ID })
	e.sigs = append(e.sigs, sigTimer{at: expect - r.job.SignalBefore, id: r.job.ID, sig: r.job.Signal})
}

// runSignals emits the deliveries that are due, in time then id order.
func (e *Engine) runSignals(now float64) {
	if len(e.sigs) == 0 {
		return
	}
	var due []sigTimer
	keep := e.sigs[:0]
	for _, s := range e.sigs {
		if s.at <= now {
			due = append(due, s)
		} else {
			keep = append(keep, s)
		}
	}
	e.sigs = keep
	slices.SortFunc(due, func(a, b sigTimer) int {
		if a.at != b.at {
			if a.at < b.at {
				return -1
			}
			return 1
		}
		return int(a.id - b.id)
	})
	for _, s := range due {
		r := e.jobs[s.id]
		if r == nil || !r.started || r.removed || r.gate.signalled {
			continue
		}
		r.gate.signalled = true
		e.out = append(e.out, Signal{ID: s.id, Step: BatchStep, Sig: s.sig})
	}
}

func (e *Engine) nextSignal() float64 {
	t := math.Inf(1)
	for _, s := range e.sigs {
		t = min(t, max(s.at, e.now))
	}
	return t
}
