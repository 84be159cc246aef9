package controller

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"hora/api"
	"hora/nodes"
	"hora/scheduler"
	"hora/store"
)

// runUntilLaunched runs c until job id's batch step has started on its
// node, then stops c's loops: what c is asked afterwards is answered and
// recorded, but nothing it queues for the nodes (Terminate) leaves it, as
// when horad is killed right after answering.
func runUntilLaunched(t *testing.T, c *Controller, spec api.JobSpec) int64 {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	resp, err := c.submit(ctx, root, api.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c.mu.Lock()
		launched := c.jobs[resp.JobID].launched
		c.mu.Unlock()
		if launched {
			return resp.JobID
		}
		if time.Now().After(deadline) {
			t.Fatal("the job never launched")
		}
	}
}

// waitFile waits, with a generous bound for a hang, until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
	}
}

// waitStore runs c until the stored job satisfies ok, and returns it.
func waitStore(t *testing.T, f *fixture, c *Controller, id int64, what string, ok func(api.Job) bool) api.Job {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	var j api.Job
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		j, _ = f.st.Job(ctx, id)
		if ok(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d never became %s: %s reason %s restarts %d", id, what, j.State, j.Reason, j.Restarts)
		}
	}
}

// A requeue that was answered survives a crash of horad before the job's
// step was even told to stop: after the restart the run is stopped and the
// job requeued (Restarts=1), not left running nor ended FAILED, and its
// second run completes.
func TestRequeueRequestSurvivesRestart(t *testing.T) {
	t.Run("not yet stopped", func(t *testing.T) { testRequeueAcrossRestart(t, false) })
	t.Run("ended while away", func(t *testing.T) { testRequeueAcrossRestart(t, true) })
}

// endedAway: the Terminate left before the crash and the step ended by its
// signal while horad was away, which recovery alone would take as FAILED.
func testRequeueAcrossRestart(t *testing.T, endedAway bool) {
	f := newFixture(t)
	f.cfg.KillWaitS = 1
	marker := filepath.Join(f.dir, "ran")
	spec := f.spec("if [ -e " + marker + " ]; then exit 0; fi; touch " + marker + "; sleep 60")
	c1 := f.controller(t)
	id := runUntilLaunched(t, c1, spec)
	// The first run must have left its marker before it is stopped, or the
	// second run is a first one again (and sleeps): launched only says that
	// the shepherd holds the step, not how far the script got.
	waitFile(t, marker)
	r := c1.requeueJobs(t.Context(), root, []int64{id}, false)
	if len(r.Results) != 1 || r.Results[0].Error != "" {
		t.Fatalf("requeue: %+v", r.Results)
	}
	evs, _ := f.st.Events(t.Context(), id)
	if last := evs[len(evs)-1]; last.Kind != store.KindRequeueRequest || last.By != 0 {
		t.Fatalf("last event after the answer: %+v, want a requeue_request by uid 0", last)
	}

	if endedAway {
		c1.mu.Lock()
		node := c1.jobs[id].Nodes[0]
		c1.mu.Unlock()
		key := nodes.StepKey{Job: id, Step: scheduler.BatchStep}
		if err := c1.exec.Terminate(t.Context(), node, key, 0); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			sts, err := c1.exec.Reattach(t.Context(), []string{node})
			if err != nil {
				t.Fatal(err)
			}
			if len(sts) == 1 && sts[0].State != nodes.StepRunning {
				if sts[0].Signal == 0 {
					t.Fatalf("the stopped step: %+v, want an end by signal", sts[0])
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the step did not end: %+v", sts)
			}
		}
	}
	c2 := f.controller(t) // the restart
	j := waitStore(t, f, c2, id, "COMPLETED after a requeue", func(j api.Job) bool { return j.State.Finished() })
	if j.State != api.StateCompleted || j.Restarts != 1 {
		t.Fatalf("after the restart: %s reason %s restarts %d, want COMPLETED with Restarts=1", j.State, j.Reason, j.Restarts)
	}
	evs, _ = f.st.Events(t.Context(), id)
	for _, e := range evs {
		if e.Kind == store.KindEnd && e.State != api.StateCompleted {
			t.Fatalf("the requeued run was recorded as ended %s", e.State)
		}
	}
}

// A job on a node an operator set DOWN ends as a node failure, or is
// requeued as its Requeue setting says, also when horad dies right after
// answering — and also when the node was resumed before the crash, so that
// only the job's own mark tells what happened.
func TestNodeDownMarkSurvivesRestart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		requeue bool
		resume  bool
	}{
		{"no-requeue, node still down", false, false},
		{"no-requeue, node resumed", false, true},
		{"requeue, node resumed", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			spec := f.spec("sleep 60")
			spec.Requeue, spec.NoRequeue = tc.requeue, !tc.requeue
			c1 := f.controller(t)
			id := runUntilLaunched(t, c1, spec)
			c1.mu.Lock()
			node := c1.jobs[id].Nodes[0]
			c1.mu.Unlock()
			if _, err := c1.updateNodes(t.Context(), root, api.NodeUpdateRequest{Nodes: []string{node},
				State: api.NodeDown, Reason: "maintenance"}); err != nil {
				t.Fatal(err)
			}
			if tc.resume {
				if _, err := c1.updateNodes(t.Context(), root, api.NodeUpdateRequest{Nodes: []string{node},
					State: api.NodeResume}); err != nil {
					t.Fatal(err)
				}
			}
			c2 := f.controller(t)
			if !tc.requeue {
				j := waitStore(t, f, c2, id, "finished", func(j api.Job) bool { return j.State.Finished() })
				if j.State != api.StateNodeFail || j.Reason != "NodeDown" {
					t.Fatalf("after the restart: %s reason %s, want NODE_FAIL NodeDown", j.State, j.Reason)
				}
				return
			}
			j := waitStore(t, f, c2, id, "requeued", func(j api.Job) bool { return j.Restarts == 1 || j.State.Finished() })
			if j.State.Finished() || j.Restarts != 1 {
				t.Fatalf("after the restart: %s reason %s restarts %d, want requeued", j.State, j.Reason, j.Restarts)
			}
		})
	}
}
