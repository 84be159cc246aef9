package scheduler_test

import (
	"testing"

	"pgregory.net/rapid"

	"hora/scheduler"
	st "hora/scheduler/schedtest"
)

// The gates against a naive model: random dependency graphs over earlier
// jobs (after, afterany, afterok, afternotok; all-of or any-of), random
// outcomes, enough nodes that only dependencies hold jobs back. After every
// event each job's state must be what re-evaluating every dependency from
// scratch gives: started once its dependency holds, waiting (Dependency)
// while it may still hold, DependencyNeverSatisfied when it never can.
func TestPropGatesAgainstNaiveModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(2, 25).Draw(rt, "jobs")
		eng, err := scheduler.New(st.Cluster(n).Partition("p", "batch").Config())
		if err != nil {
			rt.Fatal(err)
		}
		kinds := []scheduler.DepKind{scheduler.DepAfter, scheduler.DepAfterAny, scheduler.DepAfterOK, scheduler.DepAfterNotOK}
		deps := make([]*scheduler.Dependency, n+1)
		started := make([]bool, n+1)
		ended := make([]bool, n+1)
		okEnd := make([]bool, n+1)
		var evs []scheduler.Event
		for id := 1; id <= n; id++ {
			j := scheduler.Job{ID: scheduler.JobID(id), Nodes: 1, TimeLimit: 1000, User: 1}
			if id > 1 && rapid.Bool().Draw(rt, "has dep") {
				d := &scheduler.Dependency{Any: rapid.Bool().Draw(rt, "any")}
				for range rapid.IntRange(1, 3).Draw(rt, "terms") {
					d.Terms = append(d.Terms, scheduler.DepTerm{
						Kind:    kinds[rapid.IntRange(0, len(kinds)-1).Draw(rt, "kind")],
						Targets: []scheduler.JobID{scheduler.JobID(rapid.IntRange(1, id-1).Draw(rt, "target"))},
					})
				}
				j.Dep, deps[id] = d, d
			}
			evs = append(evs, scheduler.Submit{Job: j})
		}
		acts, err := eng.HandleBatch(0, evs)
		if err != nil {
			rt.Fatal(err)
		}
		note := func(acts []scheduler.Action) {
			for _, a := range acts {
				if s, ok := a.(scheduler.Start); ok {
					if started[s.ID] {
						rt.Fatalf("job %d started twice", s.ID)
					}
					started[s.ID] = true
				}
			}
		}
		note(acts)
		term := func(t scheduler.DepTerm) scheduler.DepState {
			x := t.Targets[0]
			switch t.Kind {
			case scheduler.DepAfter:
				if started[x] || ended[x] {
					return scheduler.DepSatisfied
				}
			case scheduler.DepAfterAny:
				if ended[x] {
					return scheduler.DepSatisfied
				}
			case scheduler.DepAfterOK, scheduler.DepAfterNotOK:
				if ended[x] {
					if okEnd[x] == (t.Kind == scheduler.DepAfterOK) {
						return scheduler.DepSatisfied
					}
					return scheduler.DepFailed
				}
			}
			return scheduler.DepPending
		}
		model := func(id int) scheduler.DepState {
			d := deps[id]
			if d == nil {
				return scheduler.DepSatisfied
			}
			var states []scheduler.DepState
			for _, t := range d.Terms {
				states = append(states, term(t))
			}
			sat, failed := 0, 0
			for _, s := range states {
				switch s {
				case scheduler.DepSatisfied:
					sat++
				case scheduler.DepFailed:
					failed++
				}
			}
			switch {
			case d.Any && sat > 0, !d.Any && sat == len(states):
				return scheduler.DepSatisfied
			case d.Any && failed == len(states), !d.Any && failed > 0:
				return scheduler.DepFailed
			}
			return scheduler.DepPending
		}
		check := func(when string) {
			for id := 1; id <= n; id++ {
				if started[id] || ended[id] {
					continue
				}
				want := map[scheduler.DepState]string{scheduler.DepPending: "Dependency",
					scheduler.DepFailed: "DependencyNeverSatisfied", scheduler.DepSatisfied: "started"}[model(id)]
				if got := eng.Reason(scheduler.JobID(id)); got != want {
					rt.Fatalf("%s: job %d is %q, the model says %s (dep %+v)", when, id, got, want, *deps[id])
				}
			}
		}
		check("after submit")
		now := 1.0
		for {
			var running []int
			for id := 1; id <= n; id++ {
				if started[id] && !ended[id] {
					running = append(running, id)
				}
			}
			if len(running) == 0 {
				break
			}
			id := rapid.SampledFrom(running).Draw(rt, "finish")
			failed := rapid.Bool().Draw(rt, "failed")
			ended[id], okEnd[id] = true, !failed
			note(eng.Handle(scheduler.Finished{Now: now, ID: scheduler.JobID(id), Step: scheduler.BatchStep, Failed: failed}))
			now++
			check("after job " + itoa(id) + " ended")
		}
	})
}

