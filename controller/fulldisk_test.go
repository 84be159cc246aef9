package controller

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hora/api"
	"hora/store"
	"hora/store/storetest"
)

// A submission the store cannot record (a full disk) is refused and leaves
// nothing behind in the Engine: before, a job the Engine had started in
// the same pass stayed there for ever, holding its node and its id, and
// every later submission was refused "Duplicate job id N" (found by the
// fault harness). Once space returns, a job needing all four nodes runs.
func TestUnrecordedSubmitIsTakenBack(t *testing.T) {
	f := newFixture(t)
	disk := filepath.Join(f.dir, "disk")
	if err := os.Mkdir(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	storetest.MountTmpfs(t, disk, "4m")
	st, err := store.Open(t.Context(), filepath.Join(disk, "hora.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f.st = st
	c := f.controller(t)

	if err := storetest.Fill(disk); err != nil {
		t.Fatal(err)
	}
	// One node each, so the Engine starts each in its submission's pass.
	spec := f.spec("sleep 1 # " + strings.Repeat("x", 32<<10))
	refused := false
	for k := 0; k < 50 && !refused; k++ {
		_, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: spec})
		if err != nil {
			if !strings.Contains(err.Error(), "Unable to record the job") || !strings.Contains(err.Error(), "full") {
				t.Fatalf("submit on a full disk: %v, want Unable to record the job: ... full", err)
			}
			refused = true
		}
	}
	if !refused {
		t.Fatal("50 submissions fitted on a full 4 MiB disk")
	}
	if err := storetest.Empty(disk); err != nil {
		t.Fatal(err)
	}
	all := f.spec("true")
	all.Nodes = 4
	resp, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: all})
	if err != nil {
		t.Fatalf("submit once space returned: %v", err)
	}
	j := waitStore(t, f, c, resp.JobID, "completed", func(j api.Job) bool { return j.State.Finished() })
	if j.State != api.StateCompleted {
		t.Fatalf("the four-node job after the refused submission: %s reason %s", j.State, j.Reason)
	}
}
