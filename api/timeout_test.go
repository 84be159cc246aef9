package api

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
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
