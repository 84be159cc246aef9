package scheduler_test

import (
	"strings"
	"testing"

	"hora/scheduler"
	"hora/scheduler/mix"
	st "hora/scheduler/schedtest"
)

func periodic(id scheduler.JobID, frame float64, buf int, work ...float64) scheduler.Job {
	return scheduler.Job{ID: id, Partition: "rt", Nodes: 1, TimeLimit: 600,
		Periodic: &scheduler.Periodic{Frame: frame, Buffer: buf, Work: work}}
}

func verdictOf(t *testing.T, acts []scheduler.Action) (bool, *scheduler.AdmissionError, []string) {
	t.Helper()
	var nodes []string
	for _, a := range acts {
		if s, ok := a.(scheduler.Start); ok {
			nodes = s.Nodes
		}
	}
	for _, a := range acts {
		switch a := a.(type) {
		case scheduler.Admit:
			return true, nil, nodes
		case scheduler.Reject:
			return false, a.Err, nodes
		}
	}
	t.Fatalf("no verdict in %v", acts)
	return false, nil, nil
}

// At 2:1 a node gives RT 2/3 of its CPU: two periodic jobs of 0.4 of a
// frame each fit on two nodes (one each), a third does not, and a best-effort
// job still starts on those nodes (periodic jobs hold a CPU share, not the
// node). Ending a periodic job gives its share back.
func TestPeriodicAdmission(t *testing.T) {
	cfg := st.Cluster(2).Partition("rt", "batch").NodeRange(0, 2).Config()
	cfg.Ratio = mix.Ratio{X: 2, Y: 1}
	e, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for id := scheduler.JobID(1); id <= 2; id++ {
		ok, rej, nodes := verdictOf(t, e.Handle(scheduler.Submit{Now: 0, Job: periodic(id, 0.1, 10, 0.04)}))
		if !ok || len(nodes) != 1 {
			t.Fatalf("job %d: admitted %v %v on %v", id, ok, rej, nodes)
		}
	}
	if l := e.RTLoad("rt"); len(l) != 2 {
		t.Fatalf("RT load on %v, want both nodes", l)
	}
	if run := e.Running(); len(run) != 2 || run[0].ID != 1 || len(run[0].Nodes) != 1 {
		t.Fatalf("Running %+v, want the two periodic jobs", run)
	}
	ok, rej, _ := verdictOf(t, e.Handle(scheduler.Submit{Now: 1, Job: periodic(3, 0.1, 10, 0.04)}))
	if ok || rej.Code != scheduler.CodeRTNotAdmitted || rej.Verdict != scheduler.NotNow ||
		!strings.Contains(rej.Message, "would fit") || !strings.Contains(rej.Message, "0.02667s") {
		t.Fatalf("third job: admitted %v, %+v", ok, rej)
	}
	if _, ok := e.Job(3); ok {
		t.Fatal("a refused job is kept")
	}
	// Best effort on the same nodes.
	acts := e.Handle(scheduler.Submit{Now: 2, Job: scheduler.Job{ID: 4, Partition: "rt", Nodes: 2, TimeLimit: 60}})
	if _, _, nodes := verdictOf(t, acts); len(nodes) != 2 {
		t.Fatalf("BE job not started on both nodes: %v", acts)
	}
	// Job 1 ends: its share comes back and job 3 fits.
	e.Handle(scheduler.Finished{Now: 3, ID: 1, Step: scheduler.BatchStep})
	if ok, rej, _ := verdictOf(t, e.Handle(scheduler.Submit{Now: 4, Job: periodic(3, 0.1, 10, 0.04)})); !ok {
		t.Fatalf("after job 1 ended: %+v", rej)
	}
}

// Input no scheme can run is refused Never with the option named; a
// process needing more than the RT share of any node is refused Never.
func TestPeriodicNever(t *testing.T) {
	cfg := st.Cluster(1).Partition("rt", "batch").NodeRange(0, 1).Config()
	cfg.Ratio = mix.Ratio{X: 1, Y: 1}
	e, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		job  scheduler.Job
		want string
	}{
		{periodic(1, 0, 1, 0.1), "rt-frame"},
		{periodic(2, 0.1, 1, 0.2), "rt-work"},
		{periodic(3, 0.1, 4, 0.06), "more than the RT share"},
	} {
		ok, rej, _ := verdictOf(t, e.Handle(scheduler.Submit{Now: 0, Job: tc.job}))
		if ok || rej.Verdict != scheduler.Never || !strings.Contains(rej.Message, tc.want) {
			t.Errorf("job %d: admitted %v, %+v; want Never naming %q", tc.job.ID, ok, rej, tc.want)
		}
	}
}

