package controller

import (
	"testing"
	"time"

	"hora/api"
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
