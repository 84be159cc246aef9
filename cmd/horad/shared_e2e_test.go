package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// One node, several policies, through real horad and the real clients: the
// batch and res partitions share local[1-4]. An advance reservation on
// local[1-2] keeps batch jobs off those nodes in its window (Slurm's rule: a
// job may start on a reserved node only if its time limit ends before the
// reservation starts), the blocked job says why in Slurm's words, others run
// beside it or backfill before the window, and the reservation side refuses
// a window over a node where a batch job will still be running.
func TestSharedNodesEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, resConfig)
	work := c.workDir()

	// The window opens 90 s from now (not 60: a one-minute job submitted a
	// few seconds later must still end before it, so both sides of Slurm's
	// rule are exercised with real times) and lasts 10 minutes.
	r := c.run(0, work, "scontrol", "create", "reservation", "ReservationName=maint", "StartTime=now+90",
		"Duration=10", "Nodes=local[1-2]", "Users=root", "PartitionName=res", "Flags=MAINT")
	if r.code != 0 {
		t.Fatalf("create reservation: %+v", r)
	}
	show := c.run(0, work, "scontrol", "show", "-o", "reservation", "maint").stdout
	m := regexp.MustCompile(`StartTime=(\S+) EndTime=(\S+)`).FindStringSubmatch(show)
	if m == nil {
		t.Fatalf("show reservation: %q", show)
	}
	resvStart, err := time.ParseInLocation("2006-01-02T15:04:05", m[1], time.UTC)
	if err != nil {
		t.Fatal(err)
	}

	// Four nodes for five minutes meet the window on local[1-2]: pending.
	wide := c.submit(work, "-p", "batch", "-N", "4", "-t", "5", "--wrap", "true")
	const reason = "ReqNodeNotAvail, Reserved for maintenance"
	if got := c.run(0, work, "squeue", "-h", "-j", wide, "-o", "%T|%r").stdout; got != "PENDING|"+reason+"\n" {
		t.Errorf("-N 4 -t 5 across the window: squeue %q", got)
	}
	if got := c.run(0, work, "squeue", "-h", "-j", wide).stdout; !strings.HasSuffix(got, "("+reason+")\n") {
		t.Errorf("squeue default line: %q", got)
	}
	if got := c.run(0, work, "scontrol", "show", "job", wide).stdout; !strings.Contains(got, " Reason=ReqNodeNotAvail,_Reserved_for_maintenance ") {
		t.Errorf("scontrol show job: %q", got)
	}

	// Two nodes for five minutes run beside it, on the unreserved nodes.
	beside := c.submit(work, "-p", "batch", "-N", "2", "-t", "5", "--wrap", "sleep 300")
	c.waitState(beside, "RUNNING")
	if got := c.run(0, work, "squeue", "-h", "-j", beside, "-o", "%N").stdout; got != "local[3-4]\n" {
		t.Errorf("-N 2 -t 5 ran on %q, want local[3-4]", got)
	}

	// Two nodes for one minute: ends before the window if submitted early
	// enough, and then backfills on local[1-2]; for two minutes it cannot.
	submitTime := func(id string) time.Time {
		out := c.run(0, work, "scontrol", "show", "job", id).stdout
		m := regexp.MustCompile(`SubmitTime=(\S+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no SubmitTime for %s: %q", id, out)
		}
		st, err := time.ParseInLocation("2006-01-02T15:04:05", m[1], time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	for _, tc := range []struct {
		limit int
		fits  bool // expected, checked against the real times below
	}{{1, true}, {2, false}} {
		id := c.submit(work, "-p", "batch", "-N", "2", "-t", strconv.Itoa(tc.limit), "--wrap", "sleep 20")
		ends := submitTime(id).Add(time.Duration(tc.limit) * time.Minute)
		fits := !ends.After(resvStart)
		if fits != tc.fits {
			t.Fatalf("-t %d submitted too late to test the rule (ends %s, window %s)", tc.limit, ends, resvStart)
		}
		got := c.run(0, work, "squeue", "-h", "-j", id, "-o", "%T|%N|%r").stdout
		switch {
		case fits && got != "RUNNING|local[1-2]|None\n":
			t.Errorf("-N 2 -t %d ending %s before the window %s: %q, want it running on local[1-2]", tc.limit, ends, resvStart, got)
		case !fits && got != "PENDING||Priority\n":
			t.Errorf("-N 2 -t %d ending %s after the window %s: %q, want pending", tc.limit, ends, resvStart, got)
		}
		if !fits {
			c.run(0, work, "scancel", id)
		}
	}
	if got := c.run(0, work, "squeue", "-h", "-j", wide, "-o", "%T|%r").stdout; got != "PENDING|"+reason+"\n" {
		t.Errorf("head after the backfill: %q", got)
	}

	// The other way round: no reservation over a node where a batch job
	// will still be running (its limit ends in five minutes).
	r = c.run(0, work, "scontrol", "create", "reservation", "ReservationName=late", "StartTime=now+30",
		"Duration=1", "Nodes=local3", "Users=root", "PartitionName=res")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "Error creating the reservation: Requested nodes are busy (earliest feasible start ") {
		t.Errorf("reservation over a running batch job: %+v", r)
	}
	// Nor a rigid deadline job of the res partition on it.
	r = c.run(0, work, "sbatch", "-p", "res", "-N", "4", "-t", "1", "--deadline=now+120", "--wrap", "true")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "sbatch: error: Batch job submission failed: Job can not be booked by its deadline") {
		t.Errorf("rigid job over running batch jobs: %+v", r)
	}

	if r := c.run(0, work, "scancel", wide, beside); r.code != 0 {
		t.Errorf("scancel: %+v", r)
	}
	c.waitState(beside, "CANCELLED")
}

// A drained node is avoided by new bookings of the reserve policy when the
// other nodes can serve them (as Slurm picks a reservation's nodes among
// available ones), and used only when they cannot.
func TestDrainedNodeBookingEndToEnd(t *testing.T) {
	requireRootWaiting(t)
	c := newClusterWith(t, resConfig)
	work := c.workDir()
	if r := c.run(0, work, "scontrol", "update", "NodeName=local1", "State=DRAIN", "Reason=fan"); r.code != 0 {
		t.Fatalf("drain: %+v", r)
	}
	// A rigid job for one node now: on local2, not waiting for local1.
	id := c.submit(work, "-p", "res", "-N", "1", "-t", "1", "--wrap", "sleep 5")
	c.waitState(id, "RUNNING")
	if got := c.run(0, work, "squeue", "-h", "-j", id, "-o", "%N").stdout; got != "local2\n" {
		t.Errorf("rigid job on %q, want local2 (local1 is drained)", got)
	}
	nodesOf := func(name string) string {
		out := c.run(0, work, "scontrol", "show", "-o", "reservation", name).stdout
		m := regexp.MustCompile(` Nodes=(\S+) `).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("show reservation %s: %q", name, out)
		}
		return m[1]
	}
	// By count: three nodes exist without local1.
	if r := c.run(0, work, "scontrol", "create", "reservation", "ReservationName=three", "StartTime=now+60",
		"Duration=1", "NodeCnt=3", "Users=root", "PartitionName=res"); r.code != 0 {
		t.Fatalf("create NodeCnt=3: %+v", r)
	}
	if got := nodesOf("three"); got != "local[2-4]" {
		t.Errorf("NodeCnt=3 with local1 drained took %s", got)
	}
	// Four need local1: booked there, waiting for it.
	if r := c.run(0, work, "scontrol", "create", "reservation", "ReservationName=four", "StartTime=now+300",
		"Duration=1", "NodeCnt=4", "Users=root", "PartitionName=res"); r.code != 0 {
		t.Fatalf("create NodeCnt=4: %+v", r)
	}
	if got := nodesOf("four"); got != "local[1-4]" {
		t.Errorf("NodeCnt=4 took %s", got)
	}
	c.waitState(id, "COMPLETED")
}
