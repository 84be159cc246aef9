package local

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"hora/nodes"
)

// Enforcement of a step's allocation on this machine with cgroup v1 (the
// kind of machine hora runs on here and in CI mounts cpuset and memory
// under /sys/fs/cgroup/<controller>): one cgroup per step, its cpuset the
// step's CPUs, its memory limit the step's memory with no swap beyond it
// (memsw = limit). horad puts the shepherd in the cgroups before it hands
// it the step, so the job and everything it starts inherit them. After the
// job the shepherd reads memory.oom_control's oom_kill count: a step killed
// for memory ends OUT_OF_MEMORY (docs/resources.md).

// cgroupRoot is where the v1 hierarchies are mounted; tests may not
// change it, they check for it.
var cgroupRoot = "/sys/fs/cgroup"

// cgroupsUsable reports whether this process may create cpuset and memory
// cgroups (root, v1 hierarchies mounted).
func cgroupsUsable() bool {
	if os.Geteuid() != 0 {
		return false
	}
	for _, c := range []string{"cpuset", "memory"} {
		if _, err := os.Stat(filepath.Join(cgroupRoot, c, "cgroup.procs")); err != nil {
			return false
		}
	}
	return true
}

// cgroupName is the step's cgroup path below each controller's root:
// hora-<hash of the state directory>/<node>/<job>.<step>, so that several
// horads on one machine (tests) never share a cgroup, and a restarted
// horad finds its steps' cgroups again.
func (e *Executor) cgroupName(node string, key nodes.StepKey) string {
	return filepath.Join(e.cgroupBase(), node, key.Name())
}

// cgroupBase is this Executor's top group below each controller's root.
func (e *Executor) cgroupBase() string {
	h := sha256.Sum256([]byte(e.stateDir))
	return "hora-" + hex.EncodeToString(h[:4])
}

// controllers are the v1 hierarchies in which a step may have groups:
// cpuset and memory for its CPUs and memory, devices for its gres, and
// freezer and cpu, where other code may place a step (the [mix] classes
// live in their own groups, never below ours; listed so that a group of
// ours found there is still removed).
var controllers = []string{"cpuset", "memory", "devices", "freezer", "cpu"}

func writeCg(dir, file, val string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(val), 0o644); err != nil {
		return fmt.Errorf("cgroup %s: %w", filepath.Join(dir, file), err)
	}
	return nil
}

// allowedCPUs is the CPU list of the cpuset root, in order.
func allowedCPUs() ([]int, string, error) {
	b, err := os.ReadFile(filepath.Join(cgroupRoot, "cpuset", "cpuset.cpus"))
	if err != nil {
		return nil, "", err
	}
	mems, err := os.ReadFile(filepath.Join(cgroupRoot, "cpuset", "cpuset.mems"))
	if err != nil {
		return nil, "", err
	}
	ids, err := parseCPUList(strings.TrimSpace(string(b)))
	return ids, strings.TrimSpace(string(mems)), err
}

// parseCPUList reads a kernel CPU list: 0-3,6.
func parseCPUList(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("cpu list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("cpu list %q", s)
			}
		}
		for x := a; x <= b; x++ {
			out = append(out, x)
		}
	}
	return out, nil
}

