package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// [limits] with a real horad (issue 16 item 3): a user over
// max_submit_jobs_per_user is refused with Slurm's accounting-policy text
// and exit 1, an operator is not; at max_job_count sbatch says Slurm's
// "temporarily unable" line, sleeps and retries, and gets in once a job
// has left memory (min_job_age_s = 1). Nothing refused is recorded.
func TestSubmitLimitsEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, "min_job_age_s = 1\n\n[limits]\nmax_job_count = 3\nmax_submit_jobs_per_user = 2\n"+localBatch)
	work := c.workDir()
	nobodySubmit := func() result {
		return c.run(65534, work, "sbatch", "--hold", "-o", "/dev/null", "--wrap", "true")
	}
	for range 2 {
		if r := nobodySubmit(); r.code != 0 || !submitted.MatchString(r.stdout) {
			t.Fatalf("nobody's sbatch under the limit: %+v", r)
		}
	}
	r := nobodySubmit()
	const policy = "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)\n"
	if r.code != 1 || r.stderr != policy || r.stdout != "" {
		t.Fatalf("nobody's third sbatch: exit %d stdout %q stderr %q, want exit 1 and %q", r.code, r.stdout, r.stderr, policy)
	}
	if q := c.run(0, work, "squeue", "-h", "-u", "nobody", "-o", "%i"); strings.Count(q.stdout, "\n") != 2 {
		t.Fatalf("nobody has %q in the queue, want 2 jobs", q.stdout)
	}

	// root is an operator: exempt from the per-user limit, not from
	// max_job_count (3 jobs in memory now).
	third := c.submit(work, "--hold", "-o", "/dev/null", "--wrap", "true")
	cmd := exec.Command(filepath.Join(c.bin, "sbatch"), "--hold", "-o", "/dev/null", "--wrap", "true")
	cmd.Env = append(os.Environ(), "HORA_SOCKET="+c.sock, "TZ=UTC")
	cmd.Dir = work
	var out bytes.Buffer
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = &out, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	const retrying = "sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying\n"
	for deadline := time.Now().Add(90 * time.Second); stderr.String() != retrying; {
		if time.Now().After(deadline) {
			t.Fatalf("sbatch at max_job_count: stderr %q, want %q", stderr.String(), retrying)
		}
		select {
		case err := <-done:
			t.Fatalf("sbatch at max_job_count ended (%v) before room was made: stdout %q stderr %q", err, out.String(), stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if q := c.run(0, work, "squeue", "-h", "-o", "%i"); strings.Count(q.stdout, "\n") != 3 {
		t.Fatalf("queue %q, want the 3 jobs only", q.stdout)
	}
	if r := c.run(0, work, "scancel", third); r.code != 0 {
		t.Fatalf("scancel: %+v", r)
	}
	select {
	case err := <-done:
		if err != nil || !submitted.MatchString(out.String()) || stderr.String() != retrying {
			t.Fatalf("retrying sbatch: %v stdout %q stderr %q", err, out.String(), stderr.String())
		}
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("retrying sbatch still waiting 90 s after a job left memory: stderr %q", stderr.String())
	}
}

// MinJobAge (min_job_age_s): a finished job leaves horad's memory once it
// is that old — squeue -t all and scontrol show job no longer know it, as
// Slurm's do after MinJobAge — and stays in the store for sacct.
func TestMinJobAgeForgetsFinishedJobs(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, "min_job_age_s = 2\n"+localBatch)
	work := c.workDir()
	id := c.submit(work, "-o", "/dev/null", "--wrap", "true")
	// Seen finished in memory first (it may already be gone on a slow
	// machine: then squeue answers nothing, which the loop below accepts).
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r := c.run(0, work, "sacct", "-n", "-X", "-P", "-j", id, "-o", "State")
		if r.stdout == "COMPLETED\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s never completed: sacct %+v", id, r)
		}
	}
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		r := c.run(0, work, "squeue", "-h", "-t", "all", "-j", id, "-o", "%i %T")
		if r.stdout == "" {
			break
		}
		if r.stdout != id+" COMPLETED\n" {
			t.Fatalf("squeue of the finished job before min_job_age_s: %+v", r)
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still in memory 90 s after it ended with min_job_age_s = 2", id)
		}
	}
	if r := c.run(0, work, "scontrol", "show", "job", id); r.code != 1 || !strings.Contains(r.stderr, "Invalid job id specified") {
		t.Errorf("scontrol show job of a forgotten job: %+v, want exit 1 and \"Invalid job id specified\"", r)
	}
	if r := c.run(0, work, "sacct", "-n", "-X", "-P", "-j", id, "-o", "JobID,State,ExitCode"); r.stdout != id+"|COMPLETED|0:0\n" {
		t.Errorf("sacct of the forgotten job: %+v, want it from the store", r)
	}
}
