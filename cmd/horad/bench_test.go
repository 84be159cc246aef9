package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hora/api"
)

// System benchmarks: real binaries, real horad, one CLI process per
// submission as a user (or a workflow tool) would run them. Results go to
// docs/benchmarks.md beside Slurm's figures (REFERENCES.md).

// BenchmarkSbatchSequential: one `sbatch --hold` process after another; each
// returns only after the job is durable in SQLite.
func BenchmarkSbatchSequential(b *testing.B) {
	c := newCluster(b)
	n := 0
	for b.Loop() {
		r := c.run(0, c.dir, "sbatch", "--hold", "--wrap", "true")
		if r.code != 0 {
			b.Fatalf("sbatch: %+v", r)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkSbatchConcurrent16: 16 submitters at once.
func BenchmarkSbatchConcurrent16(b *testing.B) {
	c := newCluster(b)
	n := 0
	for b.Loop() {
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if r := c.run(0, c.dir, "sbatch", "--hold", "--wrap", "true"); r.code != 0 {
					b.Errorf("sbatch: %+v", r)
				}
			}()
		}
		wg.Wait()
		n += 16
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkSqueue10k: wall time of a whole `squeue` process with 10,000
// pending jobs.
func BenchmarkSqueue10k(b *testing.B) {
	c := newCluster(b)
	cl := api.NewClient(c.sock)
	wd, _ := os.Getwd()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 10000; i += 8 {
				_, err := cl.Submit(context.Background(), api.SubmitRequest{Spec: api.JobSpec{
					Name: "j" + strconv.Itoa(i), Script: "#!/bin/sh\ntrue\n", WorkDir: wd, Hold: true}})
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for b.Loop() {
		r := c.run(0, c.dir, "squeue")
		if lines := strings.Count(r.stdout, "\n"); r.code != 0 || lines != 10001 {
			b.Fatalf("squeue: exit %d, %d lines, stderr %q", r.code, lines, r.stderr)
		}
	}
}

// BenchmarkSubmitToFirstLine: from starting `sbatch` to the job's first line
// running on an idle local node (the job writes the time it started).
func BenchmarkSubmitToFirstLine(b *testing.B) {
	c := newCluster(b)
	dir := filepath.Join(c.dir, "w")
	os.MkdirAll(dir, 0o777)
	var total time.Duration
	i := 0
	for b.Loop() {
		i++
		stamp := filepath.Join(dir, fmt.Sprintf("t%d", i))
		t0 := time.Now()
		r := c.run(0, dir, "sbatch", "-o", "/dev/null", "--wrap", "date +%s%N > "+stamp)
		if r.code != 0 {
			b.Fatalf("sbatch: %+v", r)
		}
		var ns int64
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if out, err := os.ReadFile(stamp); err == nil && len(out) > 1 && out[len(out)-1] == '\n' {
				ns, _ = strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
				break
			}
		}
		if ns == 0 {
			b.Fatalf("job %d never ran", i)
		}
		total += time.Unix(0, ns).Sub(t0)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(i), "ms/first-line")
}
