package batch_test

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"

	"hora/scheduler"
	"hora/scheduler/batch"
	st "hora/scheduler/schedtest"
)

func cpuJob(id scheduler.JobID, cpus int, limit float64) *st.JobBuilder {
	return st.Job(id).Limit(limit).Req(scheduler.Request{NTasks: 1, CPUsPerTask: cpus})
}

// Eight one-CPU jobs on one 4-CPU node run four at a time; the others wait
// for Resources (the first) and Priority.
func TestTresEightOnFour(t *testing.T) {
	h := st.New(t, st.Cluster(1).Resources(4, 8000).Partition("b", "batch").Config())
	for id := 1; id <= 8; id++ {
		h.Submit(cpuJob(scheduler.JobID(id), 1, 100).Run(100))
	}
	if len(h.Starts) != 4 {
		t.Fatalf("%d started, want 4", len(h.Starts))
	}
	seen := map[int]bool{}
	for _, s := range h.Starts {
		if len(s.Alloc) != 1 || len(s.Alloc[0].CPUs) != 1 || seen[s.Alloc[0].CPUs[0]] {
			t.Fatalf("bad allocation %+v", s.Alloc)
		}
		seen[s.Alloc[0].CPUs[0]] = true
	}
	if r := h.Eng.Reason(5); r != batch.ReasonResources {
		t.Fatalf("job 5 reason %q, want Resources", r)
	}
	if r := h.Eng.Reason(6); r != batch.ReasonPriority {
		t.Fatalf("job 6 reason %q, want Priority", r)
	}
	if n := h.Eng.Nodes()[0]; !n.Busy || n.Mixed || n.AllocCPUs != 4 || len(n.Jobs) != 4 {
		t.Fatalf("node %+v", n)
	}
	h.Advance(math.Inf(1))
	if len(h.Starts) != 8 {
		t.Fatalf("%d started in the end", len(h.Starts))
	}
	for _, s := range h.Starts[4:] {
		if s.At != 100 {
			t.Fatalf("second wave started at %v", s.At)
		}
	}
}

// A request no node could ever satisfy is refused with Slurm's text; one
// that fits later is queued.
func TestTresRefusedAtSubmit(t *testing.T) {
	cfg := st.Cluster(2).Resources(4, 1000, scheduler.GresDef{Name: "gpu", Type: "a100", Count: 2}).Partition("b", "batch").Config()
	cfg.Partitions[0].MaxMemPerNode = 900
	cases := []struct {
		q   scheduler.Request
		msg string
	}{
		{scheduler.Request{MemPerNode: 2000, MemGiven: true}, "Memory required by task is not available"},
		{scheduler.Request{MemPerNode: 950, MemGiven: true}, "Memory required by task is not available"},
		{scheduler.Request{CPUsPerTask: 5}, "Requested node configuration is not available"},
		{scheduler.Request{NTasks: 9}, "Requested node configuration is not available"},
		{scheduler.Request{TasksPerNode: 1, NTasks: 3, NodesSet: false}, "Requested node configuration is not available"},
		{scheduler.Request{Gres: []scheduler.GresReq{{Name: "gpu", Count: 3}}}, "Invalid generic resource (gres) specification"},
		{scheduler.Request{Gres: []scheduler.GresReq{{Name: "fpga", Count: 1}}}, "Invalid generic resource (gres) specification"},
		{scheduler.Request{Gres: []scheduler.GresReq{{Name: "gpu", Type: "v100", Count: 1}}}, "Invalid generic resource (gres) specification"},
		{scheduler.Request{Features: []string{"ib"}}, "Requested node configuration is not available"},
		{scheduler.Request{NodeList: []string{"n7"}}, "Requested node configuration is not available"},
		{scheduler.Request{TasksPerNode: 5, NTasks: 5}, "Requested node configuration is not available"},
	}
	for k, c := range cases {
		h := st.New(t, cfg)
		h.Submit(st.Job(1).Limit(10).Req(c.q))
		if e := h.Rejects[1]; e == nil || e.Message != c.msg {
			t.Errorf("case %d %+v: got %v, want %q", k, c.q, e, c.msg)
		}
		if len(h.Eng.Pending("")) != 0 {
			t.Errorf("case %d: refused job kept", k)
		}
	}
	h := st.New(t, cfg)
	h.Submit(st.Job(1).Limit(10).Req(scheduler.Request{NTasks: 8, Gres: []scheduler.GresReq{{Name: "gpu", Count: 2}}, MemPerNode: 900, MemGiven: true}).Run(10))
	if len(h.Starts) != 1 || len(h.Starts[0].Alloc) != 2 {
		t.Fatalf("8 tasks on two nodes: %+v", h.Starts)
	}
	if g := h.Starts[0].Alloc[0].Gres; len(g) != 1 || g[0].Count != 2 || g[0].IDs[1] != 1 {
		t.Fatalf("gres %+v", g)
	}
}

