package ssh_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"hora/nodes"
	"hora/nodes/ssh/sshtest"
)

// These tests run on a host whose init is a real systemd (sshtest
// WithSystemd): the launcher's "auto" mode finds /run/systemd/system and
// systemd-run, and every step runs in a transient scope
// hora-job-<job>-<step>-r<run>.

// scopeState is systemd's ActiveState of the step's scope ("" when systemd
// does not know the unit).
func scopeState(t *testing.T, h *sshtest.Host, unit string) string {
	t.Helper()
	out, err := h.Systemctl("show", "--property=ActiveState,LoadState", unit+".scope")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "LoadState=not-found") {
		return ""
	}
	for _, l := range strings.Split(out, "\n") {
		if s, ok := strings.CutPrefix(l, "ActiveState="); ok {
			return s
		}
	}
	t.Fatalf("systemctl show %s: %q", unit, out)
	return ""
}

// hang bounds every wait of these tests: a generous bound for a hang, never
// a measurement (the machine may be loaded).
const hang = 60 * time.Second

// waitScope waits (bounded) until the scope is in state want ("" = gone).
func waitScope(t *testing.T, h *sshtest.Host, unit, want string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(hang); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got = scopeState(t, h, unit); got == want {
			return
		}
	}
	// What holds the scope, for a scope that should have emptied.
	var left []string
	if got == "active" {
		for _, p := range scopePids(t, h, unit) {
			c, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
			left = append(left, fmt.Sprintf("%d %q", p, strings.ReplaceAll(string(c), "\x00", " ")))
		}
	}
	t.Fatalf("scope %s is %q, want %q; its processes: %v", unit, got, want, left)
}

// cgroupOf is the cgroup v2 path of a node process (pid as the node sees it).
func cgroupOf(t *testing.T, h *sshtest.Host, pid int) string {
	t.Helper()
	b, err := os.ReadFile(h.Proc(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return p
		}
	}
	t.Fatalf("process %d: no cgroup v2 line in %q", pid, b)
	return ""
}

