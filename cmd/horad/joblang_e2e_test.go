package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Job arrays through the real clients: one submit creates every task, the
// throttle holds (pending tasks folded as Slurm folds them, -r expands
// them), tasks see Slurm's SLURM_ARRAY_* and %A_%a file names, and scancel,
// hold and release act on single tasks and task lists.
func TestJobArraysEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, localBatch)
	work := c.workDir()
	gate := filepath.Join(work, "go")
	script := writeScript(t, work, "task.sh", "#!/bin/sh\n"+
		"echo \"$SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_COUNT $SLURM_ARRAY_TASK_MIN $SLURM_ARRAY_TASK_MAX $SLURM_ARRAY_TASK_STEP\"\n"+
		"while [ ! -e "+gate+" ]; do sleep 0.05; done\n")
	id := c.submit(work, "--array=0-5%2", "-o", "out-%A_%a.txt", script)
	task := func(k int) string { return id + "_" + strconv.Itoa(k) }
	c.waitState(task(0), "RUNNING")
	c.waitState(task(1), "RUNNING")
	r := c.run(0, work, "squeue", "-h", "-o", "%i %t %r")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	slices.Sort(lines)
	want := []string{id + "_0 R None", id + "_1 R None", id + "_[2-5%2] PD JobArrayTaskLimit"}
	if !slices.Equal(lines, want) {
		t.Fatalf("squeue folded:\n%s\nwant the lines %q", r.stdout, want)
	}
	if r := c.run(0, work, "squeue", "-h", "-r", "-o", "%i"); strings.Count(r.stdout, "\n") != 6 {
		t.Fatalf("squeue -r shows %q, want the 6 tasks", r.stdout)
	}
	if r := c.run(0, work, "scancel", id+"_[4-5]"); r.code != 0 {
		t.Fatalf("scancel %s_[4-5]: %+v", id, r)
	}
	if r := c.run(0, work, "scontrol", "hold", id+"_3"); r.code != 0 {
		t.Fatalf("scontrol hold: %+v", r)
	}
	c.waitState(task(4), "CANCELLED")
	c.waitState(task(5), "CANCELLED")
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitState(task(2), "COMPLETED")
	if got := strings.TrimSpace(c.run(0, work, "squeue", "-h", "-j", id+"_3", "-o", "%r").stdout); got != "JobHeldAdmin" {
		t.Fatalf("held task's reason %q", got)
	}
	c.run(0, work, "scontrol", "release", id+"_3")
	c.waitState(task(3), "COMPLETED")
	for k := 0; k < 4; k++ {
		b, err := os.ReadFile(filepath.Join(work, "out-"+id+"_"+strconv.Itoa(k)+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.TrimSpace(string(b)), id+" "+strconv.Itoa(k)+" 6 0 5 1"; got != want {
			t.Fatalf("task %d saw %q, want %q", k, got, want)
		}
	}
	sa := c.run(0, work, "sacct", "-n", "-X", "-j", id, "-o", "jobid,state", "-P").stdout
	if !strings.Contains(sa, id+"_3|COMPLETED") || !strings.Contains(sa, id+"_5|CANCELLED") {
		t.Fatalf("sacct rows per task:\n%s", sa)
	}
}

// Dependencies through the real clients, with Slurm's texts for bad input
// (nothing created), DependencyNeverSatisfied and --kill-on-invalid-dep,
// and a pending dependency that survives kill -9 of horad.
func TestDependenciesEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, localBatch)
	work := c.workDir()
	ok := writeScript(t, work, "ok.sh", "#!/bin/sh\nexit 0\n")
	a := c.submit(work, "-H", "-o", "/dev/null", ok)
	b := c.submit(work, "-o", "/dev/null", "--dependency=afterok:"+a, ok)
	never := c.submit(work, "-o", "/dev/null", "--dependency=afternotok:"+a, ok)
	killed := c.submit(work, "-o", "/dev/null", "--kill-on-invalid-dep=yes", "--dependency=afternotok:"+a, ok)
	if got := c.run(0, work, "squeue", "-h", "-j", b, "-o", "%r %E").stdout; got != "Dependency afterok:"+a+"(unfulfilled)\n" {
		t.Fatalf("squeue of the dependent: %q", got)
	}

	before := c.run(0, work, "squeue", "-h", "-t", "all").stdout
	for _, bad := range []struct{ args []string }{
		{[]string{"--array=5-1"}},
		{[]string{"--array=0-1001"}},
		{[]string{"--dependency=afterok:abc"}},
		{[]string{"--dependency=afterok"}},
	} {
		r := c.run(0, work, "sbatch", append(bad.args, ok)...)
		msg := "Job dependency problem"
		if strings.HasPrefix(bad.args[0], "--array") {
			msg = "Invalid job array specification"
		}
		if r.code != 1 || r.stderr != "sbatch: error: Batch job submission failed: "+msg+"\n" {
			t.Fatalf("sbatch %v: exit %d stderr %q", bad.args, r.code, r.stderr)
		}
	}
	if r := c.run(0, work, "scancel", "7_[1-"); r.code != 1 || r.stderr != "scancel: error: Invalid job id 7_[1-\n" {
		t.Fatalf("scancel 7_[1-: %+v", r)
	}
	if after := c.run(0, work, "squeue", "-h", "-t", "all").stdout; after != before {
		t.Fatalf("refused requests changed the queue:\n%s\nthen\n%s", before, after)
	}

	// kill -9 with the dependents pending: they come back waiting.
	c.kill9()
	c.start()
	if got := c.run(0, work, "squeue", "-h", "-j", b, "-o", "%r").stdout; got != "Dependency\n" {
		t.Fatalf("after restart the dependent's reason is %q", got)
	}
	c.run(0, work, "scontrol", "release", a)
	c.waitState(b, "COMPLETED")
	c.waitState(killed, "CANCELLED")
	waitFor(t, "DependencyNeverSatisfied", func() bool {
		return c.run(0, work, "squeue", "-h", "-j", never, "-o", "%r").stdout == "DependencyNeverSatisfied\n"
	})
}