// stepCgroups creates the step's cpuset and memory cgroups and returns
// their directories (cpuset, memory). Node CPU ids are mapped onto this
// machine's CPUs modulo their number: local nodes are slices of one
// machine, and a node may declare more CPUs than it has.
func (e *Executor) stepCgroups(spec nodes.LaunchSpec) (string, string, error) {
	name := e.cgroupName(spec.Node, spec.Key)
	cpuDir := filepath.Join(cgroupRoot, "cpuset", name)
	memDir := filepath.Join(cgroupRoot, "memory", name)
	if len(spec.CPUs) > 0 {
		allowed, mems, err := allowedCPUs()
		if err != nil || len(allowed) == 0 {
			return "", "", fmt.Errorf("cgroup cpuset: %v", err)
		}
		var phys []int
		for _, id := range spec.CPUs {
			p := allowed[id%len(allowed)]
			if !containsInt(phys, p) {
				phys = append(phys, p)
			}
		}
		// cpuset v1: every level needs cpus and mems before a task may join.
		dir := filepath.Join(cgroupRoot, "cpuset")
		for _, part := range strings.Split(name, "/") {
			dir = filepath.Join(dir, part)
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return "", "", err
			}
			cpus := cpuList(allowed)
			if dir == cpuDir {
				cpus = cpuList(phys)
			}
			if err := writeCg(dir, "cpuset.cpus", cpus); err != nil {
				return "", "", err
			}
			if err := writeCg(dir, "cpuset.mems", mems); err != nil {
				return "", "", err
			}
		}
	} else {
		cpuDir = ""
	}
	if spec.MemMB > 0 {
		if err := os.MkdirAll(memDir, 0o755); err != nil {
			return "", "", err
		}
		limit := strconv.FormatInt(spec.MemMB<<20, 10)
		// memsw may not go below limit_in_bytes: set the limit first. A
		// kernel without swap accounting has no memsw file: no swap to deny.
		if err := writeCg(memDir, "memory.limit_in_bytes", limit); err != nil {
			return "", "", err
		}
		if _, err := os.Stat(filepath.Join(memDir, "memory.memsw.limit_in_bytes")); err == nil {
			if err := writeCg(memDir, "memory.memsw.limit_in_bytes", limit); err != nil {
				return "", "", err
			}
		}
	} else {
		memDir = ""
	}
	return cpuDir, memDir, nil
}

// nvidiaMajor is the character device major of NVIDIA's GPUs
// (/dev/nvidiaN is 195:N; nvidiactl, 195:255, stays open to all).
const nvidiaMajor = 195

