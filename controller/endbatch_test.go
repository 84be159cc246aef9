package controller

import (
	"slices"
	"strconv"
	"testing"

	"hora/api"
	"hora/nodes"
	"hora/store"
)

// hasEvent says whether job id's durable history holds an event of kind.
func hasEvent(t *testing.T, st *store.Store, id int64, kind store.Kind) bool {
	t.Helper()
	evs, err := st.Events(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(evs, func(ev store.Event) bool { return ev.Kind == kind })
}

// Ends reported together are recorded in one commit and told to the Engine
// in one pass; each step is forgotten only once its end is durable; the
// jobs the ends let start — a dependent released by an end, a pending job
// on the freed nodes — are launched only after the ends (and their own
// starts) are durable.
func TestBatchedEndsOneCommitThenDependents(t *testing.T) {
	f := newFixture(t)
	cl := newFakeCluster()
	c, ex := fakeController(t, f, cl)
	ctx := t.Context()
	var running []int64
	for range 4 { // the four nodes of the default configuration
		resp, err := c.submit(ctx, root, api.SubmitRequest{Spec: f.spec("true")})
		if err != nil {
			t.Fatal(err)
		}
		running = append(running, resp.JobID)
	}
	dep := f.spec("true")
	dep.Dependency = "afterok:" + strconv.FormatInt(running[0], 10)
	resp, err := c.submit(ctx, root, api.SubmitRequest{Spec: dep})
	if err != nil {
		t.Fatal(err)
	}
	dependent := resp.JobID
	resp, err = c.submit(ctx, root, api.SubmitRequest{Spec: f.spec("true")})
	if err != nil {
		t.Fatal(err)
	}
	waiting := resp.JobID
	runQueue(ctx, c.work)
	var batch []nodes.Status
	for _, id := range running[:3] {
		s := cl.running(id)
		if len(s) != 1 {
			t.Fatalf("job %d: running steps %v", id, s)
		}
		batch = append(batch, cl.end(t, s[0], nodes.Status{}))
	}

	// The first job's run reported a second time, differently (as a
	// prober's "lost" after the real end): the first report stands.
	batch = append(batch, nodes.Status{Key: batch[0].Key, Node: batch[0].Node, State: nodes.StepLost, Err: "node unreachable"})

	ex.onLaunch = func(spec nodes.LaunchSpec) {
		for _, id := range running[:3] {
			if !hasEvent(t, f.st, id, store.KindEnd) {
				t.Errorf("job %d launched before the end of job %d was durable", spec.Key.Job, id)
			}
		}
		if !hasEvent(t, f.st, spec.Key.Job, store.KindStart) {
			t.Errorf("job %d launched before its start was durable", spec.Key.Job)
		}
	}
	commits := f.st.Commits()
	c.handleExits(ctx, batch)
	if n := f.st.Commits() - commits; n != 1 {
		t.Errorf("3 ends reported together took %d commits, want 1", n)
	}
	evs, err := f.st.Events(ctx, running[0])
	if err != nil {
		t.Fatal(err)
	}
	if n := len(slices.DeleteFunc(evs, func(ev store.Event) bool { return ev.Kind != store.KindEnd })); n != 1 {
		t.Errorf("job %d reported ended twice in a batch: %d end events, want 1", running[0], n)
	}
	for _, id := range running[:3] {
		if !hasEvent(t, f.st, id, store.KindEnd) {
			t.Errorf("job %d: end not durable when handleExits returned", id)
		}
		c.mu.Lock()
		st := c.jobs[id].State
		c.mu.Unlock()
		if st != api.StateCompleted {
			t.Errorf("job %d: %s after its end, want COMPLETED", id, st)
		}
	}
	c.forgets.mu.Lock()
	forgets := len(c.forgets.items)
	c.forgets.mu.Unlock()
	if forgets != 4 {
		t.Errorf("%d forgets queued after 3 durable ends and a repeated report, want 4", forgets)
	}
	runQueue(ctx, c.work) // the starts the ends allowed
	for _, id := range []int64{dependent, waiting} {
		if s := cl.running(id); len(s) != 1 {
			t.Errorf("job %d: running steps %v after the ends, want one", id, s)
		}
	}
	runQueue(ctx, c.forgets)
	for _, s := range batch {
		if cl.steps[stepID(s.Node, s.Key)] != nil {
			t.Errorf("step %s of an ended job left on its node", stepID(s.Node, s.Key))
		}
	}
}

// An end that cannot be recorded changes nothing and keeps the step on its
// node, where the next horad finds it and records the same end: nothing
// that was reported is lost, and nothing followed from it meanwhile.
func TestUnrecordedEndIsRecoveredFromTheNode(t *testing.T) {
	f := newFixture(t)
	cl := newFakeCluster()
	c, _ := fakeController(t, f, cl)
	ctx := t.Context()
	id, step := submitRunning(t, f, c, cl)
	for range 3 { // fill the other nodes, so that waiting waits for id's node
		if _, err := c.submit(ctx, root, api.SubmitRequest{Spec: f.spec("true")}); err != nil {
			t.Fatal(err)
		}
	}
	waiting, err := c.submit(ctx, root, api.SubmitRequest{Spec: f.spec("true")})
	if err != nil {
		t.Fatal(err)
	}
	runQueue(ctx, c.work)
	if s := cl.running(waiting.JobID); len(s) != 0 {
		t.Fatalf("job %d started with 5 jobs on 4 nodes", waiting.JobID)
	}
	end := cl.end(t, step, nodes.Status{ExitCode: 3})
	path := f.dir + "/hora.db"
	f.st.Close() // the write fails: as a crash before the commit would lose it
	c.handleExits(ctx, []nodes.Status{end})
	c.mu.Lock()
	st := c.jobs[id].State
	c.mu.Unlock()
	if st != api.StateRunning {
		t.Errorf("job %d: %s in memory after its end failed to record, want RUNNING", id, st)
	}
	if len(c.work.items) != 0 || len(c.forgets.items) != 0 {
		t.Errorf("node work queued after an unrecorded end: %d launches, %d forgets", len(c.work.items), len(c.forgets.items))
	}
	if cl.steps[stepID(end.Node, end.Key)] == nil {
		t.Fatal("the step of an unrecorded end was forgotten")
	}
	st2, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st2.Close() })
	f.st = st2
	c2, _ := fakeController(t, f, cl)
	j, err := st2.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != api.StateFailed || j.ExitCode != 3 {
		t.Errorf("job %d after recovery: %s exit %d, want FAILED exit 3", id, j.State, j.ExitCode)
	}
	runQueue(ctx, c2.work)
	if s := cl.running(waiting.JobID); len(s) != 1 {
		t.Errorf("job %d: running steps %v after recovery freed the node, want one", waiting.JobID, s)
	}
}