// scontrol update JobId= through the real client: scontrol's own checks
// and horad's refusals with Slurm's texts (nothing changes), then changes
// that show in scontrol show job and survive a restart.
func TestScontrolUpdateJobEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, localBatch)
	work := c.workDir()
	ok := writeScript(t, work, "ok.sh", "#!/bin/sh\nexit 0\n")
	a := c.submit(work, "-H", "-t", "10", "-o", "/dev/null", ok)
	b := c.submit(work, "-o", "/dev/null", "--dependency=afterok:"+a, ok)
	show := func(id string) string { return c.run(0, work, "scontrol", "-o", "show", "job", id).stdout }
	before := show(a)
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"TimeLimit=banana"}, "scontrol: error: Invalid TimeLimit value\n"},
		{[]string{"Bogus=5"}, "Update of this parameter is not supported: Bogus=5\nRequest aborted\n"},
		{[]string{"Partition=nope"}, "Invalid partition name specified for job " + a + "\n"},
		{[]string{"Dependency=afterok:" + b}, "Circular job dependency for job " + a + "\n"},
		{[]string{"Dependency=afterok:" + a}, "Job dependency problem for job " + a + "\n"},
	} {
		r := c.run(0, work, "scontrol", append([]string{"update", "JobId=" + a}, tc.args...)...)
		if r.code != 1 || r.stderr != tc.stderr {
			t.Fatalf("scontrol update %v: exit %d stderr %q, want %q", tc.args, r.code, r.stderr, tc.stderr)
		}
	}
	if r := c.run(65534, work, "scontrol", "update", "JobId="+a, "TimeLimit=5"); r.code != 1 || r.stderr != "Invalid user id for job "+a+"\n" {
		t.Fatalf("nobody updating root's job: %+v", r)
	}
	if after := show(a); after != before {
		t.Fatalf("refused updates changed the job:\n%s\n%s", before, after)
	}
	if r := c.run(0, work, "scontrol", "update", "JobId="+a, "TimeLimit=1:00:00", "JobName=renamed", "Comment=hello", "Nice=3"); r.code != 0 {
		t.Fatalf("update: %+v", r)
	}
	c.kill9()
	c.start()
	cfg := c.run(0, work, "scontrol", "show", "config")
	for _, want := range []string{"Configuration data as of ", "\nClusterName             = hora\n",
		"\nMaxArraySize            = 1001\n", "\nKillWait                = 30 sec\n", "\nMinJobAge               = 300 sec\n",
		"\nSLURM_VERSION           = 22.05.8\n", "\nSchedulerType           = sched/backfill\n", " is UP\n"} {
		if cfg.code != 0 || !strings.Contains(cfg.stdout, want) {
			t.Fatalf("scontrol show config lacks %q:\n%s", want, cfg.stdout)
		}
	}
	got := show(a)
	for _, want := range []string{"JobName=renamed ", "TimeLimit=01:00:00 ", "Comment=hello", "Nice=3 "} {
		if !strings.Contains(got, want) {
			t.Fatalf("after update and restart, no %q in\n%s", want, got)
		}
	}
}

// `sbatch --dependency=singleton --wait` (a common R pattern): the second
// job of a name waits for the first, and sbatch returns when it has run.
func TestSingletonWaitEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, localBatch)
	work := c.workDir()
	gate := filepath.Join(work, "go")
	first := writeScript(t, work, "first.sh", "#!/bin/sh\nwhile [ ! -e "+gate+" ]; do sleep 0.05; done\n")
	second := writeScript(t, work, "second.sh", "#!/bin/sh\ntouch "+filepath.Join(work, "second-ran")+"\n")
	a := c.submit(work, "-J", "same", "-o", "/dev/null", first)
	c.waitState(a, "RUNNING")
	done := make(chan result, 1)
	go func() {
		done <- c.run(0, work, "sbatch", "-J", "same", "--dependency=singleton", "--wait", "-o", "/dev/null", second)
	}()
	waitFor(t, "the singleton waiting", func() bool {
		return c.run(0, work, "squeue", "-h", "-n", "same", "-t", "PD", "-o", "%r").stdout == "Dependency\n"
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Submitted batch job ") {
		t.Fatalf("sbatch --wait: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(work, "second-ran")); err != nil {
		t.Fatal("sbatch --wait returned before the job ran")
	}
}
