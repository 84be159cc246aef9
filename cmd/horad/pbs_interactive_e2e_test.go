package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestQsubInteractiveEndToEnd runs qsub -I on a terminal against a real
// horad: the job starts, the user's shell runs in it on a pty of its own
// (tty answers, PBS_ENVIRONMENT is PBS_INTERACTIVE), what is typed reaches
// it, and the job ends with the shell's status while qsub exits 0 with
// OpenPBS's lines. -X without a display is refused and creates nothing.
func TestQsubInteractiveEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, localBatch+"\n[pbs]\nflavour = \"openpbs\"\nserver = \"headnode\"\n")
	work := c.workDir()

	before := c.run(0, work, "squeue", "-h", "-t", "all", "-o", "%i").stdout
	r := c.runEnv(0, work, []string{"DISPLAY="}, "qsub", "-I", "-X")
	if r.code != 2 || !strings.HasPrefix(r.stderr, "qsub: DISPLAY not set\nusage: qsub") {
		t.Errorf("qsub -I -X without DISPLAY: %+v", r)
	}
	if r = c.run(0, work, "qsub", "-I", "-J", "1-2"); r.code != 2 ||
		!strings.HasPrefix(r.stderr, "qsub: interactive and array job submission cannot be used together\n") {
		t.Errorf("qsub -I -J: %+v", r)
	}
	if after := c.run(0, work, "squeue", "-h", "-t", "all", "-o", "%i").stdout; after != before {
		t.Errorf("refused qsub -I created a job: %q → %q", before, after)
	}

	master, slave := testPty(t)
	cmd := exec.Command(filepath.Join(c.bin, "qsub"), "-I", "-N", "inter")
	cmd.Env = append(os.Environ(), "HORA_SOCKET="+c.sock, "TZ=UTC", "SHELL=/bin/sh", "TERM=dumb")
	cmd.Dir = work
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
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
	waitOutput := func(re *regexp.Regexp) []string {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for time.Now().Before(deadline) {
			if m := re.FindStringSubmatch(out.String()); m != nil {
				return m
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("no %s in qsub -I's terminal:\n%s", re, out.String())
		return nil
	}
	m := waitOutput(regexp.MustCompile(`qsub: job (\d+)\.headnode ready\r?\n`))
	seq := m[1]
	// Typed on the terminal: the shell's answers come back on it.
	master.Write([]byte("echo \"E=$PBS_ENVIRONMENT J=$PBS_JOBID T=$(tty)\"; exit 7\n"))
	waitOutput(regexp.MustCompile(`E=PBS_INTERACTIVE J=` + seq + `\.headnode T=/dev/pts/\d+`))
	waitOutput(regexp.MustCompile(`\r?\nqsub: job ` + seq + `\.headnode completed\r?\n`))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("qsub -I exit: %v", err)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("qsub -I did not exit:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "qsub: waiting for job "+seq+".headnode to start") {
		t.Errorf("no waiting line:\n%s", out.String())
	}
	c.waitState(seq, "COMPLETED", "FAILED")
	if r = c.run(0, work, "qstat", "-x", "-f", seq); !strings.Contains(r.stdout, "    Exit_status = 7\n") {
		t.Errorf("the shell's status is not the job's (%s):\n%s", c.state(seq), r.stdout)
	}
}

// testPty opens a pseudo-terminal pair for a test's terminal.
func testPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, slave
}

// syncBuffer is a bytes.Buffer written by one goroutine and read by another.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) write(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
