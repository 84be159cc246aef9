package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"hora/nodes/ssh/sshtest"
)

// srun on the submit host with executor = "ssh": horad runs the step's
// tasks on two real OpenSSH hosts over its pooled connections, as the
// job's owner, and streams their output back: -l labels, the per-task
// environment, and Slurm's exit code rule (the largest exit code; a
// signalled task outranks exit codes).
func TestSrunOnSSHNodesEndToEnd(t *testing.T) {
	requireRoot(t)
	cl := sshtest.StartCluster(t, 3)
	c := newClusterWith(t, sshConfig(cl, "", ""))
	dir := c.nobodyDir()

	r := c.run(65534, dir, "srun", "-N2", "-n4", "-l", "sh", "-c",
		`echo "$SLURM_PROCID $SLURM_LOCALID $SLURM_NODEID $SLURMD_NODENAME $SLURM_STEP_NUM_TASKS $SLURM_STEP_NODELIST $(id -u) $(pwd)"; echo "err $SLURM_PROCID" >&2; exit $SLURM_PROCID`)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	slices.Sort(lines)
	want := []string{
		"0: 0 0 0 n1 4 n[1-2] 65534 " + dir,
		"1: 1 1 0 n1 4 n[1-2] 65534 " + dir,
		"2: 2 0 1 n2 4 n[1-2] 65534 " + dir,
		"3: 3 1 1 n2 4 n[1-2] 65534 " + dir,
	}
	if !slices.Equal(lines, want) {
		t.Errorf("srun -N2 -n4 -l stdout:\n%s\nwant (sorted):\n%s", r.stdout, strings.Join(want, "\n"))
	}
	for _, l := range []string{"0: err 0\n", "3: err 3\n", "srun: error: n1: task 1: Exited with exit code 1\n",
		"srun: error: n2: task 3: Exited with exit code 3\n"} {
		if !strings.Contains(r.stderr, l) {
			t.Errorf("srun stderr lacks %q:\n%s", l, r.stderr)
		}
	}
	if r.code != 3 {
		t.Errorf("srun exit %d, want 3 (the largest task exit)", r.code)
	}

	// A task killed by TERM outranks the other's exit code: 128+15.
	r = c.run(65534, dir, "srun", "-N2", "-n2", "sh", "-c", `[ "$SLURM_PROCID" = 1 ] && kill -TERM $$; exit 5`)
	if r.code != 143 || !strings.Contains(r.stderr, "srun: error: n2: task 1: Terminated\n") ||
		!strings.Contains(r.stderr, "srun: error: n1: task 0: Exited with exit code 5\n") {
		t.Errorf("srun with a signalled task: %+v", r)
	}
	// The steps are recorded: sacct shows both with their states.
	r = c.run(65534, dir, "sacct", "-n", "-P", "-o", "JobID,State,ExitCode")
	if !strings.Contains(r.stdout, ".0|FAILED|3:0") || !strings.Contains(r.stdout, ".0|FAILED|0:15") {
		t.Errorf("sacct after the two sruns:\n%s", r.stdout)
	}
}

