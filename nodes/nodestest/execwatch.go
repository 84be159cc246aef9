// Package nodestest holds what the executors' tests share.
package nodestest

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// ExecWatch copies /bin/sh into dir (which the job's user must be able to
// read) and watches the copy with inotify: a script whose #! line names
// interp was executed by the kernel exactly when executed reports an open
// of it. executed drains the events, so it says whether any came since
// its last call. Seen this way, whether a job started has no race with a
// launcher that kills the job it has just started.
func ExecWatch(t testing.TB, dir string) (interp string, executed func() bool) {
	t.Helper()
	interp = filepath.Join(dir, "sh")
	b, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(interp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(in) })
	if _, err := unix.InotifyAddWatch(in, interp, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	return interp, func() bool {
		buf := make([]byte, 4096)
		n, _ := unix.Read(in, buf)
		return n > 0
	}
}
