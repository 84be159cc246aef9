package controller

import (
	"os"
	"path/filepath"
	"testing"

	"hora/api"
)

// A batch job whose launch fails on the node (its state directory cannot
// be written: a full disk, a file in the way) is requeued and held, as
// slurmctld does ("launch failed requeued held"), when it may be
// requeued; a --no-requeue job ends NODE_FAIL as before. The fault
// harness found requeue-able jobs ended NODE_FAIL on a full disk.
func TestFailedLaunchRequeuesHeld(t *testing.T) {
	for _, noRequeue := range []bool{false, true} {
		t.Run(map[bool]string{false: "requeue", true: "no-requeue"}[noRequeue], func(t *testing.T) {
			f := newFixture(t)
			c := f.controller(t)
			// Every node's state directory is a file: each launch fails.
			for _, n := range []string{"local1", "local2", "local3", "local4"} {
				p := filepath.Join(f.dir, "nodes", n)
				if err := os.RemoveAll(p); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			spec := f.spec("true")
			spec.NoRequeue = noRequeue
			resp, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: spec})
			if err != nil {
				t.Fatal(err)
			}
			if noRequeue {
				j := waitStore(t, f, c, resp.JobID, "finished", func(j api.Job) bool { return j.State.Finished() })
				if j.State != api.StateNodeFail || j.Restarts != 0 {
					t.Fatalf("--no-requeue job after a failed launch: %s reason %s restarts %d, want NODE_FAIL", j.State, j.Reason, j.Restarts)
				}
				return
			}
			j := waitStore(t, f, c, resp.JobID, "requeued", func(j api.Job) bool { return j.Restarts > 0 || j.State.Finished() })
			if j.State != api.StatePending || j.Reason != "JobHeldUser" || j.Restarts != 1 {
				t.Fatalf("requeue-able job after a failed launch: %s reason %s restarts %d, want PENDING JobHeldUser restarts 1",
					j.State, j.Reason, j.Restarts)
			}
		})
	}
}
