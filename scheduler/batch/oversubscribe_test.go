package batch_test

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"hora/scheduler"
	st "hora/scheduler/schedtest"
)

// oneNode is a partition of one 2-CPU node with the OverSubscribe setting.
func oneNode(t testing.TB, over string) *st.Harness {
	cfg := st.Cluster(1).Resources(2, 1000).Partition("b", "batch").Config()
	cfg.Partitions[0].OverSubscribe = over
	return st.New(t, cfg)
}

// Four 1-CPU jobs on one 2-CPU node: FORCE:2 runs all four at once, two on
// each CPU; NO runs two. YES:2 shares only between jobs that asked -s.
func TestOverSubscribeCPUs(t *testing.T) {
	cases := []struct {
		over   string
		asked  bool
		starts int
	}{
		{"FORCE:2", false, 4},
		{"FORCE", false, 4}, // FORCE:4; still 4 jobs
		{"NO", false, 2},
		{"", true, 2},
		{"YES:2", false, 2},
		{"YES:2", true, 4},
		{"FORCE:1", false, 2},
		{"EXCLUSIVE", false, 1},
	}
	for _, c := range cases {
		h := oneNode(t, c.over)
		for id := 1; id <= 4; id++ {
			q := scheduler.Request{NTasks: 1, CPUsPerTask: 1, Oversubscribe: c.asked}
			h.Submit(st.Job(scheduler.JobID(id)).Limit(100).Run(100).Req(q))
		}
		if len(h.Starts) != c.starts {
			t.Fatalf("%s (-s %v): %d started at once, want %d", c.over, c.asked, len(h.Starts), c.starts)
		}
		if c.starts == 4 {
			held := map[int]int{}
			for _, s := range h.Starts {
				held[s.Alloc[0].CPUs[0]]++
			}
			if held[0] != 2 || held[1] != 2 {
				t.Fatalf("%s: CPUs held %v, want each CPU by two jobs", c.over, held)
			}
			if n := h.Eng.Nodes()[0]; n.AllocCPUs != 2 || len(n.Jobs) != 4 {
				t.Fatalf("%s: node %+v", c.over, n)
			}
		}
		h.Advance(math.Inf(1))
		if len(h.Starts) != 4 {
			t.Fatalf("%s: %d jobs ran in the end", c.over, len(h.Starts))
		}
	}
}

// Up to N jobs per CPU, never more; memory is never oversubscribed; a
// job that does not share takes only CPUs nobody holds, and a sharing job
// never joins it.
func TestOverSubscribeLimits(t *testing.T) {
	h := oneNode(t, "FORCE:3")
	for id := 1; id <= 8; id++ {
		h.Submit(cpuJob(scheduler.JobID(id), 1, 100).Run(100))
	}
	if len(h.Starts) != 6 {
		t.Fatalf("FORCE:3 on 2 CPUs started %d, want 6", len(h.Starts))
	}

	h = oneNode(t, "FORCE:4")
	for id := 1; id <= 3; id++ {
		q := scheduler.Request{NTasks: 1, CPUsPerTask: 1, MemPerNode: 400, MemGiven: true}
		h.Submit(st.Job(scheduler.JobID(id)).Limit(100).Run(100).Req(q))
	}
	if len(h.Starts) != 2 {
		t.Fatalf("400 MiB jobs on a 1000 MiB node: %d started, want 2 (memory is not shared)", len(h.Starts))
	}

	h = oneNode(t, "YES:4")
	h.Submit(st.Job(1).Limit(100).Run(100).Req(scheduler.Request{NTasks: 1, CPUsPerTask: 1}))
	for id := 2; id <= 5; id++ {
		q := scheduler.Request{NTasks: 1, CPUsPerTask: 1, Oversubscribe: true}
		h.Submit(st.Job(scheduler.JobID(id)).Limit(100).Run(100).Req(q))
	}
	if len(h.Starts) != 5 {
		t.Fatalf("YES:4: %d started, want 5 (one alone on CPU 0, four -s jobs on CPU 1)", len(h.Starts))
	}
	own := h.Starts[0].Alloc[0].CPUs[0]
	for _, s := range h.Starts[1:] {
		if s.Alloc[0].CPUs[0] == own {
			t.Fatalf("job %d shares CPU %d with job 1, which did not ask -s", s.ID, own)
		}
	}
	// A job without -s now waits: every CPU is held.
	h.Submit(st.Job(6).Limit(100).Run(100).Req(scheduler.Request{NTasks: 1, CPUsPerTask: 1}))
	if len(h.Starts) != 5 {
		t.Fatalf("a job without -s started on a held CPU")
	}
}