// Small jobs are packed onto the fullest node (best fit), so a wide job
// that asks for a whole node still finds one.
func TestTresPacksBestFit(t *testing.T) {
	h := st.New(t, st.Cluster(3).Resources(4, 0).Partition("b", "batch").Config())
	h.Submit(cpuJob(1, 3, 100).Run(100)) // n0: 3 of 4
	h.Submit(cpuJob(2, 2, 100).Run(100)) // n1: 2 of 4 (n0 has 1 free)
	h.Submit(cpuJob(3, 1, 100).Run(100)) // best fit: n0's last CPU
	h.Submit(cpuJob(4, 2, 100).Run(100)) // best fit: n1
	h.Submit(st.Job(5).Nodes(1).Limit(100).Run(100))
	want := []string{"n0", "n1", "n0", "n1", "n2"}
	for k, s := range h.Starts {
		if s.Nodes[0] != want[k] {
			t.Fatalf("job %d on %s, want %s", s.ID, s.Nodes[0], want[k])
		}
	}
	if len(h.Starts[4].Alloc) != 0 {
		t.Fatalf("whole-node job got an allocation %+v", h.Starts[4].Alloc)
	}
}

// A whole-node job waits for a node to be empty, and its EASY reservation
// keeps a long small job from taking the node it waits for.
func TestTresWholeNodeHeadNotDelayed(t *testing.T) {
	h := st.New(t, st.Cluster(2).Resources(4, 0).Partition("b", "batch").Config())
	h.Submit(cpuJob(1, 1, 100).Run(100)) // n0
	h.Submit(cpuJob(2, 1, 50).Run(50))   // n0
	h.Submit(st.Job(3).Nodes(2).Limit(100).Run(100))
	h.Submit(cpuJob(4, 1, 1000).Run(1000)) // would delay job 3: must wait
	h.Submit(cpuJob(5, 1, 100).Run(100))   // ends by the shadow time 100: backfills
	started := map[scheduler.JobID]float64{}
	h.Advance(math.Inf(1))
	for _, s := range h.Starts {
		started[s.ID] = s.At
	}
	if started[3] != 100 || started[5] != 0 || started[4] < 200 {
		t.Fatalf("starts %v", started)
	}
}

// Whole-node workloads never touch the resource pass.
func TestTresOffForWholeNodes(t *testing.T) {
	h := st.New(t, st.Cluster(2).Resources(4, 0).Partition("b", "batch-probe").Config())
	h.Submit(st.Job(1).Nodes(1).Limit(10).Run(10))
	if batch.Probed.UseTres() {
		t.Fatal("resource pass used without a resource job")
	}
	h.Submit(cpuJob(2, 1, 10).Run(10))
	if !batch.Probed.UseTres() {
		t.Fatal("resource pass not used")
	}
	h.Advance(math.Inf(1))
	if batch.Probed.UseTres() || h.Eng.Nodes()[1].Busy {
		t.Fatal("resource state left behind")
	}
}

