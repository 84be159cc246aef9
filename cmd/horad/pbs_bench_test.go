package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"hora/api"
)

// BenchmarkQsubSequential: one `qsub -h` process after another, as
// BenchmarkSbatchSequential does with sbatch (goal: within 10% of it).
func BenchmarkQsubSequential(b *testing.B) {
	c := newCluster(b)
	n := 0
	for b.Loop() {
		r := c.run(0, c.dir, "qsub", "-h", "--", "/bin/true")
		if r.code != 0 {
			b.Fatalf("qsub: %+v", r)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "jobs/s")
}

// submitHeld queues n held jobs straight through the API, 8 at a time.
func submitHeld(b *testing.B, c *cluster, n int) {
	cl := api.NewClient(c.sock)
	wd, _ := os.Getwd()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				_, err := cl.Submit(context.Background(), api.SubmitRequest{Spec: api.JobSpec{
					Name: "j" + strconv.Itoa(i), Script: "#!/bin/sh\ntrue\n", WorkDir: wd, Hold: true,
					Env: []string{"PBS_O_WORKDIR=" + wd, "PBS_O_HOME=/root"}}})
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkQstatFull10k: wall time of a whole `qstat -f` process over
// 10,000 jobs (goal ≤ 0.2 s).
func BenchmarkQstatFull10k(b *testing.B) {
	c := newCluster(b)
	submitHeld(b, c, 10000)
	for b.Loop() {
		r := c.run(0, c.dir, "qstat", "-f")
		if n := strings.Count(r.stdout, "Job Id: "); r.code != 0 || n != 10000 {
			b.Fatalf("qstat -f: exit %d, %d jobs, stderr %q", r.code, n, r.stderr)
		}
	}
}

// BenchmarkQselect100k: wall time of a whole `qselect` process over
// 100,000 jobs (goal ≤ 0.2 s).
func BenchmarkQselect100k(b *testing.B) {
	c := newCluster(b)
	submitHeld(b, c, 100000)
	for b.Loop() {
		r := c.run(0, c.dir, "qselect", "-s", "H")
		if n := strings.Count(r.stdout, "\n"); r.code != 0 || n != 100000 {
			b.Fatalf("qselect: exit %d, %d ids, stderr %q", r.code, n, r.stderr)
		}
	}
}
