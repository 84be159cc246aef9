package dlt_test

import (
	"math"
	"slices"
	"testing"

	"hora/scheduler"
	"hora/scheduler/dlt"
	"hora/scheduler/schedtest"
)

// nodeFailRun submits one divisible job on three nodes, runs it until its
// chunk on n0 has started, reports that chunk failed by its node (a launch
// or staging that timed out, node still up for the Engine). It returns the
// driver and the failed chunk.
func nodeFailRun(t *testing.T, alg string, deadline float64) (*driver, scheduler.Start) {
	t.Helper()
	h := schedtest.New(t, cluster(3, map[string]string{"cms": "1", "cps": "9", "admission": alg, "suspect_s": "500"}))
	d := &driver{t: t, h: h, factor: 1}
	d.submit(schedtest.Job(1).Load(30).Deadline(deadline).Run(-1))
	var lost scheduler.Start
	for range 100 {
		i := slices.IndexFunc(h.Starts, func(s schedtest.Started) bool { return s.Nodes[0] == "n0" })
		if i >= 0 {
			lost = h.Starts[i].Start
			break
		}
		d.until(h.Eng.NextWakeup())
	}
	if lost.Nodes == nil {
		t.Fatalf("%s: no chunk started on n0: %+v", alg, h.Starts)
	}
	d.pend = slices.DeleteFunc(d.pend, func(f fin) bool { return f.id == 1 && f.step == lost.Step })
	h.Now += 0.5
	d.collect(h.Handle(scheduler.Finished{Now: h.Now, ID: 1, Step: lost.Step, Failed: true, NodeFail: true}))
	return d, lost
}

// A chunk that fails by its node while the Engine still has the node up
// (reading 23) is lost with its node: its range is sent again, on another
// node (n0 is suspect), and every chunk that completes ends by the deadline,
// so the job's whole load is processed. Without the node-failure path the
// range was never sent again and the completed chunks left a hole.
func TestNodeFailResendsRange(t *testing.T) {
	for _, alg := range []string{"ac-fast", "edf-dlt", "fifo-mn"} {
		d, lost := nodeFailRun(t, alg, 400)
		d.until(math.Inf(1))
		var done []scheduler.Start
		for _, s := range d.h.Starts {
			if s.Step == lost.Step {
				continue
			}
			if s.At > lost.Expect && s.Nodes[0] == "n0" {
				t.Errorf("%s: step %d started on suspect n0 at %v", alg, s.Step, s.At)
			}
			if s.Expect > 400+1e-6 {
				t.Errorf("%s: step %d planned to end at %v, past the deadline", alg, s.Step, s.Expect)
			}
			done = append(done, s.Start)
		}
		slices.SortFunc(done, func(a, b scheduler.Start) int { return int(math.Copysign(1, a.Offset-b.Offset)) })
		end := 0.0
		for _, s := range done {
			if s.Offset > end+1e-9 {
				break
			}
			end = max(end, s.Offset+s.Size)
		}
		if end < 30*(1-1e-9) {
			t.Errorf("%s: completed chunks cover [0, %v) of 30 (lost chunk %+v): %+v", alg, end, lost, done)
		}
	}
}

// The suspect node comes back after suspect_s when the Engine never
// declares it down, and a later NodeDown/NodeUp of it is taken as usual.
func TestNodeFailSuspectReturns(t *testing.T) {
	d, _ := nodeFailRun(t, "ac-fast", 400)
	h := d.h
	p, _ := h.Eng.Policy("rt")
	pl := p.(*dlt.Policy)
	if !pl.Suspect(0) || !pl.Scheduler().Down(0) {
		t.Fatalf("n0 not suspect right after the failure (now %v)", h.Now)
	}
	d.until(h.Now + 501)
	if pl.Suspect(0) || pl.Scheduler().Down(0) {
		t.Fatalf("n0 still out of service at %v, past its suspect time", h.Now)
	}
	// A job that needs all three nodes is admitted again.
	m := dlt.Model{Cms: 1, Cps: 9, Share: 1}
	d.submit(schedtest.Job(2).Load(30).Deadline(h.Now + m.Exec(30, 3)*1.01).Run(-1))
	if h.Rejects[2] != nil {
		t.Fatalf("job 2 needing 3 nodes refused after n0 came back: %v", h.Rejects[2])
	}
}
