package main

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// What Slurm users see of a reservation's nodes, through real horad and
// the real clients: idle before the window; Nodes+=, Nodes-= and NodeCnt=
// resize it (a busy node refused with Slurm's text, nothing changed);
// after a SIGKILL and a restart inside the window the reservation is
// ACTIVE, its idle nodes show resv in sinfo and RESERVED in scontrol show
// node, a drained one drain and RESERVED+DRAIN.
func TestReservationNodeStatesEndToEnd(t *testing.T) {
	requireRootWaiting(t)
	c := newClusterWith(t, resConfig)
	work := c.workDir()
	expect := func(what string, r result, code int, stdout, stderr string) {
		t.Helper()
		if r.code != code || (stdout != "*" && r.stdout != stdout) || (stderr != "*" && r.stderr != stderr) {
			t.Errorf("%s: exit %d stdout %q stderr %q; want exit %d stdout %q stderr %q", what, r.code, r.stdout, r.stderr, code, stdout, stderr)
		}
	}
	states := func() string {
		t.Helper()
		r := c.run(0, work, "sinfo", "-N", "-h", "-p", "res", "-o", "%N %t")
		if r.code != 0 {
			t.Fatalf("sinfo: %+v", r)
		}
		return strings.ReplaceAll(strings.TrimSpace(r.stdout), "\n", ",")
	}
	nodeState := func(n string) string {
		t.Helper()
		r := c.run(0, work, "scontrol", "show", "node", n)
		m := regexp.MustCompile(`State=(\S+)`).FindStringSubmatch(r.stdout)
		if r.code != 0 || m == nil {
			t.Fatalf("scontrol show node %s: %+v", n, r)
		}
		return m[1]
	}

	start := time.Now().Unix() + 6
	at := time.Unix(start, 0).UTC().Format("2006-01-02T15:04:05")
	expect("create w", c.run(0, work, "scontrol", "create", "reservation", "ReservationName=w", "StartTime="+at,
		"Duration=2", "Nodes=local[1-2]", "Users=root", "PartitionName=res"), 0, "Reservation created: w\n", "")
	expect("create o", c.run(0, work, "scontrol", "create", "reservation", "ReservationName=o", "StartTime="+at,
		"Duration=2", "Nodes=local3", "Users=root", "PartitionName=res"), 0, "Reservation created: o\n", "")
	if got := states(); got != "local1 idle,local2 idle,local3 idle,local4 idle" {
		t.Errorf("before the window: %s", got)
	}
	if got := nodeState("local1"); got != "IDLE" {
		t.Errorf("scontrol show node before the window: State=%s", got)
	}

	// Resizing.
	r := c.run(0, work, "scontrol", "update", "ReservationName=w", "Nodes+=local3")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "Error updating the reservation: Requested nodes are busy") {
		t.Errorf("Nodes+= a node of another reservation: %+v", r)
	}
	shown := func() string {
		r := c.run(0, work, "scontrol", "show", "reservation", "w")
		m := regexp.MustCompile(`Nodes=(\S+) NodeCnt=(\d+)`).FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("show reservation w: %+v", r)
		}
		return m[1] + " " + m[2]
	}
	if got := shown(); got != "local[1-2] 2" {
		t.Errorf("after the refused update: %s", got)
	}
	for _, step := range []struct{ arg, want string }{
		{"Nodes+=local4", "local[1-2,4] 3"},
		{"Nodes-=local1", "local[2,4] 2"},
		{"NodeCnt=3", "local[1-2,4] 3"},
		{"NodeCnt=2", "local[1-2] 2"},
	} {
		expect(step.arg, c.run(0, work, "scontrol", "update", "ReservationName=w", step.arg), 0, "Reservation updated.\n", "")
		if got := shown(); got != step.want {
			t.Errorf("after %s: %s, want %s", step.arg, got, step.want)
		}
	}

	// SIGKILL, then restart once the window has begun.
	c.kill9()
	time.Sleep(time.Until(time.Unix(start+1, 0)))
	c.start()
	r = c.run(0, work, "scontrol", "show", "reservation", "w")
	if r.code != 0 || !strings.Contains(r.stdout, " State=ACTIVE ") || !strings.Contains(r.stdout, "Nodes=local[1-2] ") {
		t.Errorf("after the restart inside the window: %+v", r)
	}
	if got := states(); got != "local1 resv,local2 resv,local3 resv,local4 idle" {
		t.Errorf("sinfo inside the window: %s", got)
	}
	if r := c.run(0, work, "sinfo", "-N", "-h", "-n", "local1", "-p", "res", "-o", "%T"); r.stdout != "reserved\n" {
		t.Errorf("sinfo %%T: %+v", r)
	}
	if got := nodeState("local1"); got != "RESERVED" {
		t.Errorf("scontrol show node local1 inside the window: State=%s", got)
	}
	expect("drain", c.run(0, work, "scontrol", "update", "NodeName=local2", "State=DRAIN", "Reason=fan"), 0, "", "")
	if got := nodeState("local2"); got != "RESERVED+DRAIN" {
		t.Errorf("drained reserved node: State=%s", got)
	}
	if got := states(); got != "local1 resv,local2 drain,local3 resv,local4 idle" {
		t.Errorf("sinfo with local2 drained: %s", got)
	}
	expect("resume", c.run(0, work, "scontrol", "update", "NodeName=local2", "State=RESUME"), 0, "", "")
}
