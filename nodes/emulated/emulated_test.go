package emulated

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"hora/nodes"
)

func next(t *testing.T, e *Executor) nodes.Status {
	t.Helper()
	select {
	case st := <-e.Exits():
		return st
	case <-time.After(30 * time.Second):
		t.Fatal("no exit within 30 s")
	}
	return nodes.Status{}
}

func launch(t *testing.T, e *Executor, job int64, runtime string, limit time.Duration) nodes.StepKey {
	t.Helper()
	k := nodes.StepKey{Job: job, Step: -1}
	env := []string{"PATH=/bin"}
	if runtime != "" {
		env = append(env, RuntimeEnv+"="+runtime)
	}
	if err := e.Launch(context.Background(), nodes.LaunchSpec{Key: k, Node: "n1", Env: env, TimeLimit: limit}); err != nil {
		t.Fatal(err)
	}
	return k
}

// A step ends after its runtime, or at its limit as timed out; a stopped
// step's clock does not run; a signal ends it with that signal.
func TestRuntimeLimitStopAndSignal(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()

	k := launch(t, e, 1, "0.01", time.Hour)
	if st := next(t, e); st.Key != k || st.State != nodes.StepExited || st.TimedOut || st.Signal != 0 || st.ExitCode != 0 {
		t.Fatalf("runtime end: %+v", st)
	}
	k = launch(t, e, 2, "3600", 20*time.Millisecond)
	if st := next(t, e); st.Key != k || !st.TimedOut || st.Signal != int(syscall.SIGTERM) {
		t.Fatalf("limit end: %+v", st)
	}

	k = launch(t, e, 3, "0.05", 0)
	if err := e.Signal(ctx, "n1", k, nodes.Signum(syscall.SIGSTOP)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := e.Signal(ctx, "n1", k, nodes.Signum(syscall.SIGCONT)); err != nil {
		t.Fatal(err)
	}
	st := next(t, e)
	if st.Key != k || st.TimedOut || st.Ended.Sub(st.Started) < 350*time.Millisecond {
		t.Fatalf("stopped 300 ms with 50 ms of work: ended after %v: %+v", st.Ended.Sub(st.Started), st)
	}

	k = launch(t, e, 4, "3600", 0)
	if err := e.Terminate(ctx, "n1", k, time.Second); err != nil {
		t.Fatal(err)
	}
	if st := next(t, e); st.Key != k || st.Signal != int(syscall.SIGTERM) || st.TimedOut {
		t.Fatalf("terminated: %+v", st)
	}
	if err := e.Launch(ctx, nodes.LaunchSpec{Key: nodes.StepKey{Job: 5, Step: -1}, Node: "n1", Env: []string{RuntimeEnv + "=3600"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Launch(ctx, nodes.LaunchSpec{Key: nodes.StepKey{Job: 5, Step: -1}, Node: "n1"}); err == nil {
		t.Fatal("a second launch of a running step was accepted")
	}
}

// Steps outlive the executor through the state file: after a "restart"
// Reattach reports the step that ended meanwhile as ended at its due
// instant and resumes the one still running; forgotten steps stay gone.
func TestReattachAfterRestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "emulated.state")
	e1, err := New(Config{StateFile: file})
	if err != nil {
		t.Fatal(err)
	}
	short := launch(t, e1, 1, "0.1", 0)
	long := launch(t, e1, 2, "3600", 0)
	gone := launch(t, e1, 3, "0", 0)
	if st := next(t, e1); st.Key != gone {
		t.Fatalf("first exit %+v, want job 3", st)
	}
	if err := e1.Forget(context.Background(), "n1", gone); err != nil {
		t.Fatal(err)
	}
	e1.Close() // horad dies: nothing else is told
	time.Sleep(200 * time.Millisecond)

	e2, err := New(Config{StateFile: file})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	sts, err := e2.Reattach(context.Background(), []string{"n1", "n2"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[nodes.StepKey]nodes.Status{}
	for _, st := range sts {
		got[st.Key] = st
	}
	if len(got) != 2 {
		t.Fatalf("reattached %d steps, want 2: %+v", len(got), sts)
	}
	if st := got[short]; st.State != nodes.StepExited || st.Ended.Sub(st.Started) != 100*time.Millisecond {
		t.Fatalf("step that ended while away: %+v", st)
	}
	if st := got[long]; st.State != nodes.StepRunning {
		t.Fatalf("running step: %+v", st)
	}
	if err := e2.Terminate(context.Background(), "n1", long, 0); err != nil {
		t.Fatal(err)
	}
	if st := next(t, e2); st.Key != long || st.Signal != int(syscall.SIGTERM) {
		t.Fatalf("after reattach: %+v", st)
	}
}
