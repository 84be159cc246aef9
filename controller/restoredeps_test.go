package controller

import (
	"testing"
	"time"

	"hora/api"
	"hora/config"
	"hora/store"
)

// depFixture: a held job a, and b that depends on a (afterok) with the given
// --kill-on-invalid-dep.
func depFixture(t *testing.T, f *fixture, c *Controller, kill string) (a, b int64) {
	t.Helper()
	spec := f.spec("true")
	spec.Hold = true
	ra, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	spec = f.spec("true")
	spec.Dependency, spec.KillOnInvalidDep = "afterok:"+itoa(ra.JobID), kill
	rb, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	return ra.JobID, rb.JobID
}

// horad died after recording that a job's dependency can no longer be
// satisfied (its afterok target was cancelled) and before ending the
// dependent (--kill-on-invalid-dep=yes): recovery ends it. Before, the
// Engine dropped it at its restore and the End it answered was thrown
// away: the job stayed PENDING (reason None) for ever, which the fault
// harness's settling found.
func TestRecoveryEndsJobWhoseDependencyFailed(t *testing.T) {
	f := newFixture(t)
	cl := newFakeCluster()
	c1, _ := fakeController(t, f, cl)
	a, b := depFixture(t, f, c1, "yes")
	// a's end is recorded; horad dies before the Engine's End for b is.
	if err := f.st.Append(t.Context(), store.Event{JobID: a, Time: time.Now().Unix(), Kind: store.KindEnd, State: api.StateCancelled, Reason: "None"}); err != nil {
		t.Fatal(err)
	}
	c2, _ := fakeController(t, f, cl)
	c2.mu.Lock()
	j := c2.jobs[b]
	c2.mu.Unlock()
	if j.State != api.StateCancelled {
		t.Fatalf("job %d (afterok on cancelled job %d, kill-on-invalid-dep) is %s %s after recovery, want CANCELLED", b, a, j.State, j.Reason)
	}
	stored, err := f.st.Job(t.Context(), b)
	if err != nil || stored.State != api.StateCancelled {
		t.Fatalf("job %d stored as %s (%v), want its end recorded", b, stored.State, err)
	}
}

// A reload hands the new Engine the outcome of the jobs that ended, as
// recovery does: a job waiting on a cancelled job's success stays pending
// (DependencyNeverSatisfied) instead of taking the unknown target for a
// satisfied one and running.
func TestReloadKeepsFailedDependencies(t *testing.T) {
	f := newFixture(t)
	cl := newFakeCluster()
	c, _ := fakeController(t, f, cl)
	a, b := depFixture(t, f, c, "no")
	if r, err := c.cancel(t.Context(), root, api.CancelRequest{IDs: []int64{a}}); err != nil || len(r.Results) != 1 || r.Results[0].Error != "" {
		t.Fatalf("scancel %d: %+v %v", a, r, err)
	}
	reason := func() string {
		c.mu.Lock()
		defer c.mu.Unlock()
		v := c.jobs[b].Job
		c.presentIn(root, c.jobs[b], &v, false)
		return string(v.State) + " " + v.Reason
	}
	before := reason()
	nc := config.Default()
	nc.StateDir = f.dir
	if err := c.Reload(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	runQueue(t.Context(), c.work)
	if after := reason(); after != before || len(cl.running(b)) != 0 {
		t.Fatalf("job %d: %q before the reload, %q after, running %v", b, before, after, cl.running(b))
	}
	if before != "PENDING DependencyNeverSatisfied" {
		t.Fatalf("job %d: %q, want PENDING DependencyNeverSatisfied", b, before)
	}
}

// After a reload the new Engine still remembers how every job ends: a job
// cancelled after the reload and a dependency on its success submitted
// after that leave the dependent PENDING DependencyNeverSatisfied. Before,
// only the first Engine was told to keep every outcome; the reloaded one
// forgot the cancelled job, took it for a purged one and ran the dependent
// (the fault harness's afterok violation: SIGHUP, then the target
// cancelled, then the dependent submitted).
func TestReloadedEngineKeepsLaterOutcomes(t *testing.T) {
	f := newFixture(t)
	cl := newFakeCluster()
	c, _ := fakeController(t, f, cl)
	nc := config.Default()
	nc.StateDir = f.dir
	if err := c.Reload(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	spec := f.spec("true")
	spec.Hold = true
	ra, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.cancel(t.Context(), root, api.CancelRequest{IDs: []int64{ra.JobID}}); err != nil || len(r.Results) != 1 || r.Results[0].Error != "" {
		t.Fatalf("scancel %d: %+v %v", ra.JobID, r, err)
	}
	spec = f.spec("true")
	spec.Dependency, spec.KillOnInvalidDep = "afterok:"+itoa(ra.JobID), "no"
	rb, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	runQueue(t.Context(), c.work)
	c.mu.Lock()
	v := c.jobs[rb.JobID].Job
	c.presentIn(root, c.jobs[rb.JobID], &v, false)
	c.mu.Unlock()
	if got := string(v.State) + " " + v.Reason; got != "PENDING DependencyNeverSatisfied" || len(cl.running(rb.JobID)) != 0 {
		t.Fatalf("job %d (afterok on job %d, cancelled after a reload): %q, running %v; want PENDING DependencyNeverSatisfied",
			rb.JobID, ra.JobID, got, cl.running(rb.JobID))
	}
}
