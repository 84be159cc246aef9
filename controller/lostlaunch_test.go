package controller

import (
	"slices"
	"syscall"
	"testing"
	"time"

	"hora/api"
	"hora/config"
	"hora/nodes"
)

// A step the executor reports lost while its launch has not returned yet (a
// full disk on the node: the shepherd died as it started) is a node lost
// under the job once the launch returns, and a requeue-able job runs again;
// before, the report taken ahead of the launch ended the job NODE_FAIL
// (the fault harness: an array task that could be requeued, 110-minute
// soak). A --no-requeue job still ends NODE_FAIL.
func TestStepLostDuringLaunchRequeues(t *testing.T) {
	for _, noRequeue := range []bool{false, true} {
		f := newFixture(t)
		cl := newFakeCluster()
		c, ex := fakeController(t, f, cl)
		reported := 0
		ex.onLaunch = func(spec nodes.LaunchSpec) {
			if spec.Key.Step >= 0 || reported > 0 {
				return
			}
			reported++
			c.handleExit(t.Context(), nodes.Status{Key: spec.Key, Node: spec.Node, State: nodes.StepLost,
				ExitCode: 1, Err: "step lost: no pid file"})
		}
		spec := f.spec("true")
		spec.Requeue, spec.NoRequeue = !noRequeue, noRequeue
		resp, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		id := resp.JobID
		runQueue(t.Context(), c.work)
		if reported != 1 {
			t.Fatalf("job %d was not launched", id)
		}
		// The held report is taken again a second later, once the launch
		// has returned.
		var state api.JobState
		var restarts int
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			c.mu.Lock()
			j := c.jobs[id]
			state, restarts = j.State, j.Restarts
			c.mu.Unlock()
			if state != api.StateRunning || restarts > 0 {
				break
			}
		}
		// Requeued, the job is PENDING or, started again on the freed
		// node at once, RUNNING its second run.
		ok := restarts == 1 && !state.Finished()
		if noRequeue {
			ok = state == api.StateNodeFail && restarts == 0
		}
		if !ok {
			t.Fatalf("noRequeue=%v: job %d whose step was lost during its launch is %s with %d restarts; want requeued, or NODE_FAIL for --no-requeue",
				noRequeue, id, state, restarts)
		}
	}
}

// scancel --signal of a divisible job reaches each of its running chunks;
// before, it was sent to a batch step such a job does not have, and
// reached nothing. A job whose launch is still queued gets the signal
// after the launch (the dispatcher keeps the order).
func TestSignalReachesChunksAndQueuedLaunches(t *testing.T) {
	f := newFixture(t)
	f.cfg.Partitions = append(f.cfg.Partitions, config.Partition{Name: "rt", Nodes: "local[1-2]", Policy: "dlt",
		Params: map[string]string{"cps": "0.001"}})
	cl := newFakeCluster()
	c, _ := fakeController(t, f, cl)
	s := f.spec("true")
	s.Partition, s.Load, s.Deadline = "rt", 100000, time.Now().Unix()+3600
	resp, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	div := resp.JobID
	batch := submitRequeueable(t, f, c)
	runQueue(t.Context(), c.work)
	chunks := cl.running(div)
	if len(chunks) == 0 {
		t.Fatalf("divisible job %d runs no chunk", div)
	}
	// The batch job's launch is queued when the signal is.
	batch2 := submitRequeueable(t, f, c)
	for _, id := range []int64{div, batch2} {
		resp, err := c.cancel(t.Context(), root, api.CancelRequest{IDs: []int64{id}, Signal: int(syscall.SIGUSR1)})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Results) != 1 || resp.Results[0].Error != "" {
			t.Fatalf("scancel --signal=USR1 %d: %+v", id, resp.Results)
		}
	}
	runQueue(t.Context(), c.work)
	usr1 := []nodes.Signum{nodes.Signum(syscall.SIGUSR1)}
	for _, st := range chunks {
		if !slices.Equal(st.signals, usr1) {
			t.Errorf("job %d's chunk %d on %s got signals %v, want [USR1]", div, st.key.Step, st.node, st.signals)
		}
	}
	for _, id := range []int64{batch, batch2} {
		run := cl.running(id)
		if len(run) != 1 {
			t.Fatalf("job %d: running steps %v", id, run)
		}
		want := usr1
		if id == batch {
			want = nil
		}
		if !slices.Equal(run[0].signals, want) {
			t.Errorf("job %d's step got signals %v, want %v", id, run[0].signals, want)
		}
	}
}
