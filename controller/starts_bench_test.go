package controller

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"hora/api"
	"hora/config"
	"hora/nodes"
	"hora/nodes/emulated"
	"hora/store"
)

// BenchmarkStarts4096: 4,096 held jobs released at once on 4,096 emulated
// nodes (issue 16 item 4: ≥ 1,000 starts/s sustained); an op runs from the
// release until every start is recorded in the store. starts/s is over
// that time; cpu-ms/op is the process's CPU time, the fill excluded.
func BenchmarkStarts4096(b *testing.B) {
	benchStarts(b, 4096, "3600", false)
}

// BenchmarkSustainedStarts4096: 16,384 held one-second jobs released at
// once on 4,096 emulated nodes of 64 CPUs, four jobs per node in turn, so
// that three quarters of the starts wait for an end (issue 16 item 4: the
// sustained rate, ends included). An op runs from the release until every
// job's end is recorded; starts/s is the jobs over the time from the
// release to the last launch (a launch follows its durable start).
func BenchmarkSustainedStarts4096(b *testing.B) {
	benchStarts(b, 4*4096, "1", true)
}

// launchClock is an executor that notes when it launched last.
type launchClock struct {
	nodes.Executor
	mu   sync.Mutex
	last time.Time
	n    int
}

func (l *launchClock) Launch(ctx context.Context, spec nodes.LaunchSpec) error {
	err := l.Executor.Launch(ctx, spec)
	l.mu.Lock()
	l.last, l.n = time.Now(), l.n+1
	l.mu.Unlock()
	return err
}

func benchStarts(b *testing.B, n int, runtime string, waitEnds bool) {
	var total time.Duration
	var cpu, commits int64
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
				Hold: true, Env: []string{"HORA_EMULATED_RUNTIME=" + runtime}, Stdout: "/dev/null", Partition: "batch", Nodes: 1},
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
		cfg.Nodes = []config.Node{{Name: "e[0001-4096]", Rate: 1, CPUs: 64}}
		cfg.Partitions = []config.Partition{{Name: "batch", Nodes: "e[0001-4096]", Default: true, Policy: "batch"}}
		cfg.Executor = "emulated"
		if err := cfg.Validate(); err != nil {
			b.Fatal(err)
		}
		em, err := emulated.New(emulated.Config{})
		if err != nil {
			b.Fatal(err)
		}
		exec := &launchClock{Executor: em}
		c, err := New(ctx, Options{Config: cfg, Store: st, Executor: exec})
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan struct{})
		go func() { c.Run(ctx); close(done) }()
		var ru0, ru1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		start := time.Now()
		commits0 := st.Commits()
		b.StartTimer()
		c.hold(ctx, root, ids, false)
		for {
			time.Sleep(250 * time.Millisecond) // each look reads the active jobs: not too often
			exec.mu.Lock()
			launched := exec.n
			exec.mu.Unlock()
			if time.Since(start) > 10*time.Minute {
				b.Fatalf("%d of %d jobs launched, not all done, after 10 min", launched, n)
			}
			if launched < n {
				continue
			}
			js, err := st.Jobs(ctx, store.Filter{Active: true})
			if err != nil {
				b.Fatal(err)
			}
			left := 0
			for _, j := range js {
				if j.StartTime == 0 || (waitEnds && !j.State.Finished()) {
					left++
				}
			}
			if left == 0 {
				break
			}
		}
		b.StopTimer()
		commits += st.Commits() - commits0
		exec.mu.Lock()
		if exec.n < n {
			b.Fatalf("%d launches for %d jobs", exec.n, n)
		}
		total += exec.last.Sub(start)
		exec.mu.Unlock()
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		cpu += ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
		cancel()
		<-done
		em.Close()
		st.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "starts/s")
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(commits)/float64(b.N), "commits/op")
}
