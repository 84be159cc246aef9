package controller

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"hora/api"
	"hora/config"
	"hora/nodes/local"
	"hora/store"
)

// BenchmarkRecover100k: controller.New (store read and Engine rebuild) over
// 100,000 stored jobs, the recovery a socket-activated horad does before it
// answers its first client (docs/benchmarks.md, packaging): all held
// (pending, so all loaded), or all finished long ago (history for sacct).
func BenchmarkRecover100k(b *testing.B) {
	b.Run("held", func(b *testing.B) { benchRecover(b, false) })
	b.Run("finished", func(b *testing.B) { benchRecover(b, true) })
}

func benchRecover(b *testing.B, finished bool) {
	ctx := context.Background()
	dir := b.TempDir()
	db := filepath.Join(dir, "hora.db")
	st, err := store.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100000 {
		j := &api.Job{Spec: api.JobSpec{Name: "fill", Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp", Hold: true},
			State: api.StatePending, Reason: "JobHeldUser", SubmitTime: int64(1700000000 + i), CancelledBy: -1}
		if err := st.Submit(ctx, j); err != nil {
			b.Fatal(err)
		}
		if finished {
			if err := st.Append(ctx, store.Event{JobID: j.ID, Time: 1700000100 + int64(i), Kind: store.KindEnd,
				State: api.StateCompleted, Reason: "None"}); err != nil {
				b.Fatal(err)
			}
		}
	}
	want := 100000
	if finished {
		want = 0
	}
	st.Close()
	cfg := config.Default()
	cfg.StateDir = dir
	for b.Loop() {
		st, err := store.Open(ctx, db)
		if err != nil {
			b.Fatal(err)
		}
		exec, err := local.New(local.Config{StateDir: filepath.Join(dir, "nodes"), ShepherdArgv: []string{os.Args[0], local.ShepherdCommand}})
		if err != nil {
			b.Fatal(err)
		}
		c, err := New(ctx, Options{Config: cfg, Store: st, Executor: exec})
		if err != nil {
			b.Fatal(err)
		}
		if s := c.Stats(); s.Pending != want {
			b.Fatalf("recovered %d pending jobs", s.Pending)
		}
		exec.Close()
		st.Close()
	}
}