// Property: on random clusters and workloads of resource and whole-node
// jobs, no CPU id, memory or gres is given twice (the harness checks every
// Start), every job runs, and EASY's head is never pushed back by what a
// pass backfills: its reservation after the pass is no later than the one
// the pass planned around.
func TestPropTresNoOvercommitHeadNotDelayed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := rapid.IntRange(1, 5).Draw(t, "nodes")
		cpus := rapid.IntRange(1, 8).Draw(t, "cpus")
		mem := int64(rapid.IntRange(1, 8).Draw(t, "mem")) * 1000
		gpus := rapid.IntRange(0, 3).Draw(t, "gpus")
		var gres []scheduler.GresDef
		if gpus > 0 {
			gres = []scheduler.GresDef{{Name: "gpu", Type: "a", Count: gpus}}
		}
		cfg := st.Cluster(nodes).Resources(cpus, mem, gres...).Partition("b", "batch-probe").Config()
		// Shared CPUs (OverSubscribe) must not delay the head either.
		cfg.Partitions[0].OverSubscribe = rapid.SampledFrom([]string{"NO", "NO", "YES:2", "FORCE:3"}).Draw(t, "over")
		h := st.New(t, cfg)
		n := rapid.IntRange(1, 40).Draw(t, "jobs")
		now := 0.0
		check := func() {
			id, planned, got, ok := batch.Probed.HeadReservation(h.Now)
			if ok && !math.IsInf(planned, 1) && got > planned+1e-9 {
				t.Fatalf("t=%v: head %d reserved at %v, after the pass %v", h.Now, id, planned, got)
			}
		}
		for id := 1; id <= n; id++ {
			now += float64(rapid.IntRange(0, 50).Draw(t, "gap"))
			h.Advance(now)
			check()
			limit := float64(rapid.IntRange(1, 200).Draw(t, "limit"))
			run := float64(rapid.IntRange(1, int(limit)).Draw(t, "run"))
			b := st.Job(scheduler.JobID(id)).Limit(limit).Run(run)
			if rapid.IntRange(0, 4).Draw(t, "whole") == 0 {
				b.Nodes(rapid.IntRange(1, nodes).Draw(t, "wnodes"))
			} else {
				q := scheduler.Request{
					NTasks:        rapid.IntRange(1, 2*cpus).Draw(t, "tasks"),
					CPUsPerTask:   rapid.IntRange(1, cpus).Draw(t, "cpt"),
					Oversubscribe: rapid.Bool().Draw(t, "s"),
				}
				if rapid.Bool().Draw(t, "mem?") {
					q.MemPerCPU, q.MemGiven = int64(rapid.IntRange(1, 2000).Draw(t, "mpc")), true
				}
				if gpus > 0 && rapid.Bool().Draw(t, "gpu?") {
					q.Gres = []scheduler.GresReq{{Name: "gpu", Count: rapid.IntRange(1, gpus).Draw(t, "g")}}
				}
				if gpus > 0 && rapid.IntRange(0, 5).Draw(t, "gpt?") == 0 {
					q.GPUsPerTask = 1
				}
				switch rapid.IntRange(0, 9).Draw(t, "shape") {
				case 0:
					q.TasksPerNode = rapid.IntRange(1, cpus).Draw(t, "tpn")
				case 1:
					n := rapid.IntRange(1, nodes).Draw(t, "N")
					b.Nodes(n)
					q.NodesSet = true
					q.NTasks = max(q.NTasks, n)
				case 2:
					q.Exclusive = true
				case 3:
					q.MemAll, q.MemGiven = true, true
				case 4:
					q.NodeList = []string{st.NodeName(rapid.IntRange(0, nodes-1).Draw(t, "w"))}
				case 5:
					q.MinCPUs = rapid.IntRange(1, cpus).Draw(t, "mincpus")
				}
				b.Req(q)
			}
			h.Submit(b)
			check()
		}
		h.Advance(math.Inf(1))
		if p := h.Eng.Pending(""); len(p) != 0 {
			t.Fatalf("jobs never ran: %v", p)
		}
		for _, nd := range h.Eng.Nodes() {
			if nd.Busy {
				t.Fatalf("node %s still busy", nd.Name)
			}
		}
		started := map[scheduler.JobID]bool{}
		for _, s := range h.Starts {
			started[s.ID] = true
		}
		for id := 1; id <= n; id++ {
			if !started[scheduler.JobID(id)] && h.Rejects[scheduler.JobID(id)] == nil {
				t.Fatalf("job %d neither ran nor was refused", id)
			}
		}
	})
}

