package reserve

import (
	"math"
	"slices"
	"testing"

	"hora/scheduler"
	"hora/scheduler/schedtest"

	"pgregory.net/rapid"
)

func TestPolicyBooksAndRefuses(t *testing.T) {
	cfg := schedtest.Cluster(2).Partition("rt", PolicyName).Default().Param("lmin", "10").Config()
	h := schedtest.New(t, cfg)
	h.Submit(schedtest.Job(1).Nodes(2).Limit(100).Run(100))
	// both nodes are booked for [0,100): 50 s by 120 cannot be guaranteed.
	h.Submit(schedtest.Job(2).Nodes(1).Limit(50).Deadline(120))
	ae := h.Rejects[2]
	if ae == nil || ae.Verdict != scheduler.NotNow || ae.EarliestStart != 100 || ae.EarliestDeadline != 150 {
		t.Fatalf("job 2: want NotNow with earliest start 100 and deadline 150, got %+v", ae)
	}
	h.Submit(schedtest.Job(3).Nodes(1).Limit(50).Deadline(200).Run(50))
	if _, ok := h.Rejects[3]; ok {
		t.Fatalf("job 3 refused: %v", h.Rejects[3])
	}
	// a booking in the future starts at its booked time.
	h.Submit(schedtest.Job(4).Nodes(1).Limit(30).Begin(400).Deadline(500).Run(30))
	h.Advance(math.Inf(1))
	for id, at := range map[scheduler.JobID]float64{1: 0, 3: 100, 4: 400} {
		s, ok := h.StartOf(id)
		if !ok || s.At != at {
			t.Fatalf("job %d: started %v at %v, want %v", id, ok, s.At, at)
		}
	}
	if s, _ := h.StartOf(3); s.Expect != 150 {
		t.Fatalf("job 3 expected end %v, want 150", s.Expect)
	}
	// unlimited jobs cannot be booked.
	h.Submit(schedtest.Job(5).Nodes(1))
	if ae := h.Rejects[5]; ae == nil || ae.Verdict != scheduler.Never {
		t.Fatalf("job 5: want Never, got %+v", ae)
	}
}

// A refused submission at the second a booking starts runs no pass; the
// booking must still start then (found by replay's reproduction of §3.4).
func TestPolicyStartAfterRefusalAtSameSecond(t *testing.T) {
	cfg := schedtest.Cluster(1).Partition("rt", PolicyName).Default().Param("lmin", "10").Config()
	h := schedtest.New(t, cfg)
	h.Submit(schedtest.Job(1).Limit(100).Begin(100).Run(100))
	h.Handle(scheduler.Submit{Now: 100, Job: schedtest.Job(2).Limit(50).Deadline(120).Submit(100).Build()})
	if h.Rejects[2] == nil {
		t.Fatal("job 2 should be refused")
	}
	h.Advance(math.Inf(1))
	if s, ok := h.StartOf(1); !ok || s.At != 100 {
		t.Fatalf("job 1 started %v at %v, want 100", ok, s.At)
	}
}

func TestPolicyBadStrategy(t *testing.T) {
	cfg := schedtest.Cluster(2).Partition("rt", PolicyName).Default().Param("strategy", "worst-fit").Config()
	if _, err := scheduler.New(cfg); err == nil {
		t.Fatal("unknown strategy accepted")
	}
}

func TestPolicyCancelGivesTimeBack(t *testing.T) {
	cfg := schedtest.Cluster(1).Partition("rt", PolicyName).Default().Param("lmin", "10").Config()
	h := schedtest.New(t, cfg)
	h.Submit(schedtest.Job(1).Limit(100).Begin(10).Run(100))
	h.Submit(schedtest.Job(2).Limit(100).Deadline(150))
	if h.Rejects[2] == nil {
		t.Fatal("job 2 should not fit before job 1's booking ends")
	}
	h.Handle(scheduler.Cancel{Now: 1, ID: 1})
	h.Handle(scheduler.Submit{Now: 1, Job: schedtest.Job(3).Limit(100).Deadline(150).Submit(1).Build()})
	if ae := h.Rejects[3]; ae != nil {
		t.Fatalf("job 3 refused after the cancel: %v", ae)
	}
}

// Through the Engine: every admitted job starts within [Begin, Deadline −
// limit] and no node runs two jobs (the harness checks the latter).
func TestPolicyGuarantees(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 5).Draw(t, "nodes")
		st := rapid.SampledFrom(strategyNames[:]).Draw(t, "strategy")
		cfg := schedtest.Cluster(n).Partition("rt", PolicyName).Default().Param("strategy", st).Param("lmin", "5").Config()
		h := schedtest.New(t, cfg)
		jobs := map[scheduler.JobID]scheduler.Job{}
		now := 0.0
		for id := scheduler.JobID(1); id <= 30; id++ {
			now += float64(rapid.IntRange(0, 20).Draw(t, "gap"))
			h.Advance(now)
			lim := float64(rapid.IntRange(1, 60).Draw(t, "limit"))
			b := schedtest.Job(id).Nodes(rapid.IntRange(1, n).Draw(t, "n")).Limit(lim).Submit(now).
				Run(lim * float64(rapid.IntRange(1, 10).Draw(t, "frac")) / 10)
			if rapid.Bool().Draw(t, "begin") {
				b.Begin(now + float64(rapid.IntRange(0, 100).Draw(t, "r")))
			}
			if rapid.Bool().Draw(t, "deadline") {
				b.Deadline(max(now, b.Build().Begin) + lim + float64(rapid.IntRange(0, 80).Draw(t, "slack")))
			}
			h.Submit(b)
			if h.Rejects[id] == nil {
				jobs[id] = b.Build()
			} else if ae := h.Rejects[id]; ae.Verdict == scheduler.NotNow && ae.EarliestStart < now {
				t.Fatalf("job %d: earliest start %v in the past", id, ae.EarliestStart)
			}
		}
		h.Advance(math.Inf(1))
		ids := make([]scheduler.JobID, 0, len(jobs))
		for id := range jobs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			j := jobs[id]
			s, ok := h.StartOf(id)
			if !ok {
				t.Fatalf("admitted job %d never started", id)
			}
			if s.At < j.Begin || s.At < j.Submit || (j.Deadline > 0 && s.At+j.TimeLimit > j.Deadline) {
				t.Fatalf("job %+v started at %v", j, s.At)
			}
		}
	})
}
