package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitFor polls f until it returns true or 30 s pass.
func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	for deadline := time.Now().Add(90 * time.Second); !f(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// Draining a local node through the real clients: an operator's request
// only (nobody is refused with Slurm's text and nothing changes); new work
// avoids the node while its running job continues (sinfo drng, then drain
// once idle); the state and reason survive a restart of horad; resume
// brings the node back into use.
func TestDrainResumeEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, localBatch)
	work := c.workDir()
	nodeStates := func() string { return c.run(0, c.dir, "sinfo", "-N", "-h", "-o", "%N %t").stdout }
	nodeOf := func(id string) string {
		return strings.TrimSpace(c.run(0, c.dir, "squeue", "-h", "-j", id, "-o", "%N").stdout)
	}

	started := filepath.Join(work, "a-started")
	release := filepath.Join(work, "a-release")
	a := c.submit(work, "-o", "/dev/null", "--wrap",
		"touch "+started+"; while [ ! -e "+release+" ]; do sleep 0.1; done")
	c.waitState(a, "RUNNING")
	if n := nodeOf(a); n != "local1" {
		t.Fatalf("first job on %q, want local1", n)
	}

	// A non-operator is refused with scontrol's text; nothing changes.
	r := c.run(65534, c.dir, "scontrol", "update", "NodeName=local1", "State=DRAIN", "Reason=mine now")
	if r.code != 1 || r.stderr != "slurm_update error: Invalid user id\n" {
		t.Fatalf("nobody drains: %+v", r)
	}
	r = c.run(0, c.dir, "scontrol", "update", "NodeName=local1", "State=DRAIN")
	if r.code != 1 || r.stderr != "You must specify a reason when DOWNING or DRAINING a node. Request denied\n" {
		t.Fatalf("drain without reason: %+v", r)
	}
	r = c.run(0, c.dir, "scontrol", "update", "NodeName=nosuch", "State=DRAIN", "Reason=x")
	if r.code != 1 || r.stderr != "slurm_update error: Invalid node name specified\n" {
		t.Fatalf("unknown node: %+v", r)
	}
	r = c.run(0, c.dir, "scontrol", "update", "NodeName=local1", "State=sleepy", "Reason=x")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "Invalid input: State=sleepy\nRequest aborted\nValid states are: NoResp DRAIN") {
		t.Fatalf("bad state: %+v", r)
	}
	if s := nodeStates(); !strings.Contains(s, "local1 alloc") {
		t.Fatalf("refused requests changed the node:\n%s", s)
	}

	r = c.run(0, c.dir, "scontrol", "update", "NodeName=local1", "State=DRAIN", "Reason=disk swap")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("drain: %+v", r)
	}
	if s := nodeStates(); !strings.Contains(s, "local1 drng") {
		t.Fatalf("sinfo while the job runs on the drained node:\n%s", s)
	}
	show := c.run(0, c.dir, "scontrol", "show", "node", "local1").stdout
	if !strings.Contains(show, "State=ALLOCATED+DRAIN ") || !strings.Contains(show, "Reason=disk swap [root@") {
		t.Fatalf("scontrol show node local1:\n%s", show)
	}

	// New work avoids local1: a 3-node job gets the other three, and one
	// more job waits although local1 holds no step after the first ends.
	b := c.submit(work, "-N", "3", "-o", "/dev/null", "--wrap", "sleep 300")
	c.waitState(b, "RUNNING")
	if n := nodeOf(b); n != "local[2-4]" {
		t.Fatalf("3-node job on %q, want local[2-4]", n)
	}
	// RUNNING is decided before the launch: the script may not have run yet.
	waitFor(t, "the running job to run", func() bool { _, err := os.Stat(started); return err == nil })
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitState(a, "COMPLETED") // the drain let it finish
	waitFor(t, "local1 drained", func() bool { return strings.Contains(nodeStates(), "local1 drain\n") })
	d := c.submit(work, "-o", "/dev/null", "--wrap", "sleep 300")
	time.Sleep(1500 * time.Millisecond) // scheduling passes run at least every second
	if st := c.state(d); st != "PENDING" {
		t.Fatalf("job submitted while the only free node is drained: %s", st)
	}
	reasons := c.run(0, c.dir, "sinfo", "-R", "-h").stdout
	if !strings.HasPrefix(reasons, "disk swap            root      20") || !strings.HasSuffix(reasons, " local1\n") {
		t.Fatalf("sinfo -R:\n%q", reasons)
	}

	// The drain is durable.
	c.stop()
	c.start()
	if s := nodeStates(); !strings.Contains(s, "local1 drain\n") {
		t.Fatalf("after restart:\n%s", s)
	}
	if r2 := c.run(0, c.dir, "sinfo", "-R", "-h").stdout; r2 != reasons {
		t.Fatalf("sinfo -R after restart %q, before %q", r2, reasons)
	}
	time.Sleep(1500 * time.Millisecond)
	if st := c.state(d); st != "PENDING" {
		t.Fatalf("after restart the waiting job is %s", st)
	}

	r = c.run(0, c.dir, "scontrol", "update", "NodeName=local1", "State=RESUME")
	if r.code != 0 {
		t.Fatalf("resume: %+v", r)
	}
	c.waitState(d, "RUNNING")
	if n := nodeOf(d); n != "local1" {
		t.Fatalf("after resume the job runs on %q, want local1", n)
	}
	if s := c.run(0, c.dir, "sinfo", "-R", "-h").stdout; s != "" {
		t.Fatalf("sinfo -R after resume: %q", s)
	}
	r = c.run(0, c.dir, "scontrol", "update", "NodeName=local1", "State=RESUME")
	if r.code != 1 || r.stderr != "slurm_update error: Invalid node state specified\n" {
		t.Fatalf("resume of an allocated node: %+v", r)
	}
	c.run(0, c.dir, "scancel", b, d)
}

