package scheduler_test

import (
	"slices"
	"testing"

	"hora/scheduler"
	st "hora/scheduler/schedtest"
)

// gateEngine is a batch cluster of n nodes for the gate tests.
func gateEngine(t *testing.T, n int) *scheduler.Engine {
	t.Helper()
	eng, err := scheduler.New(st.Cluster(n).Partition("p", "batch").Config())
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

func startedIDs(acts []scheduler.Action) []scheduler.JobID {
	var out []scheduler.JobID
	for _, a := range acts {
		if s, ok := a.(scheduler.Start); ok {
			out = append(out, s.ID)
		}
	}
	return out
}

func endsOf(acts []scheduler.Action) []scheduler.End {
	var out []scheduler.End
	for _, a := range acts {
		if e, ok := a.(scheduler.End); ok {
			out = append(out, e)
		}
	}
	return out
}

func job(id scheduler.JobID) scheduler.Job {
	return scheduler.Job{ID: id, Nodes: 1, TimeLimit: 100, Submit: float64(id), User: 1000, Name: "j"}
}

func dep(kind scheduler.DepKind, targets ...scheduler.JobID) *scheduler.Dependency {
	return &scheduler.Dependency{Terms: []scheduler.DepTerm{{Kind: kind, Targets: targets}}}
}

func TestArrayThrottleKeepsAtMostLimitInPolicy(t *testing.T) {
	eng := gateEngine(t, 8)
	var evs []scheduler.Event
	for i := range 6 {
		j := job(scheduler.JobID(10 + i))
		j.Array, j.ArrayLimit = 10, 2
		evs = append(evs, scheduler.Submit{Now: 1, Job: j})
	}
	acts, err := eng.HandleBatch(1, evs)
	if err != nil {
		t.Fatal(err)
	}
	if got := startedIDs(acts); !slices.Equal(got, []scheduler.JobID{10, 11}) {
		t.Fatalf("started %v, want the first two tasks only (throttle 2 on 8 free nodes)", got)
	}
	if r := eng.Reason(12); r != scheduler.ReasonArrayTaskLimit {
		t.Fatalf("reason of a throttled task = %q", r)
	}
	acts = eng.Handle(scheduler.Finished{Now: 5, ID: 10, Step: scheduler.BatchStep})
	if got := startedIDs(acts); !slices.Equal(got, []scheduler.JobID{12}) {
		t.Fatalf("after one task ended started %v, want [12]", got)
	}
	// Cancelling a throttled task frees nothing; cancelling a running one does.
	eng.Handle(scheduler.Cancel{Now: 6, ID: 15})
	acts = eng.Handle(scheduler.Cancel{Now: 6, ID: 11})
	acts = append(acts, eng.Handle(scheduler.Finished{Now: 6, ID: 11, Step: scheduler.BatchStep, Failed: true})...)
	if got := startedIDs(acts); !slices.Equal(got, []scheduler.JobID{13}) {
		t.Fatalf("started %v, want [13]", got)
	}
	// Raising the throttle lets the rest in at once.
	acts = eng.Handle(scheduler.SetThrottle{Now: 7, Array: 10, Limit: 0})
	if got := startedIDs(acts); !slices.Equal(got, []scheduler.JobID{14}) {
		t.Fatalf("after the throttle was lifted started %v, want [14]", got)
	}
}

func TestDependencyKinds(t *testing.T) {
	cases := []struct {
		name      string
		kind      scheduler.DepKind
		failed    bool
		wantStart bool
	}{
		{"afterok ok", scheduler.DepAfterOK, false, true},
		{"afterok failed", scheduler.DepAfterOK, true, false},
		{"afternotok failed", scheduler.DepAfterNotOK, true, true},
		{"afternotok ok", scheduler.DepAfterNotOK, false, false},
		{"afterany failed", scheduler.DepAfterAny, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eng := gateEngine(t, 2)
			eng.Handle(scheduler.Submit{Now: 1, Job: job(1)})
			b := job(2)
			b.Dep = dep(tc.kind, 1)
			acts := eng.Handle(scheduler.Submit{Now: 1, Job: b})
			if len(startedIDs(acts)) != 0 {
				t.Fatalf("dependent started before its target ended: %v", acts)
			}
			if r := eng.Reason(2); r != scheduler.ReasonDependency {
				t.Fatalf("reason %q, want Dependency", r)
			}
			acts = eng.Handle(scheduler.Finished{Now: 3, ID: 1, Step: scheduler.BatchStep, Failed: tc.failed})
			started := slices.Contains(startedIDs(acts), 2)
			if started != tc.wantStart {
				t.Fatalf("dependent started=%v, want %v", started, tc.wantStart)
			}
			if !tc.wantStart {
				if r := eng.Reason(2); r != scheduler.ReasonDepNever {
					t.Fatalf("reason %q, want DependencyNeverSatisfied", r)
				}
			}
		})
	}
}

