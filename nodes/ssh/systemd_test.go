package ssh_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hora/nodes"
	"hora/nodes/ssh/sshtest"
)

// These tests run on a host whose init is a real systemd (sshtest
// WithSystemd): the launcher's "auto" mode finds /run/systemd/system and
// systemd-run, and every step runs in a transient scope hora-job-<job>-<step>.

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

// waitScope waits (bounded) until the scope is in state want ("" = gone).
func waitScope(t *testing.T, h *sshtest.Host, unit, want string) {
	t.Helper()
	var got string
	for range 250 {
		if got = scopeState(t, h, unit); got == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("scope %s is %q, want %q", unit, got, want)
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
	unit := "hora-job-70-batch"
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
	if st := v.exits.wait(t, key, 30*time.Second); st.State != nodes.StepExited || st.ExitCode != 7 || st.Signal != 0 {
		t.Errorf("status %+v, want exit 7", st)
	}
	// --collect: an empty scope leaves no unit behind.
	waitScope(t, h, unit, "")
	if err := v.e.Forget(ctx, "n1", key); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(v.state, "n1", "70.batch")); !errors.Is(err, os.ErrNotExist) {
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
	// /proc/<init>/root/sys/fs/cgroup is the host's own cgroup2 mount.
	b, err := os.ReadFile(h.Proc(1) + "/root/sys/fs/cgroup" + cg + "/cgroup.procs")
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

// waitStates waits (bounded) until every process of the scope outside the
// wrapper's own group (the wrapper and its timers) is in state s, and
// returns how many there are.
func waitStates(t *testing.T, h *sshtest.Host, unit string, wrapper int, s byte) int {
	t.Helper()
	var last string
	for range 250 {
		n, ok := 0, true
		last = ""
		for _, p := range scopePids(t, h, unit) {
			st, pg := procStat(t, h, p)
			if st == 0 || pg == wrapper {
				continue
			}
			n++
			last += " " + strconv.Itoa(p) + ":" + string(st)
			if (st == 'T') != (s == 'T') {
				ok = false
			}
		}
		if ok && n > 0 {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("scope %s: processes%s, want all in state %c", unit, last, s)
	return 0
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
	v.launch(t, v.spec(stubborn, "n1", "#!/bin/sh\ntrap '' TERM\nwhile :; do sleep 0.1; done\n"))
	waitScope(t, h, "hora-job-71-1", "active")
	if err := v.e.Terminate(ctx, "n1", stubborn, time.Second); err != nil {
		t.Fatal(err)
	}
	// SetTimeLimit's USR1 reaches the wrapper inside the scope.
	if err := v.e.SetTimeLimit(ctx, "n1", moved, time.Second); err != nil {
		t.Fatal(err)
	}
	if st := v.exits.wait(t, moved, 30*time.Second); !st.TimedOut || st.Signal != 15 {
		t.Errorf("moved time limit: %+v, want timed out by TERM", st)
	}
	if st := v.exits.wait(t, limited, 30*time.Second); !st.TimedOut || st.Signal != 15 {
		t.Errorf("time limit: %+v, want timed out by TERM", st)
	}
	if st := v.exits.wait(t, stubborn, 30*time.Second); st.Signal != 9 || st.TimedOut {
		t.Errorf("Terminate of a TERM-ignoring job: %+v, want KILL after the grace", st)
	}
	waitScope(t, h, "hora-job-71-0", "")
	waitScope(t, h, "hora-job-71-1", "")

	// A job with a process in a session of its own: outside the job's
	// process group, inside the scope.
	susp := nodes.StepKey{Job: 72, Step: 0}
	v.launch(t, v.spec(susp, "n1", "#!/bin/sh\nsetsid sh -c 'while :; do sleep 0.1; done' &\nwhile :; do sleep 0.1; done\n"))
	unit := "hora-job-72-0"
	waitScope(t, h, unit, "active")
	// The wrapper's process group (itself and its timers) is not the job's.
	wrapper := 0
	for range 250 {
		for _, p := range scopePids(t, h, unit) {
			if c, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline"); strings.Contains(string(c), "hora-wrapper") {
				_, wrapper = procStat(t, h, p)
			}
		}
		if wrapper != 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if wrapper == 0 {
		t.Fatalf("no wrapper found in scope %s (%v)", unit, scopePids(t, h, unit))
	}
	// The escaped session exists before STOP, so "all stopped" covers it.
	for range 250 {
		groups := map[int]bool{}
		for _, p := range scopePids(t, h, unit) {
			if _, g := procStat(t, h, p); g != 0 && g != wrapper {
				groups[g] = true
			}
		}
		if len(groups) >= 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := v.e.Signal(ctx, "n1", susp, nodes.Signum(19)); err != nil { // SIGSTOP
		t.Fatal(err)
	}
	if n := waitStates(t, h, unit, wrapper, 'T'); n < 4 {
		t.Errorf("%d job processes stopped, want at least 4 (two shells, two sleeps)", n)
	}
	if err := v.e.Signal(ctx, "n1", susp, nodes.Signum(18)); err != nil { // SIGCONT
		t.Fatal(err)
	}
	waitStates(t, h, unit, wrapper, 'S')
	if err := v.e.Terminate(ctx, "n1", susp, time.Second); err != nil {
		t.Fatal(err)
	}
	if st := v.exits.wait(t, susp, 30*time.Second); st.Signal != 15 {
		t.Errorf("terminated: %+v, want signal 15", st)
	}

	// TERM reached the escaped session too: nothing is left in the scope.
	waitScope(t, h, unit, "")
	if err := v.e.Forget(ctx, "n1", susp); err != nil {
		t.Fatal(err)
	}

	// A process that outlives its step keeps the scope until Forget.
	orphan := nodes.StepKey{Job: 73, Step: 0}
	ounit := "hora-job-73-0"
	// The job waits until its child has left the process group.
	leave := func(code int) string {
		f := filepath.Join(v.out, "left"+strconv.Itoa(code))
		return "#!/bin/sh\nsetsid sh -c 'echo $$ > " + f + "; exec sleep 300' &\nwhile [ ! -s " + f + " ]; do sleep 0.05; done\nexit " + strconv.Itoa(code) + "\n"
	}
	v.launch(t, v.spec(orphan, "n1", leave(0)))
	if st := v.exits.wait(t, orphan, 30*time.Second); st.ExitCode != 0 || st.Signal != 0 {
		t.Errorf("orphan step: %+v", st)
	}
	waitScope(t, h, ounit, "active")
	left := scopePids(t, h, ounit)
	if len(left) == 0 {
		t.Fatal("no process left in the scope")
	}
	// Requeue: the same step again while the old scope holds a leftover
	// (systemd refuses a second unit of the same name).
	v.exits.mu.Lock()
	delete(v.exits.got, orphan)
	v.exits.mu.Unlock()
	v.launch(t, v.spec(orphan, "n1", leave(3)))
	if st := v.exits.wait(t, orphan, 30*time.Second); st.ExitCode != 3 {
		t.Errorf("relaunched step: %+v, want exit 3", st)
	}
	for _, p := range left {
		if st, _ := procStat(t, h, p); st != 0 && st != 'Z' {
			t.Errorf("process %d of the step's previous run survived its relaunch", p)
		}
	}
	waitScope(t, h, ounit, "active")
	left = scopePids(t, h, ounit)
	if err := v.e.Forget(ctx, "n1", orphan); err != nil {
		t.Fatal(err)
	}
	waitScope(t, h, ounit, "")
	for _, p := range left {
		if st, _ := procStat(t, h, p); st != 0 && st != 'Z' {
			t.Errorf("process %d of a forgotten step still runs", p)
		}
	}
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
	waitScope(t, h, "hora-job-80-batch", "active")
	waitScope(t, h, "hora-job-81-batch", "active")
	props := func(unit string) string {
		out, err := h.Systemctl("show", "--property=AllowedCPUs,MemoryMax,MemorySwapMax", unit+".scope")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	got := props("hora-job-80-batch")
	for _, w := range []string{"AllowedCPUs=0\n", "MemoryMax=67108864\n", "MemorySwapMax=0\n"} {
		if !strings.Contains(got+"\n", w) {
			t.Errorf("scope of a 1-CPU 64M step: %q lacks %q", got, w)
		}
	}
	if got := props("hora-job-81-batch"); !strings.Contains(got, "MemoryMax=infinity") {
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