// TestSystemdScopeSurvivesSSHAndHorad: a step as nobody runs in its own
// scope (not in sshd's service cgroup), so it keeps running when sshd.service
// is stopped — which kills everything left in sshd's cgroup — and when the
// executor is closed and re-created; Reattach finds it and its exit status
// is recorded; the scope is collected once the step is over.
func TestSystemdScopeSurvivesSSHAndHorad(t *testing.T) {
	v := start(t, 1, sshtest.WithSystemd(1))
	h := v.c.Hosts[0]
	ctx := t.Context()
	gate := filepath.Join(v.out, "go")
	key := nodes.StepKey{Job: 70, Step: -1}
	spec := v.spec(key, "n1", `#!/bin/sh
echo "uid=$(id -u) gid=$(id -g)"
grep '^0::' /proc/self/cgroup
while [ ! -e '`+gate+`' ]; do sleep 0.1; done
exit 7
`)
	v.launch(t, spec)
	unit := "hora-job-70-batch-r0"
	waitScope(t, h, unit, "active")

	sts, err := v.e.Reattach(ctx, []string{"n1"})
	if err != nil || len(sts) != 1 || sts[0].State != nodes.StepRunning {
		t.Fatalf("Reattach: %+v, %v: want one running step", sts, err)
	}
	pg := sts[0].Pid
	// Seen from this machine's cgroup namespace, below the host's own tree.
	if cg := cgroupOf(t, h, pg); !strings.HasSuffix(cg, "/system.slice/"+unit+".scope") {
		t.Errorf("the job's process group leader is in cgroup %q, want the step's scope", cg)
	}
	// Every process of the scope is the step's: the wrapper and the job.
	procs, err := h.Systemctl("show", "--property=ControlGroup", unit+".scope")
	if err != nil || !strings.Contains(procs, "ControlGroup=/system.slice/"+unit+".scope") {
		t.Errorf("scope's control group: %q, %v", procs, err)
	}
	waitFile(t, spec.Stdout)
	for range 100 {
		if strings.Count(readFile(t, spec.Stdout), "\n") >= 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	want := "uid=" + strconv.Itoa(int(v.uid)) + " gid=" + strconv.Itoa(int(v.gid)) + "\n0::/system.slice/" + unit + ".scope\n"
	if out := readFile(t, spec.Stdout); out != want {
		t.Errorf("job output %q, want %q", out, want)
	}

	// sshd.service stopped (its whole cgroup killed) and horad's executor
	// gone: the step runs on.
	h.StopSSHD()
	v.e.Close()
	if st := scopeState(t, h, unit); st != "active" {
		t.Fatalf("scope %s is %q after sshd.service was stopped, want active", unit, st)
	}
	if _, err := os.Stat(h.Proc(pg)); err != nil {
		t.Fatalf("the job died with sshd.service: %v", err)
	}
	h.StartSSHD()
	v.open(t)
	sts, err = v.e.Reattach(ctx, []string{"n1"})
	if err != nil || len(sts) != 1 || sts[0].State != nodes.StepRunning || sts[0].Pid != pg {
		t.Fatalf("Reattach after restart: %+v, %v: want the step running with group %d", sts, err, pg)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := v.exits.wait(t, key, hang); st.State != nodes.StepExited || st.ExitCode != 7 || st.Signal != 0 {
		t.Errorf("status %+v, want exit 7", st)
	}
	// --collect: an empty scope leaves no unit behind.
	waitScope(t, h, unit, "")
	if err := v.e.Forget(ctx, "n1", key); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(v.state, "n1", "70.batch.r0")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("step directory after Forget: %v", err)
	}
}

// scopePids lists the processes in the step's scope, read from the host's
// cgroup tree; cgroup.procs numbers them in the reader's PID namespace, so
// these are this machine's pids.
func scopePids(t *testing.T, h *sshtest.Host, unit string) []int {
	t.Helper()
	out, err := h.Systemctl("show", "--property=ControlGroup", unit+".scope")
	if err != nil {
		t.Fatal(err)
	}
	cg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out), "ControlGroup="))
	if cg == "" {
		return nil
	}
	// The host's cgroup v2 tree as this machine mounts it.
	b, err := os.ReadFile(h.CgroupDir() + cg + "/cgroup.procs")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		p, _ := strconv.Atoi(f)
		pids = append(pids, p)
	}
	return pids
}

// procStat returns state and process group of a process (this machine's
// pids); 0, 0 when it is gone.
func procStat(t *testing.T, h *sshtest.Host, pid int) (byte, int) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	pg, _ := strconv.Atoi(f[2])
	return f[0][0], pg
}

// jobGroups returns the process groups of the scope's processes outside
// the wrapper's own group (the wrapper and its timers), each with whether
// all its processes are stopped, and a description for messages.
func jobGroups(t *testing.T, h *sshtest.Host, unit string, wrapper int) (map[int]bool, string) {
	t.Helper()
	groups, desc := map[int]bool{}, ""
	for _, p := range scopePids(t, h, unit) {
		st, pg := procStat(t, h, p)
		if st == 0 || pg == wrapper {
			continue
		}
		if _, seen := groups[pg]; !seen {
			groups[pg] = true
		}
		groups[pg] = groups[pg] && (st == 'T' || vforkStopped(t, h, p, st))
		desc += " " + strconv.Itoa(p) + "/" + strconv.Itoa(pg) + ":" + string(st)
	}
	return groups, desc
}

// vforkStopped: dash starts commands with vfork, and a STOP of the group
// that lands between a child's vfork and its exec stops the child and
// leaves the parent in D, waiting in the kernel for the child's exec: it
// cannot run either (seen once under a CPU hog, the job's shell D and its
// child T for the whole minute).
func vforkStopped(t *testing.T, h *sshtest.Host, pid int, st byte) bool {
	if st != 'D' {
		return false
	}
	w, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/wchan")
	if string(w) != "kernel_clone" {
		return false
	}
	kids, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	f := strings.Fields(string(kids))
	for _, k := range f {
		n, _ := strconv.Atoi(k)
		if cs, _ := procStat(t, h, n); cs != 'T' {
			return false
		}
	}
	return len(f) > 0
}