// srun inside a batch script running on an SSH node: the script reaches
// horad through the node's callback socket, which sshd forwards over
// horad's pooled connection, authenticated by the job's step key; the
// step's tasks run on both nodes with their per-task environment and
// labels. A forged key is refused and changes nothing.
func TestSrunInsideBatchJobOnSSHNodeEndToEnd(t *testing.T) {
	requireRoot(t)
	cl := sshtest.StartCluster(t, 3)
	c := newClusterWith(t, sshConfig(cl, "", ""))
	dir := c.nobodyDir()
	srun := filepath.Join(c.bin, "srun")
	script := "#!/bin/sh\n" +
		`echo "socket $HORA_SOCKET"` + "\n" +
		srun + ` -N2 -n4 -l sh -c 'echo "$SLURM_PROCID $SLURM_LOCALID $SLURM_NODEID $SLURMD_NODENAME $SLURM_STEP_ID $SLURM_STEP_NUM_TASKS $(id -u)"; exit $SLURM_PROCID'` + "\n" +
		`echo "srun exit $?"` + "\n" +
		`HORA_STEP_KEY="$SLURM_JOB_ID.0000" ` + srun + ` -n1 true 2>&1 | sed 's/^/forged: /'` + "\n"
	r := c.run(65534, dir, "sbatch", "-N2", "-o", filepath.Join(dir, "out"), "--wrap", script)
	m := submitted.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("sbatch: %+v", r)
	}
	id := m[1]
	if st := c.waitState(id, "COMPLETED", "FAILED"); st != "COMPLETED" {
		t.Errorf("job ended %s", st)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "out"))
	out := string(b)
	var labelled, rest []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if len(l) > 2 && l[1] == ':' {
			labelled = append(labelled, l)
		} else {
			rest = append(rest, l)
		}
	}
	slices.Sort(labelled)
	want := []string{"0: 0 0 0 n1 0 4 65534", "1: 1 1 0 n1 0 4 65534", "2: 2 0 1 n2 0 4 65534", "3: 3 1 1 n2 0 4 65534"}
	if !slices.Equal(labelled, want) {
		t.Errorf("the step's labelled output:\n%s\nwant (sorted):\n%s\nwhole output:\n%s", strings.Join(labelled, "\n"), strings.Join(want, "\n"), out)
	}
	wantSock := "socket " + filepath.Join(cl.Dir, "node-state", "n1", "horad.sock")
	if !slices.Contains(rest, wantSock) || !slices.Contains(rest, "srun exit 3") {
		t.Errorf("output lacks %q or %q:\n%s", wantSock, "srun exit 3", out)
	}
	if !strings.Contains(out, "forged: srun: error: ") || !strings.Contains(out, "Access/permission denied") {
		t.Errorf("a forged step key was not refused:\n%s", out)
	}
	// One step recorded (the forged request created none).
	r = c.run(65534, dir, "sacct", "-j", id, "-n", "-P", "-o", "JobID,State,ExitCode")
	if !strings.Contains(r.stdout, id+".0|FAILED|3:0") || strings.Contains(r.stdout, id+".1|") {
		t.Errorf("sacct:\n%s", r.stdout)
	}
}

// Remote tasks get srun's stdin and its signals, as local ones do: the
// stdin is broadcast to every task (Slurm's default) and its end seen;
// USR1 sent to srun reaches every task's trap; a first ^C prints the
// tasks' status, a second one within a second ends the step.
func TestSrunStdinAndSignalsOnSSHNodesEndToEnd(t *testing.T) {
	requireRoot(t)
	cl := sshtest.StartCluster(t, 3)
	c := newClusterWith(t, sshConfig(cl, "", ""))
	dir := c.nobodyDir()

	srun := func(stdin string, args ...string) (*exec.Cmd, *lockedBuffer, *lockedBuffer) {
		cmd := exec.Command(filepath.Join(c.bin, "srun"), args...)
		cmd.Env = append(os.Environ(), "HORA_SOCKET="+c.sock, "TZ=UTC")
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, errb := &lockedBuffer{}, &lockedBuffer{}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), out, errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, out, errb
	}
	wait := func(cmd *exec.Cmd) int {
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(90 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("srun %q did not end", cmd.Args)
		}
		return cmd.ProcessState.ExitCode()
	}

	cmd, out, errb := srun("line one\nline two\n", "-N2", "-n2", "-l", "sh", "-c", `while read l; do echo "got $l"; done; echo eof`)
	if code := wait(cmd); code != 0 {
		t.Errorf("srun with stdin: exit %d, stderr %s", code, errb)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	slices.Sort(lines)
	want := []string{"0: eof", "0: got line one", "0: got line two", "1: eof", "1: got line one", "1: got line two"}
	if !slices.Equal(lines, want) {
		t.Errorf("stdin broadcast to two remote tasks:\n%s\nwant (sorted) %q", out, want)
	}

	ready := func(out *lockedBuffer, n int) {
		t.Helper()
		waitFor(t, "the tasks to start", func() bool { return strings.Count(out.String(), "ready") >= n })
	}
	cmd, out, errb = srun("", "-N2", "-n2", "-l", "sh", "-c", `trap 'echo "got USR1"; exit 4' USR1; echo ready; while :; do sleep 0.05; done`)
	ready(out, 2)
	cmd.Process.Signal(syscall.SIGUSR1)
	if code := wait(cmd); code != 4 || strings.Count(out.String(), "got USR1") != 2 {
		t.Errorf("USR1 forwarded: exit %d, stdout %q, stderr %q", code, out, errb)
	}

	// scancel -s SIG JOBID.STEP reaches the remote tasks too.
	cmd, out, errb = srun("", "-N2", "-n2", "-l", "sh", "-c", `trap 'echo "got USR2"; exit 5' USR2; echo "ready $SLURM_JOB_ID.$SLURM_STEP_ID"; while :; do sleep 0.05; done`)
	ready(out, 2)
	step := strings.Fields(strings.SplitN(out.String(), "ready ", 2)[1])[0]
	if r := c.run(65534, dir, "scancel", "-s", "USR2", step); r.code != 0 {
		t.Errorf("scancel -s USR2 %s: %+v", step, r)
	}
	if code := wait(cmd); code != 5 || strings.Count(out.String(), "got USR2") != 2 {
		t.Errorf("scancel -s USR2 on a remote step: exit %d, stdout %q, stderr %q", code, out, errb)
	}

	cmd, out, errb = srun("", "-N2", "-n2", "sh", "-c", `echo ready; exec sleep 600`)
	ready(out, 2)
	cmd.Process.Signal(syscall.SIGINT)
	waitFor(t, "the status after one ^C", func() bool { return strings.Contains(errb.String(), "tasks 0-1: running") })
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Process.Signal(syscall.SIGINT)
	code := wait(cmd)
	e := errb.String()
	if !strings.Contains(e, "srun: interrupt (one more within 1 sec to abort)\n") || !strings.Contains(e, "srun: forcing job termination\n") || code == 0 {
		t.Errorf("two ^C: exit %d, stderr:\n%s", code, e)
	}
}

