package dlt_test

import (
	"math"
	"testing"

	"hora/scheduler"
	_ "hora/scheduler/dlt"
	"hora/scheduler/schedtest"
)

func cluster(n int, params map[string]string) scheduler.Config {
	c := schedtest.Cluster(n).Partition("rt", "dlt").Default()
	for k, v := range params {
		c = c.Param(k, v)
	}
	return c.Config()
}

type fin struct {
	at   float64
	id   scheduler.JobID
	step int
}

// driver runs the engine in virtual time: every chunk finishes at its
// planned duration times factor, the engine is ticked at NextWakeup.
type driver struct {
	t      *testing.T
	h      *schedtest.Harness
	factor float64
	pend   []fin
}

func (d *driver) collect(acts []scheduler.Action) {
	for _, a := range acts {
		if s, ok := a.(scheduler.Start); ok {
			d.pend = append(d.pend, fin{d.h.Now + (s.Expect-d.h.Now)*d.factor, s.ID, s.Step})
		}
	}
}

// until runs events up to time end (Inf: until nothing is left).
func (d *driver) until(end float64) {
	h := d.h
	for range 100000 {
		next, k := math.Inf(1), -1
		for i, f := range d.pend {
			if f.at < next {
				next, k = f.at, i
			}
		}
		w := h.Eng.NextWakeup()
		if min(next, w) > end || (math.IsInf(next, 1) && math.IsInf(w, 1)) {
			if !math.IsInf(end, 1) {
				h.Now = max(h.Now, end)
			}
			return
		}
		if k >= 0 && next <= w {
			f := d.pend[k]
			d.pend = append(d.pend[:k], d.pend[k+1:]...)
			h.Now = max(h.Now, f.at)
			d.collect(h.Finish(f.id, f.step, false))
			continue
		}
		h.Now = max(h.Now, w)
		d.collect(h.Handle(scheduler.Tick{Now: h.Now}))
	}
	d.t.Fatal("engine did not settle")
}

func (d *driver) submit(b *schedtest.JobBuilder) { d.collect(d.h.Submit(b)) }

// A divisible job through the Engine: admitted, cut into chunks Step 0, 1, 2
// on distinct nodes by the MNA dispatcher, all planned to end by the deadline,
// data contiguous and complete; the job leaves when its last chunk ends.
func TestPolicyEngine(t *testing.T) {
	h := schedtest.New(t, cluster(4, map[string]string{"cms": "1", "cps": "9"}))
	d := &driver{t: t, h: h, factor: 1}
	d.submit(schedtest.Job(1).Load(25).Deadline(100).Run(-1))
	if _, ok := h.Rejects[1]; ok {
		t.Fatalf("rejected: %v", h.Rejects[1])
	}
	d.until(math.Inf(1))
	off := 0.0
	for i, s := range h.Starts {
		if s.ID != 1 || s.Step != i || len(s.Nodes) != 1 || math.Abs(s.Offset-off) > 1e-9 || s.Expect > 100+1e-9 {
			t.Fatalf("start %d: %+v", i, s)
		}
		off += s.Size
	}
	if len(h.Starts) != 3 || math.Abs(off-25) > 1e-9 {
		t.Fatalf("%d chunks, %g data", len(h.Starts), off)
	}
	if len(h.Eng.Running()) != 0 {
		t.Fatalf("still running: %+v", h.Eng.Running())
	}
}

// A refused job gets NotNow with the earliest deadline that would have been
// guaranteed, and submitting with that deadline succeeds.
func TestPolicyRefusal(t *testing.T) {
	for _, alg := range []string{"ac-fast", "edf-dlt", "mcdf"} {
		h := schedtest.New(t, cluster(2, map[string]string{"cms": "1", "cps": "9", "admission": alg}))
		h.Submit(schedtest.Job(1).Load(100).Deadline(20).Run(-1))
		e := h.Rejects[1]
		if e == nil || e.Verdict != scheduler.NotNow || e.Code != "DeadlineNotGuaranteed" || e.EarliestDeadline <= 20 {
			t.Fatalf("%s: %+v", alg, e)
		}
		h.Submit(schedtest.Job(2).Load(100).Deadline(e.EarliestDeadline * (1 + 1e-9)).Run(-1))
		if h.Rejects[2] != nil {
			t.Fatalf("%s: earliest deadline %g refused: %v", alg, e.EarliestDeadline, h.Rejects[2])
		}
	}
}

