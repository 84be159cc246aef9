package controller

import (
	"testing"

	"hora/api"
)

// A job cancelled after the Engine started it but before its launch (the
// launch queued behind others, or its start waiting on a full disk) ends
// CANCELLED without its script ever starting: the scancel was
// acknowledged. Before, the launch went ahead and the job was killed only
// once it ran (the fault harness's local run: a cancel recorded before
// the start, the script run for a second).
func TestCancelBeforeLaunchStartsNothing(t *testing.T) {
	f := newFixture(t)
	cl := newFakeCluster()
	c, _ := fakeController(t, f, cl)
	id := submitRequeueable(t, f, c)
	c.mu.Lock()
	state := c.jobs[id].State
	c.mu.Unlock()
	if state != api.StateRunning {
		t.Fatalf("job %d is %s before its launch, want RUNNING (started by the Engine)", id, state)
	}
	if r, err := c.cancel(t.Context(), root, api.CancelRequest{IDs: []int64{id}}); err != nil || len(r.Results) != 1 || r.Results[0].Error != "" {
		t.Fatalf("scancel %d: %+v %v", id, r, err)
	}
	runQueue(t.Context(), c.work)
	if cl.launches != 0 {
		t.Fatalf("job %d was launched %d times after its scancel was acknowledged", id, cl.launches)
	}
	c.mu.Lock()
	state = c.jobs[id].State
	c.mu.Unlock()
	stored, err := f.st.Job(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if state != api.StateCancelled || stored.State != api.StateCancelled {
		t.Fatalf("job %d: %s in memory, %s stored; want CANCELLED", id, state, stored.State)
	}
	// Its node is free again: the next job starts.
	id2 := submitRequeueable(t, f, c)
	runQueue(t.Context(), c.work)
	if len(cl.running(id2)) != 1 {
		t.Fatalf("job %d did not start after job %d's cancel", id2, id)
	}
}
