package ssh_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hora/nodes"
	"hora/nodes/ssh/sshtest"
)

// TestRunTaskOnTwoHosts runs step tasks on two real SSH hosts through the
// pooled connections: output streamed back, the job owner's identity, the
// exact environment, quoted arguments, exit codes and signals.
func TestRunTaskOnTwoHosts(t *testing.T) {
	v := start(t, 2)
	key := nodes.StepKey{Job: 7, Step: 0}
	nasty := `it's a "$HOME" $(touch /tmp/pwned) ; * \n`
	run := func(node string, task int, script string, extra ...string) (nodes.TaskExit, string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		spec := nodes.TaskSpec{Node: node, Key: key, Task: task, UID: v.uid, GID: v.gid, WorkDir: v.out,
			Env:  []string{"PATH=/usr/bin:/bin", "SLURM_PROCID=" + strconv.Itoa(task), "ODD=" + nasty},
			Argv: append([]string{"/bin/sh", "-c", script, "sh"}, extra...)}
		ex, err := v.e.RunTask(t.Context(), spec, &out, &errb)
		if err != nil {
			t.Fatalf("RunTask %d on %s: %v", task, node, err)
		}
		return ex, out.String(), errb.String()
	}
	for i, h := range v.c.Hosts {
		ex, out, errs := run(h.Name, i, `echo "$SLURM_PROCID $(id -u) $(pwd)"; printf '%s|%s|' "$ODD" "$1"; env | grep -vc '^PWD='; echo err >&2`, nasty)
		want := strconv.Itoa(i) + " " + strconv.FormatUint(uint64(v.uid), 10) + " " + v.out + "\n" + nasty + "|" + nasty + "|3\n"
		if ex != (nodes.TaskExit{}) || out != want || errs != "err\n" {
			t.Errorf("task %d on %s: exit %+v, stdout %q (want %q), stderr %q", i, h.Name, ex, out, want, errs)
		}
	}
	if ex, _, _ := run(v.c.Hosts[0].Name, 2, `exit 3`); ex != (nodes.TaskExit{Code: 3}) {
		t.Errorf("exit 3: got %+v", ex)
	}
	if ex, _, _ := run(v.c.Hosts[1].Name, 3, `kill -TERM $$`); ex != (nodes.TaskExit{Signal: 15}) {
		t.Errorf("killed by TERM: got %+v", ex)
	}
	_, _, errs := run(v.c.Hosts[0].Name, 4, `true`)
	if errs != "" {
		t.Errorf("stderr of a quiet task: %q", errs)
	}
	for _, h := range v.c.Hosts {
		if ex, _, _ := run(h.Name, 5, `test ! -e /tmp/pwned`); ex.Code != 0 {
			t.Errorf("an argument was run by the shell on %s", h.Name)
		}
	}
}

// TestRunTaskInScope: on a systemd host the task runs in its own scope
// with the step's CPUs, and cancelling the caller's context kills it
// there (closing the session alone would leave it running).
func TestRunTaskInScope(t *testing.T) {
	v := start(t, 1, sshtest.WithSystemd(1))
	h := v.c.Hosts[0]
	key := nodes.StepKey{Job: 9, Step: 1}
	spec := nodes.TaskSpec{Node: h.Name, Key: key, Task: 0, UID: v.uid, GID: v.gid, WorkDir: v.out,
		Env: []string{"PATH=/usr/bin:/bin"}, CPUs: []int{0},
		Argv: []string{"/bin/sh", "-c", `cat /proc/self/cgroup; echo started; exec sleep 600`}}
	unit := "hora-job-9-1-r0-t0"
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := v.e.RunTask(ctx, spec, pw, io.Discard)
		pw.CloseWithError(err)
		done <- err
	}()
	sc := bufio.NewScanner(pr)
	var lines []string
	for sc.Scan() && sc.Text() != "started" {
		lines = append(lines, sc.Text())
	}
	if !strings.Contains(strings.Join(lines, "\n"), unit+".scope") {
		t.Fatalf("task's cgroup %q is not in scope %s (task's end: %v)", lines, unit, sc.Err())
	}
	waitScope(t, h, unit, "active")
	out, err := h.Systemctl("show", "--property=AllowedCPUs", unit+".scope")
	if err != nil || !strings.Contains(out, "AllowedCPUs=0\n") {
		t.Errorf("scope properties: %q, %v", out, err)
	}
	cancel()
	go io.Copy(io.Discard, pr)
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("RunTask after cancel: %v", err)
		}
	case <-time.After(hang):
		t.Fatal("RunTask did not return after cancel")
	}
	waitScope(t, h, unit, "")
}

