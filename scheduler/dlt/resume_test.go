package dlt_test

import (
	"cmp"
	"math"
	"slices"
	"testing"

	"hora/scheduler"
	"hora/scheduler/schedtest"
)

// A restart while a divisible job runs: a fresh Engine gets the job back
// with its two running chunks (Restore.Chunks) and the load handed out so
// far. The running chunks keep their nodes; the rest continues from the
// next offset and step; every chunk still ends by the deadline; the job
// leaves once all have finished, and the data handed out tiles the load.
func TestRestoreRunningChunks(t *testing.T) {
	for _, alg := range []string{"ac-fast", "edf-dlt", "fifo-mn"} {
		cfg := cluster(4, map[string]string{"cms": "1", "cps": "9", "admission": alg})
		h := schedtest.New(t, cfg)
		d := &driver{t: t, h: h, factor: 1}
		d.submit(schedtest.Job(1).Load(40).Deadline(150).Run(-1))
		if h.Rejects[1] != nil {
			t.Fatalf("%s: %v", alg, h.Rejects[1])
		}
		d.until(0.5) // some chunks started, none finished
		if len(h.Starts) == 0 {
			t.Fatalf("%s: nothing started", alg)
		}
		var chunks []scheduler.RestoredChunk
		done, next := 0.0, 0
		for _, s := range h.Starts {
			chunks = append(chunks, scheduler.RestoredChunk{Step: s.Step, Node: s.Nodes[0], Offset: s.Offset, Size: s.Size, Start: s.At})
			done, next = max(done, s.Offset+s.Size), s.Step+1
		}
		if done >= 40 {
			t.Fatalf("%s: the whole load was handed out before the restart; the test needs a rest", alg)
		}

		// The restart: a new Engine, the job restored with its chunks.
		h2 := schedtest.New(t, cfg)
		h2.Now = 1
		j := schedtest.Job(1).Load(40).Deadline(150).Build()
		j.Submit = 0
		h2.Handle(scheduler.Restore{Now: 1, Job: j, Running: true, Chunks: chunks, Done: done, NextStep: next})
		d2 := &driver{t: t, h: h2, factor: 1}
		for _, c := range chunks { // they finish as planned by the first Engine
			for _, s := range h.Starts {
				if s.Step == c.Step {
					d2.pend = append(d2.pend, fin{s.Expect, 1, c.Step})
				}
			}
		}
		d2.collect(h2.Handle(scheduler.Tick{Now: 1}))
		d2.until(math.Inf(1))
		off := done
		for i, s := range h2.Starts {
			if s.Step != next+i || math.Abs(s.Offset-off) > 1e-9 || s.Expect > 150+1e-9 {
				t.Fatalf("%s: start after restore %d: %+v (want step %d at offset %g, by 150)", alg, i, s, next+i, off)
			}
			off += s.Size
		}
		if math.Abs(off-40) > 1e-9 || len(h2.Starts) == 0 {
			t.Fatalf("%s: after restore %d chunks, load handed out up to %g of 40", alg, len(h2.Starts), off)
		}
		if len(h2.Eng.Running()) != 0 {
			t.Fatalf("%s: still running: %+v", alg, h2.Eng.Running())
		}
		if _, known := h2.Eng.Job(1); known {
			t.Fatalf("%s: job still known after its last chunk", alg)
		}
	}
}

// The rest of the load cannot be guaranteed after the restart (the
// deadline is now too close) and no chunk runs: the job ends DEADLINE.
// Another job admitted meanwhile keeps its guarantee.
func TestRestoreRestRefused(t *testing.T) {
	cfg := cluster(2, map[string]string{"cms": "1", "cps": "9"})
	h := schedtest.New(t, cfg)
	h.Now = 50
	j := schedtest.Job(1).Load(40).Deadline(60).Build()
	h.Handle(scheduler.Restore{Now: 50, Job: j, Running: true, Done: 10, NextStep: 2})
	h.Handle(scheduler.Tick{Now: 50})
	if e, ok := h.Ends[1]; !ok || e.State != "DEADLINE" || e.Reason != "DeadLine" {
		t.Fatalf("ends %+v, want job 1 DEADLINE/DeadLine", h.Ends)
	}
	if len(h.Starts) != 0 {
		t.Fatalf("started %+v", h.Starts)
	}
}

// A restart after a chunk was recorded started but never reached its node
// (Lost): its range is sent again first, the running chunks keep their
// nodes, the rest continues from the load handed out, every chunk ends by
// the deadline, and the ranges run tile the whole load. Before ResumeLost
// the lost range was never run.
func TestRestoreLostChunkRerun(t *testing.T) {
	for _, alg := range []string{"ac-fast", "edf-dlt", "fifo-mn"} {
		cfg := cluster(4, map[string]string{"cms": "1", "cps": "9", "admission": alg})
		h := schedtest.New(t, cfg)
		d := &driver{t: t, h: h, factor: 1}
		d.submit(schedtest.Job(1).Load(40).Deadline(200).Run(-1))
		d.until(0.5)
		var chunks []scheduler.RestoredChunk
		done, next := 0.0, 0
		for _, s := range h.Starts {
			chunks = append(chunks, scheduler.RestoredChunk{Step: s.Step, Node: s.Nodes[0], Offset: s.Offset, Size: s.Size,
				Start: s.At, Lost: s.Step == 0})
			done, next = max(done, s.Offset+s.Size), s.Step+1
		}
		if len(chunks) == 0 {
			t.Fatalf("%s: nothing started", alg)
		}
		h2 := schedtest.New(t, cfg)
		h2.Now = 1
		j := schedtest.Job(1).Load(40).Deadline(200).Build()
		h2.Handle(scheduler.Restore{Now: 1, Job: j, Running: true, Chunks: chunks, Done: done, NextStep: next})
		d2 := &driver{t: t, h: h2, factor: 1}
		type rng struct{ off, size float64 }
		var ran []rng
		for _, c := range chunks {
			if c.Lost {
				continue
			}
			ran = append(ran, rng{c.Offset, c.Size})
			for _, s := range h.Starts {
				if s.Step == c.Step {
					d2.pend = append(d2.pend, fin{s.Expect, 1, c.Step})
				}
			}
		}
		d2.collect(h2.Handle(scheduler.Tick{Now: 1}))
		d2.until(math.Inf(1))
		if len(h2.Starts) == 0 || h2.Starts[0].Offset != 0 || h2.Starts[0].Step != next {
			t.Fatalf("%s: first start after restore %+v, want the lost range from offset 0 as step %d", alg, h2.Starts, next)
		}
		for _, s := range h2.Starts {
			if s.Expect > 200+1e-9 {
				t.Errorf("%s: step %d ends at %v, past the deadline", alg, s.Step, s.Expect)
			}
			ran = append(ran, rng{s.Offset, s.Size})
		}
		slices.SortFunc(ran, func(a, b rng) int { return cmp.Compare(a.off, b.off) })
		end := 0.0
		for _, r := range ran {
			if math.Abs(r.off-end) > 1e-9 {
				t.Fatalf("%s: ranges run %+v do not tile the load at %g", alg, ran, end)
			}
			end = r.off + r.size
		}
		if math.Abs(end-40) > 1e-9 {
			t.Fatalf("%s: ranges run cover [0, %g) of 40: %+v", alg, end, ran)
		}
		if _, known := h2.Eng.Job(1); known {
			t.Fatalf("%s: job still known after its last chunk", alg)
		}
	}
}