// stepDevices creates the step's devices group, in which the device nodes
// of the node's GPUs not given to the step cannot be opened, and returns
// it ("" when the node has no GPUs). The group starts as its parent (all
// devices) and gets one deny entry per GPU withheld.
func (e *Executor) stepDevices(spec nodes.LaunchSpec) (string, error) {
	if spec.NodeGPUs <= 0 {
		return "", nil
	}
	if _, err := os.Stat(filepath.Join(cgroupRoot, "devices", "devices.deny")); err != nil {
		return "", fmt.Errorf("the step has GPUs to isolate, and the devices cgroup is not mounted: %w", err)
	}
	dir := filepath.Join(cgroupRoot, "devices", e.cgroupName(spec.Node, spec.Key))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for id := 0; id < spec.NodeGPUs; id++ {
		if containsInt(spec.GPUs, id) {
			continue
		}
		if err := writeCg(dir, "devices.deny", fmt.Sprintf("c %d:%d rwm", nvidiaMajor, id)); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// enterStepCgroups creates the step's groups and moves pid (its shepherd)
// into them, returning the memory group ("" without a memory limit). Both
// happen under cgMu: a group is never empty between its mkdir and the
// shepherd's arrival, so a sweep or another step's Forget removing empty
// groups cannot take it away in between.
func (e *Executor) enterStepCgroups(spec nodes.LaunchSpec, pid int) (string, error) {
	e.cgMu.Lock()
	defer e.cgMu.Unlock()
	cpuDir, memDir, err := e.stepCgroups(spec)
	devDir := ""
	if err == nil {
		devDir, err = e.stepDevices(spec)
	}
	if err == nil {
		err = enterCgroups(pid, cpuDir, memDir, devDir)
	}
	return memDir, err
}

// enterCgroups moves pid into the given cgroup directories.
func enterCgroups(pid int, dirs ...string) error {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if err := writeCg(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// removeCgroups removes a step's cgroups once its processes are gone, and
// its parents (node, horad) when they are left empty (a parent with other
// steps is busy and stays).
//
// A step's processes can outlive its shepherd (a job's background process,
// or a process the OOM killer or a TERM left dying under a loaded machine):
// as slurmstepd does at a step's end, what is left in the step's groups is
// killed, and the removal is tried again for a few seconds while the kernel
// reaps them, so that no empty group is left behind.
func (e *Executor) removeCgroups(node string, key nodes.StepKey) {
	name := e.cgroupName(node, key)
	for _, c := range controllers {
		step := filepath.Join(cgroupRoot, c, name)
		for try := 0; try < 50; try++ {
			killCgroupProcs(step)
			if err := os.Remove(step); err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		e.cgMu.Lock()
		for dir := filepath.Dir(step); dir != filepath.Join(cgroupRoot, c); dir = filepath.Dir(dir) {
			if os.Remove(dir) != nil {
				break
			}
		}
		e.cgMu.Unlock()
	}
}

// sweepCgroups removes every empty group of this Executor, deepest first,
// on every controller: the groups of steps that ended but were not
// forgotten yet, and the node and top groups they leave empty. Groups with
// processes (steps running on across a restart of horad) stay, and so do
// their parents; a new Executor finds and removes them at their Forget.
// Nothing is killed. Called by Close.
func (e *Executor) sweepCgroups() {
	e.cgMu.Lock()
	defer e.cgMu.Unlock()
	for _, c := range controllers {
		removeEmptyTree(filepath.Join(cgroupRoot, c, e.cgroupBase()))
	}
}

// removeEmptyTree removes dir and its subgroups that are empty, children
// first. rmdir fails on a group with processes or children, so a busy
// group and its ancestors stay.
func removeEmptyTree(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, ent := range ents {
		if ent.IsDir() {
			removeEmptyTree(filepath.Join(dir, ent.Name()))
		}
	}
	_ = os.Remove(dir)
}

// killCgroupProcs sends SIGKILL to every process still in a cgroup.
func killCgroupProcs(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// oomKills reads the oom_kill count of a memory cgroup (0 if unknown).
func oomKills(memDir string) int {
	b, err := os.ReadFile(filepath.Join(memDir, "memory.oom_control"))
	if err != nil {
		return 0
	}
	for _, ln := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(ln, "oom_kill "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// oomMessage is slurmstepd's line in the job's error file (Slurm 22.05,
// task/cgroup): "Detected N oom_kill event(s) in StepId=J.batch. Some of
// the step tasks have been OOM Killed."
func oomMessage(n int, key nodes.StepKey) string {
	ev := "event"
	if n > 1 {
		ev = "events"
	}
	step := "batch"
	if key.Step >= 0 {
		step = strconv.Itoa(key.Step)
	}
	return fmt.Sprintf("slurmstepd: error: Detected %d oom_kill %s in StepId=%d.%s. Some of the step tasks have been OOM Killed.\n", n, ev, key.Job, step)
}

func cpuList(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, ",")
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

var _ nodes.StepCgrouper = (*Executor)(nil)

// stepMemDir is the memory group of an srun step: below its job's batch
// step group (hierarchical: the job's limit holds over the step's), named
// "step<id>".
func (e *Executor) stepMemDir(node string, key nodes.StepKey) string {
	batch := nodes.StepKey{Job: key.Job, Step: -1, Run: key.Run}
	return filepath.Join(cgroupRoot, "memory", e.cgroupName(node, batch), "step"+strconv.Itoa(key.Step))
}

// EnterStepMemory implements nodes.StepCgrouper.
func (e *Executor) EnterStepMemory(node string, key nodes.StepKey, memMB int64, pids []int) error {
	if err := validNode(node); err != nil {
		return err
	}
	if !e.cgroups {
		return errors.New("cgroup enforcement is not available (horad is not root, or the v1 memory hierarchy is missing)")
	}
	if memMB <= 0 || key.Step < 0 {
		return fmt.Errorf("step memory: bad limit %d MB for step %s", memMB, key.Name())
	}
	e.cgMu.Lock()
	defer e.cgMu.Unlock()
	dir := e.stepMemDir(node, key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	limit := strconv.FormatInt(memMB<<20, 10)
	if err := writeCg(dir, "memory.limit_in_bytes", limit); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "memory.memsw.limit_in_bytes")); err == nil {
		if err := writeCg(dir, "memory.memsw.limit_in_bytes", limit); err != nil {
			return err
		}
	}
	return enterCgroupsAll(dir, pids)
}

func enterCgroupsAll(dir string, pids []int) error {
	for _, pid := range pids {
		if err := enterCgroups(pid, dir); err != nil {
			return err
		}
	}
	return nil
}

// EndStepMemory implements nodes.StepCgrouper. The group is removed in
// the background (its last processes may take a moment to go).
func (e *Executor) EndStepMemory(node string, key nodes.StepKey) int {
	if validNode(node) != nil || !e.cgroups {
		return 0
	}
	dir := e.stepMemDir(node, key)
	n := oomKills(dir)
	go func() {
		for try := 0; try < 50; try++ {
			killCgroupProcs(dir)
			if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return n
}