// waitGroups waits (bounded) until the scope holds at least n job process
// groups and every one of them is stopped (stopped) or none is (!stopped).
// It counts groups, not processes: a shell looping on sleep may be between
// two sleeps at any moment, but the shell itself is always there.
func waitGroups(t *testing.T, h *sshtest.Host, unit string, wrapper, n int, stopped bool) {
	t.Helper()
	var desc string
	for deadline := time.Now().Add(hang); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var groups map[int]bool
		groups, desc = jobGroups(t, h, unit, wrapper)
		ok := len(groups) >= n
		for _, all := range groups {
			ok = ok && all == stopped
		}
		if ok {
			return
		}
	}
	t.Fatalf("scope %s: processes (pid/group:state)%s, want %d groups all stopped=%v", unit, desc, n, stopped)
}

// noneRuns reports each of pids (this machine's) that still runs.
func noneRuns(t *testing.T, h *sshtest.Host, pids []int, what string) {
	t.Helper()
	for _, p := range pids {
		if st, _ := procStat(t, h, p); st != 0 && st != 'Z' {
			t.Errorf("process %d of %s", p, what)
		}
	}
}

// TestSystemdLimitCancelSuspendForget: under systemd-run the time limit and
// Terminate (TERM, grace, KILL) act as without it; STOP and CONT reach every
// process of the scope, also one that left the job's session; a process left
// behind by an ended step keeps its scope until Forget, which stops the unit,
// and the same step can be launched again (requeue) meanwhile.
func TestSystemdLimitCancelSuspendForget(t *testing.T) {
	v := start(t, 1, sshtest.WithSystemd(1))
	h := v.c.Hosts[0]
	ctx := t.Context()

	limited := nodes.StepKey{Job: 71, Step: 0}
	spec := v.spec(limited, "n1", "#!/bin/sh\nsleep 300\n")
	spec.TimeLimit = time.Second
	v.launch(t, spec)
	moved := nodes.StepKey{Job: 71, Step: 2}
	spec = v.spec(moved, "n1", "#!/bin/sh\nsleep 300\n")
	spec.TimeLimit = 5 * time.Minute
	v.launch(t, spec)
	stubborn := nodes.StepKey{Job: 71, Step: 1}
	trapped := filepath.Join(v.out, "trapped")
	v.launch(t, v.spec(stubborn, "n1", "#!/bin/sh\ntrap '' TERM\n: > "+trapped+"\nwhile :; do sleep 0.1; done\n"))
	waitScope(t, h, "hora-job-71-1-r0", "active")
	waitFile(t, trapped) // a TERM before the trap would end it by TERM
	if err := v.e.Terminate(ctx, "n1", stubborn, time.Second); err != nil {
		t.Fatal(err)
	}
	// SetTimeLimit's USR1 reaches the wrapper inside the scope.
	if err := v.e.SetTimeLimit(ctx, "n1", moved, time.Second); err != nil {
		t.Fatal(err)
	}
	if st := v.exits.wait(t, moved, hang); !st.TimedOut || st.Signal != 15 {
		t.Errorf("moved time limit: %+v, want timed out by TERM", st)
	}
	if st := v.exits.wait(t, limited, hang); !st.TimedOut || st.Signal != 15 {
		t.Errorf("time limit: %+v, want timed out by TERM", st)
	}
	if st := v.exits.wait(t, stubborn, hang); st.Signal != 9 || st.TimedOut {
		t.Errorf("Terminate of a TERM-ignoring job: %+v, want KILL after the grace", st)
	}
	waitScope(t, h, "hora-job-71-0-r0", "")
	waitScope(t, h, "hora-job-71-1-r0", "")

	// A job with a process in a session of its own: outside the job's
	// process group, inside the scope.
	susp := nodes.StepKey{Job: 72, Step: 0}
	v.launch(t, v.spec(susp, "n1", "#!/bin/sh\nsetsid sh -c 'while :; do sleep 0.1; done' &\nwhile :; do sleep 0.1; done\n"))
	unit := "hora-job-72-0-r0"
	waitScope(t, h, unit, "active")
	// The wrapper's process group (itself and its timers) is not the job's.
	wrapper := 0
	for deadline := time.Now().Add(hang); wrapper == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, p := range scopePids(t, h, unit) {
			if c, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline"); strings.Contains(string(c), "hora-wrapper") {
				_, wrapper = procStat(t, h, p)
			}
		}
	}
	if wrapper == 0 {
		t.Fatalf("no wrapper found in scope %s (%v)", unit, scopePids(t, h, unit))
	}
	// The escaped session exists before STOP (two job groups, neither
	// stopped), so "every group stopped" below covers it.
	waitGroups(t, h, unit, wrapper, 2, false)
	if err := v.e.Signal(ctx, "n1", susp, nodes.Signum(19)); err != nil { // SIGSTOP
		t.Fatal(err)
	}
	waitGroups(t, h, unit, wrapper, 2, true)
	if err := v.e.Signal(ctx, "n1", susp, nodes.Signum(18)); err != nil { // SIGCONT
		t.Fatal(err)
	}
	waitGroups(t, h, unit, wrapper, 2, false)
	if err := v.e.Terminate(ctx, "n1", susp, time.Second); err != nil {
		t.Fatal(err)
	}
	if st := v.exits.wait(t, susp, hang); st.Signal != 15 {
		t.Errorf("terminated: %+v, want signal 15", st)
	}

	// TERM reached the escaped session too: nothing is left in the scope.
	waitScope(t, h, unit, "")
	if err := v.e.Forget(ctx, "n1", susp); err != nil {
		t.Fatal(err)
	}

	// A process that outlives its step keeps the scope until Forget.
	orphan := nodes.StepKey{Job: 73, Step: 0}
	ounit := "hora-job-73-0-r0"
	// The job waits until its child has left the process group.
	leave := func(code int) string {
		f := filepath.Join(v.out, "left"+strconv.Itoa(code))
		return "#!/bin/sh\nsetsid sh -c 'echo $$ > " + f + "; exec sleep 300' &\nwhile [ ! -s " + f + " ]; do sleep 0.05; done\nexit " + strconv.Itoa(code) + "\n"
	}
	v.launch(t, v.spec(orphan, "n1", leave(0)))
	if st := v.exits.wait(t, orphan, hang); st.ExitCode != 0 || st.Signal != 0 {
		t.Errorf("orphan step: %+v", st)
	}
	waitScope(t, h, ounit, "active")
	left := scopePids(t, h, ounit)
	if len(left) == 0 {
		t.Fatal("no process left in the scope")
	}
	// Requeue: the job's next run is a step of its own, in a scope of its
	// own, while the old run's scope still holds a leftover; forgetting the
	// old run stops its scope and leaves the new one alone.
	next := orphan
	next.Run = 1
	nunit := "hora-job-73-0-r1"
	v.launch(t, v.spec(next, "n1", leave(3)))
	if st := v.exits.wait(t, next, hang); st.ExitCode != 3 {
		t.Errorf("the next run: %+v, want exit 3", st)
	}
	waitScope(t, h, nunit, "active")
	nleft := scopePids(t, h, nunit)
	if err := v.e.Forget(ctx, "n1", orphan); err != nil {
		t.Fatal(err)
	}
	waitScope(t, h, ounit, "")
	noneRuns(t, h, left, "a forgotten step still runs")
	if st := scopeState(t, h, nunit); st != "active" {
		t.Errorf("the next run's scope is %q after the old run was forgotten, want active", st)
	}
	// A relaunch of the very same step (same run) while its old scope holds
	// a leftover: systemd would refuse a second unit of the same name, so
	// the launcher stops the old one.
	v.exits.mu.Lock()
	delete(v.exits.got, next)
	v.exits.mu.Unlock()
	v.launch(t, v.spec(next, "n1", leave(4)))
	if st := v.exits.wait(t, next, hang); st.ExitCode != 4 {
		t.Errorf("relaunched step: %+v, want exit 4", st)
	}
	noneRuns(t, h, nleft, "the step's previous launch survived its relaunch")
	waitScope(t, h, nunit, "active")
	nleft = scopePids(t, h, nunit)
	if err := v.e.Forget(ctx, "n1", next); err != nil {
		t.Fatal(err)
	}
	waitScope(t, h, nunit, "")
	noneRuns(t, h, nleft, "a forgotten step still runs")
}

