package ssh_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hora/nodes"
	hssh "hora/nodes/ssh"
)

// TestNodeLostMidJob kills a host's sshd and takes its link down while a
// step runs there: the step is reported lost and the node down within the
// probe time, operations on it fail instead of hanging, and the other
// hosts are unaffected. Once the host is back, Reattach finds the step
// still running on it (the job never depended on the connection).
func TestNodeLostMidJob(t *testing.T) {
	v := start(t, 3)
	lost := nodes.StepKey{Job: 5, Step: -1}
	fine := nodes.StepKey{Job: 6, Step: -1}
	v.launch(t, v.spec(lost, "n2", "#!/bin/sh\nsleep 300\n"))
	v.launch(t, v.spec(fine, "n1", "#!/bin/sh\nsleep 2\nexit 4\n"))
	waitEvent(t, v.events, "n2", true)

	n2 := v.c.Hosts[1]
	n2.StopSSHD()
	n2.LinkDown()
	// Probe every 300 ms, 3 s timeout, 2 misses: down within ~7 s. The
	// bound below only guards against a hang.
	st := v.exits.wait(t, lost, 90*time.Second)
	if st.State != nodes.StepLost || !strings.Contains(st.Err, "n2") {
		t.Errorf("status %+v, want lost naming n2", st)
	}
	ev := waitEvent(t, v.events, "n2", false)
	var ue *hssh.UnreachableError
	if !errors.As(ev.Err, &ue) || ue.Node != "n2" {
		t.Errorf("down event error %v, want an UnreachableError for n2", ev.Err)
	}
	// No hang: operations on the dead node fail within their timeout.
	done := make(chan error, 1)
	go func() { done <- v.e.Launch(t.Context(), v.spec(nodes.StepKey{Job: 7, Step: -1}, "n2", "#!/bin/sh\n")) }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Launch on a dead node succeeded")
		}
	case <-time.After(90 * time.Second):
		t.Fatal("Launch on a dead node hangs")
	}
	if st := v.exits.wait(t, fine, 90*time.Second); st.State != nodes.StepExited || st.ExitCode != 4 {
		t.Errorf("step on a healthy node: %+v", st)
	}

	n2.LinkUp()
	n2.StartSSHD()
	waitEvent(t, v.events, "n2", true)
	sts, err := v.e.Reattach(t.Context(), []string{"n2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 1 || sts[0].Key != lost || sts[0].State != nodes.StepRunning {
		t.Fatalf("Reattach after the node came back: %+v, want the step running", sts)
	}
	if err := v.e.Terminate(t.Context(), "n2", lost, 0); err != nil {
		t.Fatal(err)
	}
	if st := v.exits.wait2(t, lost, 90*time.Second); st.Signal != 15 {
		t.Errorf("after Terminate: %+v", st)
	}
}

func waitEvent(t *testing.T, ch chan hssh.NodeEvent, node string, up bool) hssh.NodeEvent {
	t.Helper()
	timeout := time.After(90 * time.Second)
	for {
		select {
		case ev := <-ch:
			if ev.Node == node && ev.Up == up {
				return ev
			}
		case <-timeout:
			t.Fatalf("no event %s up=%v", node, up)
		}
	}
}

// wait2 waits for a second report of key (after a first one, e.g. lost).
func (c *collector) wait2(t *testing.T, key nodes.StepKey, limit time.Duration) nodes.Status {
	t.Helper()
	first := c.wait(t, key, limit)
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		st := c.got[key]
		c.mu.Unlock()
		if st != first {
			return st
		}
		select {
		case <-c.more:
		case <-deadline.C:
			t.Fatalf("step %v: no second exit within %s", key, limit)
		}
	}
}

