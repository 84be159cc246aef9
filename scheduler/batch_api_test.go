package scheduler_test

import (
	"strings"
	"testing"

	"hora/scheduler"
	st "hora/scheduler/schedtest"
)

// started lists the job ids of the Start actions, in order.
func started(acts []scheduler.Action) []scheduler.JobID {
	var ids []scheduler.JobID
	for _, a := range acts {
		if s, ok := a.(scheduler.Start); ok {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// twoEnds builds an EASY cluster of 4 nodes where jobs 1 (1 node) and 2
// (2 nodes) end early at t=50 beside job 3, with job 4 (3 nodes) at the
// head of the queue and job 5 (1 node, ends by the shadow time) behind it.
func twoEnds(t *testing.T) *scheduler.Engine {
	t.Helper()
	eng, err := scheduler.New(st.Cluster(4).Partition("p", "batch").Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []scheduler.Job{{ID: 1, Nodes: 1, TimeLimit: 100}, {ID: 2, Nodes: 2, TimeLimit: 100}, {ID: 3, Nodes: 1, TimeLimit: 1000}} {
		if got := started(eng.Handle(scheduler.Submit{Now: 0, Job: j})); len(got) != 1 {
			t.Fatalf("job %d did not start at 0: %v", j.ID, got)
		}
	}
	for _, j := range []scheduler.Job{{ID: 4, Nodes: 3, TimeLimit: 100, Submit: 1}, {ID: 5, Nodes: 1, TimeLimit: 50, Submit: 1}} {
		if got := started(eng.Handle(scheduler.Submit{Now: 1, Job: j})); len(got) != 0 {
			t.Fatalf("job %d started on a full cluster: %v", j.ID, got)
		}
	}
	return eng
}

// TestHandleBatchOnePass: two terminations handed one by one let job 5
// backfill into the first freed node, so the head waits; handed as a batch
// the pass sees three free nodes and starts the head.
func TestHandleBatchOnePass(t *testing.T) {
	eng := twoEnds(t)
	var per []scheduler.JobID
	per = append(per, started(eng.Handle(scheduler.Finished{Now: 50, ID: 1, Step: scheduler.BatchStep}))...)
	per = append(per, started(eng.Handle(scheduler.Finished{Now: 50, ID: 2, Step: scheduler.BatchStep}))...)
	if len(per) != 1 || per[0] != 5 {
		t.Errorf("one event at a time: started %v, want [5] (backfilled after the first end)", per)
	}

	eng = twoEnds(t)
	acts, err := eng.HandleBatch(50, []scheduler.Event{
		scheduler.Finished{Now: 50, ID: 1, Step: scheduler.BatchStep},
		scheduler.Finished{Now: 50, ID: 2, Step: scheduler.BatchStep},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := started(acts); len(got) != 1 || got[0] != 4 {
		t.Errorf("batch: started %v, want [4] (the head, on the three nodes freed together)", got)
	}
	if r := eng.Reason(5); r == "" || r == scheduler.ReasonNone {
		t.Errorf("job 5 after the batch: reason %q, want pending", r)
	}
}

// TestHandleBatchVerdictOrder: the Admit and Reject of a batch's
// submissions come first, in event order, before the pass's Starts.
func TestHandleBatchVerdictOrder(t *testing.T) {
	eng, err := scheduler.New(st.Cluster(2).Partition("p", "batch").Config())
	if err != nil {
		t.Fatal(err)
	}
	acts, err := eng.HandleBatch(10, []scheduler.Event{
		scheduler.Submit{Now: 10, Job: scheduler.Job{ID: 7, Nodes: 1, TimeLimit: 60}},
		scheduler.Submit{Now: 10, Job: scheduler.Job{ID: 8, Nodes: 1, Partition: "nope"}},
		scheduler.Submit{Now: 10, Job: scheduler.Job{ID: 9, Nodes: 1, TimeLimit: 60}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range acts {
		switch a := a.(type) {
		case scheduler.Admit:
			got = append(got, "admit", string(rune('0'+a.ID)))
		case scheduler.Reject:
			got = append(got, "reject", string(rune('0'+a.ID)))
		case scheduler.Start:
			got = append(got, "start", string(rune('0'+a.ID)))
		}
	}
	want := "admit 7 reject 8 admit 9 start 7 start 9"
	if strings.Join(got, " ") != want {
		t.Errorf("actions %q, want %q", strings.Join(got, " "), want)
	}
}

// TestHandleBatchRefused: a batch with an event at another time, or with a
// Restore, is refused whole, naming the event, and changes nothing.
func TestHandleBatchRefused(t *testing.T) {
	eng, err := scheduler.New(st.Cluster(2).Partition("p", "batch").Config())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		evs  []scheduler.Event
		want []string
	}{
		{[]scheduler.Event{
			scheduler.Submit{Now: 5, Job: scheduler.Job{ID: 1, TimeLimit: 60}},
			scheduler.Submit{Now: 6, Job: scheduler.Job{ID: 2, TimeLimit: 60}},
		}, []string{"event 2", "at 6"}},
		{[]scheduler.Event{
			scheduler.Submit{Now: 5, Job: scheduler.Job{ID: 1, TimeLimit: 60}},
			scheduler.Restore{Now: 5, Job: scheduler.Job{ID: 3, TimeLimit: 60}},
		}, []string{"event 2", "Restore"}},
	}
	for _, c := range cases {
		acts, err := eng.HandleBatch(5, c.evs)
		if err == nil {
			t.Fatalf("batch %v accepted: %v", c.evs, acts)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
		if acts != nil {
			t.Errorf("refused batch returned actions %v", acts)
		}
		for _, id := range []scheduler.JobID{1, 2, 3} {
			if _, ok := eng.Job(id); ok {
				t.Errorf("refused batch left job %d in the Engine", id)
			}
		}
	}
}
