package store

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"hora/api"
	"hora/store/storetest"
)

// A write refused because the disk is full leaves nothing behind: once
// space returns, the same job id is free, the refused job is not in the
// store, and a reopened store holds exactly what was acknowledged. The
// fault harness found "Duplicate job id" after a failed commit.
func TestFullDiskRefusesAndRecovers(t *testing.T) {
	dir := t.TempDir()
	storetest.MountTmpfs(t, dir, "4m")
	path := filepath.Join(dir, "hora.db")
	st, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { st.Close() }()
	job := func(id int64) *api.Job {
		return &api.Job{ID: id, State: api.StatePending, Spec: api.JobSpec{Name: "j", WorkDir: "/",
			Script: "#!/bin/sh\n# " + strings.Repeat("x", 2<<10) + "\n"}}
	}
	if err := st.Submit(t.Context(), job(1)); err != nil {
		t.Fatal(err)
	}
	if err := storetest.Fill(dir); err != nil {
		t.Fatal(err)
	}
	// Submissions until one is refused (the WAL may hold a few first).
	acked := []int64{1}
	refused := int64(0)
	for id := int64(2); id < 5000 && refused == 0; id++ {
		if err := st.Submit(t.Context(), job(id)); err != nil {
			if !strings.Contains(err.Error(), "full") {
				t.Fatalf("submit %d on a full disk: %v, want an error saying the disk is full", id, err)
			}
			refused = id
			t.Logf("submit %d refused: %v", id, err)
		} else {
			acked = append(acked, id)
		}
	}
	if refused == 0 {
		t.Fatal("5000 submissions of 2 KiB fitted on a full 4 MiB disk")
	}
	if _, err := st.Job(t.Context(), refused); !errors.Is(err, ErrNotFound) {
		t.Fatalf("job %d, refused, is in the store: %v", refused, err)
	}
	if err := storetest.Empty(dir); err != nil {
		t.Fatal(err)
	}
	if err := st.Submit(t.Context(), job(refused)); err != nil {
		t.Fatalf("the refused id %d once space returned: %v", refused, err)
	}
	acked = append(acked, refused)
	st.Close()
	st, err = Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := st.Jobs(t.Context(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != len(acked) {
		t.Fatalf("reopened store holds %d jobs, %d were acknowledged", len(jobs), len(acked))
	}
}