// -s alone asks one CPU where the partition shares CPUs, and whole nodes
// where it does not (as a job that names no resource).
func TestOverSubscribeOnlyShare(t *testing.T) {
	for _, c := range []struct {
		over  string
		alloc bool
	}{{"YES", true}, {"NO", false}, {"FORCE:2", true}} {
		h := oneNode(t, c.over)
		q := scheduler.Request{NTasks: 1, CPUsPerTask: 1, Oversubscribe: true, OnlyShare: true}
		h.Submit(st.Job(1).Limit(100).Run(100).Req(q))
		if len(h.Starts) != 1 || (len(h.Starts[0].Alloc) > 0) != c.alloc {
			t.Fatalf("%s: starts %+v, want a share: %v", c.over, h.Starts, c.alloc)
		}
	}
}

func TestParseOverSubscribe(t *testing.T) {
	for in, want := range map[string]string{
		"": "NO", "no": "NO", "EXCLUSIVE": "EXCLUSIVE", "yes": "YES:4", "YES:1": "NO", "YES:7": "YES:7",
		"force": "FORCE:4", "FORCE:1": "FORCE:1", "Force:32767": "FORCE:32767",
	} {
		o, err := scheduler.ParseOverSubscribe(in)
		if err != nil || o.String() != want {
			t.Errorf("%q: %v %v, want %s", in, o, err, want)
		}
	}
	for _, bad := range []string{"maybe", "YES:0", "FORCE:x", "FORCE:32768", "NO:2", "EXCLUSIVE:1", "YES:-1"} {
		if _, err := scheduler.ParseOverSubscribe(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	cfg := st.Cluster(1).Partition("b", "batch").Config()
	cfg.Partitions[0].OverSubscribe = "FORCE:0"
	if _, err := scheduler.New(cfg); err == nil {
		t.Fatal("scheduler.New took OverSubscribe=FORCE:0")
	}
}

// Property: with random OverSubscribe settings and -s requests, no CPU is
// held by more jobs than the partition allows (the harness checks every
// start), memory and gres are never overcommitted, every job runs, and a
// restart rebuilds the same holdings (restoreShare of sharing jobs).
func TestPropOverSubscribe(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := rapid.IntRange(1, 3).Draw(t, "nodes")
		cpus := rapid.IntRange(1, 4).Draw(t, "cpus")
		cfg := st.Cluster(nodes).Resources(cpus, 4000, scheduler.GresDef{Name: "gpu", Count: 1}).Partition("b", "batch").Config()
		cfg.Partitions[0].OverSubscribe = rapid.SampledFrom([]string{"NO", "YES:2", "YES:3", "FORCE:2", "FORCE:3"}).Draw(t, "over")
		h := st.New(t, cfg)
		jobs := map[scheduler.JobID]scheduler.Job{}
		n := rapid.IntRange(1, 25).Draw(t, "jobs")
		now := 0.0
		for id := 1; id <= n; id++ {
			now += float64(rapid.IntRange(0, 30).Draw(t, "gap"))
			h.Advance(now)
			limit := float64(rapid.IntRange(10, 200).Draw(t, "limit"))
			b := st.Job(scheduler.JobID(id)).Limit(limit).Run(limit)
			if rapid.IntRange(0, 5).Draw(t, "whole") == 0 {
				b.Nodes(1)
			} else {
				q := scheduler.Request{NTasks: rapid.IntRange(1, 2*cpus).Draw(t, "tasks"),
					CPUsPerTask:   rapid.IntRange(1, cpus).Draw(t, "cpt"),
					Oversubscribe: rapid.Bool().Draw(t, "s"),
					MemPerNode:    int64(rapid.IntRange(0, 3000).Draw(t, "mem")), MemGiven: true}
				if rapid.IntRange(0, 3).Draw(t, "gpu?") == 0 {
					q.Gres = []scheduler.GresReq{{Name: "gpu", Count: 1}}
				}
				if rapid.IntRange(0, 6).Draw(t, "excl?") == 0 {
					q.Exclusive = true
				}
				b.Req(q)
			}
			j := b.Build()
			j.Submit = now
			jobs[j.ID] = j
			h.Submit(b)
		}
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
			if o, g := old[i], got[i]; o.Busy != g.Busy || o.AllocCPUs != g.AllocCPUs || o.AllocMemMB != g.AllocMemMB || len(o.Jobs) != len(g.Jobs) {
				t.Fatalf("node %s after restart %+v, before %+v", o.Name, g, o)
			}
		}
		h.Advance(math.Inf(1))
		if p := h.Eng.Pending(""); len(p) != 0 {
			t.Fatalf("jobs never ran: %v", p)
		}
	})
}
