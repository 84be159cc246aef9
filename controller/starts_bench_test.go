package controller

import (
	"context"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"hora/api"
	"hora/config"
	"hora/nodes/emulated"
	"hora/store"
)

// BenchmarkStarts4096: 4,096 held jobs released at once on 4,096 emulated
// nodes (issue 16 item 4: ≥ 1,000 starts/s sustained); an op runs from the
// release until every start is recorded in the store. starts/s is over
// that time; cpu-ms/op is the process's CPU time, the fill excluded.
func BenchmarkStarts4096(b *testing.B) {
	const n = 4096
	var total time.Duration
	var cpu int64
	for b.Loop() {
		b.StopTimer()
		ctx, cancel := context.WithCancel(context.Background())
		dir := b.TempDir()
		db := filepath.Join(dir, "hora.db")
		st, err := store.Open(ctx, db)
		if err != nil {
			b.Fatal(err)
		}
		var waits []func() error
		var ids []int64
		jobs := make([]*api.Job, n)
		for i := range jobs {
			jobs[i] = &api.Job{Spec: api.JobSpec{Name: "s" + strconv.Itoa(i), Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp",
				Hold: true, Env: []string{"HORA_EMULATED_RUNTIME=3600"}, Stdout: "/dev/null"},
				State: api.StatePending, Reason: "JobHeldUser", CancelledBy: -1}
			w, err := st.SubmitQueued(ctx, jobs[i])
			if err != nil {
				b.Fatal(err)
			}
			waits = append(waits, w)
		}
		for i, w := range waits {
			if err := w(); err != nil {
				b.Fatal(err)
			}
			ids = append(ids, jobs[i].ID)
		}
		cfg := config.Default()
		cfg.StateDir = dir
		cfg.Nodes = []config.Node{{Name: "e[0001-4096]", Rate: 1}}
		cfg.Partitions = []config.Partition{{Name: "batch", Nodes: "e[0001-4096]", Default: true, Policy: "batch"}}
		cfg.Executor = "emulated"
		if err := cfg.Validate(); err != nil {
			b.Fatal(err)
		}
		exec, err := emulated.New(emulated.Config{})
		if err != nil {
			b.Fatal(err)
		}
		c, err := New(ctx, Options{Config: cfg, Store: st, Executor: exec})
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan struct{})
		go func() { c.Run(ctx); close(done) }()
		var ru0, ru1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		start := time.Now()
		b.StartTimer()
		c.hold(ctx, root, ids, false)
		for {
			js, err := st.Jobs(ctx, store.Filter{Active: true})
			if err != nil {
				b.Fatal(err)
			}
			started := 0
			for _, j := range js {
				if j.StartTime != 0 {
					started++
				}
			}
			if started == n {
				break
			}
			if time.Since(start) > 10*time.Minute {
				b.Fatalf("%d of %d started after 10 min", started, n)
			}
			time.Sleep(250 * time.Millisecond) // each look reads 4,096 jobs: not too often
		}
		b.StopTimer()
		total += time.Since(start)
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		cpu += ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
		cancel()
		<-done
		exec.Close()
		st.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "starts/s")
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
}