// TestRunTaskStdinAndSignals: a task reads the stdin it is given (and
// sees its end), a task without one reads /dev/null, and signals sent on
// TaskSpec.Signals reach the task itself: USR1 is caught by its trap,
// TERM kills it (reported as that signal), and INT, which a background
// process of a non-interactive shell would ignore, kills it too.
func TestRunTaskStdinAndSignals(t *testing.T) {
	v := start(t, 1)
	h := v.c.Hosts[0]
	key := nodes.StepKey{Job: 11, Step: 0}
	spec := func(task int, script string) nodes.TaskSpec {
		return nodes.TaskSpec{Node: h.Name, Key: key, Task: task, UID: v.uid, GID: v.gid, WorkDir: v.out,
			Env: []string{"PATH=/usr/bin:/bin"}, Argv: []string{"/bin/sh", "-c", script}}
	}
	s := spec(0, `wc -c; echo "first line: $(head -n1 /dev/null)"`)
	s.Stdin = strings.NewReader(strings.Repeat("x", 100000) + "\n")
	var out bytes.Buffer
	if ex, err := v.e.RunTask(t.Context(), s, &out, io.Discard); err != nil || ex != (nodes.TaskExit{}) || !strings.HasPrefix(out.String(), "100001\n") {
		t.Errorf("task with stdin: %+v %v %q", ex, err, out.String())
	}
	out.Reset()
	if ex, err := v.e.RunTask(t.Context(), spec(1, `wc -c`), &out, io.Discard); err != nil || ex != (nodes.TaskExit{}) || out.String() != "0\n" {
		t.Errorf("task without stdin: %+v %v %q", ex, err, out.String())
	}

	signalled := func(task int, script string, sigs ...nodes.Signum) (nodes.TaskExit, string) {
		t.Helper()
		s := spec(task, script)
		ch := make(chan nodes.Signum, len(sigs))
		s.Signals = ch
		pr, pw := io.Pipe()
		type res struct {
			ex  nodes.TaskExit
			err error
		}
		done := make(chan res, 1)
		go func() {
			ex, err := v.e.RunTask(t.Context(), s, pw, io.Discard)
			pw.Close()
			done <- res{ex, err}
		}()
		sc := bufio.NewScanner(pr)
		if !sc.Scan() || sc.Text() != "ready" {
			t.Fatalf("task %d did not get ready: %q", task, sc.Text())
		}
		for _, sig := range sigs {
			ch <- sig
		}
		var rest []string
		for sc.Scan() {
			rest = append(rest, sc.Text())
		}
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatalf("task %d: %v", task, r.err)
			}
			return r.ex, strings.Join(rest, "\n")
		case <-time.After(hang):
			t.Fatalf("task %d did not end after its signals", task)
		}
		panic("unreachable")
	}
	ex, rest := signalled(2, `trap 'echo got USR1; exit 3' USR1; echo ready; while :; do sleep 0.05; done`, 10)
	if ex != (nodes.TaskExit{Code: 3}) || rest != "got USR1" {
		t.Errorf("USR1: %+v %q", ex, rest)
	}
	if ex, _ := signalled(3, `echo ready; exec sleep 600`, 15); ex != (nodes.TaskExit{Signal: 15}) {
		t.Errorf("TERM: %+v", ex)
	}
	if ex, _ := signalled(4, `echo ready; exec sleep 600`, 2); ex != (nodes.TaskExit{Signal: 2}) {
		t.Errorf("INT: %+v", ex)
	}
}

