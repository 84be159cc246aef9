package ssh_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"hora/nodes"
)

// TestGPUDevicesWithoutSystemd: on an SSH node without systemd that has the
// cgroup v1 devices hierarchy, a step given GPU 1 of the node's 2 runs in
// a devices group that denies GPU 0 (NVIDIA's major 195, minor 0), as on a
// local node: opening GPU 0's node fails with EPERM (the cgroup refused),
// GPU 1's with ENXIO (let through; there is no driver here). The group is
// gone after Forget. Device nodes are made in devtmpfs (a temporary
// directory may be mounted nodev); it proves the cgroup entries, not CUDA.
func TestGPUDevicesWithoutSystemd(t *testing.T) {
	devDir := fakeGPUs(t)
	v := start(t, 1)
	key := nodes.StepKey{Job: 95, Step: -1}
	spec := v.spec(key, "n1", "#!/bin/sh\nfor d in "+devDir+"/nvidia0 "+devDir+"/nvidia1; do (exec 3<\"$d\") 2>&1 | sed 's/.*: //'; done\n")
	spec.GPUs, spec.NodeGPUs = []int{1}, 2
	v.launch(t, spec)
	if st := v.exits.wait(t, key, 60*time.Second); st.State != nodes.StepExited || st.ExitCode != 0 {
		t.Fatalf("step %+v", st)
	}
	out, _ := os.ReadFile(spec.Stdout)
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) != 2 || !strings.Contains(got[0], "Operation not permitted") || !strings.Contains(got[1], "No such device or address") {
		t.Fatalf("opening the withheld GPU and the given one: %q, want EPERM then ENXIO", got)
	}
	dg, err := os.ReadFile(filepath.Join(v.state, "n1", key.Name(), "devcg"))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.e.Forget(t.Context(), "n1", key); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(strings.TrimSpace(string(dg))); !os.IsNotExist(err) {
		t.Errorf("devices group %s still there after Forget (%v)", dg, err)
	}
}

// fakeGPUs makes the device nodes of two NVIDIA GPUs (195:0, 195:1) in a
// directory of devtmpfs (a temporary directory may be mounted nodev), for
// a node without systemd, which denies them with the v1 devices hierarchy.
func fakeGPUs(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/sys/fs/cgroup/devices/devices.deny"); err != nil {
		t.Fatalf("needs the cgroup v1 devices hierarchy (CI mounts it): %v", err)
	}
	return makeFakeGPUs(t)
}

// makeFakeGPUs is fakeGPUs for a systemd node, whose device policy is the
// v1 devices hierarchy or a v2 BPF program, whichever the machine has.
func makeFakeGPUs(t *testing.T) string {
	t.Helper()
	devDir, err := os.MkdirTemp("/dev", "hora-gpu-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(devDir) })
	if err := os.Chmod(devDir, 0o755); err != nil { // the steps run as nobody
		t.Fatal(err)
	}
	for minor := 0; minor < 2; minor++ {
		if err := unix.Mknod(filepath.Join(devDir, "nvidia"+strconv.Itoa(minor)), unix.S_IFCHR|0o666, int(unix.Mkdev(195, uint32(minor)))); err != nil {
			t.Fatal(err)
		}
	}
	return devDir
}

// TestTaskGPUDevicesWithoutSystemd: the tasks of a remote srun step of a
// job given GPU 0 of 2 run in the step's devices group (they are started
// outside the batch step's): GPU 1 is refused, GPU 0 let through; the
// step's end (EndStepMemory) removes the group.
func TestTaskGPUDevicesWithoutSystemd(t *testing.T) {
	devDir := fakeGPUs(t)
	v := start(t, 1)
	key := nodes.StepKey{Job: 96, Step: 0}
	var out bytes.Buffer
	spec := nodes.TaskSpec{Node: "n1", Key: key, UID: v.uid, GID: v.gid, WorkDir: v.out,
		Env:  []string{"PATH=/usr/bin:/bin"},
		Argv: []string{"/bin/sh", "-c", "for d in " + devDir + "/nvidia0 " + devDir + "/nvidia1; do (exec 3<\"$d\") 2>&1 | sed 's/.*: //'; done; sed -n 's/^[0-9]*:devices://p' /proc/self/cgroup"},
		GPUs: []int{0}, NodeGPUs: 2}
	var errb bytes.Buffer
	if ex, err := v.e.RunTask(t.Context(), spec, &out, &errb); err != nil || ex != (nodes.TaskExit{}) {
		t.Fatalf("RunTask: %+v %v: %s %s", ex, err, out.String(), errb.String())
	}
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(got) != 3 || !strings.Contains(got[0], "No such device or address") || !strings.Contains(got[1], "Operation not permitted") ||
		!strings.HasSuffix(got[2], "/"+key.Name()+".tasks") {
		t.Fatalf("the given GPU, the withheld one, the devices group: %q", got)
	}
	group := filepath.Join("/sys/fs/cgroup/devices", got[2])
	if _, err := os.Stat(group); err != nil {
		t.Fatalf("the step's devices group: %v", err)
	}
	v.e.EndStepMemory("n1", key)
	if _, err := os.Stat(group); !os.IsNotExist(err) {
		t.Errorf("devices group %s still there after the step's end (%v)", group, err)
	}
}
