package controller

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
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
	fillHeld(b, db, finished)
	want := 100000
	if finished {
		want = 0
	}
	cfg := config.Default()
	cfg.StateDir = dir
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
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
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	reportCPU(b, ru0, ru1)
}

// reportCPU reports the process's CPU time per op: on a machine shared with
// other builds the wall time says more about the load than about the code.
func reportCPU(b *testing.B, ru0, ru1 syscall.Rusage) {
	cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
}

// BenchmarkListJobs100k: what horad does for `squeue` over 100,000 held
// jobs: GET /jobs in hora's own listing encoding (encoded under the
// controller's lock, encodeListingLocked), as the handler sends it.
func BenchmarkListJobs100k(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	db := filepath.Join(dir, "hora.db")
	fillHeld(b, db, false)
	cfg := config.Default()
	cfg.StateDir = dir
	st, err := store.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	exec, err := local.New(local.Config{StateDir: filepath.Join(dir, "nodes"), ShepherdArgv: []string{os.Args[0], local.ShepherdCommand}})
	if err != nil {
		b.Fatal(err)
	}
	defer exec.Close()
	c, err := New(ctx, Options{Config: cfg, Store: st, Executor: exec})
	if err != nil {
		b.Fatal(err)
	}
	var n int
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	for b.Loop() {
		req := httptest.NewRequest("GET", api.PathJobs, nil)
		req.Header.Set("Accept", api.MediaListing)
		out, err := c.hJobs(ctx, root, req)
		if err != nil {
			b.Fatal(err)
		}
		el := out.(*encodedListing)
		if n == 0 { // checked once: joining the parts is not horad's work
			lr, err := api.NewListingReader(el.bytes())
			if err != nil || lr.Len() != 100000 {
				b.Fatalf("%d jobs listed: %v", lr.Len(), err)
			}
			for range lr.Len() {
				var j api.Job
				if _, err := lr.Next(&j); err != nil {
					b.Fatal(err)
				}
			}
			if err := lr.End(); err != nil {
				b.Fatal(err)
			}
		}
		n = el.len()
		el.release()
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	reportCPU(b, ru0, ru1)
	b.ReportMetric(float64(n), "listing-bytes")
}

// fillHeld stores 100,000 held jobs (and ends them all if finished).
func fillHeld(b *testing.B, db string, finished bool) {
	ctx := context.Background()
	st, err := store.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	// Queued 1,000 at a time so that group commit writes them in a few
	// hundred transactions rather than 100,000 (the fill is not measured).
	for i := 0; i < 100000; i += 1000 {
		var waits []func() error
		var jobs []*api.Job
		for k := i; k < i+1000; k++ {
			j := &api.Job{Spec: api.JobSpec{Name: "fill", Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp", Hold: true},
				State: api.StatePending, Reason: "JobHeldUser", SubmitTime: int64(1700000000 + k), CancelledBy: -1}
			w, err := st.SubmitQueued(ctx, j)
			if err != nil {
				b.Fatal(err)
			}
			waits, jobs = append(waits, w), append(jobs, j)
		}
		for _, w := range waits {
			if err := w(); err != nil {
				b.Fatal(err)
			}
		}
		if finished {
			var evs []store.Event
			for k, j := range jobs {
				evs = append(evs, store.Event{JobID: j.ID, Time: 1700000100 + int64(i+k), Kind: store.KindEnd,
					State: api.StateCompleted, Reason: "None"})
			}
			if err := st.Append(ctx, evs...); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
}