// TestReattachAfterRestart closes the executor while steps run, lets one of
// them end meanwhile, and checks that a new executor finds every step with
// its real exit status and reports the later ends on Exits.
func TestReattachAfterRestart(t *testing.T) {
	v := start(t, 3)
	quick := nodes.StepKey{Job: 10, Step: 0}
	slow := nodes.StepKey{Job: 10, Step: 1}
	slow2 := nodes.StepKey{Job: 11, Step: -1}
	gate := filepath.Join(v.out, "gate")
	v.launch(t, v.spec(quick, "n1", "#!/bin/sh\nexit 7\n"))
	v.launch(t, v.spec(slow, "n2", "#!/bin/sh\nwhile [ ! -e "+gate+" ]; do sleep 0.1; done\nexit 5\n"))
	v.launch(t, v.spec(slow2, "n3", "#!/bin/sh\nwhile [ ! -e "+gate+" ]; do sleep 0.1; done\nkill -s TERM $$\n"))
	if err := v.e.Close(); err != nil {
		t.Fatal(err)
	}
	// quick ends while no executor watches.
	waitFile(t, filepath.Join(v.state, "n1", quick.Name(), "user", "status"))

	v.open(t)
	sts, got := v.reattach(t, "n1", "n2", "n3")
	if st := got[quick]; st.State != nodes.StepExited || st.ExitCode != 7 || st.Node != "n1" {
		t.Errorf("quick: %+v, want exited 7 on n1", st)
	}
	for _, k := range []nodes.StepKey{slow, slow2} {
		if st := got[k]; st.State != nodes.StepRunning || st.Pid <= 1 || st.Started.IsZero() {
			t.Errorf("%v: %+v, want running with pid and start", k, st)
		}
	}
	if len(sts) != 3 {
		t.Errorf("Reattach found %d steps, want 3: %+v", len(sts), sts)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := v.exits.wait(t, slow, 90*time.Second); st.State != nodes.StepExited || st.ExitCode != 5 {
		t.Errorf("slow: %+v, want exit 5", st)
	}
	if st := v.exits.wait(t, slow2, 90*time.Second); st.Signal != 15 {
		t.Errorf("slow2: %+v, want signal 15", st)
	}
	// A step that ended is relaunched under the same key (requeue); a
	// running one is refused.
	v.launch(t, v.spec(quick, "n1", "#!/bin/sh\nexit 8\n"))
	if st := v.exits.wait(t, quick, 90*time.Second); st.ExitCode != 8 {
		t.Errorf("relaunched: %+v", st)
	}
}

// reattach is Reattach of the named nodes: the statuses, and by step.
func (v *env) reattach(t *testing.T, names ...string) ([]nodes.Status, map[nodes.StepKey]nodes.Status) {
	t.Helper()
	sts, err := v.e.Reattach(t.Context(), names)
	if err != nil {
		t.Fatal(err)
	}
	got := map[nodes.StepKey]nodes.Status{}
	for _, st := range sts {
		got[st.Key] = st
	}
	return sts, got
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(hang); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

// TestChangedHostKeyRefused gives a host a new key: connecting is refused
// with a message naming the node and the known_hosts file, and the prober
// reports the node down at once.
func TestChangedHostKeyRefused(t *testing.T) {
	v := start(t, 2)
	v.c.Hosts[1].NewHostKey()
	// A connection verified before the key changed stays valid (as with
	// OpenSSH); the check is at every new handshake, so start without a
	// pooled connection (the first health probe may already have made one).
	v.e.Close()
	v.open(t)
	// A handshake the loaded machine cuts short (reset, timeout) says nothing
	// about the key: probe again, boundedly, until the server's key was seen.
	var err error
	var hk *hssh.HostKeyError
	for try := 0; try < 10; try++ {
		if err = v.e.Probe(t.Context(), "n2"); errors.As(err, &hk) || err == nil {
			break
		}
		t.Logf("probe %d: %v (retrying: the key was not reached)", try, err)
		time.Sleep(time.Second)
	}
	if !errors.As(err, &hk) || !hk.Changed {
		t.Fatalf("Probe: %v, want a changed host key error", err)
	}
	for _, want := range []string{"node n2", v.c.KnownHosts, "changed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	ev := waitEvent(t, v.events, "n2", false)
	if !errors.As(ev.Err, &hk) {
		t.Errorf("down event: %v, want the host key error", ev.Err)
	}
	if err := v.e.Launch(t.Context(), v.spec(nodes.StepKey{Job: 1, Step: 0}, "n2", "#!/bin/sh\n")); !errors.As(err, &hk) {
		t.Errorf("Launch: %v, want the host key error", err)
	}
	if err := v.e.Probe(t.Context(), "n1"); err != nil {
		t.Errorf("n1: %v", err)
	}
	// An unknown host is refused too.
	if err := os.WriteFile(v.c.KnownHosts, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	v.open(t)
	if err := v.e.Probe(t.Context(), "n1"); !errors.As(err, &hk) || hk.Changed || !strings.Contains(err.Error(), "not in") {
		t.Errorf("unknown host: %v", err)
	}
}

// TestInjection passes shell metacharacters through every string a step
// carries: they must arrive literally and execute nothing.
func TestInjection(t *testing.T) {
	v := start(t, 1)
	marker := filepath.Join(v.c.Dir, "pwned")
	evil := []string{
		"it's", `"quoted"`, "$(touch " + marker + ")", "`touch " + marker + "`",
		"a; touch " + marker, "two  spaces", "new\nline", `back\slash`, "$HOME", "*", "-x",
	}
	dir := filepath.Join(v.out, "job 'x' \"y\" $(id) ; `id` && id")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	key := nodes.StepKey{Job: 12, Step: -1}
	spec := v.spec(key, "n1", "#!/bin/sh\nfor a; do printf '[%s]\\n' \"$a\"; done\nprintf 'env[%s]\\n' \"$EVIL\"\npwd\n")
	spec.Args = evil
	spec.WorkDir = dir
	spec.Stdout = filepath.Join(dir, "out; id 'q' \"$(id)\" \nx")
	spec.Stderr = filepath.Join(dir, "err`id`")
	spec.Env = append(spec.Env, "EVIL=$(touch "+marker+")'\";`id`\nx")
	v.launch(t, spec)
	st := v.exits.wait(t, key, 90*time.Second)
	if st.ExitCode != 0 || st.Err != "" {
		t.Fatalf("status %+v", st)
	}
	var want strings.Builder
	for _, a := range evil {
		want.WriteString("[" + a + "]\n")
	}
	want.WriteString("env[$(touch " + marker + ")'\";`id`\nx]\n" + dir + "\n")
	if got := readFile(t, spec.Stdout); got != want.String() {
		t.Errorf("output\n%s\nwant\n%s", got, want.String())
	}
	if _, err := os.Stat(spec.Stderr); err != nil {
		t.Errorf("error file: %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a metacharacter was executed: the marker file exists")
	}
	if err := v.e.Launch(t.Context(), nodes.LaunchSpec{Key: key, Node: "n1", Args: []string{"a\x00b"}}); err == nil {
		t.Error("an argument with a NUL byte was accepted")
	}
	if err := v.e.Launch(t.Context(), nodes.LaunchSpec{Key: key, Node: "n1;id"}); err == nil {
		t.Error("an unknown node name was accepted")
	}
}

// Two runs of one step (a requeued job) are two steps on the node: the new
// run starts while the old one still runs, each ends with its own status,
// and forgetting one leaves the other whole, also across a new executor. A
// directory whose name and wrapper record disagree on the run is reported
// lost, never running.
func TestRunsOfOneStepKeepApart(t *testing.T) {
	v := start(t, 1)
	gate := filepath.Join(v.out, "gate")
	old := nodes.StepKey{Job: 20, Step: -1}
	next := nodes.StepKey{Job: 20, Step: -1, Run: 1}
	v.launch(t, v.spec(old, "n1", "#!/bin/sh\nwhile [ ! -e "+gate+" ]; do sleep 0.1; done\nexit 5\n"))
	v.launch(t, v.spec(next, "n1", "#!/bin/sh\nexit 3\n"))
	if st := v.exits.wait(t, next, hang); st.State != nodes.StepExited || st.ExitCode != 3 {
		t.Fatalf("new run: %+v, want exit 3", st)
	}
	if err := v.e.Forget(t.Context(), "n1", old); err == nil {
		t.Error("Forget of the old run while it runs: no error")
	}
	// The ended new run's directory renamed to another run's name.
	moved := next
	moved.Run = 4
	if err := os.Rename(filepath.Join(v.state, "n1", next.Name()), filepath.Join(v.state, "n1", moved.Name())); err != nil {
		t.Fatal(err)
	}
	running := old
	running.Run = 7
	v.e.Close()
	v.open(t)
	sts, got := v.reattach(t, "n1")
	if st := got[old]; len(sts) != 2 || st.State != nodes.StepRunning || st.Pid <= 1 {
		t.Errorf("Reattach: %+v, want the old run running and the moved one", sts)
	}
	if st := got[moved]; st.State != nodes.StepExited || st.ExitCode != 3 {
		t.Errorf("ended run under another name: %+v, want its status", st)
	}
	// A copy of the running run's wrapper record under run 7's name names a
	// live wrapper, of another run.
	rec, err := os.ReadFile(filepath.Join(v.state, "n1", old.Name(), "shepherd"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(v.state, "n1", running.Name()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v.state, "n1", running.Name(), "shepherd"), rec, 0o644); err != nil {
		t.Fatal(err)
	}
	sts, got = v.reattach(t, "n1")
	if st := got[running]; st.State != nodes.StepLost || !strings.Contains(st.Err, "run 0") {
		t.Errorf("a directory of run 7 holding run 0's record: %+v, want lost", st)
	}
	if err := v.e.Signal(t.Context(), "n1", running, nodes.Signum(15)); err == nil {
		t.Error("Signal through a record of another run: no error")
	}
	if err := v.e.Forget(t.Context(), "n1", running); err != nil {
		t.Error(err)
	}
	if err := v.e.Forget(t.Context(), "n1", moved); err != nil {
		t.Error(err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := v.exits.wait(t, old, hang); st.ExitCode != 5 {
		t.Errorf("old run: %+v, want exit 5", st)
	}
	if err := v.e.Forget(t.Context(), "n1", old); err != nil {
		t.Error(err)
	}
	if ents, _ := os.ReadDir(filepath.Join(v.state, "n1")); len(ents) != 0 {
		t.Errorf("left on the node: %v", ents)
	}
}