// Property: a restart loses nothing of the allocations. Halfway through a
// random history of resource and whole-node jobs, a new Engine is rebuilt
// from Restore events (running jobs with their allocations, as horad reads
// them from the store); it holds exactly what the old one holds on every
// node, and the next pass of both starts the same jobs the same way.
func TestPropTresRestoreKeepsAllocations(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := rapid.IntRange(1, 4).Draw(t, "nodes")
		cpus := rapid.IntRange(1, 8).Draw(t, "cpus")
		gres := []scheduler.GresDef{{Name: "gpu", Type: "a", Count: 2}, {Name: "gpu", Type: "b", Count: 1}}
		cfg := st.Cluster(nodes).Resources(cpus, 8000, gres...).Partition("b", "batch").Config()
		h := st.New(t, cfg)
		jobs := map[scheduler.JobID]scheduler.Job{}
		n := rapid.IntRange(1, 30).Draw(t, "jobs")
		now := 0.0
		for id := 1; id <= n; id++ {
			now += float64(rapid.IntRange(0, 30).Draw(t, "gap"))
			h.Advance(now)
			limit := float64(rapid.IntRange(10, 200).Draw(t, "limit"))
			b := st.Job(scheduler.JobID(id)).Limit(limit).Run(limit)
			if rapid.IntRange(0, 4).Draw(t, "whole") == 0 {
				b.Nodes(1)
			} else {
				q := scheduler.Request{NTasks: rapid.IntRange(1, cpus).Draw(t, "tasks"),
					MemPerCPU: int64(rapid.IntRange(0, 1000).Draw(t, "mpc")), MemGiven: true}
				if rapid.Bool().Draw(t, "gpu?") {
					q.Gres = []scheduler.GresReq{{Name: "gpu", Count: rapid.IntRange(1, 3).Draw(t, "g")}}
				}
				b.Req(q)
			}
			j := b.Build()
			j.Submit = now
			jobs[j.ID] = j
			h.Submit(b)
		}
		// Restart: running jobs come back with their allocations, pending
		// ones in their order.
		eng, err := scheduler.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range h.Starts {
			if h.Running(s.ID, s.Step) {
				eng.Handle(scheduler.Restore{Now: h.Now, Job: jobs[s.ID], Running: true, Nodes: s.Nodes, Started: s.At, Alloc: s.Alloc})
			}
		}
		for _, id := range h.Eng.Pending("") {
			eng.Handle(scheduler.Restore{Now: h.Now, Job: jobs[id]})
		}
		old, got := h.Eng.Nodes(), eng.Nodes()
		for i := range old {
			o, g := old[i], got[i]
			if o.Busy != g.Busy || o.AllocCPUs != g.AllocCPUs || o.AllocMemMB != g.AllocMemMB ||
				fmt.Sprint(o.AllocGres) != fmt.Sprint(g.AllocGres) || fmt.Sprint(o.Jobs) != fmt.Sprint(g.Jobs) {
				t.Fatalf("node %s after restart %+v, before %+v", o.Name, g, o)
			}
		}
		a := h.Eng.Handle(scheduler.Tick{Now: h.Now + 1})
		b := eng.Handle(scheduler.Tick{Now: h.Now + 1})
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("next pass after restart:\n%v\nwithout restart:\n%v", b, a)
		}
	})
}

// --exclusive=user: the job takes only the CPUs it asks for and shares its
// node with jobs of its own user only, in both directions; plain
// --exclusive still keeps the whole node from everyone.
func TestTresExclusiveUser(t *testing.T) {
	h := st.New(t, st.Cluster(2).Resources(4, 0).Partition("b", "batch").Config())
	excl := func(id scheduler.JobID, user uint32) *st.JobBuilder {
		return st.Job(id).Limit(100).User(user).Req(scheduler.Request{NTasks: 1, CPUsPerTask: 1, ExclusiveUser: true}).Run(100)
	}
	h.Submit(excl(1, 1000))                         // n0, one CPU
	h.Submit(cpuJob(2, 1, 100).User(1000).Run(100)) // same user: beside it on n0
	h.Submit(cpuJob(3, 1, 100).User(2000).Run(100)) // another user: not on n0, so n1
	h.Submit(excl(4, 2000))                         // user 2000 asks for it: n1 beside job 3 (same user)
	h.Submit(cpuJob(5, 1, 100).User(1000).Run(100)) // user 1000: n0 (n1 holds a user-exclusive job of 2000)
	h.Submit(excl(6, 3000))                         // a third user: no node, waits
	h.Submit(st.Job(7).Limit(100).User(1000).Req(scheduler.Request{NTasks: 1, CPUsPerTask: 1, Exclusive: true}).Run(100))
	want := map[scheduler.JobID]string{1: "n0", 2: "n0", 3: "n1", 4: "n1", 5: "n0"}
	if len(h.Starts) != len(want) {
		t.Fatalf("started %+v, want jobs 1-5 only", h.Starts)
	}
	for _, s := range h.Starts {
		if s.Nodes[0] != want[s.ID] {
			t.Errorf("job %d on %s, want %s", s.ID, s.Nodes[0], want[s.ID])
		}
		if len(s.Alloc) != 1 || len(s.Alloc[0].CPUs) != 1 {
			t.Errorf("job %d holds %+v, want one CPU", s.ID, s.Alloc)
		}
	}
	// Once everything of other users has gone, the third user's job runs.
	h.Advance(math.Inf(1))
	started := map[scheduler.JobID]float64{}
	for _, s := range h.Starts {
		started[s.ID] = s.At
	}
	if started[6] != 100 || started[7] != 100 {
		t.Errorf("starts %v: jobs 6 and 7 should start when the first wave ends", started)
	}
}
