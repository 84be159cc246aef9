package controller

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"hora/api"
	"hora/config"
	"hora/store"
)

// crashedChunkFixture records a divisible job whose chunk 0 (the whole load,
// on local1) was recorded started but never launched: horad died between
// the two. It returns the fixture and the job's id.
func crashedChunkFixture(t *testing.T) *fixture {
	f := newFixture(t)
	f.cfg.Partitions = append(f.cfg.Partitions, config.Partition{Name: "rt", Nodes: "local[1-2]", Policy: "dlt",
		Params: map[string]string{"cps": "0.001"}})
	s := f.spec("echo ran")
	s.Partition, s.Load, s.Deadline = "rt", 1000, time.Now().Unix()+30
	now := time.Now().Unix()
	if err := f.st.Submit(t.Context(), &api.Job{ID: 1, Spec: s, State: api.StatePending, SubmitTime: now}); err != nil {
		t.Fatal(err)
	}
	step := api.Step{Index: 0, Node: "local1", State: api.StateRunning, Offset: 0, Size: 1000, StartTime: now}
	for _, e := range []store.Event{
		{JobID: 1, Time: now, Kind: store.KindStart, Nodes: []string{"local1"}, StdoutPath: "/dev/null", StderrPath: "/dev/null"},
		{JobID: 1, Time: now, Kind: store.KindStepStart, Step: &step},
	} {
		if err := f.st.Append(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// runUntilFinished runs c until job id has finished and also (if not nil)
// until cond holds.
func runUntilFinished(t *testing.T, c *Controller, id int64, cond func() bool) api.Job {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c.mu.Lock()
		j := c.jobs[id].Job
		c.mu.Unlock()
		if j.State.Finished() && (cond == nil || cond()) {
			return j
		}
	}
	t.Fatalf("job %d not finished (or the condition not met) within 60 s", id)
	return api.Job{}
}

// A chunk recorded started but never launched before a crash is NODE_FAIL
// after the restart, and its range is run again (as the batch path requeues
// a job that never started): the job completes.
func TestRecoveryRerunsNeverLaunchedChunk(t *testing.T) {
	f := crashedChunkFixture(t)
	c := f.controller(t)
	j := runUntilFinished(t, c, 1, nil)
	if j.State != api.StateCompleted {
		t.Fatalf("job %s (%s), steps %+v, want COMPLETED with the lost range run again", j.State, j.Reason, j.Steps)
	}
	if len(j.Steps) < 2 || j.Steps[0].State != api.StateNodeFail || j.Steps[1].Offset != 0 || j.Steps[1].State != api.StateCompleted {
		t.Fatalf("steps %+v, want 0 NODE_FAIL then 1 COMPLETED from offset 0", j.Steps)
	}
}

// Staged data left by a crash (a cut transfer's .tmp, a staged chunk that
// never launched) is removed at recovery; a running chunk's data and files
// that are not step data stay.
func TestRecoveryCleansStagedData(t *testing.T) {
	f := crashedChunkFixture(t)
	dir := filepath.Join(f.dir, "nodes", "local1", "staged")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"1.0", "1.3.tmp", "9.2", "notes"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := f.controller(t)
	gone := func() bool {
		for _, n := range []string{"1.0", "1.3.tmp", "9.2"} {
			if _, err := os.Stat(filepath.Join(dir, n)); !os.IsNotExist(err) {
				return false
			}
		}
		return true
	}
	runUntilFinished(t, c, 1, gone)
	if _, err := os.Stat(filepath.Join(dir, "notes")); err != nil {
		t.Errorf("a file that is not step data was removed: %v", err)
	}
}

// scontrol suspend of a running divisible job is refused and changes
// nothing: its chunks belong to the dlt policy, which would start the next
// one behind the suspension's back.
func TestSuspendDivisibleJobRefused(t *testing.T) {
	f := newFixture(t)
	f.cfg.Partitions = append(f.cfg.Partitions, config.Partition{Name: "rt", Nodes: "local[1-2]", Policy: "dlt",
		Params: map[string]string{"cps": "0.01"}})
	c := f.controller(t)
	s := f.spec("sleep 20")
	s.Partition, s.Load, s.Deadline = "rt", 1000, time.Now().Unix()+120
	resp, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() {
		c.cancel(t.Context(), root, api.CancelRequest{IDs: []int64{resp.JobID}})
		cancel()
		<-done
	}()
	running := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.jobs[resp.JobID].State == api.StateRunning
	}
	for deadline := time.Now().Add(10 * time.Second); !running(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("divisible job not running within 10 s")
		}
	}
	r := c.suspend(t.Context(), root, []int64{resp.JobID}, true)
	if len(r.Results) != 1 || r.Results[0].Code != api.CodeDisabled {
		t.Fatalf("suspend of a divisible job: %+v, want refused", r.Results)
	}
	if !running() {
		t.Fatal("a refused suspend changed the job's state")
	}
}
