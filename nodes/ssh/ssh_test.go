package ssh_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hora/nodes"
	hssh "hora/nodes/ssh"
	"hora/nodes/ssh/sshtest"
)

// env is a test cluster with an executor on it.
type env struct {
	c        *sshtest.Cluster
	e        *hssh.Executor
	state    string // node-side state directory (shared by the namespaces)
	out      string // a directory the job owner may write
	uid, gid uint32
	exits    *collector
	events   chan hssh.NodeEvent
}

func fastConfig(c *sshtest.Cluster, state string) hssh.Config {
	cfg := hssh.Config{
		KnownHostsFile:    c.KnownHosts,
		IdentityFile:      c.IdentityFile,
		StateDir:          state,
		ConnectTimeout:    2 * time.Second,
		KeepaliveInterval: time.Second,
		KeepaliveTimeout:  time.Second,
		ReconnectMin:      100 * time.Millisecond,
		ReconnectMax:      time.Second,
		CommandTimeout:    10 * time.Second,
		PollInterval:      100 * time.Millisecond,
		ProbeInterval:     300 * time.Millisecond,
		ProbeTimeout:      3 * time.Second,
		ProbeMisses:       2,
	}
	for _, h := range c.Hosts {
		cfg.Nodes = append(cfg.Nodes, hssh.Node{Name: h.Name, Address: h.Addr})
		if h.Systemd {
			// sshd on a systemd host opens a logind session per login,
			// which under a loaded machine took more than 2 s: a task's
			// connection then failed its handshake and the test with it
			// (TestRunTaskInScope in a clean-clone make test beside a
			// fuzzer). The production default.
			cfg.ConnectTimeout = 10 * time.Second
		}
	}
	return cfg
}

