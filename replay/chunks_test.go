package replay

import (
	"math"
	"strconv"
	"testing"

	"hora/scheduler"
)

// fakeDLT stands in for the "dlt" policy (scheduler/dlt) in these tests: it
// admits a divisible job if, run after every job admitted before it on all
// N nodes (E(σ, N) by the optimal partitioning rule), it ends by its
// deadline; it starts the queue head's N chunks when every node is free,
// each planned to end E(σ, N) later. It trusts its plan, so chunks that
// overrun make later jobs miss.
type fakeDLT struct {
	p        *scheduler.Partition
	cms, cps float64
	queue    []*scheduler.Job
	planned  float64 // planned end of the last admitted job
	left     map[scheduler.JobID]int
}

func init() {
	scheduler.RegisterPolicy("test-dlt", func(p *scheduler.Partition) (scheduler.Policy, error) {
		f := &fakeDLT{p: p, left: map[scheduler.JobID]int{}}
		var err error
		if f.cms, err = strconv.ParseFloat(p.Spec().Params["cms"], 64); err != nil {
			return nil, err
		}
		if f.cps, err = strconv.ParseFloat(p.Spec().Params["cps"], 64); err != nil {
			return nil, err
		}
		return f, nil
	})
}

func (f *fakeDLT) exec(j *scheduler.Job) float64 { return DLTExec(j.Load, f.p.Len(), f.cms, f.cps) }

func (f *fakeDLT) Admit(now float64, j *scheduler.Job) error {
	end := max(now, f.planned) + f.exec(j)
	if j.Load <= 0 || end > j.Deadline {
		return &scheduler.AdmissionError{Verdict: scheduler.NotNow, Code: "DeadlineNotGuaranteed",
			Message: "deadline cannot be guaranteed", EarliestDeadline: end}
	}
	f.planned = end
	f.queue = append(f.queue, j)
	return nil
}
func (f *fakeDLT) Restore(float64, *scheduler.Job, bool) {}
func (f *fakeDLT) Remove(float64, scheduler.JobID)       {}
func (f *fakeDLT) Hold(float64, scheduler.JobID)         {}
func (f *fakeDLT) Release(float64, scheduler.JobID)      {}
func (f *fakeDLT) StepFinished(now float64, id scheduler.JobID, step int, failed bool) bool {
	f.left[id]--
	return f.left[id] == 0
}
func (f *fakeDLT) Schedule(now float64) {
	for len(f.queue) > 0 && f.p.FreeCount() == f.p.Len() {
		j := f.queue[0]
		f.queue = f.queue[1:]
		n := f.p.Len()
		beta := f.cps / (f.cms + f.cps)
		alpha := (1 - beta) / (1 - math.Pow(beta, float64(n)))
		off := 0.0
		for k := range n {
			size := alpha * math.Pow(beta, float64(k)) * j.Load
			if err := f.p.Start(j.ID, k, []int{k}, off, size, now+f.exec(j)); err != nil {
				panic(err)
			}
			off += size
		}
		f.left[j.ID] = n
		// An overrun pushed the start: later plans start from here.
		f.planned = max(f.planned, now+f.exec(j))
	}
}
func (f *fakeDLT) Test(float64, *scheduler.Job) (float64, []string, error) { return 0, nil, nil }
func (f *fakeDLT) Reason(scheduler.JobID) string                           { return "Resources" }
func (f *fakeDLT) Pending(dst []scheduler.JobID) []scheduler.JobID         { return dst }
func (f *fakeDLT) NextWakeup() float64                                     { return math.Inf(1) }

