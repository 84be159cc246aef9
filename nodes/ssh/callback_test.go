package ssh_test

import (
	"net"
	"os"
	"testing"
	"time"

	"hora/nodes"
)

// The callback socket is connectable by every user from the moment its path
// exists: sshd creates a forwarded socket 0600, and a job's srun that came
// between the listen and the chmod was refused "permission denied" (a make
// test run under a CPU hog). The test watches the path from before the
// forward until a second after it appears.
func TestCallbackSocketOpenToAllOnceThere(t *testing.T) {
	v := start(t, 1)
	node := v.c.Hosts[0].Name
	sock := v.e.CallbackPath(node)
	seen := make(chan []os.FileMode, 1)
	go func() {
		var modes []os.FileMode
		var since time.Time
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			fi, err := os.Lstat(sock)
			if err != nil {
				continue
			}
			if since.IsZero() {
				since = time.Now()
			}
			if len(modes) == 0 || modes[len(modes)-1] != fi.Mode() {
				modes = append(modes, fi.Mode())
			}
			if time.Since(since) > time.Second {
				break
			}
		}
		seen <- modes
	}()
	if err := v.e.ServeCallbacks(func(_ string, c net.Conn) { c.Close() }); err != nil {
		t.Fatal(err)
	}
	modes := <-seen
	if len(modes) == 0 {
		t.Fatalf("%s never appeared", sock)
	}
	for _, m := range modes {
		if m.Type() != os.ModeSocket || m.Perm() != 0o666 {
			t.Errorf("%s seen as %v, want a socket open to all (%v)", sock, modes, os.ModeSocket|0o666)
			break
		}
	}
}

// A step launched as the callbacks start finds its node's socket there, open
// to all: a job started as its node came up ran srun before the socket was
// forwarded and found none (a make test run under a CPU hog).
func TestStepStartsWithCallbackSocket(t *testing.T) {
	v := start(t, 1)
	node := v.c.Hosts[0].Name
	sock := v.e.CallbackPath(node)
	if err := v.e.ServeCallbacks(func(_ string, c net.Conn) { c.Close() }); err != nil {
		t.Fatal(err)
	}
	key := nodes.StepKey{Job: 1, Step: -1}
	s := v.spec(key, node, "#!/bin/sh\nif [ -S "+sock+" ] && [ -w "+sock+" ]; then echo there; else echo missing; fi\n")
	if err := v.e.Launch(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	st := v.exits.wait(t, key, 30*time.Second)
	if out, _ := os.ReadFile(s.Stdout); st.ExitCode != 0 || string(out) != "there\n" {
		t.Errorf("the step saw the callback socket %q (status %+v)", out, st)
	}
}
