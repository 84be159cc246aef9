package ssh_test

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hora/nodes"
)

// TestRunTaskOnPty runs a task on a pty of a real SSH host: it has a
// terminal of the node (tty, the size asked for), what is written to its
// stdin is typed on that terminal (echoed, lines ended by CR-NL), the
// window follows a resize, ^C typed ends the foreground command and not
// the task (which traps it) nor the node's shell that runs the task (which
// ignores it), and the exit status comes back.
func TestRunTaskOnPty(t *testing.T) {
	v := start(t, 1)
	h := v.c.Hosts[0]
	// Registered after start's: runs first, so that a failed test ends
	// the task before the executor closes.
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	resize := make(chan nodes.Winsize, 1)
	in, typed := io.Pipe()
	// What is typed goes in order through one writer, so that a task
	// that stopped reading fails the test rather than blocking it.
	keys := make(chan string, 64)
	go func() {
		for k := range keys {
			typed.Write([]byte(k))
		}
	}()
	t.Cleanup(func() { close(keys); typed.Close() })
	type_ := func(k string) { keys <- k }
	out := &ptyOutput{}
	spec := nodes.TaskSpec{Node: h.Name, Key: nodes.StepKey{Job: 11, Step: 0}, Task: 0, UID: v.uid, GID: v.gid,
		WorkDir: v.out, Env: []string{"PATH=/usr/bin:/bin"}, Stdin: in,
		Pty:  &nodes.Pty{Term: "vt100", Rows: 20, Cols: 70, Resize: resize},
		Argv: []string{"/bin/sh", "-c", `trap : INT; echo "T=$(tty) U=$(id -u) S=$(stty size)"; while read x; do case $x in q) exit 5;; c) sleep 600; echo "after ^C $?";; *) echo "S=$(stty size)";; esac; done`}}
	type result struct {
		ex  nodes.TaskExit
		err error
	}
	done := make(chan result, 1)
	go func() {
		ex, err := v.e.RunTask(ctx, spec, out, out)
		done <- result{ex, err}
	}()
	wait := func(what string, again func()) {
		t.Helper()
		for deadline, next := time.Now().Add(20*time.Second), time.Now(); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if strings.Contains(out.String(), what) {
				return
			}
			if again != nil && time.Now().After(next) {
				again()
				next = time.Now().Add(2 * time.Second)
			}
		}
		t.Fatalf("no %q from the task on its pty:\n%s", what, out.String())
	}
	wait("U="+strconv.FormatUint(uint64(v.uid), 10)+" S=20 70\r\n", nil)
	if !strings.Contains(out.String(), "T=/dev/pts/") {
		t.Errorf("the task has no terminal:\n%s", out.String())
	}
	resize <- nodes.Winsize{Rows: 33, Cols: 99}
	wait("S=33 99\r\n", func() { type_("size\n") })
	if !strings.Contains(out.String(), "size\r\n") {
		t.Errorf("what was typed was not echoed by the terminal:\n%s", out.String())
	}
	// ^C on the terminal interrupts sleep, the task's shell goes on.
	type_("c\n")
	wait("c\r\n", nil)
	wait("after ^C 130\r\n", func() { type_("\x03") })
	type_("q\n")
	select {
	case r := <-done:
		if r.err != nil || r.ex != (nodes.TaskExit{Code: 5}) {
			t.Errorf("the task ended %+v, %v; want exit 5", r.ex, r.err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the task did not end:\n%s", out.String())
	}
}

// ptyOutput collects what the task writes, for polling.
type ptyOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (p *ptyOutput) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.b.Write(b)
}

func (p *ptyOutput) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.b.String()
}

// BenchmarkRunTaskPtyEcho measures a keystroke's round trip on a remote
// pty: a line typed into the task's stdin until the task (cat) has written
// it back through the node's terminal, over the pooled connection.
func BenchmarkRunTaskPtyEcho(b *testing.B) {
	v := start(b, 1)
	ctx, cancel := context.WithCancel(b.Context())
	b.Cleanup(cancel)
	in, typed := io.Pipe()
	b.Cleanup(func() { typed.Close() })
	lines := make(chan struct{}, 1)
	out := &lineCounter{lines: lines}
	spec := nodes.TaskSpec{Node: v.c.Hosts[0].Name, Key: nodes.StepKey{Job: 12, Step: 0}, Task: 0, UID: v.uid, GID: v.gid,
		WorkDir: v.out, Env: []string{"PATH=/usr/bin:/bin"}, Stdin: in,
		Pty:  &nodes.Pty{Term: "dumb", Rows: 24, Cols: 80},
		Argv: []string{"/bin/sh", "-c", "stty -echo; echo ready; exec cat"}}
	go v.e.RunTask(ctx, spec, out, out)
	next := func() {
		select {
		case <-lines:
		case <-time.After(60 * time.Second):
			b.Fatal("the task on the pty wrote no line")
		}
	}
	next() // ready
	for b.Loop() {
		typed.Write([]byte("x\n"))
		next()
	}
}

// lineCounter signals each line the task writes.
type lineCounter struct{ lines chan struct{} }

func (l *lineCounter) Write(p []byte) (int, error) {
	for range bytes.Count(p, []byte("\n")) {
		l.lines <- struct{}{}
	}
	return len(p), nil
}
