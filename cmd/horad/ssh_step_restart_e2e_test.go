package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hora/nodes/ssh/sshtest"
)

// stepTasks lists the processes (this machine's pids) of step job.step of
// cluster c: the job's tasks carry SLURM_JOB_ID, SLURM_STEP_ID and the
// cluster's HORA_SOCKET in their environment (job ids repeat across test
// clusters).
func stepTasks(c *cluster, job string, step int) []int {
	want := [][]byte{[]byte("SLURM_JOB_ID=" + job), []byte("SLURM_STEP_ID=" + strconv.Itoa(step)), []byte("HORA_SOCKET=" + c.sock)}
	return sshtest.Pids(func(_ int, dir string) bool {
		env, err := os.ReadFile(dir + "/environ")
		if err != nil {
			return false
		}
		kvs := bytes.Split(env, []byte{0})
		for _, w := range want {
			found := false
			for _, kv := range kvs {
				found = found || bytes.Equal(kv, w)
			}
			if !found {
				return false
			}
		}
		return true
	})
}

// A remote srun step (tasks on SSH nodes, their output streamed through
// horad) when horad is killed (SIGKILL) and restarted: the streams went
// with the old horad, so the step cannot go on. The new horad ends it
// while recovering: it kills the step's tasks on its nodes (systemd scope
// and plain session alike) and records the step FAILED, killed (sacct
// 0:9); srun reports the lost stream and the tasks killed, exits 137
// (128+KILL) and its end report finds the step ended. docs/resources.md.
func TestRemoteStepHoradRestartEndToEnd(t *testing.T) {
	requireRoot(t)
	cl := sshtest.StartCluster(t, 3, sshtest.WithSystemd(1))
	c := newClusterWith(t, sshConfig(cl, "", ""))
	dir := c.nobodyDir()

	cmd := exec.Command(filepath.Join(c.bin, "srun"), "-N2", "-w", "n[1-2]", "-l", "sh", "-c", `echo "ready $SLURM_JOB_ID"; exec sleep 600`)
	cmd.Env = append(os.Environ(), "HORA_SOCKET="+c.sock, "TZ=UTC")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, errb := &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	waitFor(t, "both tasks to start", func() bool { return strings.Count(out.String(), "ready ") == 2 })
	job := strings.Fields(strings.SplitN(out.String(), "ready ", 2)[1])[0]
	if n := len(stepTasks(c, job, 0)); n != 2 {
		t.Fatalf("%d processes of step %s.0 before the restart, want 2", n, job)
	}

	c.kill9()
	c.start()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		t.Fatalf("srun did not end after horad's restart; stderr:\n%s", errb)
	}
	code, e := cmd.ProcessState.ExitCode(), errb.String()
	for _, want := range []string{"srun: error: horad at " + c.sock + ": reading the step's output: ",
		"srun: error: n1: task 0: Killed\n", "srun: error: n2: task 1: Killed\n"} {
		if !strings.Contains(e, want) {
			t.Errorf("srun's stderr lacks %q:\n%s", want, e)
		}
	}
	if code != 137 {
		t.Errorf("srun exit %d, want 137 (tasks killed)", code)
	}
	// The new horad killed the tasks on both nodes: in n1's systemd scope
	// and in n2's plain session.
	waitFor(t, "the step's tasks to be killed on its nodes", func() bool { return len(stepTasks(c, job, 0)) == 0 })
	waitFor(t, "the tasks' scope on n1 to go", func() bool {
		out, err := cl.Hosts[0].Systemctl("list-units", "--all", "--no-legend", "hora-job-"+job+"-0-r0-t*.scope")
		return err == nil && strings.TrimSpace(out) == ""
	})
	if r := c.run(0, dir, "sacct", "-j", job, "-n", "-P", "-o", "JobID,State,ExitCode"); !strings.Contains(r.stdout, job+".0|FAILED|0:9\n") {
		t.Errorf("sacct: the step is not FAILED 0:9:\n%s", r.stdout)
	}
	if !strings.Contains(c.log.String(), "remote step ended: its tasks' sessions went with the previous horad") {
		t.Errorf("horad's log does not say why the step ended:\n%s", c.log)
	}
	// srun released its allocation: the job ends.
	if st := c.waitState(job, "COMPLETED", "FAILED", "CANCELLED"); st == "" {
		t.Errorf("the allocation did not end")
	}
	left, _ := filepath.Glob(filepath.Join(cl.Dir, "node-state", "*", "tasks", "hora-job-"+job+"-*"))
	if len(left) != 0 {
		t.Errorf("task files left on the nodes: %q", left)
	}
}

// The same inside a batch job on SSH nodes, as workflow tools run their
// steps: srun talks to horad through the node's callback socket. After
// horad's restart srun reports the lost stream and its tasks killed
// (137), the tasks are gone from both nodes, and the job goes on: its
// next srun runs through the new horad and the job completes.
func TestRemoteStepInBatchJobHoradRestartEndToEnd(t *testing.T) {
	requireRoot(t)
	cl := sshtest.StartCluster(t, 3, sshtest.WithSystemd(1))
	c := newClusterWith(t, sshConfig(cl, "", ""))
	dir := c.nobodyDir()
	srun := filepath.Join(c.bin, "srun")
	out := filepath.Join(dir, "out")
	r := c.run(65534, dir, "sbatch", "-N2", "-w", "n[1-2]", "-o", out, "--wrap",
		srun+` -l sh -c 'echo "ready $SLURM_JOB_ID"; exec sleep 600'; echo "rc=$?"; `+srun+` -N1 -n1 echo after; echo "rc2=$?"`)
	m := submitted.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("sbatch: %+v", r)
	}
	id := m[1]
	waitFor(t, "both tasks to start", func() bool {
		b, _ := os.ReadFile(out)
		return strings.Count(string(b), "ready "+id) == 2
	})
	c.kill9()
	c.start()
	if st := c.waitState(id, "COMPLETED", "FAILED", "CANCELLED"); st != "COMPLETED" {
		t.Errorf("job %s, want COMPLETED", st)
	}
	b, _ := os.ReadFile(out)
	for _, want := range []string{"srun: error: n1: task 0: Killed\n", "srun: error: n2: task 1: Killed\n", "rc=137\n", "after\nrc2=0\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("job output lacks %q:\n%s", want, b)
		}
	}
	r = c.run(0, dir, "sacct", "-j", id, "-n", "-P", "-o", "JobID,State,ExitCode")
	for _, want := range []string{id + ".0|FAILED|0:9\n", id + ".1|COMPLETED|0:0\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("sacct lacks %q:\n%s", want, r.stdout)
		}
	}
	waitFor(t, "the step's tasks to be killed on its nodes", func() bool { return len(stepTasks(c, id, 0)) == 0 })
}
