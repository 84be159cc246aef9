package dlt

import (
	"math"
	"testing"

	"hora/scheduler"
	"hora/scheduler/schedtest"
)

// Split samples estimate Cms and Cps each from its own measurement
// (dlt-feedback §3.2 with staged data): a slow channel raises Cms and
// leaves Cps where the runs put it, which a duration-only sample cannot.
func TestEstimatorSplit(t *testing.T) {
	m := Model{Cms: 1, Cps: 9, ST: 0.5, SC: 1, Share: 0.5}
	e := &Estimator{MinSamples: 3}
	for range 2 {
		e.ObserveSplit(m, 10, 0.5+10*3, 1+10*4) // Cms 3, Cps 4 per unit of the share
		if got := e.Apply(m); got != m {
			t.Fatalf("changed before MinSamples: %+v", got)
		}
	}
	e.ObserveSplit(m, 10, 0.5+10*3, 1+10*4)
	got := e.Apply(m)
	if !near(got.Cms, 3) || !near(got.Cps, 2) || !near(got.cps(), 4) {
		t.Fatalf("Cms %g Cps %g cps() %g, want 3, 2 (= 4·share), 4", got.Cms, got.Cps, got.cps())
	}
	bad := &Estimator{MinSamples: 1}
	bad.ObserveSplit(m, 10, 1, 0.5) // a run shorter than its setup is no sample
	bad.ObserveSplit(m, 0, 1, 5)
	if bad.SplitSamples() != 0 {
		t.Fatalf("%d samples from invalid measurements", bad.SplitSamples())
	}
}

// Through the Engine: Finished events carrying Transfer and Compute reach
// the dlt policy (scheduler.Measurer) and move both costs of its model: a
// deadline refused under the configured costs (10·(1+10) = 110 s of work)
// is admitted once the measured ones (10·(0.5+1.5) = 20 s) are learned,
// and a chunk of the same size is then planned to take 20 s — not the 30 s
// that passed between start and end, which a duration-only sample would
// have learned.
func TestPolicyLearnsFromStagedChunks(t *testing.T) {
	cfg := schedtest.Cluster(1).Partition("rt", "dlt").Default().
		Param("cms", "1").Param("cps", "10").Param("adapt", "true").Config()
	h := schedtest.New(t, cfg)
	h.Submit(schedtest.Job(100).Load(10).Deadline(h.Now + 25).Run(-1))
	if h.Rejects[100] == nil {
		t.Fatal("tight job admitted before learning")
	}
	for i := range 10 {
		id := scheduler.JobID(i + 1)
		h.Submit(schedtest.Job(id).Load(10).Deadline(h.Now + 1000).Run(-1))
		if len(h.Starts) != i+1 {
			t.Fatalf("job %d: %d starts", id, len(h.Starts))
		}
		s := h.Starts[i]
		h.Now += 30
		h.Handle(scheduler.Finished{Now: h.Now, ID: s.ID, Step: s.Step, Transfer: 10 * 0.5, Compute: 10 * 1.5})
	}
	h.Submit(schedtest.Job(101).Load(10).Deadline(h.Now + 25).Run(-1))
	if e := h.Rejects[101]; e != nil {
		t.Fatalf("tight job refused after learning: %v", e)
	}
	if s := h.Starts[len(h.Starts)-1]; s.ID != 101 || math.Abs(s.Expect-h.Now-20) > 1e-6 {
		t.Fatalf("last start %+v at %g, want job 101 planned to end 20 s later", s, h.Now)
	}
}