// TestKillStepTasksAfterExecutorGone: the tasks of a step whose executor
// went away (horad killed: its sessions closed) run on until their next
// write; a new executor's KillStepTasks kills them, on a plain host and
// on a systemd one, and leaves nothing in the node's tasks directory. A
// stale pid file naming a process that is not the task's (its parent is
// not the task's shell) kills nothing.
func TestKillStepTasksAfterExecutorGone(t *testing.T) {
	v := start(t, 2, sshtest.WithSystemd(1))
	key := nodes.StepKey{Job: 97, Step: 0}
	marker := filepath.Join(v.out, "marker")
	started := make(chan struct{}, 2)
	for i, node := range []string{"n1", "n2"} {
		spec := nodes.TaskSpec{Node: node, Key: key, Task: i, UID: v.uid, GID: v.gid, WorkDir: v.out,
			Env:  []string{"PATH=/usr/bin:/bin"},
			Argv: []string{"/bin/sh", "-c", "echo up; sleep 600; touch " + marker}}
		w := &signalWriter{ch: started}
		go v.e.RunTask(context.Background(), spec, w, io.Discard)
	}
	for range 2 {
		select {
		case <-started:
		case <-time.After(60 * time.Second):
			t.Fatal("the tasks did not start")
		}
	}
	// A stranger under a pid file of another step's task.
	stranger := exec.Command("sleep", "600")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	defer stranger.Process.Kill()
	stale := filepath.Join(v.state, "n2", "tasks", "hora-job-97-0-r0-t5.pid")
	if err := os.WriteFile(stale, []byte(strconv.Itoa(stranger.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v.e.Close()
	v.open(t)
	for _, node := range []string{"n1", "n2"} {
		n, err := v.e.KillStepTasks(t.Context(), node, key)
		if err != nil || n < 1 {
			t.Fatalf("KillStepTasks on %s: %d %v", node, n, err)
		}
	}
	waitScope(t, v.c.Hosts[0], "hora-job-97-0-r0-t0", "")
	for _, node := range []string{"n1", "n2"} {
		left, _ := filepath.Glob(filepath.Join(v.state, node, "tasks", "*"))
		if len(left) != 0 {
			t.Errorf("files left in %s's tasks directory: %q", node, left)
		}
	}
	if err := stranger.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the process under a stale pid file was killed: %v", err)
	}
	// Killed, not ended by a write or their own end: nothing wrote the
	// marker, and nothing of the step runs (pgrep sees every host's
	// processes from here).
	if out, err := exec.Command("pgrep", "-f", "touch "+marker).Output(); err == nil {
		t.Errorf("the tasks still run: pids %s", out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("a task ran to its end")
	}
}

// signalWriter signals once on its first write.
type signalWriter struct {
	ch   chan struct{}
	once sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { w.ch <- struct{}{} })
	return len(p), nil
}

// TestStepEndRemovesLeftTaskRecords: a task's root shell killed between
// writing its pid file and removing it (after horad's restart, one that
// wrote the record only after KillStepTasks had looked, killed then with
// the step's cpuset group) leaves the record behind; the step's end
// (EndStepMemory) removes its tasks' records, finished or half-written,
// and no other step's.
func TestStepEndRemovesLeftTaskRecords(t *testing.T) {
	v := start(t, 1)
	key := nodes.StepKey{Job: 95, Step: 0}
	dir := filepath.Join(v.state, "n1", "tasks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	left := []string{"hora-job-95-0-r0-t1.pid", "hora-job-95-0-r0-t2.pid.tmp"}
	other := "hora-job-95-1-r0-t0.pid"
	for _, n := range append(left, other) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v.e.EndStepMemory("n1", key)
	for _, n := range left {
		if _, err := os.Stat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the step's end (%v)", n, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, other)); err != nil {
		t.Errorf("another step's record went with it: %v", err)
	}
}
