package controller

import (
	"net/http/httptest"
	"slices"
	"testing"

	"hora/api"
	"hora/store"
)

// qalter's alter: the owner changes a pending job's name and limit, which
// are recorded (the store's row is the fold of its events); another user
// and a running job are refused and nothing is recorded.
func TestAlterPendingJob(t *testing.T) {
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
	events := func() int { evs, _ := f.st.Events(ctx, id); return len(evs) }
	before := events()
	name, limit := "stolen", int64(60)
	if r := c.alter(ctx, nobody, api.AlterRequest{ID: id, Name: &name}); r.Results[0].Code != api.CodeAccessDenied {
		t.Fatalf("alter by nobody: %+v", r.Results)
	}
	if r := c.alter(ctx, root, api.AlterRequest{ID: id + 99, Name: &name}); r.Results[0].Code != api.CodeInvalidJobID {
		t.Fatalf("alter of an unknown job: %+v", r.Results)
	}
	bad := int64(-5)
	if r := c.alter(ctx, root, api.AlterRequest{ID: id, TimeLimit: &bad}); r.Results[0].Code != api.CodeInvalidTimeLimit {
		t.Fatalf("alter to a negative limit: %+v", r.Results)
	}
	if events() != before {
		t.Fatalf("refused alters recorded events")
	}
	name = "renamed"
	if r := c.alter(ctx, root, api.AlterRequest{ID: id, Name: &name, TimeLimit: &limit}); r.Results[0].Error != "" {
		t.Fatalf("alter by the owner: %+v", r.Results)
	}
	j, err := f.st.Job(ctx, id)
	if err != nil || j.Spec.Name != "renamed" || j.Spec.TimeLimit != 60 || j.State != api.StatePending || j.Reason != store.ReasonHeldUser {
		t.Fatalf("stored job after alter: %+v (%v)", j, err)
	}
	evs, _ := f.st.Events(ctx, id)
	if fold, err := store.Fold(evs); err != nil || fold.Spec.Name != "renamed" {
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