// Array throttles: with nodes to spare, no task starts while limit tasks
// run, and fewer than limit run only when none is left to start, whatever
// order tasks end, are cancelled or the throttle changes in.
func TestPropArrayThrottle(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := rapid.IntRange(1, 30).Draw(rt, "tasks")
		limit := rapid.IntRange(0, 6).Draw(rt, "limit")
		eng, err := scheduler.New(st.Cluster(m).Partition("p", "batch").Config())
		if err != nil {
			rt.Fatal(err)
		}
		var evs []scheduler.Event
		for k := range m {
			evs = append(evs, scheduler.Submit{Job: scheduler.Job{ID: scheduler.JobID(100 + k), Nodes: 1,
				TimeLimit: 1000, Array: 100, ArrayLimit: limit}})
		}
		running, pending := map[scheduler.JobID]bool{}, map[scheduler.JobID]bool{}
		for k := range m {
			pending[scheduler.JobID(100+k)] = true
		}
		apply := func(acts []scheduler.Action) {
			for _, a := range acts {
				if s, ok := a.(scheduler.Start); ok {
					if limit > 0 && len(running) >= limit {
						rt.Fatalf("task %d started with %d running under limit %d", s.ID, len(running), limit)
					}
					running[s.ID], pending[s.ID] = true, false
				}
			}
		}
		acts, err := eng.HandleBatch(0, evs)
		if err != nil {
			rt.Fatal(err)
		}
		apply(acts)
		left := func() int {
			n := 0
			for _, p := range pending {
				if p {
					n++
				}
			}
			return n
		}
		for now := 1.0; len(running) > 0 || left() > 0; now++ {
			if left() > 0 && (limit == 0 || len(running) < limit) {
				rt.Fatalf("%d tasks run with %d pending under limit %d", len(running), left(), limit)
			}
			switch rapid.IntRange(0, 5).Draw(rt, "op") {
			case 0: // cancel a pending task
				for id, p := range pending {
					if p {
						pending[id] = false
						apply(eng.Handle(scheduler.Cancel{Now: now, ID: id}))
						break
					}
				}
			case 1:
				limit = rapid.IntRange(0, 6).Draw(rt, "new limit")
				// Lowering it stops nothing that runs; it holds back new starts.
				apply(eng.Handle(scheduler.SetThrottle{Now: now, Array: 100, Limit: limit}))
			default:
				var ids []scheduler.JobID
				for id := range running {
					ids = append(ids, id)
				}
				if len(ids) == 0 {
					continue
				}
				slicesSort(ids)
				id := rapid.SampledFrom(ids).Draw(rt, "end")
				delete(running, id)
				apply(eng.Handle(scheduler.Finished{Now: now, ID: id, Step: scheduler.BatchStep}))
			}
		}
	})
}

func slicesSort(ids []scheduler.JobID) {
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j] < ids[j-1]; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
}