// Suspend and resume through the real clients: only an operator may; the
// job's output stops advancing while it is SUSPENDED (squeue S, sacct
// SUSPENDED, its node still allocated) and advances again after resume;
// the suspended time does not count toward the time limit: a job that runs
// about 51 s under a one-minute limit, suspended for 12 s, completes
// instead of timing out at 60 s of wall time.
func TestSuspendResumeEndToEnd(t *testing.T) {
	requireRootWaiting(t)
	c := newClusterWith(t, localBatch)
	work := c.workDir()
	out := filepath.Join(work, "ticks.out")
	id := c.submit(work, "-t", "1", "-o", out, "--wrap", "for i in $(seq 100); do echo $i; sleep 0.5; done")
	c.waitState(id, "RUNNING")
	lines := func() int {
		b, _ := os.ReadFile(out)
		return strings.Count(string(b), "\n")
	}
	waitFor(t, "first output", func() bool { return lines() > 0 })

	r := c.run(65534, c.dir, "scontrol", "suspend", id)
	if r.code != 1 || r.stderr != "Access/permission denied for job "+id+"\n" {
		t.Fatalf("nobody suspends: %+v", r)
	}
	r = c.run(0, c.dir, "scontrol", "resume", id)
	if r.code != 1 || r.stderr != "Job is not suspended for job "+id+"\n" {
		t.Fatalf("resume of a running job: %+v", r)
	}
	// The job has written, so its start is recorded: the suspend is
	// accepted even if horad has not had the launch's handshake yet (it
	// stops the step once it has; under a CPU hog that came after the
	// first line, and horad refused "Job is not running yet").
	if r = c.run(0, c.dir, "scontrol", "suspend", id); r.code != 0 || r.stderr != "" {
		t.Fatalf("suspend: %+v", r)
	}
	suspendedAt := time.Now()
	if st := c.run(0, c.dir, "squeue", "-h", "-j", id, "-o", "%t %N").stdout; st != "S local1\n" {
		t.Fatalf("squeue of the suspended job: %q", st)
	}
	if st := c.run(0, c.dir, "sacct", "-n", "-X", "-P", "-j", id, "-o", "State").stdout; st != "SUSPENDED\n" {
		t.Fatalf("sacct of the suspended job: %q", st)
	}
	if st := c.run(0, c.dir, "sinfo", "-h", "-N", "-n", "local1", "-o", "%t").stdout; st != "alloc\n" {
		t.Fatalf("node of the suspended job: %q", st)
	}
	// STOP reaches the step once horad has the launch's handshake, and a
	// tick in flight when it came may still land: the output must stop
	// (a running job writes every 0.5 s, so 1.5 s without a line is a
	// stop), then stay stopped.
	frozen := lines()
	for still := time.Now(); time.Since(still) < 1500*time.Millisecond; time.Sleep(100 * time.Millisecond) {
		if n := lines(); n != frozen {
			frozen, still = n, time.Now()
		}
		if time.Since(suspendedAt) > 30*time.Second {
			t.Fatalf("output still advancing 30 s after the suspend: %d lines", frozen)
		}
	}
	time.Sleep(2 * time.Second)
	if n := lines(); n != frozen {
		t.Fatalf("output advanced while suspended: %d → %d lines", frozen, n)
	}
	show := c.run(0, c.dir, "scontrol", "show", "job", id).stdout
	if !strings.Contains(show, "JobState=SUSPENDED ") || strings.Contains(show, "SuspendTime=None") {
		t.Fatalf("scontrol show job while suspended:\n%s", show)
	}
	time.Sleep(time.Until(suspendedAt.Add(12 * time.Second)))
	if r = c.run(0, c.dir, "scontrol", "resume", id); r.code != 0 || r.stderr != "" {
		t.Fatalf("resume: %+v", r)
	}
	waitFor(t, "output after resume", func() bool { return lines() > frozen })
	if st := c.state(id); st != "RUNNING" {
		t.Fatalf("after resume: %s", st)
	}
	// 60 s of wall time pass before the job's ~51 s of run time do.
	deadline := time.Now().Add(90 * time.Second)
	for st := c.state(id); st == "RUNNING"; st = c.state(id) {
		if time.Now().After(deadline) {
			t.Fatal("the job never ended")
		}
		time.Sleep(500 * time.Millisecond)
	}
	if st := c.state(id); st != "COMPLETED" {
		t.Fatalf("job suspended for 12 s under a one-minute limit ended %s, want COMPLETED", st)
	}
	if n := lines(); n != 100 {
		t.Fatalf("job wrote %d lines, want 100", n)
	}
}

