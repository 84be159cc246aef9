package controller

import (
	"net/http/httptest"
	"slices"

	"testing"

	"hora/api"
	"hora/store"
)

// qalter goes through scontrol update's path: the owner changes a pending
// job's name, limit, begin time and dependency, which are recorded (the
// store's row is the fold of its events); each refusal carries the code
// qalter turns into a PBS error number, and records nothing.
func TestQalterThroughUpdate(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	ctx := t.Context()
	s := f.spec("true")
	s.Hold, s.TimeLimit = true, 600
	resp, err := c.submit(ctx, root, api.SubmitRequest{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.JobID
	other, err := c.submit(ctx, root, api.SubmitRequest{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	events := func() int { evs, _ := f.st.Events(ctx, id); return len(evs) }
	before := events()
	name, limit := "stolen", int64(60)
	one := func(who *Caller, r api.JobUpdateRequest) api.JobResult {
		t.Helper()
		out := c.updateJobs(ctx, who, r)
		if len(out.Results) != 1 {
			t.Fatalf("results %+v", out.Results)
		}
		return out.Results[0]
	}
	if r := one(nobody, api.JobUpdateRequest{IDs: []int64{id}, Name: &name}); r.Code != api.CodeAccessDenied {
		t.Fatalf("update by nobody: %+v", r)
	}
	if r := one(root, api.JobUpdateRequest{IDs: []int64{id + 99}, Name: &name}); r.Code != api.CodeInvalidJobID {
		t.Fatalf("update of an unknown job: %+v", r)
	}
	bad := int64(-5)
	if r := one(root, api.JobUpdateRequest{IDs: []int64{id}, TimeLimit: &bad}); r.Code != api.CodeInvalidTimeLimit {
		t.Fatalf("update to a negative limit: %+v", r)
	}
	self := "afterok:" + itoa(id)
	if r := one(root, api.JobUpdateRequest{IDs: []int64{id}, Dependency: &self}); r.Code != api.CodeBadRequest || r.Error == "" {
		t.Fatalf("dependency on itself: %+v", r)
	}
	if events() != before {
		t.Fatalf("refused updates recorded events")
	}
	name = "renamed"
	begin := int64(1) // long past: eligible at once
	dep := "afterany:" + itoa(other.JobID)
	if r := one(root, api.JobUpdateRequest{IDs: []int64{id}, Name: &name, TimeLimit: &limit, Begin: &begin, Dependency: &dep}); r.Error != "" {
		t.Fatalf("update by the owner: %+v", r)
	}
	j, err := f.st.Job(ctx, id)
	if err != nil || j.Spec.Name != "renamed" || j.Spec.TimeLimit != 60 || j.Spec.Begin != 1 || j.Spec.Dependency != dep ||
		j.State != api.StatePending || j.Reason != store.ReasonHeldUser {
		t.Fatalf("stored job after update: %+v (%v)", j, err)
	}
	evs, _ := f.st.Events(ctx, id)
	if fold, err := store.Fold(evs); err != nil || fold.Spec.Name != "renamed" || fold.Spec.Dependency != dep {
		t.Fatalf("fold of the events: %+v %v", fold.Spec, err)
	}
}

// ids_only with pbs_state answers the ids of the jobs in those PBS states.
func TestJobIDsByPBSState(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	ctx := t.Context()
	var ids []int64
	for i := range 3 {
		s := f.spec("true")
		s.Hold = i != 1
		resp, err := c.submit(ctx, root, api.SubmitRequest{Spec: s})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, resp.JobID)
	}
	req := httptest.NewRequest("GET", api.PathJobs+"?ids_only=1&pbs_state=H", nil)
	out, err := c.hJobs(ctx, root, req)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := out.(*api.JobIDsResponse)
	if !ok || !slices.Equal(got.IDs, []int64{ids[0], ids[2]}) {
		t.Fatalf("held ids: %#v, want %v", out, []int64{ids[0], ids[2]})
	}
	req = httptest.NewRequest("GET", api.PathJobs+"?ids_only=1&pbs_state=Z", nil)
	if _, err := c.hJobs(ctx, root, req); err == nil {
		t.Fatal("pbs_state=Z accepted")
	}
}

// qselect's array rules on horad's ids-only listing: under pbs_arrays=array
// an array is selected by its own letter (H while all its tasks are held,
// B once one has finished, never the tasks' Q or F) and answered once;
// under pbs_arrays=subjobs each task by its subjob letter, a finished one X
// while its array has not finished.
func TestJobIDsPBSArrays(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	ctx := t.Context()
	s := f.spec("true")
	s.Hold, s.Array = true, "1-3"
	resp, err := c.submit(ctx, root, api.SubmitRequest{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	tasks := slices.Clone(c.arrays[resp.JobID].ids)
	c.mu.Unlock()
	ids := func(query string) []int64 {
		t.Helper()
		out, err := c.hJobs(ctx, root, httptest.NewRequest("GET", api.PathJobs+"?ids_only=1&"+query, nil))
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return out.(*api.JobIDsResponse).IDs
	}
	check := func(query string, want ...int64) {
		t.Helper()
		if got := ids(query); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%s: %v, want %v", query, got, want)
		}
	}
	check("pbs_arrays=array&pbs_state=H", tasks[0])
	check("pbs_arrays=array&pbs_state=QB")
	check("pbs_state=H", tasks...) // each task a job of its own (Torque)
	// Task 1 has finished: the array has begun (B).
	c.mu.Lock()
	c.jobs[tasks[0]].State = api.StateCompleted
	c.mu.Unlock()
	check("pbs_arrays=array&pbs_state=B", tasks[0])
	check("pbs_arrays=array&pbs_state=HF")
	check("pbs_arrays=array", tasks[0])
	check("pbs_arrays=subjobs&pbs_state=X", tasks[0])
	check("pbs_arrays=subjobs&pbs_state=H", tasks[1], tasks[2])
	check("pbs_arrays=subjobs", tasks...)
	check("pbs_state=HF", tasks[1], tasks[2]) // a finished job is not listed
	// Every task finished: the array is F, and listed no more.
	c.mu.Lock()
	for _, id := range tasks {
		c.jobs[id].State = api.StateCompleted
	}
	c.mu.Unlock()
	check("pbs_arrays=array")
	check("pbs_arrays=subjobs")
	if _, err := c.hJobs(ctx, root, httptest.NewRequest("GET", api.PathJobs+"?ids_only=1&pbs_arrays=tasks", nil)); err == nil {
		t.Error("pbs_arrays=tasks accepted")
	}
}