// sshOOMJob submits a batch job of 40M (extra sbatch args first) that
// runs script as nobody from dir, and checks it ends OUT_OF_MEMORY as Slurm
// shows it: squeue OOM, sacct OUT_OF_MEMORY 0:125, slurmstepd's oom_kill
// line at the end of its error file. It returns the job id and its output.
func sshOOMJob(t *testing.T, c *cluster, dir string, args []string, script string) (string, string) {
	t.Helper()
	args = append(args, "--mem=40M", "-o", filepath.Join(dir, "oom.out"), "-e", filepath.Join(dir, "oom.err"), "--wrap", script)
	r := c.run(65534, dir, "sbatch", args...)
	m := submitted.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("sbatch: %+v", r)
	}
	id := m[1]
	st := c.waitState(id, "OUT_OF_MEMORY", "COMPLETED", "FAILED")
	out, _ := os.ReadFile(filepath.Join(dir, "oom.out"))
	if st != "OUT_OF_MEMORY" {
		errb, _ := os.ReadFile(filepath.Join(dir, "oom.err"))
		t.Fatalf("job ended %s; stdout %q stderr %q", st, out, errb)
	}
	if got := strings.TrimSpace(c.run(0, dir, "squeue", "-h", "-t", "all", "-j", id, "-o", "%t").stdout); got != "OOM" {
		t.Errorf("squeue %%t %q, want OOM", got)
	}
	if got := strings.TrimSpace(c.run(0, dir, "sacct", "-j", id, "-X", "-P", "-n", "-o", "State,ExitCode").stdout); got != "OUT_OF_MEMORY|0:125" {
		t.Errorf("sacct %q", got)
	}
	errb, _ := os.ReadFile(filepath.Join(dir, "oom.err"))
	// One event, or two when the kernel also kills head (Slurm counts them).
	want := regexp.MustCompile(`slurmstepd: error: Detected (1 oom_kill event|2 oom_kill events) in StepId=` + id + `\.batch\. Some of the step tasks have been OOM Killed\.\n$`)
	if !want.Match(errb) {
		t.Errorf("error file %q lacks slurmstepd's oom_kill line", errb)
	}
	return id, string(out)
}

// OOM detection on an SSH node without systemd: the launcher puts the
// step in a cgroup v1 memory group with the job's --mem (no swap), the
// wrapper reads its oom_kill count at the end, and a job that touches
// more ends OUT_OF_MEMORY (sacct 0:125) with slurmstepd's line in its error
// file; the group is gone once the job is forgotten.
func TestSSHNodeOOMEndToEnd(t *testing.T) {
	requireRoot(t)
	requireMemoryV1(t)
	cl := sshtest.StartCluster(t, 3)
	c := newClusterWith(t, sshConfig(cl, "", ""))
	dir := c.nobodyDir()
	id, out := sshOOMJob(t, c, dir, nil, "grep -c ':memory:/hora-node-' /proc/self/cgroup; head -c 400M /dev/zero | tail > /dev/null; echo survived")
	if !strings.HasPrefix(out, "1\n") {
		t.Errorf("the job was not in a hora-node memory group: %q", out)
	}
	waitFor(t, "the step's memory group removed", func() bool {
		// Only this cluster's node directories (job ids repeat across
		// clusters): their memcg files name the groups.
		left, _ := filepath.Glob(filepath.Join(cl.Dir, "node-state", "*", id+".batch.r0", "memcg"))
		return len(left) == 0
	})
}
