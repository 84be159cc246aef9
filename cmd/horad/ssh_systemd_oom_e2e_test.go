package main

import (
	"path/filepath"
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
	sshtest.RequireScopeMemory(t)
	cl := sshtest.StartCluster(t, 3, sshtest.WithSystemd(1))
	c := newClusterWith(t, sshConfig(cl, "", ""))
	dir := c.nobodyDir()

	_, out := sshOOMJob(t, c, dir, []string{"-w", "n1"},
		"grep -c 'memory:/.*/hora-job-.*-batch-r0.scope$' /proc/self/cgroup; head -c 400M /dev/zero | tail > /dev/null; echo survived")
	if !strings.HasPrefix(out, "1\n") {
		t.Errorf("the job was not in its scope's memory group: %q", out)
	}

	// A remote srun step with its own --mem: one task per scope, the
	// scope's count read before the scope goes.
	r := c.run(65534, dir, "srun", "-w", "n1", "--mem=30M", "sh", "-c",
		`grep -c 'memory:/.*/hora-job-.*-0-r0-t0.scope$' /proc/self/cgroup; head -c 300M /dev/zero | tail > /dev/null`)
	if strings.TrimSpace(r.stdout) != "1" {
		t.Errorf("the task was not in its scope's memory group: stdout %q", r.stdout)
	}
	srunOOM(t, c, dir, r)
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
	if out, err := cl.Hosts[0].Systemctl("list-units", "--all", "--no-legend", "hora-job-*-0-r0-t0.scope"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("task scopes still loaded: %q %v", out, err)
	}
}