// TestSystemdScopeEnforcesAllocation: a step that holds part of a node gets
// its CPUs, memory and no swap as properties of its scope; a whole-node
// step gets none.
func TestSystemdScopeEnforcesAllocation(t *testing.T) {
	v := start(t, 1, sshtest.WithSystemd(1))
	h := v.c.Hosts[0]
	gate := filepath.Join(v.out, "go-alloc")
	shared := nodes.StepKey{Job: 80, Step: -1}
	spec := v.spec(shared, "n1", "#!/bin/sh\nwhile [ ! -e '"+gate+"' ]; do sleep 0.1; done\n")
	spec.CPUs, spec.MemMB = []int{0}, 64
	v.launch(t, spec)
	whole := nodes.StepKey{Job: 81, Step: -1}
	v.launch(t, v.spec(whole, "n1", "#!/bin/sh\nwhile [ ! -e '"+gate+"' ]; do sleep 0.1; done\n"))
	waitScope(t, h, "hora-job-80-batch-r0", "active")
	waitScope(t, h, "hora-job-81-batch-r0", "active")
	props := func(unit string) string {
		out, err := h.Systemctl("show", "--property=AllowedCPUs,MemoryMax,MemorySwapMax", unit+".scope")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	got := props("hora-job-80-batch-r0")
	for _, w := range []string{"AllowedCPUs=0\n", "MemoryMax=67108864\n", "MemorySwapMax=0\n"} {
		if !strings.Contains(got+"\n", w) {
			t.Errorf("scope of a 1-CPU 64M step: %q lacks %q", got, w)
		}
	}
	if got := props("hora-job-81-batch-r0"); !strings.Contains(got, "MemoryMax=infinity") {
		t.Errorf("scope of a whole-node step: %q, want no memory limit", got)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range []nodes.StepKey{shared, whole} {
		if st := v.exits.wait(t, k, 30*time.Second); st.State != nodes.StepExited || st.ExitCode != 0 {
			t.Errorf("step %v: %+v", k, st)
		}
	}
}

// TestMemoryCgroupWithoutSystemd: on a node without systemd whose kernel
// has the cgroup v1 memory hierarchy, a step with memory gets a memory
// group (limit = memsw); one that touches more ends with OOM set and
// slurmstepd's line in its error file, and Forget removes the group.
func TestMemoryCgroupWithoutSystemd(t *testing.T) {
	if _, err := os.Stat("/sys/fs/cgroup/memory/cgroup.procs"); err != nil {
		t.Fatalf("needs the cgroup v1 memory hierarchy (CI mounts it): %v", err)
	}
	v := start(t, 1)
	key := nodes.StepKey{Job: 90, Step: -1}
	spec := v.spec(key, "n1", "#!/bin/sh\ngrep -c ':memory:/hora-node-' /proc/self/cgroup\nhead -c 400M /dev/zero | tail > /dev/null\necho survived\n")
	spec.MemMB = 40
	spec.Stderr = filepath.Join(v.out, "oom.err")
	v.launch(t, spec)
	st := v.exits.wait(t, key, 60*time.Second)
	out, _ := os.ReadFile(spec.Stdout)
	errb, _ := os.ReadFile(spec.Stderr)
	if st.State != nodes.StepExited || !st.OOM || !strings.HasPrefix(string(out), "1\n") {
		t.Fatalf("step %+v, stdout %q, stderr %q", st, out, errb)
	}
	// One event, or two when the kernel also kills head (Slurm counts them).
	if !regexp.MustCompile(`slurmstepd: error: Detected (1 oom_kill event|2 oom_kill events) in StepId=90\.batch\. Some of the step tasks have been OOM Killed\.\n$`).Match(errb) {
		t.Errorf("error file %q lacks slurmstepd's oom_kill line", errb)
	}
	mg, err := os.ReadFile(filepath.Join(v.state, "n1", key.Name(), "memcg"))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.e.Forget(t.Context(), "n1", key); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(strings.TrimSpace(string(mg))); !os.IsNotExist(err) {
		t.Errorf("memory group %s still there after Forget (%v)", mg, err)
	}
}
