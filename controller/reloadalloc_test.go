package controller

import (
	"slices"
	"testing"

	"hora/api"
	"hora/config"
	"hora/nodes"
)

// A reload hands the running jobs to a new Engine with the CPUs each one
// holds: two one-CPU jobs sharing a two-CPU node still hold one CPU each
// after it. Before, the first restored job took the whole node and the
// second none, so when the first ended its CPUs and the second's looked
// free, and two more jobs started beside the second (three CPUs in use on
// a node of two).
func TestReloadKeepsRunningAllocations(t *testing.T) {
	f := newFixture(t)
	toml := `
[[node]]
name = "n1"
cpus = 2
memory_mb = 1000

[[partition]]
name = "batch"
nodes = "n1"
default = true
`
	cfg, err := config.Parse([]byte(toml), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.StateDir = f.dir
	f.cfg = cfg
	cl := newFakeCluster()
	c, _ := fakeController(t, f, cl)
	submit := func() int64 {
		spec := f.spec("true")
		spec.NTasks, spec.MemMB = 1, 100
		resp, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		runQueue(t.Context(), c.work)
		return resp.JobID
	}
	a, b := submit(), submit()
	if len(cl.running(a)) != 1 || len(cl.running(b)) != 1 {
		t.Fatalf("two one-CPU jobs on a two-CPU node: running %v", cl.running(-1))
	}
	nc, err := config.Parse([]byte(toml), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	nc.StateDir = f.dir
	if err := c.Reload(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	c3 := submit() // the node is full: it waits
	if n := len(cl.running(-1)); n != 2 {
		t.Fatalf("after the reload a third one-CPU job started on the full node: %d running", n)
	}
	// a ends: its CPU, and only its, goes to the waiting job.
	c.handleExit(t.Context(), cl.end(t, cl.running(a)[0], nodes.Status{}))
	runQueue(t.Context(), c.work)
	c4 := submit()
	running := cl.running(-1)
	var ids []int64
	for _, s := range running {
		ids = append(ids, s.key.Job)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []int64{b, c3}) {
		t.Fatalf("after %d ended: running jobs %v, want %d and %d (job %d waits)", a, ids, b, c3, c4)
	}
	c.mu.Lock()
	gotB, gotC := c.jobs[b].Alloc, c.jobs[c3].Alloc
	c.mu.Unlock()
	if len(gotB) != 1 || len(gotC) != 1 || len(gotB[0].CPUs) != 1 || len(gotC[0].CPUs) != 1 || gotB[0].CPUs[0] == gotC[0].CPUs[0] {
		t.Fatalf("CPUs of n1: job %d %v, job %d %v; want one each, not the same", b, gotB, c3, gotC)
	}
}
