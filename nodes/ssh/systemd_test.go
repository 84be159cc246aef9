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
