package controller

import (
	"testing"

	"hora/api"
	"hora/nodes"
)

// scontrol suspend of a job that squeue shows R while its launch is still
// under way is accepted, as Slurm's is, and the step is stopped once it is
// there; resuming before the launch ends leaves it running. Before, horad
// refused "Job is not running yet" although the job was RUNNING and its
// script had already written (TestSuspendResumeEndToEnd, under a CPU hog).
func TestSuspendDuringLaunchStopsTheStepOnceThere(t *testing.T) {
	for _, resume := range []bool{false, true} {
		f := newFixture(t)
		cl := newFakeCluster()
		c, ex := fakeController(t, f, cl)
		var during []*api.CancelResponse
		ex.onLaunch = func(spec nodes.LaunchSpec) {
			during = append(during, c.suspend(t.Context(), root, []int64{spec.Key.Job}, true))
			if resume {
				during = append(during, c.suspend(t.Context(), root, []int64{spec.Key.Job}, false))
			}
		}
		id := submitRequeueable(t, f, c)
		// Before its start is recorded nothing of the job runs anywhere
		// (and the store would refuse the suspension): refused.
		if r := c.suspend(t.Context(), root, []int64{id}, true); len(r.Results) != 1 || r.Results[0].Error != "Job is not running yet" {
			t.Fatalf("suspend of job %d before its start is recorded: %+v", id, r.Results)
		}
		runQueue(t.Context(), c.work)
		if len(during) == 0 {
			t.Fatalf("job %d was not launched", id)
		}
		for _, r := range during {
			if len(r.Results) != 1 || r.Results[0].Error != "" {
				t.Fatalf("suspend/resume of job %d during its launch: %+v", id, r.Results)
			}
		}
		run := cl.running(id)
		if len(run) != 1 {
			t.Fatalf("job %d: running steps %v", id, run)
		}
		c.mu.Lock()
		state := c.jobs[id].State
		c.mu.Unlock()
		want := api.StateSuspended
		if resume {
			want = api.StateRunning
		}
		if state != want || run[0].stopped != !resume {
			t.Fatalf("resume=%v: job %d is %s, its step stopped=%v; want %s, stopped=%v", resume, id, state, run[0].stopped, want, !resume)
		}
		if resume {
			continue
		}
		// horad died before its STOP reached the step: the recovery
		// that re-attaches the suspended job stops it again.
		run[0].stopped = false
		c2, _ := fakeController(t, f, cl)
		runQueue(t.Context(), c2.work)
		if !run[0].stopped {
			t.Fatalf("job %d, SUSPENDED in the store, runs on after a restart", id)
		}
	}
}
