package local

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"hora/nodes"
)

func TestCgroupHelpers(t *testing.T) {
	if got, err := parseCPUList("0-2,5,7-8"); err != nil || !reflect.DeepEqual(got, []int{0, 1, 2, 5, 7, 8}) {
		t.Fatalf("parseCPUList: %v %v", got, err)
	}
	if _, err := parseCPUList("0-x"); err == nil {
		t.Fatal("bad list accepted")
	}
	if got := oomMessage(1, nodes.StepKey{Job: 42, Step: -1}); got != "slurmstepd: error: Detected 1 oom_kill event in StepId=42.batch. Some of the step tasks have been OOM Killed.\n" {
		t.Fatalf("oomMessage %q", got)
	}
	if got := oomMessage(3, nodes.StepKey{Job: 7, Step: 0}); got != "slurmstepd: error: Detected 3 oom_kill events in StepId=7.0. Some of the step tasks have been OOM Killed.\n" {
		t.Fatalf("oomMessage %q", got)
	}
}

// groupsOf lists the groups of this Executor that exist, per controller
// ("cpuset:hora-1234abcd/local1"), deepest last.
func groupsOf(e *Executor) []string {
	var out []string
	for _, c := range controllers {
		root := filepath.Join(cgroupRoot, c)
		_ = filepath.WalkDir(filepath.Join(root, e.cgroupBase()), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				rel, _ := filepath.Rel(root, p)
				out = append(out, c+":"+rel)
			}
			return nil
		})
	}
	return out
}

func hasGroup(e *Executor, c, rel string) bool {
	return slices.Contains(groupsOf(e), c+":"+filepath.Join(e.cgroupBase(), rel))
}

