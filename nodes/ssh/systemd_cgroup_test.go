package ssh_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"hora/nodes"
	"hora/nodes/ssh/sshtest"
)

// These tests need a systemd node whose scopes have the memory and devices
// controllers: on this hybrid machine (and CI) sshtest boots the host's
// systemd in hybrid mode with the v1 hierarchies; on a pure cgroup v2
// machine the controllers are v2's.

// TestSystemdScopeOOM: a step over its memory on a systemd node is killed
// by the kernel in its scope (MemoryMax=), and the wrapper, in the scope,
// reads the scope's oom_kill count at the end: the step ends with OOM set
// and slurmstepd's line in its error file.
func TestSystemdScopeOOM(t *testing.T) {
	sshtest.RequireScopeMemory(t)
	v := start(t, 1, sshtest.WithSystemd(1))
	key := nodes.StepKey{Job: 82, Step: -1}
	spec := v.spec(key, "n1", "#!/bin/sh\ngrep -c 'memory:/.*/hora-job-82-batch-r0.scope$' /proc/self/cgroup\nhead -c 400M /dev/zero | tail > /dev/null\necho survived\n")
	spec.MemMB = 40
	spec.Stderr = filepath.Join(v.out, "oom.err")
	v.launch(t, spec)
	st := v.exits.wait(t, key, hang)
	out, _ := os.ReadFile(spec.Stdout)
	errb, _ := os.ReadFile(spec.Stderr)
	if st.State != nodes.StepExited || !st.OOM || !strings.HasPrefix(string(out), "1\n") {
		t.Fatalf("step %+v, stdout %q, stderr %q", st, out, errb)
	}
	if !regexp.MustCompile(`slurmstepd: error: Detected (1 oom_kill event|2 oom_kill events) in StepId=82\.batch\. Some of the step tasks have been OOM Killed\.\n$`).Match(errb) {
		t.Errorf("error file %q lacks slurmstepd's oom_kill line", errb)
	}
	// Within its memory, a step is not OUT_OF_MEMORY.
	key = nodes.StepKey{Job: 83, Step: -1}
	spec = v.spec(key, "n1", "#!/bin/sh\nhead -c 10M /dev/zero | tail > /dev/null\necho fine\n")
	spec.MemMB = 100
	v.launch(t, spec)
	if st := v.exits.wait(t, key, hang); st.State != nodes.StepExited || st.OOM || st.ExitCode != 0 {
		t.Errorf("step within its memory: %+v", st)
	}
}

// TestSystemdScopeGPUDevices: on a systemd node a step given GPU 1 of 2
// runs in a scope whose device list allows every device but GPU 0
// (DevicePolicy=auto, DeviceAllow= for every char group but NVIDIA's
// major 195, block devices, and GPU 1's node): opening GPU 0 fails with
// EPERM, GPU 1 with ENXIO (let through; no driver here), and ordinary
// devices still work. Fake device nodes, as TestGPUDevicesWithoutSystemd.
func TestSystemdScopeGPUDevices(t *testing.T) {
	devDir := makeFakeGPUs(t)
	v := start(t, 1, sshtest.WithSystemd(1))
	key := nodes.StepKey{Job: 84, Step: -1}
	spec := v.spec(key, "n1", "#!/bin/sh\nfor d in "+devDir+"/nvidia0 "+devDir+"/nvidia1; do (exec 3<\"$d\") 2>&1 | sed 's/.*: //'; done\nhead -c 3 /dev/zero | od -An -c | tr -d ' '\n")
	spec.GPUs, spec.NodeGPUs = []int{1}, 2
	v.launch(t, spec)
	if st := v.exits.wait(t, key, hang); st.State != nodes.StepExited || st.ExitCode != 0 {
		t.Fatalf("step %+v", st)
	}
	out, _ := os.ReadFile(spec.Stdout)
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) != 3 || !strings.Contains(got[0], "Operation not permitted") || !strings.Contains(got[1], "No such device or address") || got[2] != `\0\0\0` {
		t.Fatalf("opening the withheld GPU, the given one, /dev/zero: %q, want EPERM, ENXIO, three NULs", got)
	}
	// The tasks of a remote step are isolated the same way in their own
	// scopes.
	tk := nodes.StepKey{Job: 85, Step: 0}
	var tout, terr bytes.Buffer
	ts := nodes.TaskSpec{Node: "n1", Key: tk, UID: v.uid, GID: v.gid, WorkDir: v.out,
		Env:  []string{"PATH=/usr/bin:/bin"},
		Argv: []string{"/bin/sh", "-c", "for d in " + devDir + "/nvidia0 " + devDir + "/nvidia1; do (exec 3<\"$d\") 2>&1 | sed 's/.*: //'; done"},
		GPUs: []int{0}, NodeGPUs: 2}
	if ex, err := v.e.RunTask(t.Context(), ts, &tout, &terr); err != nil || ex != (nodes.TaskExit{}) {
		t.Fatalf("RunTask: %+v %v: %s %s", ex, err, tout.String(), terr.String())
	}
	got = strings.Split(strings.TrimSpace(tout.String()), "\n")
	if len(got) != 2 || !strings.Contains(got[0], "No such device or address") || !strings.Contains(got[1], "Operation not permitted") {
		t.Fatalf("a task given GPU 0: opening GPU 0 and GPU 1: %q, want ENXIO then EPERM", got)
	}
}