func start(t testing.TB, n int, opts ...sshtest.Option) *env {
	t.Helper()
	c := sshtest.StartCluster(t, n, opts...)
	v := &env{c: c, state: filepath.Join(c.Dir, "state"), out: filepath.Join(c.Dir, "out")}
	if err := os.Mkdir(v.out, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(v.out, 0o777); err != nil {
		t.Fatal(err)
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("no user nobody: %v", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	v.uid, v.gid = uint32(uid), uint32(gid)
	v.open(t)
	return v
}

// open (re)creates the executor.
func (v *env) open(t testing.TB) {
	t.Helper()
	e, err := hssh.New(fastConfig(v.c, v.state))
	if err != nil {
		t.Fatal(err)
	}
	v.e = e
	v.exits = collect(e)
	v.events = make(chan hssh.NodeEvent, 100)
	go func() {
		for ev := range e.NodeEvents() {
			v.events <- ev
		}
	}()
	t.Cleanup(func() { e.Close() })
}

func (v *env) spec(key nodes.StepKey, node, script string) nodes.LaunchSpec {
	return nodes.LaunchSpec{
		Key: key, Node: node, Script: []byte(script),
		WorkDir: v.out,
		Stdout:  filepath.Join(v.out, fmt.Sprintf("%d.%d.out", key.Job, key.Step)),
		Env:     []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "HORA_JOB=" + strconv.FormatInt(key.Job, 10)},
		UID:     v.uid, GID: v.gid, User: "nobody",
		KillWait: time.Second,
	}
}

func (v *env) launch(t testing.TB, spec nodes.LaunchSpec) {
	t.Helper()
	if err := v.e.Launch(t.Context(), spec); err != nil {
		t.Fatalf("Launch %v on %s: %v", spec.Key, spec.Node, err)
	}
}

// collector gathers Exits so tests can wait for particular steps.
type collector struct {
	mu   sync.Mutex
	got  map[nodes.StepKey]nodes.Status
	more chan struct{}
}

func collect(e *hssh.Executor) *collector {
	c := &collector{got: map[nodes.StepKey]nodes.Status{}, more: make(chan struct{}, 1)}
	go func() {
		for st := range e.Exits() {
			c.mu.Lock()
			c.got[st.Key] = st
			c.mu.Unlock()
			select {
			case c.more <- struct{}{}:
			default:
			}
		}
	}()
	return c
}

func (c *collector) wait(t testing.TB, key nodes.StepKey, limit time.Duration) nodes.Status {
	t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		st, ok := c.got[key]
		c.mu.Unlock()
		if ok {
			return st
		}
		select {
		case <-c.more:
		case <-deadline.C:
			t.Fatalf("step %v: no exit reported within %s", key, limit)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestJobsAsNobodyOnEachHost runs a step as nobody on every host and checks
// where it ran, as whom, its output, stderr, environment and exit code.
func TestJobsAsNobodyOnEachHost(t *testing.T) {
	v := start(t, 3)
	script := `#!/bin/sh
echo "uid=$(id -u) gid=$(id -g)"
ip -o -4 addr show dev eth0 | awk '{print $4}'
echo "cwd=$(pwd) job=$HORA_JOB args=$#:$1:$2"
env | sort | tr '\n' ' '; echo
echo "to stderr" >&2
exit $HORA_JOB
`
	for i, h := range v.c.Hosts {
		key := nodes.StepKey{Job: int64(40 + i), Step: -1}
		spec := v.spec(key, h.Name, script)
		spec.Args = []string{"first arg", "second"}
		spec.Stderr = filepath.Join(v.out, h.Name+".err")
		v.launch(t, spec)
	}
	for i, h := range v.c.Hosts {
		key := nodes.StepKey{Job: int64(40 + i), Step: -1}
		st := v.exits.wait(t, key, 30*time.Second)
		if st.State != nodes.StepExited || st.ExitCode != 40+i || st.Signal != 0 || st.TimedOut || st.Err != "" {
			t.Errorf("%s: status %+v, want exited with code %d", h.Name, st, 40+i)
		}
		if st.Node != h.Name || st.Pid <= 1 || st.Ended.Before(st.Started) {
			t.Errorf("%s: status %+v: node, pid or times wrong", h.Name, st)
		}
		out := readFile(t, filepath.Join(v.out, fmt.Sprintf("%d.-1.out", 40+i)))
		want := fmt.Sprintf("uid=%d gid=%d\n%s/24\ncwd=%s job=%d args=2:first arg:second\n", v.uid, v.gid, h.Addr, v.out, 40+i)
		if !strings.HasPrefix(out, want) {
			t.Errorf("%s: stdout\n%s\nwant it to start with\n%s", h.Name, out, want)
		}
		// Exactly the requested environment (sh itself adds PWD; nothing of
		// root's or sshd's may leak in).
		for _, leak := range []string{"SSH_", "USER=", "LOGNAME=", "MAIL=", "SHELL="} {
			if strings.Contains(out, leak) {
				t.Errorf("%s: environment leaked %s: %s", h.Name, leak, out)
			}
		}
		if e := readFile(t, filepath.Join(v.out, h.Name+".err")); e != "to stderr\n" {
			t.Errorf("%s: stderr %q", h.Name, e)
		}
		// The node-side state is per node, laid out as nodes/local's.
		for _, f := range []string{"shepherd", "user/script", "user/pid", "user/status"} {
			if _, err := os.Stat(filepath.Join(v.state, h.Name, fmt.Sprintf("%d.batch.r0", 40+i), f)); err != nil {
				t.Errorf("%s: %v", h.Name, err)
			}
		}
		if err := v.e.Forget(t.Context(), h.Name, key); err != nil {
			t.Errorf("Forget: %v", err)
		}
		if _, err := os.Stat(filepath.Join(v.state, h.Name, fmt.Sprintf("%d.batch.r0", 40+i))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: step directory still there after Forget: %v", h.Name, err)
		}
	}
}

// TestLaunchFailureIsTheStepsEnd: an output file the owner may not create
// is the user's problem: Launch succeeds, the step ends with Err.
func TestLaunchFailureIsTheStepsEnd(t *testing.T) {
	v := start(t, 1)
	locked := filepath.Join(v.c.Dir, "root-only")
	if err := os.Mkdir(locked, 0o700); err != nil {
		t.Fatal(err)
	}
	key := nodes.StepKey{Job: 1, Step: 0}
	spec := v.spec(key, "n1", "#!/bin/sh\necho never\n")
	spec.Stdout = filepath.Join(locked, "out")
	v.launch(t, spec)
	st := v.exits.wait(t, key, 30*time.Second)
	if st.State != nodes.StepExited || st.ExitCode != 1 || !strings.Contains(st.Err, "cannot open output file "+spec.Stdout+": permission denied") {
		t.Errorf("status %+v, want exit 1 with a permission error naming the file", st)
	}
	if _, err := os.Stat(spec.Stdout); err == nil {
		t.Error("the output file was created by someone other than the job's owner")
	}

	key2 := nodes.StepKey{Job: 1, Step: 1}
	spec = v.spec(key2, "n1", "#!/bin/sh\necho never\n")
	spec.WorkDir = filepath.Join(v.out, "missing")
	v.launch(t, spec)
	st = v.exits.wait(t, key2, 30*time.Second)
	if st.ExitCode != 1 || !strings.Contains(st.Err, "cannot chdir to working directory") {
		t.Errorf("status %+v, want a working directory error", st)
	}
	if out := readFile(t, spec.Stdout); !strings.HasPrefix(out, "hora: error: cannot chdir") {
		t.Errorf("the job's error file says %q, want the reason", out)
	}
}

// TestScriptWithoutShebangAndExitBySignal: a script without #! runs under
// sh; a job killed by a signal reports the signal.
func TestScriptWithoutShebangAndExitBySignal(t *testing.T) {
	v := start(t, 1)
	k1, k2 := nodes.StepKey{Job: 2, Step: 0}, nodes.StepKey{Job: 2, Step: 1}
	v.launch(t, v.spec(k1, "n1", "echo no shebang\nexit 0\n"))
	v.launch(t, v.spec(k2, "n1", "#!/bin/sh\nkill -s KILL $$\n"))
	if st := v.exits.wait(t, k1, 30*time.Second); st.ExitCode != 0 || st.Signal != 0 || st.Err != "" {
		t.Errorf("no-shebang status %+v", st)
	}
	if out := readFile(t, v.spec(k1, "n1", "").Stdout); out != "no shebang\n" {
		t.Errorf("no-shebang output %q", out)
	}
	if st := v.exits.wait(t, k2, 30*time.Second); st.Signal != 9 || st.ExitCode != 0 {
		t.Errorf("killed status %+v, want signal 9", st)
	}
}

// TestTimeLimit: the node-side wrapper sends TERM at the limit and KILL
// after KillWait to a job that ignores TERM, and records TimedOut.
func TestTimeLimit(t *testing.T) {
	v := start(t, 2)
	soft := nodes.StepKey{Job: 3, Step: 0}
	spec := v.spec(soft, "n1", "#!/bin/sh\nsleep 300\n")
	spec.TimeLimit = time.Second
	v.launch(t, spec)
	hard := nodes.StepKey{Job: 3, Step: 1}
	spec = v.spec(hard, "n2", "#!/bin/sh\ntrap 'echo got TERM' TERM\nwhile :; do sleep 0.1; done\n")
	spec.TimeLimit, spec.KillWait = time.Second, time.Second
	v.launch(t, spec)
	if st := v.exits.wait(t, soft, 30*time.Second); !st.TimedOut || st.Signal != 15 {
		t.Errorf("soft: %+v, want timed out by TERM", st)
	}
	st := v.exits.wait(t, hard, 30*time.Second)
	if !st.TimedOut || st.Signal != 9 {
		t.Errorf("hard: %+v, want timed out by KILL", st)
	}
	if out := readFile(t, spec.Stdout); !strings.Contains(out, "got TERM") {
		t.Errorf("the job never saw TERM: %q", out)
	}
}

// TestTerminateAndSignal: Terminate ends a job with TERM, or KILL after the
// grace when it ignores TERM; STOP and CONT reach the job's process group.
func TestTerminateAndSignal(t *testing.T) {
	v := start(t, 1)
	ctx := t.Context()
	a := nodes.StepKey{Job: 4, Step: 0}
	b := nodes.StepKey{Job: 4, Step: 1}
	v.launch(t, v.spec(a, "n1", "#!/bin/sh\nsleep 300 & wait\n"))
	trapped := filepath.Join(v.out, "trapped")
	v.launch(t, v.spec(b, "n1", "#!/bin/sh\ntrap '' TERM\n: > "+trapped+"\nsleep 300\n"))
	waitFile(t, trapped) // a TERM before the trap would end it by TERM

	sts, err := v.e.Reattach(ctx, []string{"n1"})
	if err != nil {
		t.Fatal(err)
	}
	pg := map[nodes.StepKey]int{}
	for _, st := range sts {
		if st.State != nodes.StepRunning {
			t.Fatalf("%+v: want running", st)
		}
		pg[st.Key] = st.Pid
	}
	if err := v.e.Signal(ctx, "n1", a, nodes.Signum(19)); err != nil { // SIGSTOP
		t.Fatal(err)
	}
	waitProcState(t, pg[a], 'T')
	if err := v.e.Signal(ctx, "n1", a, nodes.Signum(18)); err != nil { // SIGCONT
		t.Fatal(err)
	}
	waitProcState(t, pg[a], 'S')
	// A stopped job still ends on Terminate (TERM is followed by CONT).
	if err := v.e.Signal(ctx, "n1", a, nodes.Signum(19)); err != nil {
		t.Fatal(err)
	}
	waitProcState(t, pg[a], 'T')
	if err := v.e.Terminate(ctx, "n1", a, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if st := v.exits.wait(t, a, 20*time.Second); st.Signal != 15 || st.TimedOut {
		t.Errorf("terminated: %+v, want signal 15", st)
	}
	if err := v.e.Terminate(ctx, "n1", b, time.Second); err != nil {
		t.Fatal(err)
	}
	if st := v.exits.wait(t, b, 20*time.Second); st.Signal != 9 {
		t.Errorf("TERM-ignoring job: %+v, want signal 9 after the grace", st)
	}
	// Ended steps: Terminate is a no-op, Signal says why it cannot.
	if err := v.e.Terminate(ctx, "n1", a, 0); err != nil {
		t.Errorf("Terminate of an ended step: %v", err)
	}
	if err := v.e.Signal(ctx, "n1", a, nodes.Signum(15)); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("Signal of an ended step: %v", err)
	}
	if err := v.e.Signal(ctx, "n1", nodes.StepKey{Job: 99, Step: 0}, nodes.Signum(15)); err == nil || !strings.Contains(err.Error(), "no step") {
		t.Errorf("Signal of an unknown step: %v", err)
	}
}

// waitProcState waits (bounded) until process pid is in state s.
func waitProcState(t *testing.T, pid int, s byte) {
	t.Helper()
	var last byte
	for deadline := time.Now().Add(hang); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		last = sshtest.ProcState(pid)
		if last == 0 {
			t.Fatalf("process %d is gone, want state %c", pid, s)
		}
		if last == s {
			return
		}
	}
	t.Fatalf("process %d in state %c, want %c", pid, last, s)
}

// TestSetTimeLimit: a moved limit replaces the wrapper's timer — a longer
// one lets a job that would have timed out finish, a shorter one already
// past ends it as timed out at once.
func TestSetTimeLimit(t *testing.T) {
	v := start(t, 1)
	// The job outlives its first limit only if SetTimeLimit arrives before
	// that limit: on a loaded machine it may not, and that attempt proves
	// nothing, so it is stopped and tried again with a limit twice as long.
	gate := filepath.Join(v.out, "go")
	for limit, step := 2*time.Second, 10; ; limit, step = 2*limit, step+1 {
		longer := nodes.StepKey{Job: 4, Step: step}
		spec := v.spec(longer, "n1", "#!/bin/sh\nwhile [ ! -e "+gate+" ]; do sleep 0.1; done\nexit 4\n")
		spec.TimeLimit = limit
		launched := time.Now()
		v.launch(t, spec)
		if err := v.e.SetTimeLimit(t.Context(), "n1", longer, time.Hour); err != nil {
			t.Fatal(err)
		}
		if time.Since(launched) >= limit/2 && limit < 30*time.Second {
			_ = v.e.Terminate(t.Context(), "n1", longer, 0)
			v.exits.wait(t, longer, hang)
			continue
		}
		// Past the first limit (counted by the node from a start after
		// launched), the job is still there to be let go.
		time.Sleep(time.Until(launched.Add(limit + time.Second)))
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if st := v.exits.wait(t, longer, hang); st.TimedOut || st.ExitCode != 4 {
			t.Errorf("longer limit: %+v, want exit 4 without time-out", st)
		}
		break
	}
	shorter := nodes.StepKey{Job: 4, Step: 1}
	spec := v.spec(shorter, "n1", "#!/bin/sh\nsleep 300\n")
	spec.TimeLimit = 5 * time.Minute
	v.launch(t, spec)
	time.Sleep(1500 * time.Millisecond)
	start := time.Now()
	if err := v.e.SetTimeLimit(t.Context(), "n1", shorter, time.Second); err != nil {
		t.Fatal(err)
	}
	if st := v.exits.wait(t, shorter, 30*time.Second); !st.TimedOut || st.Signal != 15 {
		t.Errorf("shorter limit: %+v, want timed out by TERM", st)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("a limit already past took %v to apply", d)
	}
	if err := v.e.SetTimeLimit(t.Context(), "n1", shorter, time.Minute); err == nil {
		t.Error("SetTimeLimit on an ended step succeeded")
	}
}

// A moved limit holds under a storm of USR1s. The limit of an hour is in
// place and USR1 comes without a pause from the moment the wrapper catches
// it until past the old limit, so the signals land everywhere in the
// wrapper's start and in the watcher's. Three wrappers failed it: one that
// replaced its timer on a USR1 handled while the first timer was being set
// (TestSetTimeLimit failed so under a CPU hog), one whose TERM to a timer
// just forked was lost, and one that rearmed inside its trap, where dash's
// $? is not to be trusted (the job was killed long before even the old
// limit).
func TestMovedLimitHoldsUnderSignals(t *testing.T) {
	v := start(t, 1)
	key := nodes.StepKey{Job: 5, Step: 0}
	gate := filepath.Join(v.out, "go5")
	spec := v.spec(key, "n1", "#!/bin/sh\nwhile [ ! -e "+gate+" ]; do sleep 0.1; done\nexit 4\n")
	spec.TimeLimit = 2 * time.Second
	dir := filepath.Join(v.state, "n1", key.Name())
	stop := make(chan struct{})
	sent := make(chan int, 1)
	go func() { sent <- usr1Storm(dir, stop) }()
	launched := time.Now()
	v.launch(t, spec)
	// Past the old limit (counted from a start after launched) the job is
	// still there to be let go.
	time.Sleep(time.Until(launched.Add(spec.TimeLimit + time.Second)))
	close(stop)
	if n := <-sent; n == 0 {
		t.Fatal("no USR1 reached the wrapper")
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := v.exits.wait(t, key, hang); st.TimedOut || st.ExitCode != 4 {
		werr, _ := os.ReadFile(filepath.Join(dir, "wrapper.err"))
		t.Errorf("moved limit under USR1s: %+v, want exit 4 without time-out; the wrapper's stderr:\n%s", st, werr)
	}
}

// usr1Storm writes a limit of an hour into the step directory dir once it
// exists, waits for the step's wrapper to catch USR1 (before that the
// signal would kill it), and sends it USR1 back to back until stop is
// closed or the wrapper is gone. It returns how many it sent.
func usr1Storm(dir string, stop <-chan struct{}) int {
	wrapper := []byte("hora-wrapper\x00" + dir + "\x00")
	pid, n := 0, 0
	for {
		select {
		case <-stop:
			return n
		default:
		}
		if pid == 0 {
			if _, err := os.Stat(dir); err != nil {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, "limit"), []byte("3600\n"), 0o644); err != nil {
				continue
			}
			pid = findProcess(wrapper)
			continue
		}
		if n == 0 && !catches(pid, syscall.SIGUSR1) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGUSR1) != nil {
			return n
		}
		n++
	}
}

// findProcess returns the pid of a process whose command line contains
// args, or 0.
func findProcess(args []byte) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(cl, args) {
			return pid
		}
	}
	return 0
}

