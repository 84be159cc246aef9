package controller

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"hora/api"
	"hora/nodes"
)

// The node listing says what `scontrol show node` prints of the machine: the
// kernel and boot time of a local node (this machine's), when horad began to
// serve it, and when it last ran a job: the end of its last job, kept after
// the job itself is forgotten (MinJobAge).
func TestNodeListingSystemAndLastBusy(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	c.started = c.started.Add(-time.Hour) // so that every end below is later
	node := func() api.Node {
		t.Helper()
		out, err := c.hNodes(t.Context(), root, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*api.NodesResponse).Nodes[0]
	}
	uname, err := exec.Command("uname", "-s", "-r", "-v").Output()
	if err != nil {
		t.Fatal(err)
	}
	stat, _ := os.ReadFile("/proc/stat")
	boot, _ := nodes.ParseBootTime(string(stat))
	n := node()
	if n.OS != strings.TrimSpace(string(uname)) || n.BootTime != boot.Unix() || boot.IsZero() {
		t.Errorf("OS %q booted %d, want %q booted %d", n.OS, n.BootTime, strings.TrimSpace(string(uname)), boot.Unix())
	}
	started := c.started.Unix()
	if n.StartTime != started || n.LastBusy != started {
		t.Errorf("an unused node: StartTime %d LastBusy %d, want both %d", n.StartTime, n.LastBusy, started)
	}

	r, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: f.spec("true")})
	if err != nil {
		t.Fatal(err)
	}
	runFor(t, c, "the job ends", func() bool { return c.finishedLocked(r.JobID) })
	c.mu.Lock()
	end := c.jobs[r.JobID].EndTime
	c.mu.Unlock()
	if n := node(); n.LastBusy != end {
		t.Errorf("LastBusy %d after a job that ended at %d", n.LastBusy, end)
	}
	c.mu.Lock()
	c.cfg.MinJobAgeS = 0
	c.jobs[r.JobID].EndTime = end - 10 // old enough to forget, still after start
	c.pruneLocked()
	_, kept := c.jobs[r.JobID]
	c.mu.Unlock()
	if kept {
		t.Fatal("the job was not forgotten")
	}
	if n := node(); n.LastBusy != end-10 {
		t.Errorf("LastBusy %d after the job was forgotten, want %d", n.LastBusy, end-10)
	}
}
