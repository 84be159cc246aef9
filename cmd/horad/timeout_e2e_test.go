package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A stopped horad is not a hang for its users: every command gives up after
// the message timeout with Slurm's text and exit code, and once horad runs
// again the commands work and nothing acknowledged is lost (issue 16 item 2).
func TestHungControllerTimesOut(t *testing.T) {
	requireRootWaiting(t)
	c := newCluster(t)
	work := c.workDir()
	script := writeScript(t, work, "job.sh", "#!/bin/sh\ntrue\n")
	acked := c.submit(work, "--hold", script)

	if err := c.daemon.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			c.daemon.Process.Signal(syscall.SIGCONT)
		}
	}()
	run := func(name string, args ...string) (string, int) {
		cmd := exec.Command(filepath.Join(c.bin, name), args...)
		cmd.Env = append(os.Environ(), "HORA_SOCKET="+c.sock, "HORA_MESSAGE_TIMEOUT=1", "TZ=UTC")
		cmd.Dir = work
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			return out.String(), code
		case <-time.After(90 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%s %q against a stopped horad still waiting after 90 s", name, args)
			return "", 0
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"squeue", nil, "slurm_load_jobs error: Socket timed out on send/recv operation\n"},
		{"sinfo", nil, "slurm_load_partitions: Socket timed out on send/recv operation\n"},
		{"scontrol", []string{"show", "job", acked}, "slurm_load_jobs error: Socket timed out on send/recv operation\n"},
		{"sbatch", []string{"--hold", script}, "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation\n"},
	} {
		out, code := run(tc.name, tc.args...)
		if code != 1 || out != tc.want {
			t.Errorf("%s %q against a stopped horad: exit %d, output %q; want exit 1 and %q", tc.name, tc.args, code, out, tc.want)
		}
	}

	if err := c.daemon.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	// horad first serves what queued up while it was stopped (the timed-out
	// clients' requests): wait for it to answer again, boundedly.
	var r result
	waitFor(t, "horad to answer after SIGCONT", func() bool {
		r = c.run(0, work, "squeue", "-h", "-t", "all", "-o", "%i")
		return r.code == 0
	})
	if !strings.Contains(r.stdout, acked+"\n") {
		t.Fatalf("after SIGCONT: squeue exit %d, %q %q; acknowledged job %s must be listed", r.code, r.stdout, r.stderr, acked)
	}
	if c.daemon.ProcessState != nil {
		t.Fatal("horad exited")
	}
}
