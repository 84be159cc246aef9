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

	"golang.org/x/sys/unix"

	"hora/nodes/ssh/sshtest"
)

// TestQsubInteractiveOnSSHNodeEndToEnd runs qsub -I, as an ordinary user on
// a real terminal, against a horad whose nodes are real sshd hosts (each in
// its own network namespace). The shell runs on a pty of the job's node:
// what is typed there runs on that node (its address), as the job's owner,
// on a terminal of the node; the terminal's size is the caller's and
// follows it when it changes; the shell's exit status becomes the job's,
// and qsub prints OpenPBS's lines and exits 0. The owner's home is
// /nonexistent (nobody's): the allocation holds all the same, and the
// shell starts in /tmp.
func TestQsubInteractiveOnSSHNodeEndToEnd(t *testing.T) {
	requireRoot(t)
	cl := sshtest.StartCluster(t, 3)
	c := newClusterWith(t, sshConfig(cl, "[pbs]\nflavour = \"openpbs\"\nserver = \"headnode\"\n", ""))
	home := filepath.Join(c.dir, "nobody")
	os.MkdirAll(home, 0o755)
	os.Chown(home, 65534, 65534)

	master, slave := testPty(t)
	setSize := func(rows, cols uint16) {
		t.Helper()
		if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
			t.Fatal(err)
		}
	}
	setSize(30, 101)
	cmd := exec.Command(filepath.Join(c.bin, "qsub"), "-I", "-N", "remote")
	cmd.Env = append(os.Environ(), "HORA_SOCKET="+c.sock, "TZ=UTC", "SHELL=/bin/sh", "TERM=dumb",
		"HOME="+home, "USER=nobody", "LOGNAME=nobody")
	cmd.Dir = home
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0,
		Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	})
	out := &syncBuffer{}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			out.write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	// find polls the terminal's output for re, typing line (if any) again
	// every few seconds until it shows: a shell prompt, a resize, or the
	// step's start may come late on a loaded machine.
	find := func(re *regexp.Regexp, line string) []string {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for next := time.Now(); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if m := re.FindStringSubmatch(out.String()); m != nil {
				return m
			}
			if line != "" && !time.Now().Before(next) {
				master.Write([]byte(line))
				next = time.Now().Add(3 * time.Second)
			}
		}
		t.Fatalf("no %s on qsub -I's terminal:\n%s", re, out.String())
		return nil
	}
	seq := find(regexp.MustCompile(`qsub: job (\d+)\.headnode ready\r?\n`), "")[1]
	m := find(regexp.MustCompile(`U=(\d+) T=(\S+) S=(\d+ \d+) A=(.*?) E=(\S*)\r?\n`),
		"echo \"U=$(id -u) T=$(tty) S=$(stty size) A=$(ip -4 -o addr show scope global | tr -s ' ' | cut -d' ' -f4 | tr '\\n' ,) E=$PBS_ENVIRONMENT\"\n")
	if m[1] != "65534" || !strings.HasPrefix(m[2], "/dev/pts/") || m[3] != "30 101" || m[5] != "PBS_INTERACTIVE" {
		t.Errorf("the shell answered uid %s, tty %s, size %q, PBS_ENVIRONMENT %q; want 65534, /dev/pts/N, \"30 101\", PBS_INTERACTIVE:\n%s",
			m[1], m[2], m[3], m[5], out.String())
	}
	var addrs []string
	for _, h := range cl.Hosts {
		addrs = append(addrs, h.Addr+"/24,")
	}
	if !slices.Contains(addrs, m[4]) {
		t.Errorf("the shell's network is %q, not one SSH node's (%v): it did not run on a node", m[4], addrs)
	}
	// The caller's window grows: the kernel signals qsub (SIGWINCH), which
	// passes the size on to the node's pty.
	setSize(42, 133)
	find(regexp.MustCompile(`R=42 133\r?\n`), "echo \"R=$(stty size)\"\n")
	master.Write([]byte("exit 7\n"))
	find(regexp.MustCompile(`\r?\nqsub: job `+seq+`\.headnode completed\r?\n`), "")
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("qsub -I exit: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("qsub -I did not exit:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "qsub: waiting for job "+seq+".headnode to start") {
		t.Errorf("no waiting line:\n%s", out.String())
	}
	c.waitState(seq, "COMPLETED", "FAILED")
	if r := c.run(65534, home, "qstat", "-x", "-f", seq); !strings.Contains(r.stdout, "    Exit_status = 7\n") ||
		!strings.Contains(r.stdout, "    Job_Owner = nobody@") {
		t.Errorf("the shell's status is not the job's (%s):\n%s", c.state(seq), r.stdout)
	}
}
