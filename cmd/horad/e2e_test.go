package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The end-to-end test builds the real binaries, starts a real horad on a
// temporary socket and SQLite file, and drives it with the real client
// commands, as a user would.

type cluster struct {
	t      testing.TB
	dir    string // binaries and state, world-readable so `nobody` can run the client
	bin    string
	sock   string
	varDir string
	daemon *exec.Cmd
	log    *lockedBuffer
	config string // optional hora.toml
	// wrap is the command horad is started under, if any (the fault
	// harness starts it in a time namespace of its own: unshare --time).
	wrap []string
	// killed lists the processes cleanup had to kill (cleanup_e2e_test.go).
	killed []string
}

// lockedBuffer collects horad's stderr while a test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// built holds hora and horad as built once for this test binary: building
// them for each of a hundred clusters cost the go command's cache lookups
// and links every time.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// TestMain removes the binaries built for the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildBinaries puts hora and horad and the client names in dir/bin. The
// binaries are built once (hard links to them, or copies on another file
// system), so each cluster's commands still have paths of its own: the
// cleanup sweep finds a test's processes by them.
func buildBinaries(t testing.TB, dir string) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "hora-e2e-build-"); built.err != nil {
			return
		}
		for _, p := range []string{"hora", "horad"} {
			// The tag as the Makefile builds: see docs/architecture.md (client start-up).
			cmd := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", filepath.Join(built.dir, p), "hora/cmd/"+p)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				built.err = fmt.Errorf("build %s: %v\n%s", p, err, out)
				return
			}
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"hora", "horad"} {
		if err := linkOrCopy(filepath.Join(built.dir, p), filepath.Join(bin, p)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []string{"sbatch", "srun", "salloc", "squeue", "scancel", "sinfo", "scontrol", "sacct",
		"qsub", "qstat", "qdel", "qhold", "qrls", "qsig", "qselect", "qrerun", "qalter", "pbsnodes"} {
		if err := os.Symlink("hora", filepath.Join(bin, c)); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

func linkOrCopy(from, to string) error {
	if os.Link(from, to) == nil {
		return nil
	}
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

func newCluster(t testing.TB) *cluster { return newClusterWith(t, "") }

// newClusterWith starts horad with the given hora.toml text ("" = the
// embedded default).
func newClusterWith(t testing.TB, configText string) *cluster {
	return newClusterSeeded(t, configText, nil)
}

// newClusterSeeded is newClusterWith with a hook that may prepare the state
// directory (the store) before horad first starts.
func newClusterSeeded(t testing.TB, configText string, seed func(varDir string)) *cluster {
	dir, err := os.MkdirTemp("", "hora-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			// The store and the nodes' state of a failed run are what a
			// violation of the fault harness is diagnosed from.
			t.Logf("kept the cluster's directory of the failed test: %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, dir: dir, sock: filepath.Join(dir, "horad.sock"), varDir: filepath.Join(dir, "var")}
	c.bin = buildBinaries(t, dir)
	if configText != "" {
		c.config = filepath.Join(dir, "hora.toml")
		if err := os.WriteFile(c.config, []byte(configText), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if seed != nil {
		if err := os.MkdirAll(c.varDir, 0o755); err != nil {
			t.Fatal(err)
		}
		seed(c.varDir)
	}
	c.start()
	t.Cleanup(c.removeCgroups) // after the cleanup below (cleanups run last first)
	t.Cleanup(c.cleanup)       // ends the jobs, stops horad, sweeps the test's processes
	return c
}

func (c *cluster) start() {
	c.t.Helper()
	c.log = &lockedBuffer{}
	args := []string{"--state-dir", c.varDir, "--socket", c.sock, "--log-level", "debug"}
	if c.config != "" {
		args = append(args, "--config", c.config)
	}
	c.daemon = exec.Command(filepath.Join(c.bin, "horad"), args...)
	if len(c.wrap) > 0 {
		c.daemon = exec.Command(c.wrap[0], append(append(c.wrap[1:len(c.wrap):len(c.wrap)], c.daemon.Path), args...)...)
	}
	c.daemon.Stderr = c.log
	c.daemon.Dir = c.dir
	if err := c.daemon.Start(); err != nil {
		c.t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if conn, err := net.Dial("unix", c.sock); err == nil {
			conn.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("horad did not come up:\n%s", c.log)
}

func (c *cluster) kill9() {
	c.daemon.Process.Signal(syscall.SIGKILL)
	c.daemon.Wait()
	// A shepherd forked just before the kill holds horad's listening socket
	// until it execs (close-on-exec): until then the socket still accepts,
	// and a new horad would take it for a live one and exit ("another horad
	// is already serving"). Seen under a loaded full suite; wait it out.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		conn, err := net.Dial("unix", c.sock)
		if err != nil {
			return
		}
		conn.Close()
	}
}

func (c *cluster) stop() {
	if c.daemon.ProcessState == nil {
		c.daemon.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { c.daemon.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			c.t.Errorf("horad did not stop on SIGTERM within 10 s")
			c.kill9()
		}
	}
	if c.t.Failed() {
		c.t.Logf("horad log:\n%s", c.log)
	}
}

type result struct {
	stdout, stderr string
	code           int
}

// run calls a client command by path (a real Slurm may be on PATH too).
func (c *cluster) run(uid int, dir, name string, args ...string) result {
	c.t.Helper()
	return c.runEnv(uid, dir, nil, name, args...)
}

// runEnv is run with extra KEY=VALUE entries in the command's environment.
func (c *cluster) runEnv(uid int, dir string, env []string, name string, args ...string) result {
	c.t.Helper()
	path := name
	if !filepath.IsAbs(name) {
		path = filepath.Join(c.bin, name)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(append(os.Environ(), "HORA_SOCKET="+c.sock, "TZ=UTC"), env...)
	cmd.Dir = dir
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("%s %q: %v", name, args, err)
	}
	return result{o.String(), e.String(), code}
}

var submitted = regexp.MustCompile(`^Submitted batch job (\d+)\n$`)

func (c *cluster) submit(dir string, args ...string) string {
	c.t.Helper()
	r := c.run(0, dir, "sbatch", args...)
	m := submitted.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		c.t.Fatalf("sbatch %q: exit %d stdout %q stderr %q", args, r.code, r.stdout, r.stderr)
	}
	return m[1]
}

// state asks squeue (with -t all, so finished jobs show) for a job's state.
func (c *cluster) state(id string) string {
	r := c.run(0, c.dir, "squeue", "-h", "-t", "all", "-j", id, "-o", "%T")
	return strings.TrimSpace(r.stdout)
}

func (c *cluster) waitState(id string, want ...string) string {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var got string
	for time.Now().Before(deadline) {
		got = c.state(id)
		for _, w := range want {
			if got == w {
				return got
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("job %s: state %q, want one of %v", id, got, want)
	return ""
}

// requireRoot: the end-to-end tests run jobs as other users (CI runs as root).
func requireRoot(t testing.TB) {
	if os.Geteuid() != 0 {
		t.Fatal("the end-to-end tests run jobs as other users and must run as root (CI does)")
	}
}

// requireRootWaiting is requireRoot for a test whose time goes on the wall
// clock rather than the CPU: a one-minute time limit running out, a node
// declared lost, a reservation's window, a workflow tool's polling, the fault
// harness's fixed run. Such tests run beside each other once the others are
// done (make test passes -parallel 4): each has its own horad, state
// directory, nodes, cgroups and network namespaces, so they share nothing but
// the machine, and one after another they took half of cmd/horad's 12
// minutes.
func requireRootWaiting(t *testing.T) {
	t.Helper()
	requireRoot(t)
	t.Parallel()
}

// workDir is a directory every user may write, for jobs' output files.
func (c *cluster) workDir() string {
	w := filepath.Join(c.dir, "work")
	if err := os.MkdirAll(w, 0o777); err != nil {
		c.t.Fatal(err)
	}
	os.Chmod(w, 0o777)
	return w
}

// localBatch is the start of a hora.toml with the four local nodes and the
// default batch partition; tests append their own partitions.
const localBatch = `
[[node]]
name = "local[1-4]"

[[partition]]
name = "batch"
nodes = "local[1-4]"
default = true
`

func writeScript(t testing.TB, dir, name, body string) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newCluster(t)
	work := c.workDir()

	// 1. A job runs to completion; squeue and sacct say so; its output file
	// is where Slurm would put it, with the Slurm environment inside.
	script := writeScript(t, work, "hello.sh", "#!/bin/sh\n#SBATCH -J greet\n#SBATCH -N 2\necho \"job=$SLURM_JOB_ID name=$SLURM_JOB_NAME nodes=$SLURM_JOB_NODELIST n=$SLURM_JOB_NUM_NODES\"\necho err >&2\nexit 0\n")
	id := c.submit(work, script)
	c.waitState(id, "COMPLETED")
	r := c.run(0, work, "sacct", "-j", id, "-X", "-P", "-n", "-o", "JobID,JobName,State,ExitCode")
	if want := id + "|greet|COMPLETED|0:0\n"; r.stdout != want {
		t.Errorf("sacct = %q, want %q (stderr %q)", r.stdout, want, r.stderr)
	}
	out, err := os.ReadFile(filepath.Join(work, "slurm-"+id+".out"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^job=` + id + ` name=greet nodes=local\[1-2\] n=2\nerr\n$`).Match(out) {
		t.Errorf("output file: %q", out)
	}

	// 2. A failing job is FAILED with its exit code.
	id = c.submit(work, "--wrap", "exit 3")
	c.waitState(id, "FAILED")
	r = c.run(0, work, "sacct", "-j", id, "-X", "-P", "-n", "-o", "State,ExitCode")
	if r.stdout != "FAILED|3:0\n" {
		t.Errorf("failed job sacct = %q", r.stdout)
	}

	// 3. Another user cannot cancel a running job; the owner can.
	id = c.submit(work, "--wrap", "sleep 300")
	c.waitState(id, "RUNNING")
	r = c.run(65534, "/", "scancel", id)
	if r.code == 0 || !strings.Contains(r.stderr, "Access/permission denied") {
		t.Errorf("scancel as nobody: exit %d stderr %q", r.code, r.stderr)
	}
	if got := c.state(id); got != "RUNNING" {
		t.Errorf("after nobody's scancel the job is %s", got)
	}
	r = c.run(0, work, "scancel", id)
	if r.code != 0 {
		t.Errorf("scancel by owner: %+v", r)
	}
	c.waitState(id, "CANCELLED")
	r = c.run(0, work, "sacct", "-j", id, "-X", "-P", "-n", "-o", "State")
	if r.stdout != "CANCELLED by 0\n" {
		t.Errorf("cancelled job sacct State = %q", r.stdout)
	}

	// 4. A job submitted by nobody runs as nobody.
	nobodyDir := filepath.Join(c.dir, "nobody")
	os.MkdirAll(nobodyDir, 0o755)
	os.Chown(nobodyDir, 65534, 65534)
	r = c.run(65534, nobodyDir, "sbatch", "--wrap", "id -u")
	m := submitted.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("sbatch as nobody: %+v", r)
	}
	c.waitState(m[1], "COMPLETED")
	if out, _ := os.ReadFile(filepath.Join(nobodyDir, "slurm-"+m[1]+".out")); string(out) != "65534\n" {
		t.Errorf("job of nobody ran as %q", out)
	}

	// 5. kill -9 right after sbatch printed an id: after a restart the job
	// is there and runs to completion.
	id = c.submit(work, "--wrap", "echo survived")
	c.kill9()
	c.start()
	c.waitState(id, "COMPLETED")
	if out, _ := os.ReadFile(filepath.Join(work, "slurm-"+id+".out")); string(out) != "survived\n" {
		t.Errorf("job across kill -9: output %q", out)
	}

	// 6. A job running while horad dies keeps running and is re-attached;
	// its real exit status is recorded.
	flag, started := filepath.Join(work, "go-on"), filepath.Join(work, "started")
	id = c.submit(work, "--wrap", fmt.Sprintf("touch %s; while [ ! -e %s ]; do sleep 0.05; done; exit 7", started, flag))
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s never started", id)
		}
	}
	c.kill9()
	c.start()
	if got := c.state(id); got != "RUNNING" {
		t.Errorf("after restart the running job is %q", got)
	}
	os.WriteFile(flag, nil, 0o644)
	c.waitState(id, "FAILED")
	r = c.run(0, work, "sacct", "-j", id, "-X", "-P", "-n", "-o", "State,ExitCode")
	if r.stdout != "FAILED|7:0\n" {
		t.Errorf("re-attached job sacct = %q", r.stdout)
	}

	// 7. Bad input is refused with Slurm's words and exit codes, and changes nothing.
	r = c.run(0, work, "sbatch", "--time=bogus", script)
	if r.code != 255 || r.stderr != "sbatch: error: Invalid --time specification\n" {
		t.Errorf("bad --time: %+v", r)
	}
	r = c.run(0, work, "sbatch", "-p", "nosuch", script)
	// Two lines, as sbatch 22.05 prints them (measured, cmd/horad/testdata/golden).
	if r.code != 1 || r.stderr != "sbatch: error: invalid partition specified: nosuch\nsbatch: error: Batch job submission failed: Invalid partition name specified\n" {
		t.Errorf("bad partition: %+v", r)
	}
	r = c.run(0, work, "squeue", "-h", "-j", "999999")
	if r.code != 1 || r.stderr != "slurm_load_jobs error: Invalid job id specified\n" {
		t.Errorf("squeue unknown id: %+v", r)
	}
}

// TestClientWithoutDaemon checks the message that names the sockets tried.
func TestClientWithoutDaemon(t *testing.T) {
	dir := t.TempDir()
	bin := buildBinaries(t, dir)
	cmd := exec.Command(filepath.Join(bin, "squeue"))
	cmd.Env = append(os.Environ(), "HORA_SOCKET="+filepath.Join(dir, "none.sock"))
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), filepath.Join(dir, "none.sock")) {
		t.Fatalf("squeue without horad: err %v, output %q", err, out)
	}
}

// nobodyDir makes the cluster's working directory for jobs of nobody
// (uid 65534), owned by it.
func (c *cluster) nobodyDir() string {
	c.t.Helper()
	dir := filepath.Join(c.dir, "nobody")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		c.t.Fatal(err)
	}
	return dir
}

// requireMemoryV1 fails a test that needs the cgroup v1 memory hierarchy
// (SSH nodes without systemd put steps there).
func requireMemoryV1(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/sys/fs/cgroup/memory/cgroup.procs"); err != nil {
		t.Fatalf("this test needs the cgroup v1 memory hierarchy at /sys/fs/cgroup/memory (CI mounts it): %v", err)
	}
}
