package ssh_test

import (
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
	if _, err := os.Stat("/sys/fs/cgroup/devices/devices.deny"); err != nil {
		t.Fatalf("needs the cgroup v1 devices hierarchy (CI mounts it): %v", err)
	}
	devDir, err := os.MkdirTemp("/dev", "hora-gpu-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(devDir) })
	if err := os.Chmod(devDir, 0o755); err != nil { // the step runs as nobody
		t.Fatal(err)
	}
	for minor := 0; minor < 2; minor++ {
		if err := unix.Mknod(filepath.Join(devDir, "nvidia"+strconv.Itoa(minor)), unix.S_IFCHR|0o666, int(unix.Mkdev(195, uint32(minor)))); err != nil {
			t.Fatal(err)
		}
	}
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