// No group of an Executor outlives its steps: a step's groups go at its
// Forget, the node's group with its last step, and Close removes the
// groups of ended steps not yet forgotten and every parent left empty, on
// every controller. A step running across Close keeps its groups (it runs
// on), and the next Executor removes them at its Forget.
func TestCgroupsRemovedAtForgetAndClose(t *testing.T) {
	if !cgroupsUsable() {
		t.Fatal("needs root and the cgroup v1 cpuset and memory hierarchies, as CI has")
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	e, err := New(Config{StateDir: state, ShepherdArgv: shepherdArgv, ShepherdEnv: []string{shepherdEnv + "=1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	limited := func(node, work, script string) nodes.LaunchSpec {
		s := spec(work, script)
		s.Node, s.CPUs, s.MemMB = node, []int{0}, 64
		return s
	}
	quick := limited("local1", dir, "#!/bin/sh\ntrue\n")
	unforgotten := limited("local2", dir, "#!/bin/sh\ntrue\n")
	gated := t.TempDir()
	longer := limited("local1", gated, waitScript)
	survivor := t.TempDir()
	across := limited("local3", survivor, waitScript)
	t.Cleanup(func() {
		// The waiting steps end whatever happens to the test (a failure
		// half-way would leave them running).
		for _, d := range []string{gated, survivor} {
			_ = os.WriteFile(filepath.Join(d, "go"), nil, 0o644)
		}
	})
	for _, s := range []nodes.LaunchSpec{longer, across, quick, unforgotten} {
		launch(t, e, s)
	}
	ended := map[nodes.StepKey]bool{}
	for len(ended) < 2 {
		select {
		case st := <-e.Exits():
			ended[st.Key] = true
		case <-time.After(60 * time.Second):
			t.Fatalf("steps ended: %v, want the two quick ones", ended)
		}
	}
	if !ended[quick.Key] || !ended[unforgotten.Key] {
		t.Fatalf("steps ended: %v", ended)
	}
	if err := e.Forget(t.Context(), quick.Node, quick.Key); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"cpuset", "memory"} {
		if hasGroup(e, c, "local1/"+quick.Key.Name()) || !hasGroup(e, c, "local1/"+longer.Key.Name()) {
			t.Fatalf("after the first Forget: %v", groupsOf(e))
		}
	}
	if err := os.WriteFile(filepath.Join(gated, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitExit(t, e, longer.Key)
	if err := e.Forget(t.Context(), longer.Node, longer.Key); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"cpuset", "memory"} {
		if hasGroup(e, c, "local1") || !hasGroup(e, c, "local2/"+unforgotten.Key.Name()) {
			t.Fatalf("after the node's last Forget: %v", groupsOf(e))
		}
	}

	e.Close()
	want := []string{}
	for _, c := range []string{"cpuset", "memory"} {
		want = append(want, c+":"+e.cgroupBase(), c+":"+filepath.Join(e.cgroupBase(), "local3"),
			c+":"+filepath.Join(e.cgroupBase(), "local3", across.Key.Name()))
	}
	if got := groupsOf(e); !slices.Equal(got, want) {
		t.Fatalf("after Close: %v, want only the running step's %v", got, want)
	}

	e2, err := New(Config{StateDir: state, ShepherdArgv: shepherdArgv, ShepherdEnv: []string{shepherdEnv + "=1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	if _, err := e2.Reattach(t.Context(), []string{"local1", "local2", "local3"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(survivor, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitExit(t, e2, across.Key)
	if err := e2.Forget(t.Context(), across.Node, across.Key); err != nil {
		t.Fatal(err)
	}
	if got := groupsOf(e2); len(got) != 0 {
		t.Fatalf("after the survivor's Forget: %v left", got)
	}
}

// GPU isolation with the devices cgroup, proved on fake device nodes: no
// GPU (and no NVIDIA driver) is needed, since the devices cgroup decides
// by major:minor before any driver is asked. Two character nodes 195:0
// and 195:1 are made; a step given GPU 1 of 2 gets EPERM opening 195:0
// (the cgroup refused) and ENXIO opening 195:1 (allowed through, and no
// driver answers). This proves the cgroup entries, not CUDA behaviour.
func TestGPUDevicesIsolated(t *testing.T) {
	if !cgroupsUsable() {
		t.Fatal("needs root and the cgroup v1 cpuset and memory hierarchies, as CI has")
	}
	if _, err := os.Stat(filepath.Join(cgroupRoot, "devices", "devices.deny")); err != nil {
		t.Fatalf("needs the cgroup v1 devices hierarchy, as CI has: %v", err)
	}
	// devtmpfs, where device nodes always work (a temporary directory may
	// be on a nodev mount).
	devDir, err := os.MkdirTemp("/dev", "hora-gpu-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(devDir) })
	for minor := 0; minor < 2; minor++ {
		p := filepath.Join(devDir, "nvidia"+strconv.Itoa(minor))
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(nvidiaMajor, uint32(minor)))); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	e := newExecutor(t, filepath.Join(dir, "state"))
	s := spec(dir, "#!/bin/sh\nfor d in "+devDir+"/nvidia0 "+devDir+"/nvidia1; do (exec 3<\"$d\") 2>&1 | sed 's/.*: //'; done\n")
	s.GPUs, s.NodeGPUs = []int{1}, 2
	launch(t, e, s)
	if st := waitExit(t, e, s.Key); st.ExitCode != 0 {
		t.Fatalf("step ended %+v", st)
	}
	got := strings.Split(strings.TrimSpace(readFile(t, s.Stdout)), "\n")
	if len(got) != 2 || !strings.Contains(got[0], "Operation not permitted") || !strings.Contains(got[1], "No such device or address") {
		t.Fatalf("opening the withheld GPU and the given one: %q, want EPERM then ENXIO", got)
	}
	if err := e.Forget(t.Context(), s.Node, s.Key); err != nil {
		t.Fatal(err)
	}
	if hasGroup(e, "devices", s.Node) {
		t.Errorf("devices group left after Forget: %v", groupsOf(e))
	}
}
