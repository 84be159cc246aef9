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

	term := startOnTerminal(t, c, 0, work, []string{"SHELL=/bin/sh", "TERM=dumb"}, "qsub", "-I", "-N", "inter")
	m := term.find(regexp.MustCompile(`qsub: job (\d+)\.headnode ready\r?\n`), "")
	seq := m[1]
	// Typed on the terminal: the shell's answers come back on it.
	term.type_("echo \"E=$PBS_ENVIRONMENT J=$PBS_JOBID T=$(tty)\"; exit 7\n")
	term.find(regexp.MustCompile(`E=PBS_INTERACTIVE J=`+seq+`\.headnode T=/dev/pts/\d+`), "")
	term.qsubCompleted(seq + ".headnode")
	c.waitState(seq, "COMPLETED", "FAILED")
	if r = c.run(0, work, "qstat", "-x", "-f", seq); !strings.Contains(r.stdout, "    Exit_status = 7\n") {
		t.Errorf("the shell's status is not the job's (%s):\n%s", c.state(seq), r.stdout)
	}
}

// terminal is a client command run on a pseudo-terminal the test holds,
// as a user runs it at a terminal: its session leader, the pty its
// controlling terminal.
type terminal struct {
	t      *testing.T
	master *os.File
	out    *syncBuffer
	done   chan error
	cmd    *exec.Cmd
}

// startOnTerminal starts a client command of c as uid on a new terminal of
// 30 rows and 101 columns, env added to its environment.
func startOnTerminal(t *testing.T, c *cluster, uid int, dir string, env []string, name string, args ...string) *terminal {
	t.Helper()
	master, slave := testPty(t)
	term := &terminal{t: t, master: master, out: &syncBuffer{}, done: make(chan error, 1)}
	term.resize(30, 101)
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Env = append(append(os.Environ(), "HORA_SOCKET="+c.sock, "TZ=UTC"), env...)
	cmd.Dir = dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if uid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	term.cmd = cmd
	slave.Close()
	go func() { term.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	})
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			term.out.write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	return term
}

// find waits until the terminal shows re, typing line (if any) again every
// few seconds meanwhile: a prompt, a resize or a start may come late on a
// loaded machine.
func (term *terminal) find(re *regexp.Regexp, line string) []string {
	term.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for next := time.Now(); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m := re.FindStringSubmatch(term.out.String()); m != nil {
			return m
		}
		if line != "" && !time.Now().Before(next) {
			term.type_(line)
			next = time.Now().Add(3 * time.Second)
		}
	}
	term.t.Fatalf("no %s on %s's terminal:\n%s", re, filepath.Base(term.cmd.Path), term.out.String())
	return nil
}

// type_ types s on the terminal.
func (term *terminal) type_(s string) { term.master.Write([]byte(s)) }

// resize changes the terminal's size; the kernel signals the command
// (SIGWINCH) when it is the terminal's foreground.
func (term *terminal) resize(rows, cols uint16) {
	term.t.Helper()
	if err := unix.IoctlSetWinsize(int(term.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		term.t.Fatal(err)
	}
}

// qsubCompleted waits for qsub -I's last line and its exit 0, and checks
// its first line (OP qsub_sup.c interactive()).
func (term *terminal) qsubCompleted(id string) {
	term.t.Helper()
	term.find(regexp.MustCompile(`\r?\nqsub: job `+regexp.QuoteMeta(id)+` completed\r?\n`), "")
	if code := term.exit(); code != 0 {
		term.t.Errorf("qsub -I exit %d", code)
	}
	if !strings.Contains(term.out.String(), "qsub: waiting for job "+id+" to start\r\n") {
		term.t.Errorf("no waiting line:\n%s", term.out.String())
	}
}

// exit waits for the command's end and gives its exit status.
func (term *terminal) exit() int {
	term.t.Helper()
	select {
	case <-term.done:
		return term.cmd.ProcessState.ExitCode()
	case <-time.After(60 * time.Second):
		term.t.Fatalf("%s did not exit:\n%s", filepath.Base(term.cmd.Path), term.out.String())
	}
	return -1
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

// TestSrunPtyEndToEnd: srun --pty on a local node runs task 0 on a pty of
// its own, of the caller's size, and returns the task's exit status.
func TestSrunPtyEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, localBatch)
	work := c.workDir()
	term := startOnTerminal(t, c, 65534, work, []string{"TERM=dumb"}, "srun", "--pty", "/bin/sh", "-i")
	m := term.find(regexp.MustCompile(`U=(\d+) T=(\S+) S=(\d+ \d+)\r?\n`), "echo \"U=$(id -u) T=$(tty) S=$(stty size)\"\n")
	if m[1] != "65534" || !strings.HasPrefix(m[2], "/dev/pts/") || m[3] != "30 101" {
		t.Errorf("the task answered uid %s, tty %s, size %q; want 65534, /dev/pts/N, \"30 101\":\n%s", m[1], m[2], m[3], term.out.String())
	}
	term.type_("exit 3\n")
	if code := term.exit(); code != 3 {
		t.Errorf("srun --pty exit %d, want the task's 3:\n%s", code, term.out.String())
	}
}
