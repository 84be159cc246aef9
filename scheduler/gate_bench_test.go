package scheduler_test

import (
	"testing"

	"hora/scheduler"
	st "hora/scheduler/schedtest"
)

// BenchmarkDependencyChains: `chains` chains of 10 jobs, each waiting on the
// one before it with afterok, on 100 nodes; every running job is finished
// until all have run. The work per event stays flat as the queue grows
// (issue 12: resolved by events, not by rescanning), so ns/job is the
// figure to compare between 1,000 and 10,000 chains.
func BenchmarkDependencyChains(b *testing.B) {
	for _, chains := range []int{1000, 10000} {
		b.Run(itoa(chains)+"x10", func(b *testing.B) {
			for b.Loop() {
				runChains(b, chains)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chains*10), "ns/job")
		})
	}
}

func itoa(n int) string {
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

func runChains(b *testing.B, chains int) {
	eng, err := scheduler.New(st.Cluster(100).Partition("p", "batch").Config())
	if err != nil {
		b.Fatal(err)
	}
	evs := make([]scheduler.Event, 0, chains*10)
	for c := range chains {
		for k := range 10 {
			id := scheduler.JobID(c*10 + k + 1)
			j := scheduler.Job{ID: id, Nodes: 1, TimeLimit: 100, User: 1}
			if k > 0 {
				j.Dep = &scheduler.Dependency{Terms: []scheduler.DepTerm{{Kind: scheduler.DepAfterOK, Targets: []scheduler.JobID{id - 1}}}}
			}
			evs = append(evs, scheduler.Submit{Job: j})
		}
	}
	acts, err := eng.HandleBatch(0, evs)
	if err != nil {
		b.Fatal(err)
	}
	running := map[scheduler.JobID]bool{}
	collect := func(acts []scheduler.Action) {
		for _, a := range acts {
			if s, ok := a.(scheduler.Start); ok {
				running[s.ID] = true
			}
		}
	}
	collect(acts)
	done, now := 0, 0.0
	for len(running) > 0 {
		now++
		var batch []scheduler.Event
		for id := range running {
			batch = append(batch, scheduler.Finished{Now: now, ID: id, Step: scheduler.BatchStep})
			delete(running, id)
			done++
		}
		acts, err := eng.HandleBatch(now, batch)
		if err != nil {
			b.Fatal(err)
		}
		collect(acts)
	}
	if done != chains*10 {
		b.Fatalf("%d jobs ran, want %d", done, chains*10)
	}
}
