package controller

import (
	"sync"
	"testing"

	"hora/api"
)

// Held submissions commit outside the controller's lock (submitHeldLocked):
// concurrent ones must still get distinct ids, each durable and listed when
// acknowledged, and ids handed out in order must all commit.
func TestConcurrentHeldSubmissionsAllDurable(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	ctx := t.Context()
	s := f.spec("true")
	s.Hold = true
	const n = 64
	ids := make([]int64, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.submit(ctx, root, api.SubmitRequest{Spec: s})
			if err != nil {
				t.Error(err)
				return
			}
			ids[k] = resp.JobID
			if j, err := f.st.Job(ctx, resp.JobID); err != nil || j.Reason != "JobHeldUser" {
				t.Errorf("job %d acknowledged but not durable as held: %+v %v", resp.JobID, j, err)
			}
			c.mu.Lock()
			_, listed := c.jobs[resp.JobID]
			c.mu.Unlock()
			if !listed {
				t.Errorf("job %d acknowledged but not in memory", resp.JobID)
			}
		}()
	}
	wg.Wait()
	seen := map[int64]bool{}
	for _, id := range ids {
		if id == 0 || seen[id] {
			t.Fatalf("ids %v: zero or repeated", ids)
		}
		seen[id] = true
	}
	// A non-held submission after them takes the next id and commits too.
	resp, err := c.submit(ctx, root, api.SubmitRequest{Spec: f.spec("true")})
	if err != nil {
		t.Fatal(err)
	}
	if seen[resp.JobID] {
		t.Fatalf("id %d handed out twice", resp.JobID)
	}
}

// A held submission does not wake the tick loop (its pass would walk the
// whole queue for a job that starts nothing); one that may start does.
// The fixture's controller runs no tick loop, so a wake-up stays in
// c.wake.
func TestHeldSubmissionWakesNoPass(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	ctx := t.Context()
	drain := func() bool {
		select {
		case <-c.wake:
			return true
		default:
			return false
		}
	}
	drain()
	s := f.spec("true")
	s.Hold = true
	if _, err := c.submit(ctx, root, api.SubmitRequest{Spec: s}); err != nil {
		t.Fatal(err)
	}
	if drain() {
		t.Error("a held submission woke the tick loop")
	}
	s.Hold = false
	if _, err := c.submit(ctx, root, api.SubmitRequest{Spec: s}); err != nil {
		t.Fatal(err)
	}
	if !drain() {
		t.Error("a submission that may start did not wake the tick loop")
	}
}
