package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// BenchmarkSrunFirstTask: inside a running allocation, from starting `srun
// echo` to the task's first output line reaching srun's stdout: srun's
// start-up, the step request (recorded durably by horad), the fork of the
// task and its first line. Each step ends before the next starts.
func BenchmarkSrunFirstTask(b *testing.B) { benchSrunFirstTask(b) }

// BenchmarkSrunMemFirstTask is the same with a step --mem: srun holds the
// task in its gate until horad has put it in the step's memory cgroup
// (one more synchronous request, a mkdir and cgroup writes).
func BenchmarkSrunMemFirstTask(b *testing.B) { benchSrunFirstTask(b, "--mem=50M") }

func benchSrunFirstTask(b *testing.B, opts ...string) {
	c := newCluster(b)
	dir := filepath.Join(c.dir, "w")
	os.MkdirAll(dir, 0o777)
	r := c.run(0, dir, "sbatch", "-o", "/dev/null", "--wrap", "sleep 600")
	m := submitted.FindStringSubmatch(r.stdout)
	if m == nil {
		b.Fatalf("sbatch: %+v", r)
	}
	for deadline := time.Now().Add(30 * time.Second); c.state(m[1]) != "RUNNING"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("the allocation never started")
		}
	}
	srun := filepath.Join(c.bin, "srun")
	var first time.Duration
	n := 0
	for b.Loop() {
		d, err := timeToFirstLine(srun, []string{"HORA_SOCKET=" + c.sock, "SLURM_JOB_ID=" + m[1]}, append(slices.Clip(opts), "echo", "x")...)
		if err != nil {
			b.Fatal(err)
		}
		first += d
		n++
	}
	b.ReportMetric(float64(first.Microseconds())/1000/float64(n), "ms/first-task-line")
}

// timeToFirstLine runs a command and returns how long its first stdout
// line took to arrive; it waits for the command to end.
func timeToFirstLine(path string, env []string, args ...string) (time.Duration, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	buf := make([]byte, 64)
	var d time.Duration
	if _, err := out.Read(buf); err == nil {
		d = time.Since(t0)
	}
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil || d == 0 {
		return 0, fmt.Errorf("%s %q: %v (no output: %v)", path, args, err, d == 0)
	}
	return d, nil
}

// BenchmarkSlurmSrunFirstTask is the same measurement against a real
// Slurm 22.05 on this machine (../shared/tools/slurm-oracle.sh), inside a
// Slurm allocation. It submits a job to that Slurm, so it runs only when
// asked: HORA_BENCH_SLURM=1 (docs/benchmarks.md, job steps).
func BenchmarkSlurmSrunFirstTask(b *testing.B) {
	if os.Getenv("HORA_BENCH_SLURM") != "1" {
		b.Skip("compares with a real Slurm: start ../shared/tools/slurm-oracle.sh and set HORA_BENCH_SLURM=1")
	}
	if _, err := exec.Command("/usr/bin/sinfo").Output(); err != nil {
		b.Fatalf("no Slurm to compare with (start ../shared/tools/slurm-oracle.sh): %v", err)
	}
	out, err := exec.Command("/usr/bin/sbatch", "--parsable", "-o", "/dev/null", "--wrap", "sleep 600").Output()
	if err != nil {
		b.Fatal(err)
	}
	id := strings.TrimSpace(string(out))
	b.Cleanup(func() { exec.Command("/usr/bin/scancel", id).Run() })
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		st, _ := exec.Command("/usr/bin/squeue", "-h", "-j", id, "-o", "%T").Output()
		if strings.TrimSpace(string(st)) == "RUNNING" {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("Slurm job %s never started", id)
		}
	}
	var first time.Duration
	n := 0
	for b.Loop() {
		d, err := timeToFirstLine("/usr/bin/srun", []string{"SLURM_JOB_ID=" + id}, "--overlap", "echo", "x")
		if err != nil {
			b.Fatal(err)
		}
		first += d
		n++
	}
	b.ReportMetric(float64(first.Microseconds())/1000/float64(n), "ms/first-task-line")
}