// TestDivisibleChunks replays rt-dlt-2005 through the stand-in policy:
// chunks run on their nodes and end at their planned end, admitted jobs
// never miss (DESIGN.md invariant 1 for this policy), the reject ratio grows
// with the load; chunks that take longer than planned make misses.
func TestDivisibleChunks(t *testing.T) {
	var prev float64
	for _, load := range []string{"0.3", "1.5"} {
		w := gen(t, "rt-dlt-2005", 1, map[string]string{"load": load, "jobs": "3000"})
		o, err := Simulate(t.Context(), w, Options{Policy: "test-dlt"})
		if err != nil {
			t.Fatal(err)
		}
		s := Summarize(o, 0, "simulated")
		t.Logf("load %s: reject ratio %.4f, misses %d, utilization %.4f", load, s.RejectRatio, s.DeadlineMisses, s.UtilizationArrivals)
		if s.Rejected+s.Admitted != s.Jobs || s.DeadlineMisses != 0 || s.Policy != "test-dlt" {
			t.Errorf("load %s: %+v", load, s)
		}
		if s.RejectRatio <= prev || s.RejectRatio == 0 {
			t.Errorf("load %s: reject ratio %.4f not above %.4f", load, s.RejectRatio, prev)
		}
		prev = s.RejectRatio
		for i, r := range o.Results {
			j := &w.Jobs[i]
			if !r.Admitted {
				continue
			}
			want := DLTExec(j.Load, 10, 10, 10)
			if r.Chunks != 10 || r.Nodes != 10 || math.Abs(r.End-r.Start-want) > 1e-6*want ||
				math.Abs(r.Busy-10*want) > 1e-5*want {
				t.Fatalf("job %d: %+v, want 10 chunks of %g", j.ID, r, want)
			}
		}
	}
	w := gen(t, "rt-dlt-2005", 1, map[string]string{"load": "0.8", "jobs": "3000"})
	slow, err := Simulate(t.Context(), w, Options{Policy: "test-dlt", ChunkScale: 1.3, ChunkJitter: 0.1, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(slow, 0, "simulated")
	t.Logf("chunks 1.3×±10%% their plan: %d misses of %d admitted", s.DeadlineMisses, s.Admitted)
	if s.DeadlineMisses == 0 || s.DeadlineMissRatio == 0 {
		t.Errorf("overrunning chunks made no miss: %+v", s)
	}
	again, _ := Simulate(t.Context(), w, Options{Policy: "test-dlt", ChunkScale: 1.3, ChunkJitter: 0.1, Seed: 4})
	for i := range again.Results {
		if again.Results[i] != slow.Results[i] {
			t.Fatalf("jitter is not fixed by the seed: job %d", w.Jobs[i].ID)
		}
	}
}

// TestEndedCountsAsMiss: a job the scheduler ends pending (DEADLINE) is a
// deadline miss and a loss, not a rejection.
func TestEndedCountsAsMiss(t *testing.T) {
	jobs := []Job{job(1, 0, 100, 100, 4), job(2, 1, 10, 10, 4)}
	jobs[1].Deadline = 50 // cannot start before 100
	o, err := Simulate(t.Context(), &Workload{Name: "t", Procs: 4, Jobs: jobs}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := o.Results[1]
	s := Summarize(o, 0, "simulated")
	if !r.Ended || r.Started || r.Reason != scheduler.JobStateDeadline || s.DeadlineMisses != 1 || s.Rejected != 0 ||
		s.JobLossRate != 0.5 {
		t.Errorf("result %+v, summary misses %d rejected %d loss %g", r, s.DeadlineMisses, s.Rejected, s.JobLossRate)
	}
}

// TestChunkEndsAtItsExpect: a chunk that takes what the policy planned ends
// at Start.Expect itself, not at now + (Expect − now), which rounds one ulp
// past it for these numbers. The dlt policy (ac-fast) plans the first chunk
// to end at the deadline exactly; the job used to count as a miss.
func TestChunkEndsAtItsExpect(t *testing.T) {
	now, dl := 27296.64, 158368.763
	if now+(dl-now) <= dl {
		t.Fatal("scenario lost: now + (dl − now) no longer rounds up")
	}
	w := &Workload{Name: "t", Procs: 2, Cluster: dltCluster(2, 1, 1000, "ac-fast"),
		Jobs: []Job{{ID: 1, Submit: now, Run: 200 * 1001, Limit: scheduler.Inf, Procs: 1, Deadline: dl, Load: 200, RecordedWait: -1}}}
	o, err := Simulate(t.Context(), w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := o.Results[0]
	if !r.Admitted || r.Chunks < 2 || r.End != dl || missed(&w.Jobs[0], &r) {
		t.Errorf("result %+v: want admitted, its first chunk ending at the deadline %v (over by %g)", r, dl, r.End-dl)
	}
}
