package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitLog waits until horad's log holds every one of want (the log of one
// reload), starting after the first skip bytes.
func (c *cluster) waitLog(skip int, want ...string) string {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		l := c.log.String()[skip:]
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(l, w)
		}
		if ok {
			return l
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("horad log lacks %q:\n%s", want, c.log.String()[skip:])
	return ""
}

func (c *cluster) reload(text string) int {
	c.t.Helper()
	if err := os.WriteFile(c.config, []byte(text), 0o644); err != nil {
		c.t.Fatal(err)
	}
	mark := len(c.log.String())
	if err := c.daemon.Process.Signal(syscall.SIGHUP); err != nil {
		c.t.Fatal(err)
	}
	return mark
}

// twoLocalNodes: two local nodes in one default partition, the
// configuration the reload tests start from.
const twoLocalNodes = `
[[node]]
name = "local[1-2]"

[[partition]]
name = "batch"
nodes = "local[1-2]"
default = true
`

// TestReloadKeepsJobs: SIGHUP applies new nodes, partitions and limits to a
// real horad while a job runs and one waits; a broken file or one that
// would orphan the running job is refused with file:line, and horad keeps
// the configuration it had.
func TestReloadKeepsJobs(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, twoLocalNodes)
	w := c.workDir()
	script := writeScript(t, w, "long.sh", "#!/bin/sh\nsleep 300\n")
	run := c.submit(w, "-N", "2", "-t", "10", script)
	c.waitState(run, "RUNNING")
	wait := c.submit(w, "-N", "1", "-t", "10", script) // no free node: pending
	if got := c.state(wait); got != "PENDING" {
		t.Fatalf("second job: %s, want PENDING", got)
	}
	startOf := func(id string) string {
		return strings.TrimSpace(c.run(0, w, "squeue", "-h", "-j", id, "-o", "%S").stdout)
	}
	started := startOf(run)

	// A third node and a second partition with a limit: the pending job
	// starts on the new node, the running one is untouched.
	after := `
[[node]]
name = "local[1-3]"

[[partition]]
name = "batch"
nodes = "local[1-3]"
default = true
max_time = "30"

[[partition]]
name = "short"
nodes = "local3"
max_time = "5"
`
	mark := c.reload(after)
	c.waitLog(mark, "configuration reloaded")
	c.waitState(wait, "RUNNING")
	if got := c.state(run); got != "RUNNING" || startOf(run) != started {
		t.Errorf("running job after reload: %s started %s, want RUNNING started %s", got, startOf(run), started)
	}
	if r := c.run(0, w, "sinfo", "-h", "-o", "%P %l %D"); !strings.Contains(r.stdout, "short 5:00 1") {
		t.Errorf("sinfo after reload:\n%s", r.stdout)
	}
	// The new limit applies: as in Slurm, a job over the partition's
	// MaxTime waits with reason PartitionTimeLimit.
	over := c.submit(w, "-p", "short", "-t", "10", script)
	if r := c.run(0, w, "squeue", "-h", "-j", over, "-o", "%T %r"); strings.TrimSpace(r.stdout) != "PENDING PartitionTimeLimit" {
		t.Errorf("a 10-minute job in the 5-minute partition after reload: %q", r.stdout)
	}
	c.run(0, w, "scancel", over)

	// A broken file: refused, logged with file:line, nothing changes.
	broken := after + "\n[[partition]]\nname = \"x\"\nnodez = \"local1\"\n"
	line := strings.Count(broken[:strings.Index(broken, "nodez")], "\n") + 1
	mark = c.reload(broken)
	l := c.waitLog(mark, "reload refused")
	if at := c.config + ":" + strconv.Itoa(line); !strings.Contains(l, at) || !strings.Contains(l, "nodez") {
		t.Errorf("the refusal does not name %s and the key:\n%s", at, l)
	}
	if strings.Contains(c.log.String(), "change only at the next start") {
		t.Errorf("horad warns of a state_dir/socket change no file made:\n%s", c.log)
	}
	// A file that removes the nodes the jobs run on: refused too.
	mark = c.reload(twoLocalNodes)
	l = c.waitLog(mark, "reload refused")
	if !strings.Contains(l, "runs on node local") {
		t.Errorf("the refusal does not name the job's node:\n%s", l)
	}
	if r := c.run(0, w, "sinfo", "-h", "-o", "%P %l %D"); !strings.Contains(r.stdout, "short 5:00 1") {
		t.Errorf("sinfo after the refused reloads (want the reloaded configuration):\n%s", r.stdout)
	}
	for _, id := range []string{run, wait} {
		if got := c.state(id); got != "RUNNING" {
			t.Errorf("job %s after the refused reloads: %s", id, got)
		}
	}
	if c.daemon.ProcessState != nil {
		t.Fatalf("horad exited: %v", c.daemon.ProcessState)
	}
}

// TestScontrolReconfigure: `scontrol reconfigure` re-reads hora.toml as
// SIGHUP does, silently as Slurm's; a user who is not an operator is
// refused with Slurm's text, and a broken file is refused with its
// file:line while the running configuration stays. Exit 1 for both.
func TestScontrolReconfigure(t *testing.T) {
	requireRoot(t)
	const base = twoLocalNodes
	c := newClusterWith(t, base)
	w := c.workDir()
	partitions := func() string {
		return strings.TrimSpace(c.run(0, w, "sinfo", "-h", "-o", "%P").stdout)
	}
	if err := os.WriteFile(c.config, []byte(base+"\n[[partition]]\nname = \"short\"\nnodes = \"local2\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := c.run(65534, w, "scontrol", "reconfigure"); r.code != 1 || r.stderr != "slurm_reconfigure error: Invalid user id\n" {
		t.Fatalf("nobody's scontrol reconfigure: exit %d, %q", r.code, r.stderr)
	}
	if got := partitions(); got != "batch*" {
		t.Fatalf("partitions after a refused reconfigure: %q", got)
	}
	if r := c.run(0, w, "scontrol", "reconfigure"); r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("root's scontrol reconfigure: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if got := partitions(); got != "batch*\nshort" {
		t.Fatalf("partitions after scontrol reconfigure: %q, want batch* and short", got)
	}
	if err := os.WriteFile(c.config, []byte(base+"\n[[partition]]\nname = \"other\"\nnodes = \"local9\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := c.run(0, w, "scontrol", "reconfigure")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "slurm_reconfigure error: ") || !strings.Contains(r.stderr, "hora.toml:") || !strings.Contains(r.stderr, "local9") {
		t.Fatalf("a broken file: exit %d, %q; want its problem at file:line", r.code, r.stderr)
	}
	if got := partitions(); got != "batch*\nshort" {
		t.Fatalf("partitions after a refused file: %q, want the running ones", got)
	}
}
