package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"hora/nodes/ssh/sshtest"
)

// OOM on SSH nodes under systemd (issue 11 item 4), with a real systemd
// host (sshtest WithSystemd: hybrid mode on a hybrid machine, its memory
// controller the machine's v1 hierarchy): a batch job over its --mem is
// killed in its scope (MemoryMax=) and ends OUT_OF_MEMORY (squeue OOM,
// sacct 0:125) with slurmstepd's line in its error file; a remote srun
// step over its own --mem likewise ends OUT_OF_MEMORY, srun printing the
// line and "Out Of Memory" for the task.
func TestSSHSystemdNodeOOMEndToEnd(t *testing.T) {
	requireRoot(t)
	cl := sshtest.StartCluster(t, 3, sshtest.WithSystemd(1))
	c := newClusterWith(t, sshConfig(cl, "", ""))
	dir := filepath.Join(c.dir, "nobody")
	os.MkdirAll(dir, 0o755)
	os.Chown(dir, 65534, 65534)

	r := c.run(65534, dir, "sbatch", "-w", "n1", "--mem=40M", "-o", filepath.Join(dir, "oom.out"), "-e", filepath.Join(dir, "oom.err"),
		"--wrap", "grep -c 'memory:/.*/hora-job-.*-batch-r0.scope$' /proc/self/cgroup; head -c 400M /dev/zero | tail > /dev/null; echo survived")
	m := submitted.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("sbatch: %+v", r)
	}
	id := m[1]
	if st := c.waitState(id, "OUT_OF_MEMORY", "COMPLETED", "FAILED"); st != "OUT_OF_MEMORY" {
		out, _ := os.ReadFile(filepath.Join(dir, "oom.out"))
		errb, _ := os.ReadFile(filepath.Join(dir, "oom.err"))
		t.Fatalf("job ended %s; stdout %q stderr %q", st, out, errb)
	}
	if got := strings.TrimSpace(c.run(0, dir, "squeue", "-h", "-t", "all", "-j", id, "-o", "%t").stdout); got != "OOM" {
		t.Errorf("squeue %%t %q, want OOM", got)
	}
	if got := strings.TrimSpace(c.run(0, dir, "sacct", "-j", id, "-X", "-P", "-n", "-o", "State,ExitCode").stdout); got != "OUT_OF_MEMORY|0:125" {
		t.Errorf("sacct %q", got)
	}
	errb, _ := os.ReadFile(filepath.Join(dir, "oom.err"))
	want := regexp.MustCompile(`slurmstepd: error: Detected (1 oom_kill event|2 oom_kill events) in StepId=` + id + `\.batch\. Some of the step tasks have been OOM Killed\.\n$`)
	if !want.Match(errb) {
		t.Errorf("error file %q lacks slurmstepd's oom_kill line", errb)
	}
	if out, _ := os.ReadFile(filepath.Join(dir, "oom.out")); !strings.HasPrefix(string(out), "1\n") {
		t.Errorf("the job was not in its scope's memory group: %q", out)
	}

	// A remote srun step with its own --mem: one task per scope, the
	// scope's count read before the scope goes.
	r = c.run(65534, dir, "srun", "-w", "n1", "--mem=30M", "sh", "-c",
		`grep -c 'memory:/.*/hora-job-.*-0-r0-t0.scope$' /proc/self/cgroup; head -c 300M /dev/zero | tail > /dev/null`)
	if strings.TrimSpace(r.stdout) != "1" {
		t.Errorf("the task was not in its scope's memory group: stdout %q", r.stdout)
	}
	if !regexp.MustCompile(`slurmstepd: error: Detected (1 oom_kill event|2 oom_kill events) in StepId=[0-9]+\.0\. Some of the step tasks have been OOM Killed\.\n`).MatchString(r.stderr) ||
		!strings.Contains(r.stderr, "srun: error: n1: task 0: Out Of Memory\n") || r.code != 137 {
		t.Errorf("srun past its --mem: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = c.run(65534, dir, "sacct", "-n", "-P", "-o", "JobID,State")
	if !regexp.MustCompile(`(?m)^[0-9]+\.0\|OUT_OF_MEMORY$`).MatchString(r.stdout) {
		t.Errorf("sacct: the step is not OUT_OF_MEMORY:\n%s", r.stdout)
	}
	r = c.run(65534, dir, "srun", "-w", "n1", "--mem=100M", "sh", "-c", "head -c 10M /dev/zero | tail > /dev/null; echo fine")
	if r.code != 0 || r.stdout != "fine\n" {
		t.Errorf("srun within its --mem: %+v", r)
	}
	// Nothing is left of the tasks on the node: no count file, no
	// sleeper's scope.
	left, _ := filepath.Glob(filepath.Join(cl.Dir, "node-state", "n1", "tasks", "*"))
	if len(left) != 0 {
		t.Errorf("files left in n1's tasks directory: %q", left)
	}
	if out, err := cl.Hosts[0].Systemctl("list-units", "--no-legend", "hora-job-*-0-r0-t0.scope"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("task scopes still loaded: %q %v", out, err)
	}
}
