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
	if _, err := os.Stat("/sys/fs/cgroup/memory/cgroup.procs"); err != nil {
		t.Fatalf("this test needs the cgroup v1 memory hierarchy at /sys/fs/cgroup/memory (CI mounts it): %v", err)
	}
	cl := sshtest.StartCluster(t, 3)
	c := newClusterWith(t, sshConfig(cl, "", ""))
	dir := filepath.Join(c.dir, "nobody")
	os.MkdirAll(dir, 0o755)
	os.Chown(dir, 65534, 65534)

	r := c.run(65534, dir, "srun", "--mem=30M", "sh", "-c",
		`sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup; head -c 300M /dev/zero | tail > /dev/null`)
	group := strings.TrimSpace(r.stdout)
	if !regexp.MustCompile(`^/hora-node-[0-9]+/[0-9]+\.0\.r0\.tasks$`).MatchString(group) {
		t.Errorf("the task's memory group %q is not the step's (stdout %q)", group, r.stdout)
	}
	if !regexp.MustCompile(`slurmstepd: error: Detected (1 oom_kill event|2 oom_kill events) in StepId=[0-9]+\.0\. Some of the step tasks have been OOM Killed\.\n`).MatchString(r.stderr) ||
		!strings.Contains(r.stderr, "srun: error: n1: task 0: Out Of Memory\n") || r.code != 137 {
		t.Errorf("srun past its --mem: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if group != "" {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/memory", group)); !os.IsNotExist(err) {
			t.Errorf("memory group %s still there after the step (%v)", group, err)
		}
	}
	r = c.run(65534, dir, "sacct", "-n", "-P", "-o", "JobID,State")
	if !regexp.MustCompile(`(?m)^[0-9]+\.0\|OUT_OF_MEMORY$`).MatchString(r.stdout) {
		t.Errorf("sacct: the step is not OUT_OF_MEMORY:\n%s", r.stdout)
	}

	r = c.run(65534, dir, "srun", "--mem=100M", "sh", "-c", "head -c 10M /dev/zero | tail > /dev/null; echo fine")
	if r.code != 0 || r.stdout != "fine\n" {
		t.Errorf("srun within its --mem: %+v", r)
	}
}