func TestDependencyKillOnInvalid(t *testing.T) {
	eng := gateEngine(t, 1)
	eng.Handle(scheduler.Submit{Now: 1, Job: job(1)})
	b := job(2)
	b.Dep, b.KillOnInvalidDep = dep(scheduler.DepAfterOK, 1), true
	eng.Handle(scheduler.Submit{Now: 1, Job: b})
	acts := eng.Handle(scheduler.Finished{Now: 2, ID: 1, Step: scheduler.BatchStep, Failed: true})
	ends := endsOf(acts)
	if len(ends) != 1 || ends[0].ID != 2 || ends[0].State != "CANCELLED" || ends[0].Reason != scheduler.ReasonDepNever {
		t.Fatalf("ends %+v, want job 2 CANCELLED DependencyNeverSatisfied", ends)
	}
	if _, ok := eng.Job(2); ok {
		t.Fatal("killed job still known to the Engine")
	}
}

func TestDependencyAfterDelayAndAny(t *testing.T) {
	eng := gateEngine(t, 3)
	eng.Handle(scheduler.Submit{Now: 0, Job: job(1)}) // starts at 0
	b := job(2)
	b.Dep = &scheduler.Dependency{Terms: []scheduler.DepTerm{{Kind: scheduler.DepAfter, Targets: []scheduler.JobID{1}, Delay: 60}}}
	if acts := eng.Handle(scheduler.Submit{Now: 1, Job: b}); len(startedIDs(acts)) != 0 {
		t.Fatal("after:1+1 started before the delay passed")
	}
	if w := eng.NextWakeup(); w != 60 {
		t.Fatalf("next wakeup %v, want 60 (start of 1 + 60 s)", w)
	}
	if acts := eng.Handle(scheduler.Tick{Now: 60}); !slices.Contains(startedIDs(acts), 2) {
		t.Fatal("after+delay did not start at its time")
	}
	// "?" : one satisfied term is enough, even when the other failed.
	eng2 := gateEngine(t, 3)
	eng2.Handle(scheduler.Submit{Now: 0, Job: job(1)})
	eng2.Handle(scheduler.Submit{Now: 0, Job: job(2)})
	c := job(3)
	c.Dep = &scheduler.Dependency{Any: true, Terms: []scheduler.DepTerm{
		{Kind: scheduler.DepAfterOK, Targets: []scheduler.JobID{1}},
		{Kind: scheduler.DepAfterOK, Targets: []scheduler.JobID{2}},
	}}
	eng2.Handle(scheduler.Submit{Now: 0, Job: c})
	if acts := eng2.Handle(scheduler.Finished{Now: 1, ID: 1, Step: scheduler.BatchStep, Failed: true}); len(startedIDs(acts)) != 0 {
		t.Fatal("any-of started after its only decided term failed")
	}
	if r := eng2.Reason(3); r != scheduler.ReasonDependency {
		t.Fatalf("reason %q, want Dependency while the other term may hold", r)
	}
	if acts := eng2.Handle(scheduler.Finished{Now: 2, ID: 2, Step: scheduler.BatchStep}); !slices.Contains(startedIDs(acts), 3) {
		t.Fatal("any-of did not start once a term held")
	}
}