// catches reports whether process pid has a handler for sig (SigCgt).
func catches(pid int, sig syscall.Signal) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "SigCgt:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<(uint(sig)-1)) != 0
		}
	}
	return false
}

// A probe reads the node's kernel and boot time (scontrol show node OS=,
// BootTime=): the test hosts share this machine's kernel, so they must be
// this machine's.
func TestProbeReadsSystem(t *testing.T) {
	v := start(t, 1)
	if err := v.e.Probe(t.Context(), "n1"); err != nil {
		t.Fatal(err)
	}
	sys, ok := v.e.NodeSystem("n1")
	out, err := exec.Command("uname", "-s", "-r", "-v").Output()
	if err != nil {
		t.Fatal(err)
	}
	stat, _ := os.ReadFile("/proc/stat")
	boot, _ := nodes.ParseBootTime(string(stat))
	if !ok || sys.OS != strings.TrimSpace(string(out)) || !sys.Boot.Equal(boot) || boot.IsZero() {
		t.Fatalf("NodeSystem = %+v, %v; want %q booted %v", sys, ok, strings.TrimSpace(string(out)), boot)
	}
	if _, ok := v.e.NodeSystem("nosuch"); ok {
		t.Fatal("an unknown node has a system")
	}
}

// ProbeResources reads the node's CPUs, memory and GPUs on the node: the
// test hosts share this machine's kernel, so they must match it.
func TestProbeResources(t *testing.T) {
	v := start(t, 1)
	r, err := v.e.ProbeResources(t.Context(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	mem, _ := os.ReadFile("/proc/meminfo")
	var kb int64
	for _, ln := range strings.Split(string(mem), "\n") {
		if f := strings.Fields(ln); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	gpus, _ := filepath.Glob("/dev/nvidia[0-9]*")
	if r.CPUs != runtime.NumCPU() || r.MemMB != kb/1024 || r.GPUs != len(gpus) {
		t.Fatalf("probed %+v, want %d CPUs, %d MiB, %d GPUs", r, runtime.NumCPU(), kb/1024, len(gpus))
	}
	if _, err := v.e.ProbeResources(t.Context(), "nosuch"); err == nil {
		t.Fatal("an unknown node was probed")
	}
}

// TestSharedOutputAppendsOnSSHNode: a step whose output another step also
// writes (a divisible job's first chunk) truncates its file at its start
// and then writes at the end, so a line another chunk appended meanwhile
// stays. Before, the wrapper's truncating open wrote at its own offset 0
// over it (as the local shepherd did before SharedOutput).
func TestSharedOutputAppendsOnSSHNode(t *testing.T) {
	v := start(t, 1)
	key := nodes.StepKey{Job: 94, Step: 0}
	spec := v.spec(key, "n1", "#!/bin/sh\nwhile [ ! -e "+v.out+"/go ]; do sleep 0.05; done\necho chunk-0\n")
	spec.SharedOutput = true
	if err := os.WriteFile(spec.Stdout, []byte("a line from before the job\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(spec.Stdout, int(v.uid), int(v.gid)); err != nil { // the job's owner's, as its earlier run left it
		t.Fatal(err)
	}
	v.launch(t, spec)
	// The launch has truncated the file; another chunk appends to it.
	f, err := os.OpenFile(spec.Stdout, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("chunk-1 appended\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.WriteFile(filepath.Join(v.out, "go"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if st := v.exits.wait(t, key, 60*time.Second); st.ExitCode != 0 || st.Err != "" {
		t.Fatalf("step: %+v", st)
	}
	b, _ := os.ReadFile(spec.Stdout)
	if string(b) != "chunk-1 appended\nchunk-0\n" {
		t.Fatalf("shared output %q, want the other chunk's line, then this one's (and nothing from before)", b)
	}
}

// watcherSleeps lists the processes running "sleep 86400" (the limit
// watcher's sleep of a step without a limit) in the sessions of the given
// wrappers (a wrapper leads its session): what they left behind.
func watcherSleeps(wrappers map[int]bool) []int {
	return sshtest.Pids(func(_ int, dir string) bool {
		c, _ := os.ReadFile(dir + "/cmdline")
		if string(c) != "sleep\x0086400\x00" {
			return false
		}
		st, _ := os.ReadFile(dir + "/stat")
		f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
		if len(f) <= 3 {
			return false
		}
		sid, _ := strconv.Atoi(f[3])
		return wrappers[sid]
	})
}

// TestStepEndLeavesNoWatcherSleep: the limit watcher of a step without a
// limit sleeps a day at a time; the wrapper stops it with TERM at the
// step's end, and the sleep it started must go with it, however soon the
// step ends after the watcher started its sleep (a TERM between the fork
// of the sleep and the note of its pid left it behind, holding a systemd
// scope for a day: TestSystemdLimitCancelSuspendForget under a CPU hog).
func TestStepEndLeavesNoWatcherSleep(t *testing.T) {
	v := start(t, 1)
	var keys []nodes.StepKey
	for i := range 60 {
		key := nodes.StepKey{Job: 93, Step: i}
		v.launch(t, v.spec(key, "n1", "#!/bin/sh\nexit 0\n"))
		keys = append(keys, key)
	}
	wrappers := map[int]bool{}
	for _, key := range keys {
		if st := v.exits.wait(t, key, 60*time.Second); st.ExitCode != 0 {
			t.Fatalf("step %v: %+v", key, st)
		}
		var rec struct{ Pid int }
		b, _ := os.ReadFile(filepath.Join(v.state, "n1", key.Name(), "shepherd"))
		if err := json.Unmarshal(b, &rec); err != nil || rec.Pid <= 0 {
			t.Fatalf("step %v: wrapper record %q: %v", key, b, err)
		}
		wrappers[rec.Pid] = true
	}
	// The wrappers are gone once they reported; give their helpers a moment.
	time.Sleep(time.Second)
	if left := watcherSleeps(wrappers); len(left) > 0 {
		var who []string
		for _, p := range left {
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
			f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
			pc, _ := os.ReadFile("/proc/" + f[1] + "/cmdline")
			who = append(who, fmt.Sprintf("%d (parent %s %q)", p, f[1], bytes.ReplaceAll(pc, []byte{0}, []byte{' '})))
			syscall.Kill(p, syscall.SIGKILL)
		}
		t.Fatalf("%d watcher sleeps left behind by 60 steps: %s", len(left), strings.Join(who, "; "))
	}
}
