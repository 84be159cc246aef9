package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"hora/nodes/ssh/sshtest"
)

// A step's own --mem on SSH nodes without systemd (issue 11): the tasks
// horad runs for the step share one cgroup v1 memory group per node with
// that limit (no swap); a task that touches more is killed by the kernel,
// srun prints slurmstepd's oom_kill line and "Out Of Memory" for the
// task (its shell reports the kill of its pipeline as the task's), the step ends OUT_OF_MEMORY, and
// the group is removed at the step's end. A step within
// its limit completes.
func TestSrunStepMemoryOnSSHNodesEndToEnd(t *testing.T) {
	requireRoot(t)
	requireMemoryV1(t)
	cl := sshtest.StartCluster(t, 3)
	c := newClusterWith(t, sshConfig(cl, "", ""))
	dir := c.nobodyDir()

	r := c.run(65534, dir, "srun", "--mem=30M", "sh", "-c",
		`sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup; head -c 300M /dev/zero | tail > /dev/null`)
	group := strings.TrimSpace(r.stdout)
	if !regexp.MustCompile(`^/hora-node-[0-9]+/[0-9]+\.0\.r0\.tasks$`).MatchString(group) {
		t.Errorf("the task's memory group %q is not the step's (stdout %q)", group, r.stdout)
	}
	srunOOM(t, c, dir, r)
	if group != "" {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/memory", group)); !os.IsNotExist(err) {
			t.Errorf("memory group %s still there after the step (%v)", group, err)
		}
	}
	r = c.run(65534, dir, "srun", "--mem=100M", "sh", "-c", "head -c 10M /dev/zero | tail > /dev/null; echo fine")
	if r.code != 0 || r.stdout != "fine\n" {
		t.Errorf("srun within its --mem: %+v", r)
	}
}

// srunOOM checks that srun's step 0 on n1, run from dir, ended OUT_OF_MEMORY
// as Slurm shows it: slurmstepd's oom_kill line and "Out Of Memory" for the
// task on srun's stderr, exit 137, and sacct's OUT_OF_MEMORY for the step.
func srunOOM(t *testing.T, c *cluster, dir string, r result) {
	t.Helper()
	if !regexp.MustCompile(`slurmstepd: error: Detected (1 oom_kill event|2 oom_kill events) in StepId=[0-9]+\.0\. Some of the step tasks have been OOM Killed\.\n`).MatchString(r.stderr) ||
		!strings.Contains(r.stderr, "srun: error: n1: task 0: Out Of Memory\n") || r.code != 137 {
		t.Errorf("srun past its --mem: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = c.run(65534, dir, "sacct", "-n", "-P", "-o", "JobID,State")
	if !regexp.MustCompile(`(?m)^[0-9]+\.0\|OUT_OF_MEMORY$`).MatchString(r.stdout) {
		t.Errorf("sacct: the step is not OUT_OF_MEMORY:\n%s", r.stdout)
	}
}

// Commands other than srun inside a batch job on an SSH node (issue 11):
// scontrol show job, squeue, sbatch and scancel reach horad through the
// node's callback socket, authenticated by the job's step key, and act as
// the job's owner: the job sees itself, submits and cancels a job of its
// own, and is refused another user's job with Slurm's text. A forged key
// gets nothing.
func TestCommandsInsideBatchJobOnSSHNodeEndToEnd(t *testing.T) {
	requireRoot(t)
	cl := sshtest.StartCluster(t, 3)
	c := newClusterWith(t, sshConfig(cl, "", ""))
	dir := c.nobodyDir()
	// Another user's job, held so that it stays.
	r := c.run(1, c.dir, "sbatch", "--hold", "-o", "/dev/null", "--wrap", "true")
	m := submitted.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("sbatch as uid 1: %+v", r)
	}
	other := m[1]
	bin := func(name string) string { return filepath.Join(c.bin, name) }
	script := "#!/bin/sh\n" +
		bin("scontrol") + " show job $SLURM_JOB_ID | head -1\n" +
		bin("squeue") + " -h -j $SLURM_JOB_ID -o 'sq %i %T %u'\n" +
		"child=$(" + bin("sbatch") + " --parsable --hold -o /dev/null --wrap true); echo \"child rc=$? $child\"\n" +
		bin("scancel") + " $child; echo \"scancel child rc=$?\"\n" +
		bin("scancel") + " " + other + " 2>&1; echo \"scancel other rc=$?\"\n" +
		"HORA_STEP_KEY=\"$SLURM_JOB_ID.0000\" " + bin("squeue") + " -h 2>&1 | sed 's/^/forged: /'\n"
	r = c.run(65534, dir, "sbatch", "-o", filepath.Join(dir, "out"), "--wrap", script)
	m = submitted.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("sbatch: %+v", r)
	}
	id := m[1]
	if st := c.waitState(id, "COMPLETED", "FAILED"); st != "COMPLETED" {
		t.Errorf("job ended %s", st)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "out"))
	out := string(b)
	child := regexp.MustCompile(`child rc=0 ([0-9]+)\n`).FindStringSubmatch(out)
	for _, want := range []string{"JobId=" + id + " JobName=", "sq " + id + " RUNNING nobody\n", "scancel child rc=0\n",
		"scancel: error: Kill job error on job id " + other + ": Access/permission denied\nscancel other rc=1\n",
		"forged: ", "Access/permission denied"} {
		if !strings.Contains(out, want) {
			t.Errorf("job output lacks %q:\n%s", want, out)
		}
	}
	if child == nil {
		t.Fatalf("sbatch inside the job:\n%s", out)
	}
	if st := c.state(child[1]); st != "CANCELLED" {
		t.Errorf("the job's own child %s is %s, want CANCELLED", child[1], st)
	}
	if st := c.state(other); st != "PENDING" {
		t.Errorf("the other user's job %s is %s, want PENDING (untouched)", other, st)
	}
	if r := c.run(0, dir, "squeue", "-h", "-t", "all", "-j", child[1], "-o", "%u"); strings.TrimSpace(r.stdout) != "nobody" {
		t.Errorf("the child job's owner %q, want nobody", r.stdout)
	}
}
