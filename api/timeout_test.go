package api

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// silentDaemon accepts connections and reads requests but never answers, as
// a SIGSTOPped or wedged horad looks from a client (the kernel still accepts
// into the listen backlog).
func silentDaemon(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "horad.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return sock
}

// A daemon that never answers gives Slurm's socket-timeout error, not a hang,
// for requests with and without a body.
func TestSilentDaemonTimesOut(t *testing.T) {
	t.Setenv("HORA_SOCKET", silentDaemon(t))
	t.Setenv("HORA_MESSAGE_TIMEOUT", "0.2")
	c, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	if c.Timeout != 200*time.Millisecond {
		t.Fatalf("Timeout from HORA_MESSAGE_TIMEOUT=0.2: %v", c.Timeout)
	}
	for name, call := range map[string]func() error{
		"jobs":   func() error { _, err := c.Jobs(context.Background(), JobFilter{}); return err },
		"submit": func() error { _, err := c.Submit(context.Background(), SubmitRequest{}); return err },
	} {
		done := make(chan error, 1)
		go func() { done <- call() }()
		select {
		case err := <-done:
			var ae *Error
			if !errors.As(err, &ae) || ae.Code != CodeTimeout || ae.Message != MsgSocketTimeout {
				t.Fatalf("%s against a silent daemon: %v, want %q", name, err, MsgSocketTimeout)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%s against a silent daemon still waiting after 60 s", name)
		}
	}
}

// A caller's own deadline wins over the message timeout, and its expiry is
// reported as the caller's, not as a socket timeout.
func TestCallerDeadlineIsNotASocketTimeout(t *testing.T) {
	c := NewClient(silentDaemon(t))
	c.Timeout = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Jobs(ctx, JobFilter{})
	var ae *Error
	if errors.As(err, &ae) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("caller deadline: %v, want context.DeadlineExceeded", err)
	}
}

// A malformed timeout is refused with the variable's name, before any request.
func TestBadMessageTimeoutIsNamed(t *testing.T) {
	for _, v := range []string{"banana", "0", "-3", "1e9"} {
		t.Setenv("HORA_MESSAGE_TIMEOUT", v)
		if _, err := MessageTimeout(); err == nil || !contains(err.Error(), "HORA_MESSAGE_TIMEOUT") {
			t.Errorf("HORA_MESSAGE_TIMEOUT=%q: %v", v, err)
		}
	}
	t.Setenv("HORA_MESSAGE_TIMEOUT", "")
	if d, err := MessageTimeout(); err != nil || d != DefaultMessageTimeout {
		t.Fatalf("unset: %v %v", d, err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// Dial tries a socket that is not there, or refuses, again once a second
// within the message timeout (as Slurm's commands retry connecting to
// slurmctld): a horad that comes up meanwhile is reached; one that does
// not is reported after the last try; with a timeout of a second or less
// there is one try; a socket the caller may not open is not tried again.
func TestDialWaitsForARestartingDaemon(t *testing.T) {
	old := dialRetryPause
	dialRetryPause = 100 * time.Millisecond
	t.Cleanup(func() { dialRetryPause = old })
	dir := t.TempDir()
	sock := filepath.Join(dir, "horad.sock")
	t.Setenv("HORA_SOCKET", sock)

	// Refusing: a socket file nobody listens on (horad killed).
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	t.Setenv("HORA_MESSAGE_TIMEOUT", "0.1")
	if _, err := Dial(); err == nil {
		t.Fatal("Dial reached a socket nobody listens on")
	}
	// The daemon comes back after a few tries.
	t.Setenv("HORA_MESSAGE_TIMEOUT", "30")
	up := make(chan net.Listener, 1)
	go func() {
		time.Sleep(350 * time.Millisecond)
		os.Remove(sock)
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Error(err)
		}
		up <- l
	}()
	c, err := Dial()
	if err != nil {
		t.Fatalf("Dial while the daemon restarts: %v", err)
	}
	l = <-up
	defer l.Close()
	if c.Socket != sock {
		t.Fatalf("connected to %q", c.Socket)
	}

	// Gone for good: the error names the path after the tries.
	l.Close()
	os.Remove(sock)
	t.Setenv("HORA_MESSAGE_TIMEOUT", "0.5")
	_, err = Dial()
	var nd *ErrNoDaemon
	if !errors.As(err, &nd) || len(nd.Tried) != 1 || !strings.Contains(nd.Tried[0], "no such file or directory") {
		t.Fatalf("Dial of a missing socket: %v", err)
	}

	// A socket the caller may not open (EACCES) is not tried again.
	if retryableDial(syscall.EACCES) || !retryableDial(syscall.ECONNREFUSED) || !retryableDial(syscall.EAGAIN) {
		t.Error("retryableDial: EACCES is final, ECONNREFUSED and EAGAIN are not")
	}
}
