package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// horad started by systemd's socket activation (horad.socket): the socket
// is passed as fd 3 with LISTEN_FDS and LISTEN_PID, as systemd does. The
// first squeue is answered (from the store while horad recovers, or from
// memory after), and a submission made right away is recorded once the
// state is rebuilt, with the next id (docs/recovery.md).
func TestSocketActivatedStart(t *testing.T) {
	requireRoot(t)
	c := newCluster(t)
	work := c.workDir()
	var ids []string
	for range 3 {
		ids = append(ids, c.submit(work, "--hold", "--wrap", "true"))
	}
	c.stop()
	os.Remove(c.sock)

	l, err := net.Listen("unix", c.sock)
	if err != nil {
		t.Fatal(err)
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // the socket file stays, as systemd's does
	f, err := ul.File()
	l.Close() // the duplicate in f keeps the socket listening
	if err != nil {
		t.Fatal(err)
	}
	c.log = &lockedBuffer{}
	// LISTEN_PID must be horad's own pid: the shell sets it to its own and
	// execs horad in its place.
	c.daemon = exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ exec "$0" "$@"`, filepath.Join(c.bin, "horad"),
		"--state-dir", c.varDir, "--socket", c.sock, "--log-level", "debug")
	c.daemon.Env = append(os.Environ(), "LISTEN_FDS=1")
	c.daemon.ExtraFiles = []*os.File{f}
	c.daemon.Stderr = c.log
	c.daemon.Dir = c.dir
	if err := c.daemon.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	r := c.run(0, work, "squeue", "-h", "-o", "%i %t %r")
	if r.code != 0 || r.stdout != ids[2]+" PD JobHeldUser\n"+ids[1]+" PD JobHeldUser\n"+ids[0]+" PD JobHeldUser\n" {
		t.Fatalf("first squeue after an activated start: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	id := c.submit(work, "--hold", "--wrap", "true")
	if got := c.state(id); got != "PENDING" {
		t.Fatalf("job %s submitted after an activated start: %q", id, got)
	}
	r = c.run(0, work, "squeue", "-h", "-o", "%i")
	if n := strings.Count(r.stdout, "\n"); n != 4 {
		t.Fatalf("squeue after the submission: %q", r.stdout)
	}
	if !strings.Contains(c.log.String(), "activated=true") {
		t.Fatalf("horad did not take the passed socket:\n%s", c.log)
	}
}