// After a restart a running periodic job holds its share on the nodes it
// runs on (not where laxity would put it now), and one whose start was not
// recorded starts at the first pass.
func TestPeriodicRestore(t *testing.T) {
	cfg := st.Cluster(2).Partition("rt", "batch").NodeRange(0, 2).Config()
	cfg.Ratio = mix.Ratio{X: 2, Y: 1}
	e, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.Handle(scheduler.Restore{Now: 10, Job: periodic(1, 0.1, 10, 0.04), Running: true, Nodes: []string{"n1"}, Started: 5})
	e.Handle(scheduler.Restore{Now: 10, Job: periodic(2, 0.1, 10, 0.04)})
	acts := e.Handle(scheduler.Tick{Now: 10})
	if nodes := startedOn(acts); len(nodes) != 1 || nodes[0] != "n0" {
		t.Fatalf("restored pending periodic job: %v, want a start on n0", acts)
	}
	if l := e.RTLoad("rt"); l["n1"] != 0.4 || l["n0"] != 0.4 {
		t.Fatalf("RT load %v", l)
	}
	ok, _, _ := verdictOf(t, e.Handle(scheduler.Submit{Now: 11, Job: periodic(3, 0.1, 10, 0.04)}))
	if ok {
		t.Fatal("a third job fit next to two restored ones")
	}
	e.Handle(scheduler.Finished{Now: 12, ID: 1, Step: scheduler.BatchStep})
	if l := e.RTLoad("rt"); l["n1"] != 0 {
		t.Fatalf("after job 1 ended, RT load %v", l)
	}
}

func startedOn(acts []scheduler.Action) []string {
	for _, a := range acts {
		if s, ok := a.(scheduler.Start); ok {
			return s.Nodes
		}
	}
	return nil
}

// A periodic job would start at submit, so a partition limit that would
// keep a batch job pending (PartitionTimeLimit) refuses it instead.
func TestPeriodicOverPartitionLimit(t *testing.T) {
	cfg := st.Cluster(1).Partition("rt", "batch").NodeRange(0, 1).Config()
	cfg.Partitions[0].MaxTime = 100
	e, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ok, rej, _ := verdictOf(t, e.Handle(scheduler.Submit{Now: 0, Job: periodic(1, 0.1, 1, 0.01)}))
	if ok || rej.Code != "InvalidTimeLimit" {
		t.Fatalf("admitted %v, %+v; want InvalidTimeLimit", ok, rej)
	}
	if l := e.RTLoad("rt"); l != nil {
		t.Fatalf("a refused job holds RT load %v", l)
	}
}

// In gang mode a periodic job is admitted by the 1GS rows test (§4.4), not
// the utilisation test: at 1:1 with M = 2 there is one RT row, so two jobs
// of 0.2 of a frame fill it (one per node) where the TDM/PS test would
// take two per node; the third is refused for now, naming the rows.
func TestPeriodicGangAdmission(t *testing.T) {
	for _, gang := range []bool{false, true} {
		cfg := st.Cluster(2).Partition("rt", "batch").NodeRange(0, 2).Config()
		cfg.Ratio = mix.Ratio{X: 1, Y: 1}
		if gang {
			cfg.Gang = &scheduler.GangSpec{Rows: 2, Quantum: 0.5}
		}
		e, err := scheduler.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		admitted := 0
		var last *scheduler.AdmissionError
		for id := scheduler.JobID(1); id <= 4; id++ {
			ok, rej, _ := verdictOf(t, e.Handle(scheduler.Submit{Now: 0, Job: periodic(id, 0.1, 10, 0.02)}))
			if ok {
				admitted++
			} else {
				last = rej
			}
		}
		switch {
		case !gang && admitted != 4:
			t.Errorf("TDM/PS test: %d of 4 admitted, want 4 (%v)", admitted, last)
		case gang && admitted != 2:
			t.Errorf("rows test: %d of 4 admitted, want 2", admitted)
		case gang && (last.Verdict != scheduler.NotNow || !strings.Contains(last.Message, "1GS needs 1 of the 1 RT rows") ||
			!strings.Contains(last.Message, "no RT rows of the gang matrix are free")):
			t.Errorf("rows test refusal: %+v", last)
		}
		if gang {
			if l := e.RTLoad("rt"); l["n0"] != 1 || l["n1"] != 1 {
				t.Errorf("RT rows taken: %v, want one on each node", l)
			}
			e.Handle(scheduler.Finished{Now: 1, ID: 1, Step: scheduler.BatchStep})
			if ok, rej, _ := verdictOf(t, e.Handle(scheduler.Submit{Now: 2, Job: periodic(5, 0.1, 10, 0.02)})); !ok {
				t.Errorf("after job 1 ended: %+v", rej)
			}
		}
	}
}