// Rigid jobs and jobs without a deadline are refused for good; bad params
// are configuration errors that name the key.
func TestPolicyNever(t *testing.T) {
	h := schedtest.New(t, cluster(2, nil))
	h.Submit(schedtest.Job(1).Nodes(1).Limit(60).Run(-1))
	h.Submit(schedtest.Job(2).Load(5).Run(-1))
	for _, id := range []scheduler.JobID{1, 2} {
		if e := h.Rejects[id]; e == nil || e.Verdict != scheduler.Never {
			t.Fatalf("job %d: %+v", id, e)
		}
	}
	for _, bad := range []map[string]string{{"cps": "0"}, {"cms": "-1"}, {"admission": "nope"}, {"share": "2"}, {"adapt": "maybe"}} {
		if _, err := scheduler.New(cluster(2, bad)); err == nil {
			t.Fatalf("%v accepted", bad)
		}
	}
}

// Through the Engine, a stream of jobs is never late when chunks run as
// planned or faster.
func TestPolicyGuarantee(t *testing.T) {
	for _, alg := range []string{"ac-fast", "edf-dlt", "edf-mn"} {
		for _, factor := range []float64{1, 0.5} {
			h := schedtest.New(t, cluster(5, map[string]string{"cms": "1", "cps": "20", "admission": alg}))
			dr := &driver{t: t, h: h, factor: factor}
			deadline := map[scheduler.JobID]float64{}
			for i := range 60 {
				id := scheduler.JobID(i + 1)
				d := h.Now + 250 + float64((i*37)%300)
				dr.submit(schedtest.Job(id).Load(float64(10 + (i*13)%40)).Deadline(d).Run(-1))
				deadline[id] = d
				dr.until(h.Now + 100)
			}
			dr.until(math.Inf(1))
			if len(h.Eng.Running()) != 0 {
				t.Fatalf("%s: still running %+v", alg, h.Eng.Running())
			}
			late := 0
			for _, s := range h.Starts {
				if s.Expect > deadline[s.ID]+1e-6 {
					late++
				}
			}
			if late > 0 || len(h.Starts) == 0 || len(h.Rejects) == 0 {
				t.Fatalf("%s ×%g: %d late chunks of %d, %d rejected", alg, factor, late, len(h.Starts), len(h.Rejects))
			}
			t.Logf("%s ×%g: %d chunks, %d of 60 rejected", alg, factor, len(h.Starts), len(h.Rejects))
		}
	}
}

// Cancelling a running job: no more chunks, and its node serves the next job
// once the driver reports the killed step (the Engine does not pass that
// Finished on to the policy).
func TestPolicyCancelRunning(t *testing.T) {
	h := schedtest.New(t, cluster(1, map[string]string{"cms": "1", "cps": "9"}))
	d := &driver{t: t, h: h, factor: 1}
	d.submit(schedtest.Job(1).Load(10).Deadline(1000).Run(-1))
	if len(h.Starts) != 1 {
		t.Fatalf("starts %+v", h.Starts)
	}
	h.Now = 10
	h.Handle(scheduler.Cancel{Now: 10, ID: 1})
	d.pend = nil
	h.Finish(1, 0, true)
	d.submit(schedtest.Job(2).Load(5).Deadline(200).Run(-1))
	d.until(math.Inf(1))
	if h.Rejects[2] != nil || len(h.Starts) != 2 || h.Starts[1].ID != 2 || h.Starts[1].At != 10 {
		t.Fatalf("after cancel: rejects %v, starts %+v", h.Rejects, h.Starts)
	}
}
