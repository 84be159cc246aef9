package ssh_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hora/nodes"
	"hora/nodes/nodestest"
	"hora/nodes/ssh/sshtest"
)

// A step whose wrapper died without recording the exit status (killed,
// or the node's disk full) is reported lost with its job's process group
// when the job had started, and with none (Pid 0) when it had not: horad's
// recovery requeues a lost step without a pid as one that never ran, even
// a --no-requeue job's, so a job that ran must not look like that. Before,
// every lost step on an SSH node came without its pid, and a --no-requeue
// job whose wrapper died while horad was down ran a second time.
func TestLostStepKeepsItsJobsPid(t *testing.T) {
	v := start(t, 1)
	ran := nodes.StepKey{Job: 30, Step: -1}
	never := nodes.StepKey{Job: 31, Step: -1}
	for _, k := range []nodes.StepKey{ran, never} {
		v.launch(t, v.spec(k, "n1", "#!/bin/sh\nsleep 300\n"))
	}
	if err := v.e.Close(); err != nil {
		t.Fatal(err)
	}
	pgids := map[nodes.StepKey]int{}
	for _, k := range []nodes.StepKey{ran, never} {
		dir := filepath.Join(v.state, "n1", k.Name())
		b, err := os.ReadFile(filepath.Join(dir, "user", "pid"))
		if err != nil {
			t.Fatal(err)
		}
		pgid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
		if err != nil || pgid <= 1 {
			t.Fatalf("step %v: pid file %q", k, b)
		}
		pgids[k] = pgid
		var rec struct {
			Pid int `json:"pid"`
		}
		b, err = os.ReadFile(filepath.Join(dir, "shepherd"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &rec); err != nil || rec.Pid <= 1 {
			t.Fatalf("step %v: wrapper record %q: %v", k, b, err)
		}
		// The wrapper and its job die; nothing records how.
		_ = syscall.Kill(rec.Pid, syscall.SIGKILL)
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		alive := func(pid int) bool { s := sshtest.ProcState(pid); return s != 0 && s != 'Z' }
		for deadline := time.Now().Add(hang); alive(rec.Pid) || alive(pgid); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("step %v: wrapper %d or job %d still there", k, rec.Pid, pgid)
			}
		}
		if k == never {
			// As if the wrapper had died after taking the pid file's
			// space and before starting the job.
			if err := os.WriteFile(filepath.Join(dir, "user", "pid"), []byte(strings.Repeat(" ", 31)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	v.open(t)
	_, got := v.reattach(t, "n1")
	if st := got[ran]; st.State != nodes.StepLost || st.Pid != pgids[ran] || !strings.Contains(st.Err, "without recording") {
		t.Errorf("step whose job ran: %+v, want lost with pid %d", st, pgids[ran])
	}
	if st := got[never]; st.State != nodes.StepLost || st.Pid != 0 {
		t.Errorf("step whose job never started: %+v, want lost with pid 0", st)
	}
}

// A launch on a node whose disk is full either starts the job with a
// record of it or starts nothing: never a job that ran while the launch
// was reported failed (nothing would watch it, and its CPUs would go to
// other jobs) or while its step looks never started (recovery would run a
// --no-requeue job again). The node's state directory is a tmpfs with room
// for k files, k = 2, 3, … until a launch completes; inotify on the
// script's interpreter tells whether the kernel executed the script.
func TestSSHLaunchOnFullDiskStartsNothingUnrecorded(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("mounting a small tmpfs needs root (CI runs the tests as root)")
	}
	v := start(t, 1)
	interp, executed := nodestest.ExecWatch(t, v.out)
	nodeDir := filepath.Join(v.state, "n1")
	if err := os.MkdirAll(nodeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for k := 2; ; k++ {
		if k > 64 {
			t.Fatal("no launch completed with room for 64 files")
		}
		n1 := v.c.Hosts[0]
		if out, err := n1.InMountNS("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=4m,nr_inodes=%d,mode=0755", k),
			"hora-test-disk", nodeDir); err != nil {
			t.Fatalf("mount tmpfs on %s: %v: %s", nodeDir, err, out)
		}
		done := func() bool {
			defer n1.InMountNS("umount", "-l", nodeDir)
			executed()
			s := v.spec(nodes.StepKey{Job: int64(100 + k), Step: -1}, "n1", "#!"+interp+"\ntrue\n")
			if err := v.e.Launch(t.Context(), s); err != nil {
				if executed() {
					t.Errorf("room for %d files: the launch failed (%v), but the job had started", k, err)
				}
				return false
			}
			st := v.exits.wait(t, s.Key, hang)
			if st.State == nodes.StepLost && st.Pid == 0 && executed() {
				t.Errorf("room for %d files: the step is lost with no pid (%+v), but the job had started", k, st)
			}
			return st.State == nodes.StepExited && st.ExitCode == 0
		}()
		if t.Failed() || done {
			t.Logf("a launch completed with room for %d files", k)
			return
		}
	}
}