// An operator sets two local nodes DOWN under running jobs: the job that
// allows requeueing runs again elsewhere (Restarts=1), the --no-requeue one
// ends NODE_FAIL; `scontrol requeue` puts a running job back to the queue
// on request, and refuses a finished one.
func TestDownRequeuesEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, localBatch)
	work := c.workDir()
	nodeOf := func(id string) string {
		return strings.TrimSpace(c.run(0, c.dir, "squeue", "-h", "-j", id, "-o", "%N").stdout)
	}
	rq := c.submit(work, "-o", "/dev/null", "--wrap", "sleep 300")
	c.waitState(rq, "RUNNING")
	nf := c.submit(work, "--no-requeue", "-o", "/dev/null", "--wrap", "sleep 300")
	c.waitState(nf, "RUNNING")
	if a, b := nodeOf(rq), nodeOf(nf); a != "local1" || b != "local2" {
		t.Fatalf("jobs on %q and %q, want local1 and local2", a, b)
	}
	r := c.run(0, c.dir, "scontrol", "update", "NodeName=local[1-2]", "State=DOWN", "Reason=bad dimm")
	if r.code != 0 {
		t.Fatalf("down: %+v", r)
	}
	c.waitState(nf, "NODE_FAIL")
	waitFor(t, "requeued job running on local3", func() bool { return c.state(rq) == "RUNNING" && nodeOf(rq) == "local3" })
	show := c.run(0, c.dir, "scontrol", "show", "job", rq).stdout
	if !strings.Contains(show, "Requeue=1 Restarts=1 ") {
		t.Fatalf("requeued job:\n%s", show)
	}
	if s := c.run(0, c.dir, "sinfo", "-h", "-N", "-o", "%N %t").stdout; !strings.Contains(s, "local1 down\n") || !strings.Contains(s, "local2 down\n") {
		t.Fatalf("sinfo after DOWN:\n%s", s)
	}

	if r = c.run(0, c.dir, "scontrol", "requeue", rq); r.code != 0 || r.stderr != "" {
		t.Fatalf("scontrol requeue: %+v", r)
	}
	waitFor(t, "second restart", func() bool {
		return strings.Contains(c.run(0, c.dir, "scontrol", "show", "job", rq).stdout, "Restarts=2 ") && c.state(rq) == "RUNNING"
	})
	r = c.run(0, c.dir, "scontrol", "requeue", nf)
	if r.code != 1 || r.stderr != "Job/step already completing or completed for job "+nf+"\n" {
		t.Fatalf("requeue of a finished job: %+v", r)
	}
	r = c.run(65534, c.dir, "scontrol", "requeue", rq)
	if r.code != 1 || r.stderr != "Access/permission denied for job "+rq+"\n" {
		t.Fatalf("nobody requeues root's job: %+v", r)
	}
	c.run(0, c.dir, "scancel", rq)
}
