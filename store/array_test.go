package store

import (
	"slices"
	"testing"

	"hora/api"
)

// An array's tasks are written in one call with consecutive ids; each task's
// row is the fold of its events, and reads give every task the script and
// environment stored once, with the first task. They survive a reopen.
func TestSubmitArrayDurableAndShared(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := openStore(t, dir)
	var jobs []*api.Job
	for i := range 5 {
		j := testJob(1)
		j.ArrayTaskID = int64(2 * i)
		jobs = append(jobs, j)
	}
	if err := s.SubmitArray(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	first := jobs[0].ID
	for i, j := range jobs {
		if j.ID != first+int64(i) || j.ArrayJobID != first {
			t.Fatalf("task %d: id %d array %d, want %d and %d", i, j.ID, j.ArrayJobID, first+int64(i), first)
		}
		if j.Spec.Script == "" || len(j.Spec.Env) == 0 {
			t.Fatalf("task %d lost its script or environment in memory", i)
		}
	}
	s.Close()
	s = openStore(t, dir)
	defer s.Close()
	all, err := s.Jobs(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 5 {
		t.Fatalf("%d jobs after reopen, want 5", len(all))
	}
	for i, j := range all {
		if j.ArrayJobID != first || j.ArrayTaskID != int64(2*i) {
			t.Fatalf("task %d read back as array %d task %d", i, j.ArrayJobID, j.ArrayTaskID)
		}
		if j.Spec.Script != jobs[0].Spec.Script || !slices.Equal(j.Spec.Env, jobs[0].Spec.Env) {
			t.Fatalf("task %d read back without the shared script/env: %q %v", i, j.Spec.Script, j.Spec.Env)
		}
	}
	// One task alone (not its first) also gets them.
	one, err := s.Job(ctx, first+3)
	if err != nil || one.Spec.Script != jobs[0].Spec.Script {
		t.Fatalf("lone task: %v %q", err, one.Spec.Script)
	}
	next, _ := s.GetMeta(ctx, metaNextJobID)
	if next != "6" {
		t.Fatalf("next id %s, want 6", next)
	}
	// An update gives the task a spec of its own; the fold agrees with the row.
	upd := one
	upd.Spec.Comment = "changed"
	if err := s.Append(ctx, Event{JobID: one.ID, Kind: KindUpdate, Job: &upd}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Job(ctx, one.ID); got.Spec.Comment != "changed" || got.Spec.Script != jobs[0].Spec.Script {
		t.Fatalf("after update: %+v", got.Spec)
	}
	// ... and only that task: the others keep the array's spec.
	if other, _ := s.Job(ctx, one.ID+1); other.Spec.Comment == "changed" || other.Spec.Script != jobs[0].Spec.Script {
		t.Fatalf("another task after the update: %+v", other.Spec)
	}
	checkFold(t, s, one.ID)
	// A lazy task gets its row with its first own event; readers see each
	// task once, with or without a row, selected by its id or the array's.
	if err := s.Append(ctx, Event{JobID: first + 2, Kind: KindStart, Nodes: []string{"n1"}}); err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(ctx, first+2)
	if err != nil || len(evs) != 2 || evs[0].Kind != KindSubmit {
		t.Fatalf("events of a task after its start: %v %v", evs, err)
	}
	checkFold(t, s, first+3)
	for _, c := range []struct {
		f    Filter
		want int
	}{{Filter{}, 5}, {Filter{IDs: []int64{first}}, 5}, {Filter{IDs: []int64{first + 4}}, 1}, {Filter{Active: true}, 5}} {
		got, err := s.Jobs(ctx, c.f)
		if err != nil || len(got) != c.want {
			t.Fatalf("Jobs(%+v): %d jobs (%v), want %d", c.f, len(got), err, c.want)
		}
		for i := 1; i < len(got); i++ {
			if got[i].ID <= got[i-1].ID {
				t.Fatalf("Jobs(%+v) not in id order: %d after %d", c.f, got[i].ID, got[i-1].ID)
			}
		}
	}
	if j, _ := s.Job(ctx, first+2); j.State != api.StateRunning || j.Spec.Script != jobs[0].Spec.Script {
		t.Fatalf("started task: %s %q", j.State, j.Spec.Script)
	}
}