// TestSystemdTaskOOM: the task of a remote step with its own memory runs
// in a scope with that limit; the kernel's kill there is counted (the
// task's shell reads the scope's count before the scope goes) and the
// step's end (EndStepMemory) reports it, once. A task within the limit
// adds nothing.
func TestSystemdTaskOOM(t *testing.T) {
	sshtest.RequireScopeMemory(t)
	v := start(t, 1, sshtest.WithSystemd(1))
	key := nodes.StepKey{Job: 86, Step: 0}
	spec := nodes.TaskSpec{Node: "n1", Key: key, UID: v.uid, GID: v.gid, WorkDir: v.out,
		Env: []string{"PATH=/usr/bin:/bin"}, StepMemMB: 30,
		Argv: []string{"/bin/sh", "-c", "head -c 300M /dev/zero | tail > /dev/null"}}
	var out, errb bytes.Buffer
	ex, err := v.e.RunTask(t.Context(), spec, &out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Code != 137 && ex.Signal != 9 {
		t.Errorf("task past its memory: %+v, stdout %q", ex, out.String())
	}
	spec.Task = 1
	spec.Argv = []string{"/bin/sh", "-c", "head -c 5M /dev/zero | tail > /dev/null"}
	if ex, err := v.e.RunTask(t.Context(), spec, &out, &errb); err != nil || ex != (nodes.TaskExit{}) {
		t.Errorf("task within its memory: %+v %v", ex, err)
	}
	if n := v.e.EndStepMemory("n1", key); n < 1 || n > 2 {
		t.Errorf("EndStepMemory = %d, want the task's 1 (or 2) oom_kill events", n)
	}
	if n := v.e.EndStepMemory("n1", key); n != 0 {
		t.Errorf("EndStepMemory again = %d, want 0 (counted once)", n)
	}
	// A step without a --mem of its own: the task's scope is bounded by
	// the job's memory on the node, and a kill there counts for the step
	// too (Slurm's step is OUT_OF_MEMORY then).
	key2 := nodes.StepKey{Job: 86, Step: 1}
	spec = nodes.TaskSpec{Node: "n1", Key: key2, UID: v.uid, GID: v.gid, WorkDir: v.out,
		Env: []string{"PATH=/usr/bin:/bin"}, CPUs: []int{0}, MemMB: 30,
		Argv: []string{"/bin/sh", "-c", "head -c 300M /dev/zero | tail > /dev/null"}}
	if ex, err := v.e.RunTask(t.Context(), spec, &out, &errb); err != nil || (ex.Code != 137 && ex.Signal != 9) {
		t.Errorf("task past the job's memory: %+v %v", ex, err)
	}
	if n := v.e.EndStepMemory("n1", key2); n < 1 || n > 2 {
		t.Errorf("EndStepMemory of a step bounded by the job's memory = %d, want 1 (or 2)", n)
	}
	// Nothing is left: the scopes (their sleepers) and the count files.
	for _, u := range []string{"hora-job-86-0-r0-t0", "hora-job-86-0-r0-t1", "hora-job-86-1-r0-t0"} {
		waitScope(t, v.c.Hosts[0], u, "")
	}
	left, _ := filepath.Glob(filepath.Join(v.state, "n1", "tasks", "*"))
	if len(left) != 0 {
		t.Errorf("files left in the node's tasks directory: %q", left)
	}
}

// TestCPUsPinnedWhereSystemdDoesNot: on a node without systemd, and on a
// systemd node whose systemd runs in hybrid mode (AllowedCPUs= is v2 only
// in systemd 252), a step given CPU 1 and a task given CPU 0 run pinned
// there through a cgroup v1 cpuset group; Forget and the step's end
// (EndStepMemory) remove the groups.
func TestCPUsPinnedWhereSystemdDoesNot(t *testing.T) {
	if _, err := os.Stat("/sys/fs/cgroup/cpuset/cpuset.cpus"); err != nil {
		t.Fatalf("needs the cgroup v1 cpuset hierarchy (CI mounts it): %v", err)
	}
	if b, _ := os.ReadFile("/sys/fs/cgroup/cpuset/cpuset.cpus"); strings.TrimSpace(string(b)) == "0" {
		t.Fatalf("needs two CPUs; this machine has %q", b)
	}
	v := start(t, 2, sshtest.WithSystemd(1))
	for i, node := range []string{"n1", "n2"} {
		key := nodes.StepKey{Job: int64(87 + i), Step: -1}
		spec := v.spec(key, node, "#!/bin/sh\nsed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status\n")
		spec.CPUs = []int{1}
		v.launch(t, spec)
		if st := v.exits.wait(t, key, hang); st.State != nodes.StepExited || st.ExitCode != 0 {
			t.Fatalf("step on %s: %+v", node, st)
		}
		if out := readFile(t, spec.Stdout); out != "1\n" {
			t.Errorf("a step given CPU 1 on %s runs on CPUs %q", node, out)
		}
		cg, err := os.ReadFile(filepath.Join(v.state, node, key.Name(), "cpucg"))
		if err != nil {
			t.Fatalf("no cpuset group recorded on %s: %v", node, err)
		}
		if err := v.e.Forget(t.Context(), node, key); err != nil {
			t.Fatal(err)
		}
		// The group as this machine sees it: n1's hierarchy is rooted at
		// its host's directory.
		if node == "n1" {
			cg = []byte(filepath.Join("/sys/fs/cgroup/cpuset", "hora-sshtest-"+v.c.Hosts[0].NS, strings.TrimPrefix(strings.TrimSpace(string(cg)), "/sys/fs/cgroup/cpuset")))
		}
		if _, err := os.Stat(strings.TrimSpace(string(cg))); !os.IsNotExist(err) {
			t.Errorf("cpuset group %s still there after Forget (%v)", cg, err)
		}

		tk := nodes.StepKey{Job: int64(87 + i), Step: 0}
		var out, errb bytes.Buffer
		ts := nodes.TaskSpec{Node: node, Key: tk, UID: v.uid, GID: v.gid, WorkDir: v.out, CPUs: []int{0},
			Env:  []string{"PATH=/usr/bin:/bin"},
			Argv: []string{"/bin/sh", "-c", "sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status; sed -n 's/^[0-9]*:cpuset://p' /proc/self/cgroup"}}
		if ex, err := v.e.RunTask(t.Context(), ts, &out, &errb); err != nil || ex != (nodes.TaskExit{}) {
			t.Fatalf("RunTask on %s: %+v %v: %s", node, ex, err, errb.String())
		}
		got := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(got) != 2 || got[0] != "0" || !strings.HasSuffix(got[1], "/"+tk.Name()+".tasks") {
			t.Fatalf("a task given CPU 0 on %s: CPUs and cpuset group %q", node, got)
		}
		v.e.EndStepMemory(node, tk)
		group := filepath.Join("/sys/fs/cgroup/cpuset", got[1])
		if node == "n1" {
			group = filepath.Join("/sys/fs/cgroup/cpuset", "hora-sshtest-"+v.c.Hosts[0].NS, got[1])
		}
		if _, err := os.Stat(group); !os.IsNotExist(err) {
			t.Errorf("cpuset group %s still there after the step's end (%v)", group, err)
		}
	}
}
