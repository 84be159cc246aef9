package ssh_test

import (
	"net"
	"os"
	"testing"
	"time"
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