func TestSingletonRunsOneAtATimeInOrder(t *testing.T) {
	eng := gateEngine(t, 4)
	var order []scheduler.JobID
	for id := scheduler.JobID(1); id <= 3; id++ {
		j := job(id)
		j.Dep = &scheduler.Dependency{Terms: []scheduler.DepTerm{{Kind: scheduler.DepSingleton}}}
		order = append(order, startedIDs(eng.Handle(scheduler.Submit{Now: float64(id), Job: j}))...)
	}
	other := job(9)
	other.Name = "other"
	order = append(order, startedIDs(eng.Handle(scheduler.Submit{Now: 4, Job: other}))...)
	if !slices.Equal(order, []scheduler.JobID{1, 9}) {
		t.Fatalf("started %v, want [1 9]: one singleton at a time, other names free", order)
	}
	for id := scheduler.JobID(1); id <= 2; id++ {
		got := startedIDs(eng.Handle(scheduler.Finished{Now: float64(10 + id), ID: id, Step: scheduler.BatchStep}))
		if !slices.Equal(got, []scheduler.JobID{id + 1}) {
			t.Fatalf("after %d ended started %v, want [%d]", id, got, id+1)
		}
	}
}

func TestDependencyCycleAndRestore(t *testing.T) {
	eng := gateEngine(t, 1)
	a := job(1)
	a.Held = true
	eng.Handle(scheduler.Submit{Now: 0, Job: a})
	b := job(2)
	b.Dep = dep(scheduler.DepAfterOK, 1)
	eng.Handle(scheduler.Submit{Now: 0, Job: b})
	c := job(3)
	c.Dep = dep(scheduler.DepAfterAny, 2)
	eng.Handle(scheduler.Submit{Now: 0, Job: c})
	if !eng.DependencyCycle(1, dep(scheduler.DepAfterOK, 3)) {
		t.Fatal("1 → 3 → 2 → 1 not seen as a cycle")
	}
	if eng.DependencyCycle(3, dep(scheduler.DepAfterOK, 1)) {
		t.Fatal("3 waiting on 1 is no cycle")
	}
	// Restore: the outcome of an ended job resolves a restored dependent.
	eng2 := gateEngine(t, 1)
	eng2.Handle(scheduler.Ended{Now: 5, ID: 1, OK: true, StartAt: 1, EndAt: 4})
	eng2.Handle(scheduler.Restore{Now: 5, Job: b})
	if got := startedIDs(eng2.Handle(scheduler.Tick{Now: 5})); !slices.Equal(got, []scheduler.JobID{2}) {
		t.Fatalf("restored dependent of a completed job: started %v", got)
	}
}

// --signal: the Engine asks for the signal SignalBefore seconds before the
// running job's limit, once, and wakes the driver for it.
func TestSignalBeforeLimit(t *testing.T) {
	eng := gateEngine(t, 1)
	j := job(1)
	j.Signal, j.SignalBefore = "10", 30
	eng.Handle(scheduler.Submit{Now: 0, Job: j})
	if w := eng.NextWakeup(); w != 70 {
		t.Fatalf("next wakeup %v, want 70 (limit 100 − 30)", w)
	}
	if acts := eng.Handle(scheduler.Tick{Now: 69}); len(acts) != 0 {
		t.Fatalf("early: %+v", acts)
	}
	acts := eng.Handle(scheduler.Tick{Now: 70})
	if len(acts) != 1 || acts[0] != (scheduler.Signal{ID: 1, Step: scheduler.BatchStep, Sig: "10"}) {
		t.Fatalf("at 70: %+v", acts)
	}
	if acts := eng.Handle(scheduler.Tick{Now: 80}); len(acts) != 0 {
		t.Fatalf("signal sent twice: %+v", acts)
	}
}
