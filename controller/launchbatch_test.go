package controller

import (
	"slices"
	"testing"

	"hora/api"
	"hora/nodes"
	"hora/store"
)

// Launches queued together (a pass that starts several jobs) are recorded
// together and launched in order, each only once its start is durable; a
// job cancelled between the pass and the dispatch is not launched (its
// start is recorded, its script never starts: TestCancelBeforeLaunchStartsNothing)
// and its node goes to the next job.
func TestBatchedLaunchesRecordThenLaunch(t *testing.T) {
	f := newFixture(t)
	cl := newFakeCluster()
	c, ex := fakeController(t, f, cl)
	ctx := t.Context()
	var launched []int64
	ex.onLaunch = func(spec nodes.LaunchSpec) {
		evs, err := f.st.Events(ctx, spec.Key.Job)
		if err != nil || evs[len(evs)-1].Kind != store.KindStart {
			t.Errorf("job %d launched before its start was recorded (events %v, err %v)", spec.Key.Job, evs, err)
		}
		launched = append(launched, spec.Key.Job)
	}
	var ids []int64
	for range 5 {
		spec := f.spec("true")
		spec.Hold = true
		resp, err := c.submit(ctx, root, api.SubmitRequest{Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, resp.JobID)
	}
	for _, r := range c.hold(ctx, root, ids, false).Results {
		if r.Error != "" {
			t.Fatalf("release: %+v", r)
		}
	}
	c.work.mu.Lock()
	queued := 0
	for _, it := range c.work.items {
		if it.launch != nil {
			queued++
		}
	}
	c.work.mu.Unlock()
	if queued != 4 { // four nodes
		t.Fatalf("%d launches queued after releasing 5 jobs on 4 nodes", queued)
	}
	if _, err := c.cancel(ctx, root, api.CancelRequest{IDs: []int64{ids[1]}}); err != nil {
		t.Fatal(err)
	}
	for {
		items, _ := c.work.popBatch(maxLaunchBatch)
		c.runItems(ctx, items)
		c.work.mu.Lock()
		empty := len(c.work.items) == 0
		c.work.mu.Unlock()
		if empty {
			break
		}
	}
	if want := []int64{ids[0], ids[2], ids[3], ids[4]}; !slices.Equal(launched, want) {
		t.Fatalf("launched %v, want %v", launched, want)
	}
	if stored, err := f.st.Job(ctx, ids[1]); err != nil || stored.State != api.StateCancelled {
		t.Fatalf("cancelled job %d stored as %s (%v), want CANCELLED", ids[1], stored.State, err)
	}
	for _, id := range ids[:4] {
		evs, err := f.st.Events(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		started := false
		for _, ev := range evs {
			started = started || ev.Kind == store.KindStart
		}
		if !started {
			t.Errorf("job %d: start recorded %v (events %v)", id, started, evs)
		}
	}
}
