package local

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"hora/nodes"
	"hora/nodes/nodestest"
)

// The test binary doubles as the shepherd (as horad's binary does) and as a
// helper that tries to launch as an unprivileged horad.
const (
	shepherdEnv = "HORA_LOCAL_TEST_SHEPHERD"
	refuseEnv   = "HORA_LOCAL_TEST_REFUSE" // value: state dir
	launchEnv   = "HORA_LOCAL_TEST_LAUNCH" // value: state dir:work dir
)

var shepherdArgv []string

func TestMain(m *testing.M) {
	if os.Getenv(shepherdEnv) == "1" {
		os.Exit(ShepherdMain(os.Args[1:]))
	}
	if dirs := os.Getenv(launchEnv); dirs != "" {
		shepherdArgv = []string{os.Args[0]}
		os.Exit(launchHelper(dirs))
	}
	if dir := os.Getenv(refuseEnv); dir != "" {
		shepherdArgv = []string{os.Args[0]}
		os.Exit(refuseHelper(dir))
	}
	// go test keeps its binary in a 0700 directory; a shepherd running as
	// another user could not execute it there.
	bin, cleanup, err := publicCopy(os.Args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shepherdArgv = []string{bin}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

func publicCopy(src string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "hora-local-test-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	if err := os.Chmod(dir, 0o755); err != nil {
		cleanup()
		return "", nil, err
	}
	in, err := os.Open(src)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	defer in.Close()
	dst := filepath.Join(dir, "shepherd.test")
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return dst, cleanup, nil
}

// refuseHelper runs as a non-root horad would and tries to launch a job of
// uid 0; it prints Launch's error.
func refuseHelper(dir string) int {
	e, err := New(Config{StateDir: dir, ShepherdArgv: shepherdArgv, ShepherdEnv: []string{shepherdEnv + "=1"}})
	if err != nil {
		fmt.Println("New:", err)
		return 1
	}
	defer e.Close()
	err = e.Launch(context.Background(), nodes.LaunchSpec{Key: nodes.StepKey{Job: 1, Step: -1}, Node: "local1",
		Script: []byte("#!/bin/sh\ntrue\n"), WorkDir: "/", Stdout: "/dev/null", UID: 0, GID: 0})
	fmt.Println(err)
	return 0
}

// launchHelper plays a horad that launches one step and then waits to be
// SIGKILLed.
func launchHelper(dirs string) int {
	state, work, _ := strings.Cut(dirs, ":")
	e, err := New(Config{StateDir: state, ShepherdArgv: shepherdArgv, ShepherdEnv: []string{shepherdEnv + "=1"}})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	s := spec(work, waitScript)
	if err := e.Launch(context.Background(), s); err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("launched", s.Key.Job)
	select {}
}

// publicDir returns a fresh directory that every user may enter (t.TempDir
// and its parent are 0700), owned by uid when the test runs as root.
func publicDir(t *testing.T, uid int) string {
	t.Helper()
	d := t.TempDir()
	for _, p := range []string{filepath.Dir(d), d} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(d, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func newExecutor(t *testing.T, stateDir string) *Executor {
	t.Helper()
	e, err := New(Config{StateDir: stateDir, ShepherdArgv: shepherdArgv, ShepherdEnv: []string{shepherdEnv + "=1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

var nextJob int64 = 100

// spec returns a LaunchSpec for the current user that writes its output
// into dir/out.
func spec(dir, script string) nodes.LaunchSpec {
	nextJob++
	return nodes.LaunchSpec{
		Key: nodes.StepKey{Job: nextJob, Step: -1}, Node: "local1",
		Script: []byte(script), WorkDir: dir, Stdout: filepath.Join(dir, "out"),
		Env: []string{"PATH=/usr/bin:/bin"},
		UID: uint32(os.Getuid()), GID: uint32(os.Getgid()),
		KillWait: 30 * time.Second,
	}
}

func launch(t *testing.T, e *Executor, s nodes.LaunchSpec) {
	t.Helper()
	if err := e.Launch(t.Context(), s); err != nil {
		t.Fatalf("Launch: %v", err)
	}
}

// waitExit returns the next Status on Exits, which must be for key.
func waitExit(t *testing.T, e *Executor, key nodes.StepKey) nodes.Status {
	t.Helper()
	select {
	case st, ok := <-e.Exits():
		if !ok {
			t.Fatal("Exits closed")
		}
		if st.Key != key {
			t.Fatalf("exit of %+v, want %+v", st.Key, key)
		}
		return st
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit for %+v", key)
	}
	panic("unreachable")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestExitCodeAndSeparateFiles(t *testing.T) {
	dir := t.TempDir()
	e := newExecutor(t, filepath.Join(dir, "state"))
	s := spec(dir, "#!/bin/sh\necho to-out\necho to-err >&2\necho args: \"$@\"\nexit 3\n")
	s.Stderr = filepath.Join(dir, "err")
	s.Args = []string{"a b", "c"}
	launch(t, e, s)
	st := waitExit(t, e, s.Key)
	if st.State != nodes.StepExited || st.ExitCode != 3 || st.Signal != 0 || st.TimedOut || st.Err != "" {
		t.Fatalf("status %+v, want exited with code 3", st)
	}
	if st.Pid <= 0 || st.Started.IsZero() || st.Ended.Before(st.Started) {
		t.Fatalf("status %+v: pid and times not filled in", st)
	}
	if got := readFile(t, s.Stdout); got != "to-out\nargs: a b c\n" {
		t.Errorf("stdout %q", got)
	}
	if got := readFile(t, s.Stderr); got != "to-err\n" {
		t.Errorf("stderr %q", got)
	}
	fi, err := os.Stat(s.Stdout)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("output file mode %v (%v), want 0644", fi.Mode(), err)
	}
}

func TestSignalRecorded(t *testing.T) {
	dir := t.TempDir()
	e := newExecutor(t, filepath.Join(dir, "state"))
	s := spec(dir, "#!/bin/sh\nkill -USR1 $$\n")
	launch(t, e, s)
	st := waitExit(t, e, s.Key)
	if st.State != nodes.StepExited || st.Signal != int(syscall.SIGUSR1) || st.TimedOut {
		t.Fatalf("status %+v, want signal %d", st, syscall.SIGUSR1)
	}
}

func TestStderrSharesStdout(t *testing.T) {
	dir := t.TempDir()
	e := newExecutor(t, filepath.Join(dir, "state"))
	s := spec(dir, "#!/bin/sh\necho 1\necho 2 >&2\necho 3\necho 4 >&2\n")
	launch(t, e, s)
	waitExit(t, e, s.Key)
	if got := readFile(t, s.Stdout); got != "1\n2\n3\n4\n" {
		t.Errorf("combined output %q, want the four lines in order", got)
	}
}

func TestAppendAndTruncate(t *testing.T) {
	dir := t.TempDir()
	e := newExecutor(t, filepath.Join(dir, "state"))
	out := filepath.Join(dir, "out")
	if err := os.WriteFile(out, []byte("old line that is long\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := spec(dir, "#!/bin/sh\necho new\n")
	s.Append = true
	launch(t, e, s)
	waitExit(t, e, s.Key)
	if got := readFile(t, out); got != "old line that is long\nnew\n" {
		t.Errorf("after append: %q", got)
	}
	s = spec(dir, "#!/bin/sh\necho new\n")
	launch(t, e, s)
	waitExit(t, e, s.Key)
	if got := readFile(t, out); got != "new\n" {
		t.Errorf("after truncate: %q", got)
	}
}

func TestEnvironmentIsExact(t *testing.T) {
	dir := t.TempDir()
	e := newExecutor(t, filepath.Join(dir, "state"))
	// /proc/$$/environ is what the shell was started with, before the
	// shell adds anything (dash exports PWD, for one).
	s := spec(dir, "#!/bin/sh\n/usr/bin/tr '\\0' '\\n' < /proc/$$/environ\n")
	s.Env = []string{"SLURM_JOB_ID=42", "WITH_SPACE=two words", "EMPTY=", "PATH=/nowhere"}
	t.Setenv("LEAK_CHECK", "must-not-appear")
	launch(t, e, s)
	waitExit(t, e, s.Key)
	got := strings.Split(strings.TrimSuffix(readFile(t, s.Stdout), "\n"), "\n")
	if !slices.Equal(got, s.Env) {
		t.Errorf("job environment %q, want exactly %q", got, s.Env)
	}
}

func TestWorkDirAndStdin(t *testing.T) {
	dir := t.TempDir()
	e := newExecutor(t, filepath.Join(dir, "state"))
	wd := filepath.Join(dir, "work dir")
	if err := os.Mkdir(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in")
	if err := os.WriteFile(in, []byte("from stdin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := spec(dir, "#!/bin/sh\n/bin/pwd -P\n/bin/cat\n")
	s.WorkDir, s.Stdin = wd, in
	launch(t, e, s)
	waitExit(t, e, s.Key)
	real, _ := filepath.EvalSymlinks(wd)
	if got := readFile(t, s.Stdout); got != real+"\nfrom stdin\n" {
		t.Errorf("output %q, want the working directory then stdin", got)
	}
	// Without Stdin the job reads /dev/null: cat ends at once.
	s = spec(dir, "#!/bin/sh\n/bin/cat; echo done\n")
	launch(t, e, s)
	if st := waitExit(t, e, s.Key); st.ExitCode != 0 || readFile(t, s.Stdout) != "done\n" {
		t.Errorf("status %+v output %q", st, readFile(t, s.Stdout))
	}
}

func TestScriptWithoutInterpreterLine(t *testing.T) {
	dir := t.TempDir()
	e := newExecutor(t, filepath.Join(dir, "state"))
	s := spec(dir, "echo plain sh; exit 4\n")
	launch(t, e, s)
	if st := waitExit(t, e, s.Key); st.ExitCode != 4 || readFile(t, s.Stdout) != "plain sh\n" {
		t.Errorf("status %+v output %q", st, readFile(t, s.Stdout))
	}
}

// Launch problems that are the user's to fix end the step with Err and a
// message in the job's own error file, instead of failing Launch.
func TestLaunchFailuresEndTheStep(t *testing.T) {
	dir := t.TempDir()
	e := newExecutor(t, filepath.Join(dir, "state"))

	s := spec(dir, "#!/bin/sh\necho never\n")
	s.Stdout = filepath.Join(dir, "missing", "out")
	launch(t, e, s)
	st := waitExit(t, e, s.Key)
	if st.State != nodes.StepExited || st.ExitCode == 0 || !strings.Contains(st.Err, "cannot open output file") ||
		!strings.Contains(st.Err, s.Stdout) {
		t.Errorf("missing output dir: status %+v", st)
	}

	s = spec(dir, "#!/bin/sh\necho never\n")
	s.WorkDir = filepath.Join(dir, "no-such-dir")
	launch(t, e, s)
	st = waitExit(t, e, s.Key)
	if !strings.Contains(st.Err, "working directory") || !strings.Contains(st.Err, s.WorkDir) {
		t.Errorf("missing workdir: status %+v", st)
	}
	if out := readFile(t, s.Stdout); !strings.Contains(out, "hora: error:") || strings.Contains(out, "never") {
		t.Errorf("missing workdir: job output %q should explain the failure", out)
	}

	s = spec(dir, "#!/bin/sh\n")
	s.Node = "../escape"
	if err := e.Launch(t.Context(), s); err == nil {
		t.Error("a node name with a slash was accepted")
	}
}

func TestOtherUsers(t *testing.T) {
	if os.Geteuid() != 0 {
		// Not root: this executor must refuse a job of another user.
		dir := t.TempDir()
		e := newExecutor(t, filepath.Join(dir, "state"))
		s := spec(dir, "#!/bin/sh\n")
		s.UID = uint32(os.Geteuid() + 1)
		err := e.Launch(t.Context(), s)
		want := fmt.Sprintf("horad runs as uid %d and cannot run jobs of uid %d; run horad as root", os.Geteuid(), s.UID)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Launch error %v, want %q", err, want)
		}
		return
	}
	const nobody = 65534
	t.Run("root runs the job as its owner", func(t *testing.T) {
		// horad's umask must not lock the user's shepherd out of its state.
		defer unix.Umask(unix.Umask(0o077))
		state := publicDir(t, 0)
		e := newExecutor(t, filepath.Join(state, "nodes"))
		home := publicDir(t, nobody)
		s := spec(home, "#!/bin/sh\n/usr/bin/id -u\n/usr/bin/id -g\n/usr/bin/id -G\n/usr/bin/stat -c %u \"$0\"\n")
		s.UID, s.GID, s.User = nobody, nobody, "nobody"
		launch(t, e, s)
		if st := waitExit(t, e, s.Key); st.ExitCode != 0 {
			t.Fatalf("status %+v", st)
		}
		want := "65534\n65534\n65534\n65534\n" // uid, gid, groups (root's dropped), script owner
		if got := readFile(t, s.Stdout); got != want {
			t.Errorf("id output %q, want %q", got, want)
		}
		fi, err := os.Stat(s.Stdout)
		if err != nil || fi.Sys().(*syscall.Stat_t).Uid != nobody {
			t.Errorf("output file not owned by nobody: %v", err)
		}
		// The user's shepherd reads Terminate's grace from horad's file.
		s = spec(home, "#!/bin/sh\ntrap 'echo got TERM' TERM\necho ready\nwhile :; do /bin/sleep 0.05; done\n")
		s.UID, s.GID, s.User, s.KillWait = nobody, nobody, "nobody", time.Hour
		launch(t, e, s)
		eventually(t, "the trap to be set", func() bool { b, _ := os.ReadFile(s.Stdout); return len(b) > 0 })
		if err := e.Terminate(t.Context(), s.Node, s.Key, 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if st := waitExit(t, e, s.Key); st.Signal != int(syscall.SIGKILL) {
			t.Errorf("status %+v, want KILL after Terminate's grace", st)
		}
	})
	t.Run("root opens outputs as the owner", func(t *testing.T) {
		// A directory nobody may not write: root could, the user cannot.
		state := publicDir(t, 0)
		e := newExecutor(t, state)
		rootOnly := publicDir(t, 0)
		s := spec(rootOnly, "#!/bin/sh\necho should not run\n")
		s.UID, s.GID, s.User = nobody, nobody, "nobody"
		launch(t, e, s)
		st := waitExit(t, e, s.Key)
		if !strings.Contains(st.Err, "permission denied") {
			t.Errorf("status %+v, want permission denied on the output file", st)
		}
		if _, err := os.Stat(s.Stdout); err == nil {
			t.Error("output file was created in a directory its user cannot write")
		}
	})
	t.Run("a non-root executor refuses other uids", func(t *testing.T) {
		state := publicDir(t, nobody)
		cmd := exec.Command(shepherdArgv[0])
		cmd.Env = []string{refuseEnv + "=" + filepath.Join(state, "nodes")}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, err := cmd.CombinedOutput()
		want := "horad runs as uid 65534 and cannot run jobs of uid 0; run horad as root to serve several users"
		if err != nil || !strings.Contains(string(out), want) {
			t.Fatalf("helper said %q (%v), want %q", out, err, want)
		}
	})
}

func TestTimeLimitTermThenKill(t *testing.T) {
	dir := t.TempDir()
	e := newExecutor(t, filepath.Join(dir, "state"))
	// The script survives TERM, so only the KILL after KillWait ends it.
	s := spec(dir, "#!/bin/sh\ntrap 'echo got TERM' TERM\necho started\nwhile :; do /bin/sleep 0.05; done\n")
	s.TimeLimit, s.KillWait = 300*time.Millisecond, 700*time.Millisecond
	launch(t, e, s)
	st := waitExit(t, e, s.Key)
	if !st.TimedOut || st.Signal != int(syscall.SIGKILL) {
		t.Fatalf("status %+v, want timed out and killed", st)
	}
	if got := readFile(t, s.Stdout); !strings.HasPrefix(got, "started\n") || !strings.Contains(got, "got TERM\n") {
		t.Errorf("output %q: TERM was not delivered before KILL", got)
	}
	// KILL must not come before the limit plus KillWait.
	if d := st.Ended.Sub(st.Started); d < s.TimeLimit+s.KillWait {
		t.Errorf("killed after %v, before TimeLimit+KillWait", d)
	}

	// A script that does not trap TERM ends by it, still as timed out.
	s = spec(dir, "#!/bin/sh\nexec /bin/sleep 1000\n")
	s.TimeLimit = 200 * time.Millisecond
	launch(t, e, s)
	if st := waitExit(t, e, s.Key); !st.TimedOut || st.Signal != int(syscall.SIGTERM) {
		t.Errorf("status %+v, want timed out by TERM", st)
	}
}

func TestTerminate(t *testing.T) {
	dir := t.TempDir()
	e := newExecutor(t, filepath.Join(dir, "state"))
	s := spec(dir, "#!/bin/sh\nexec /bin/sleep 1000\n")
	launch(t, e, s)
	if err := e.Terminate(t.Context(), s.Node, s.Key, time.Minute); err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, e, s.Key); st.Signal != int(syscall.SIGTERM) || st.TimedOut {
		t.Errorf("status %+v, want ended by TERM", st)
	}
	// Terminating it again, now that it has ended, is harmless.
	if err := e.Terminate(t.Context(), s.Node, s.Key, time.Minute); err != nil {
		t.Errorf("Terminate of an ended step: %v", err)
	}

	// A step that ignores TERM is killed once the grace has passed, even
	// though its KillWait is long: the grace is Terminate's.
	s = spec(dir, "#!/bin/sh\ntrap 'echo got TERM' TERM\necho ready\nwhile :; do /bin/sleep 0.05; done\n")
	s.KillWait = time.Hour
	launch(t, e, s)
	eventually(t, "the trap to be set", func() bool { b, _ := os.ReadFile(s.Stdout); return len(b) > 0 })
	if err := e.Terminate(t.Context(), s.Node, s.Key, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	st := waitExit(t, e, s.Key)
	if st.Signal != int(syscall.SIGKILL) || st.TimedOut || !strings.Contains(readFile(t, s.Stdout), "got TERM") {
		t.Errorf("status %+v output %q, want TERM then KILL", st, readFile(t, s.Stdout))
	}
}

func procState(pid int) byte {
	ps, err := readProcStat(pid)
	if err != nil {
		return 0
	}
	return ps.State
}

// runningStep returns what Reattach says about one running step.
func runningStep(t *testing.T, e *Executor, node string, key nodes.StepKey) nodes.Status {
	t.Helper()
	sts, err := e.Reattach(t.Context(), []string{node})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sts {
		if st.Key == key {
			if st.State != nodes.StepRunning || st.Pid <= 0 {
				t.Fatalf("step %+v: want running with a pid", st)
			}
			return st
		}
	}
	t.Fatalf("Reattach does not list %+v: %+v", key, sts)
	panic("unreachable")
}

func TestSignalStopCont(t *testing.T) {
	dir := t.TempDir()
	e := newExecutor(t, filepath.Join(dir, "state"))
	s := spec(dir, "#!/bin/sh\n/bin/sleep 1000 &\nwait\n")
	launch(t, e, s)
	leader := runningStep(t, e, s.Node, s.Key).Pid
	var rec shepherdRecord
	if err := readJSON(filepath.Join(e.stepDir(s.Node, s.Key), shepherdFile), &rec); err != nil {
		t.Fatal(err)
	}
	if err := e.Signal(t.Context(), s.Node, s.Key, nodes.Signum(syscall.SIGSTOP)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the job to stop", func() bool { return procState(leader) == 'T' })
	if st := procState(rec.Pid); st == 'T' {
		t.Error("the shepherd was stopped along with the job")
	}
	if err := e.Signal(t.Context(), s.Node, s.Key, nodes.Signum(syscall.SIGCONT)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the job to continue", func() bool { return procState(leader) == 'S' })
	// Signals reach the whole group: USR1 kills the background sleep too,
	// and the shell's wait then returns its status.
	if err := e.Signal(t.Context(), s.Node, s.Key, nodes.Signum(syscall.SIGUSR1)); err != nil {
		t.Fatal(err)
	}
	st := waitExit(t, e, s.Key)
	if st.Signal != int(syscall.SIGUSR1) {
		t.Errorf("status %+v, want ended by USR1", st)
	}
	if err := e.Signal(t.Context(), s.Node, s.Key, nodes.Signum(syscall.SIGCONT)); err == nil {
		t.Error("Signal to an ended step succeeded")
	}
}

// A step suspended at its time limit still gets TERM: the shepherd
// continues it.
func TestTimeLimitWhileStopped(t *testing.T) {
	dir := t.TempDir()
	e := newExecutor(t, filepath.Join(dir, "state"))
	s := spec(dir, "#!/bin/sh\nexec /bin/sleep 1000\n")
	s.TimeLimit = 500 * time.Millisecond
	launch(t, e, s)
	if err := e.Signal(t.Context(), s.Node, s.Key, nodes.Signum(syscall.SIGSTOP)); err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, e, s.Key); !st.TimedOut || st.Signal != int(syscall.SIGTERM) {
		t.Errorf("status %+v, want timed out by TERM", st)
	}
}

// waitScript ends with code 7 once the file "go" appears in its directory.
const waitScript = "#!/bin/sh\necho waiting\nwhile [ ! -e go ]; do /bin/sleep 0.02; done\nexit 7\n"

func TestReattachAfterExecutorDies(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	e1 := newExecutor(t, state)
	running := spec(dir, waitScript)
	launch(t, e1, running)
	otherDir := t.TempDir()
	ended := spec(otherDir, waitScript)
	ended.Node = "local2"
	launch(t, e1, ended)
	e1.Close() // horad dies; the shepherds do not

	// One step ends while no executor exists.
	if err := os.WriteFile(filepath.Join(otherDir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the step to end unobserved", func() bool {
		_, err := os.Stat(filepath.Join(state, "local2", ended.Key.Name(), userDirName, statusFile))
		return err == nil
	})

	e2 := newExecutor(t, state)
	sts, err := e2.Reattach(t.Context(), []string{"local1", "local2", "local3"})
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[nodes.StepKey]nodes.Status{}
	for _, st := range sts {
		byKey[st.Key] = st
	}
	if len(sts) != 2 {
		t.Fatalf("Reattach listed %+v, want the two steps", sts)
	}
	if st := byKey[running.Key]; st.State != nodes.StepRunning || st.Node != "local1" || st.Pid <= 0 {
		t.Errorf("running step reported as %+v", st)
	}
	if st := byKey[ended.Key]; st.State != nodes.StepExited || st.ExitCode != 7 || st.Node != "local2" {
		t.Errorf("step that ended while away reported as %+v", st)
	}
	if err := e2.Forget(t.Context(), "local1", running.Key); err == nil {
		t.Error("Forget of a running step succeeded")
	}

	// The re-attached step is watched: its end arrives on Exits.
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, e2, running.Key); st.State != nodes.StepExited || st.ExitCode != 7 {
		t.Errorf("exit after reattach %+v", st)
	}
	for _, s := range []nodes.LaunchSpec{running, ended} {
		if err := e2.Forget(t.Context(), s.Node, s.Key); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(e2.stepDir(s.Node, s.Key)); !os.IsNotExist(err) {
			t.Errorf("state of %+v still there after Forget (%v)", s.Key, err)
		}
	}
	if sts, _ := e2.Reattach(t.Context(), []string{"local1", "local2"}); len(sts) != 0 {
		t.Errorf("after Forget Reattach lists %+v", sts)
	}
}

// horad is SIGKILLed while its step runs: the shepherd carries on, and the
// next horad re-attaches and sees the real exit.
func TestHoradKilled(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	horad := exec.Command(shepherdArgv[0])
	horad.Env = []string{launchEnv + "=" + state + ":" + dir}
	out, err := horad.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := horad.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 64)
	n, _ := out.Read(line)
	var job int64
	if _, err := fmt.Sscanf(string(line[:n]), "launched %d", &job); err != nil {
		horad.Process.Kill()
		t.Fatalf("helper said %q", line[:n])
	}
	horad.Process.Kill()
	horad.Wait()

	e := newExecutor(t, state)
	key := nodes.StepKey{Job: job, Step: -1}
	st := runningStep(t, e, "local1", key)
	// Launch returns once the shepherd holds the step; the first line may
	// still be on its way.
	var b []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, _ = os.ReadFile(filepath.Join(dir, "out")); string(b) == "waiting\n" {
			break
		}
	}
	if string(b) != "waiting\n" {
		t.Errorf("job output %q while running", b)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if end := waitExit(t, e, key); end.State != nodes.StepExited || end.ExitCode != 7 || end.Pid != st.Pid {
		t.Errorf("exit %+v, want code 7 of pid %d", end, st.Pid)
	}
}

// A shepherd that dies without recording an end (node trouble) makes the
// step lost, both for a watching executor and for Reattach, and its job's
// process group is killed.
func TestShepherdDeathIsLost(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	e := newExecutor(t, state)
	s := spec(dir, waitScript)
	launch(t, e, s)
	pgid := runningStep(t, e, s.Node, s.Key).Pid
	t.Cleanup(func() { _ = unix.Kill(-pgid, unix.SIGKILL) })
	var rec shepherdRecord
	if err := readJSON(filepath.Join(e.stepDir(s.Node, s.Key), shepherdFile), &rec); err != nil {
		t.Fatal(err)
	}
	if err := unix.Kill(rec.Pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, e, s.Key); st.State != nodes.StepLost || st.Err == "" {
		t.Errorf("status %+v, want lost", st)
	}
	// Its job does not run on unsupervised (it may be started again).
	eventually(t, "the lost step's job killed", func() bool {
		return unix.Kill(-pgid, 0) == unix.ESRCH
	})
	e2 := newExecutor(t, state)
	sts, err := e2.Reattach(t.Context(), []string{s.Node})
	if err != nil || len(sts) != 1 || sts[0].State != nodes.StepLost {
		t.Errorf("Reattach %+v (%v), want the step lost", sts, err)
	}
	if err := e2.Forget(t.Context(), s.Node, s.Key); err != nil {
		t.Error(err)
	}
}

// A requeued job is launched again under the same key; the ended step's
// leftover state must not stand in the way, a running one must.
func TestRelaunchSameKey(t *testing.T) {
	dir := t.TempDir()
	e := newExecutor(t, filepath.Join(dir, "state"))
	s := spec(dir, "#!/bin/sh\nexit 1\n")
	launch(t, e, s)
	waitExit(t, e, s.Key)
	s.Script = []byte(waitScript)
	launch(t, e, s)
	if err := e.Launch(t.Context(), s); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second Launch of a running step: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	if st := waitExit(t, e, s.Key); st.ExitCode != 7 {
		t.Errorf("status %+v", st)
	}
}

// Two runs of one step (a requeued job) are two steps on the node: the
// new run starts while the old one still runs, each ends with its own
// status, and forgetting one leaves the other whole. A directory whose
// name and shepherd record disagree on the run is never taken as running.
func TestRunsOfOneStepKeepApart(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	e := newExecutor(t, state)
	old := spec(dir, waitScript)
	launch(t, e, old)
	pgid := runningStep(t, e, old.Node, old.Key).Pid
	t.Cleanup(func() { _ = unix.Kill(-pgid, unix.SIGKILL) })
	next := old
	next.Key.Run = 1
	next.Script = []byte("#!/bin/sh\nexit 3\n")
	next.Stdout = filepath.Join(dir, "out1")
	launch(t, e, next)
	if st := waitExit(t, e, next.Key); st.State != nodes.StepExited || st.ExitCode != 3 {
		t.Fatalf("new run: %+v, want exit 3", st)
	}
	if err := e.Forget(t.Context(), old.Node, old.Key); err == nil {
		t.Error("Forget of the old run while it runs: no error")
	}
	if got := runningStep(t, e, old.Node, old.Key); got.Pid != pgid {
		t.Errorf("old run after the new one ended: %+v", got)
	}
	// A directory renamed to another run keeps its record's run.
	moved := next.Key
	moved.Run = 4
	if err := os.Rename(e.stepDir(next.Node, next.Key), e.stepDir(next.Node, moved)); err != nil {
		t.Fatal(err)
	}
	e2 := newExecutor(t, state)
	sts, err := e2.Reattach(t.Context(), []string{old.Node})
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[nodes.StepKey]nodes.Status{}
	for _, s := range sts {
		byKey[s.Key] = s
	}
	if s := byKey[old.Key]; len(sts) != 2 || s.State != nodes.StepRunning {
		t.Errorf("Reattach: %+v, want the old run running and the moved one", sts)
	}
	if s := byKey[moved]; s.State != nodes.StepLost || !strings.Contains(s.Err, "run 1") {
		t.Errorf("a directory of run 4 holding run 1's record: %+v, want lost", s)
	}
	if err := e2.Forget(t.Context(), next.Node, moved); err != nil {
		t.Error(err)
	}
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	if st := waitExit(t, e, old.Key); st.ExitCode != 7 {
		t.Errorf("old run: %+v, want exit 7", st)
	}
	if err := e.Forget(t.Context(), old.Node, old.Key); err != nil {
		t.Error(err)
	}
	if ents, _ := os.ReadDir(filepath.Join(state, old.Node)); len(ents) != 0 {
		t.Errorf("left on the node: %v", ents)
	}
}

// A step of a horad that did not number runs (its directory has no run)
// is found, watched and forgotten under its unnumbered key.
func TestUnnumberedStep(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	e := newExecutor(t, state)
	s := spec(dir, waitScript)
	s.Key.Run = nodes.LegacyRun
	launch(t, e, s)
	if _, err := os.Stat(filepath.Join(state, s.Node, fmt.Sprintf("%d.batch", s.Key.Job))); err != nil {
		t.Fatal(err)
	}
	e2 := newExecutor(t, state)
	sts, err := e2.Reattach(t.Context(), []string{s.Node})
	if err != nil || len(sts) != 1 || sts[0].Key != s.Key || sts[0].State != nodes.StepRunning {
		t.Fatalf("Reattach: %+v %v, want the unnumbered step running", sts, err)
	}
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	if st := waitExit(t, e2, s.Key); st.ExitCode != 7 {
		t.Errorf("status %+v", st)
	}
	if err := e2.Forget(t.Context(), s.Node, s.Key); err != nil {
		t.Error(err)
	}
}

// BenchmarkLaunchToFirstLine measures from Launch to the first byte the
// job writes. The output is a FIFO, so the read returns the moment the
// byte is written, with no polling in the measurement.
func BenchmarkLaunchToFirstLine(b *testing.B) {
	dir := b.TempDir()
	e, err := New(Config{StateDir: filepath.Join(dir, "state"), ShepherdArgv: shepherdArgv,
		ShepherdEnv: []string{shepherdEnv + "=1"}})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	buf := make([]byte, 1)
	var firstLine time.Duration
	runs := 0
	for b.Loop() {
		s := spec(dir, "#!/bin/sh\necho x\n")
		s.Stdout = fifo
		opened := make(chan *os.File, 1)
		go func() { // blocks until the shepherd opens the FIFO for writing
			f, err := os.Open(fifo)
			if err != nil {
				panic(err)
			}
			opened <- f
		}()
		start := time.Now()
		if err := e.Launch(ctx, s); err != nil {
			b.Fatal(err)
		}
		f := <-opened
		if _, err := f.Read(buf); err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		f.Close()
		st := <-e.Exits()
		if st.Err != "" || st.ExitCode != 0 {
			b.Fatalf("status %+v", st)
		}
		if err := e.Forget(ctx, st.Node, st.Key); err != nil {
			b.Fatal(err)
		}
		firstLine += elapsed
		runs++
	}
	// ns/op also counts waiting for the exit and Forget; this is the
	// latency a user sees.
	b.ReportMetric(float64(firstLine.Microseconds())/float64(runs)/1000, "ms-to-first-line")
}

// SetTimeLimit moves a running step's limit both ways: a longer one lets a
// step that would have timed out finish; a shorter one (already past) ends
// the step as timed out at once.
func TestSetTimeLimit(t *testing.T) {
	dir := t.TempDir()
	e := newExecutor(t, filepath.Join(dir, "state"))
	s := spec(dir, "#!/bin/sh\n/bin/sleep 1.5\nexit 4\n")
	s.TimeLimit = 700 * time.Millisecond
	launch(t, e, s)
	if err := e.SetTimeLimit(t.Context(), s.Node, s.Key, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, e, s.Key); st.TimedOut || st.ExitCode != 4 {
		t.Fatalf("status %+v: the moved limit did not apply", st)
	}

	s = spec(dir, "#!/bin/sh\nexec /bin/sleep 1000\n")
	s.TimeLimit = 300 * time.Second
	launch(t, e, s)
	time.Sleep(200 * time.Millisecond)
	if err := e.SetTimeLimit(t.Context(), s.Node, s.Key, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, e, s.Key); !st.TimedOut || st.Signal != int(syscall.SIGTERM) {
		t.Fatalf("status %+v, want timed out by TERM", st)
	}
	if err := e.SetTimeLimit(t.Context(), s.Node, s.Key, time.Second); err == nil {
		t.Fatal("SetTimeLimit on an ended step succeeded")
	}
}

// A launch that the node's full disk cuts short, wherever, either starts the
// job with its pid recorded or does not start it: horad takes a failed
// launch, or a lost step without a pid, for a job that never ran, and runs
// it again. The fault harness found a --no-requeue job run twice when a full
// disk refused the pid file after the job had started. The state directory
// is a tmpfs with room for k files, for each k up to the first launch that
// completes. Whether the job started is seen without a race with the
// shepherd's kill: the kernel reports the open of the script's interpreter
// (a copy of /bin/sh watched with inotify) when it executes the script.
func TestLaunchOnFullDiskStartsNothingUnrecorded(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("mounting a small tmpfs needs root (CI runs the tests as root)")
	}
	work := t.TempDir()
	interp, executed := nodestest.ExecWatch(t, work)
	for k := 2; ; k++ {
		if k > 64 {
			t.Fatal("no launch completed with room for 64 files")
		}
		state := filepath.Join(t.TempDir(), "state")
		if err := os.Mkdir(state, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=4m,nr_inodes=%d,mode=0755", k),
			"hora-test-disk", state).CombinedOutput(); err != nil {
			t.Fatalf("mount tmpfs on %s: %v: %s", state, err, out)
		}
		done := func() bool {
			defer exec.Command("umount", "-l", state).Run()
			e, err := New(Config{StateDir: state, ShepherdArgv: shepherdArgv, ShepherdEnv: []string{shepherdEnv + "=1"}})
			if err != nil {
				return false // no room for the executor's own directories
			}
			defer e.Close()
			executed()
			s := spec(work, "#!"+interp+"\ntrue\n")
			if err := e.Launch(t.Context(), s); err != nil {
				if executed() {
					t.Errorf("room for %d files: the launch failed (%v), but the job had started", k, err)
				}
				return false
			}
			st := waitExit(t, e, s.Key)
			if st.State == nodes.StepLost && st.Pid == 0 && executed() {
				t.Errorf("room for %d files: the step is lost with no pid (%+v), but the job had started", k, st)
			}
			return st.State == nodes.StepExited && st.ExitCode == 0
		}()
		if t.Failed() || done {
			return
		}
	}
}

// Steps that share their output file (a divisible job's chunks) keep each
// other's lines: the first truncates the file, the second appends, and the
// first, writing last, writes at the end rather than over the second's line
// (a make test run under a CPU hog lost a chunk's line that way).
func TestSharedOutputKeepsEveryStepsLines(t *testing.T) {
	dir := t.TempDir()
	e := newExecutor(t, filepath.Join(dir, "state"))
	gate := filepath.Join(dir, "gate")
	first := spec(dir, "#!/bin/sh\nwhile [ ! -e "+gate+" ]; do sleep 0.01; done\necho first step\n")
	first.SharedOutput = true
	launch(t, e, first)
	second := spec(dir, "#!/bin/sh\necho second\n")
	second.Append, second.SharedOutput = true, true
	launch(t, e, second)
	if st := waitExit(t, e, second.Key); st.ExitCode != 0 {
		t.Fatalf("second step: %+v", st)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, e, first.Key); st.ExitCode != 0 {
		t.Fatalf("first step: %+v", st)
	}
	if out := readFile(t, first.Stdout); out != "second\nfirst step\n" {
		t.Errorf("shared output %q, want both lines, the second step's first", out)
	}
}
