package batch_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"hora/scheduler"
	st "hora/scheduler/schedtest"
)

// want is one expected Start: job, time, nodes.
type want struct {
	id    scheduler.JobID
	at    float64
	nodes string // space-separated
}

func starts(h *st.Harness) []want {
	var out []want
	for _, s := range h.Starts {
		out = append(out, want{s.ID, s.At, strings.Join(s.Nodes, " ")})
	}
	return out
}

// TestGolden replays small workloads whose EASY/FCFS schedules were worked
// out by hand (run times equal limits unless stated).
func TestGolden(t *testing.T) {
	J := st.Job
	tests := []struct {
		name    string
		cluster *st.ClusterBuilder
		jobs    []*st.JobBuilder
		want    []want
	}{{
		// J2 (4 nodes) waits for J1: shadow 100, no extra node. J3 ends at
		// 52 ≤ 100 and backfills; J4 would run to 503 on nodes J2 needs.
		name:    "head reservation, short job backfills, long one refused",
		cluster: st.Cluster(4).Partition("batch", "batch"),
		jobs: []*st.JobBuilder{
			J(1).Nodes(2).Limit(100).Run(100).Submit(0),
			J(2).Nodes(4).Limit(100).Run(100).Submit(1),
			J(3).Nodes(2).Limit(50).Run(50).Submit(2),
			J(4).Nodes(2).Limit(500).Run(500).Submit(3),
		},
		want: []want{{1, 0, "n0 n1"}, {3, 2, "n2 n3"}, {2, 100, "n0 n1 n2 n3"}, {4, 200, "n0 n1"}},
	}, {
		// 6 nodes; at the shadow (100) six are free and J2 needs four: two
		// extra nodes, so J3 may run past the shadow on them; J4 then finds
		// no free node.
		name:    "extra nodes backfill",
		cluster: st.Cluster(6).Partition("batch", "batch"),
		jobs: []*st.JobBuilder{
			J(1).Nodes(4).Limit(100).Run(100).Submit(0),
			J(2).Nodes(4).Limit(100).Run(100).Submit(1),
			J(3).Nodes(2).Limit(1000).Run(1000).Submit(2),
			J(4).Nodes(1).Limit(1000).Run(1000).Submit(3),
		},
		want: []want{{1, 0, "n0 n1 n2 n3"}, {3, 2, "n4 n5"}, {2, 100, "n0 n1 n2 n3"}, {4, 200, "n0"}},
	}, {
		// Extra nodes are used up: J3 takes the only extra node, J4 (also
		// past the shadow) must wait although a node is free.
		name:    "extra nodes are consumed",
		cluster: st.Cluster(6).Partition("batch", "batch"),
		jobs: []*st.JobBuilder{
			J(1).Nodes(3).Limit(100).Run(100).Submit(0),
			J(2).Nodes(5).Limit(100).Run(100).Submit(1),
			J(3).Nodes(1).Limit(1000).Run(1000).Submit(2),
			J(4).Nodes(1).Limit(1000).Run(1000).Submit(3),
			J(5).Nodes(1).Limit(90).Run(90).Submit(4),
		},
		want: []want{{1, 0, "n0 n1 n2"}, {3, 2, "n3"}, {5, 4, "n4"}, {2, 100, "n0 n1 n2 n4 n5"}, {4, 200, "n0"}},
	}, {
		name:    "fcfs: nothing passes the head",
		cluster: st.Cluster(4).Partition("batch", "batch").Backfill("fcfs"),
		jobs: []*st.JobBuilder{
			J(1).Nodes(2).Limit(100).Run(100).Submit(0),
			J(2).Nodes(4).Limit(100).Run(100).Submit(1),
			J(3).Nodes(2).Limit(50).Run(50).Submit(2),
			J(4).Nodes(2).Limit(500).Run(500).Submit(3),
		},
		want: []want{{1, 0, "n0 n1"}, {2, 100, "n0 n1 n2 n3"}, {3, 200, "n0 n1"}, {4, 200, "n2 n3"}},
	}, {
		// A job before its begin time is not the head: J2 starts at once
		// and J1 waits for it although it came first.
		name:    "begin time skipped, not head",
		cluster: st.Cluster(2).Partition("batch", "batch"),
		jobs: []*st.JobBuilder{
			J(1).Nodes(2).Limit(10).Run(10).Begin(100).Submit(0),
			J(2).Nodes(1).Limit(1000).Run(1000).Submit(1),
		},
		want: []want{{2, 1, "n0"}, {1, 1001, "n0 n1"}},
	}, {
		name:    "begin time wakes the job",
		cluster: st.Cluster(1).Partition("batch", "batch"),
		jobs:    []*st.JobBuilder{J(1).Limit(10).Run(10).Begin(50).Submit(0)},
		want:    []want{{1, 50, "n0"}},
	}, {
		// Expected end max(now, start+limit): J1 overruns its limit (runs
		// 300 of 100). At 150 the shadow is now=150, so J3 (ends 160) may
		// not backfill, and no node is extra.
		name:    "overrunning job does not break the shadow",
		cluster: st.Cluster(4).Partition("batch", "batch"),
		jobs: []*st.JobBuilder{
			J(1).Nodes(2).Limit(100).Run(300).Submit(0),
			J(2).Nodes(4).Limit(100).Run(100).Submit(1),
			J(3).Nodes(2).Limit(10).Run(10).Submit(150),
		},
		want: []want{{1, 0, "n0 n1"}, {2, 300, "n0 n1 n2 n3"}, {3, 400, "n0 n1"}},
	}, {
		// Partition default time applies to a job that gives none: J1 gets
		// 100, so J3 fits before the shadow.
		name:    "default time",
		cluster: st.Cluster(2).Partition("batch", "batch").DefaultTime(100).MaxTime(1000),
		jobs: []*st.JobBuilder{
			J(1).Nodes(1).Run(100).Submit(0),
			J(2).Nodes(2).Limit(10).Run(10).Submit(1),
			J(3).Nodes(1).Limit(99).Run(99).Submit(1),
		},
		want: []want{{1, 0, "n0"}, {3, 1, "n1"}, {2, 100, "n0 n1"}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := st.New(t, tc.cluster.Config())
			h.Play(tc.jobs...)
			if got := starts(h); !slices.Equal(got, tc.want) {
				t.Errorf("starts\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestReasons(t *testing.T) {
	h := st.New(t, st.Cluster(4).Partition("batch", "batch").MaxTime(3600).MaxNodes(3).Config())
	h.Submit(st.Job(1).Nodes(2).Limit(100))
	h.Submit(st.Job(2).Nodes(3).Limit(100))
	h.Submit(st.Job(3).Nodes(3).Limit(100))
	h.Submit(st.Job(4).Nodes(1).Limit(100).Held())
	h.Submit(st.Job(5).Nodes(1).Limit(100).Begin(500))
	h.Submit(st.Job(6).Nodes(1).Limit(7200))
	h.Submit(st.Job(7).Nodes(4).Limit(100))
	for id, want := range map[scheduler.JobID]string{
		1: "None", 2: "Resources", 3: "Priority", 4: "JobHeldUser", 5: "BeginTime",
		6: "PartitionTimeLimit", 7: "PartitionNodeLimit", 99: "",
	} {
		if got := h.Eng.Reason(id); got != want {
			t.Errorf("Reason(%d) = %q, want %q", id, got, want)
		}
	}
	if got, want := h.Eng.Pending(""), []scheduler.JobID{2, 3, 4, 5, 6, 7}; !slices.Equal(got, want) {
		t.Errorf("Pending = %v, want %v", got, want)
	}
	if got := h.Eng.NextWakeup(); got != 500 {
		t.Errorf("NextWakeup = %v, want 500 (job 5's begin)", got)
	}
	// Jobs above the partition limits never start, even on an idle cluster.
	h.Finish(1, scheduler.BatchStep, false)
	h.Advance(10000)
	for _, id := range []scheduler.JobID{6, 7} {
		if _, ok := h.StartOf(id); ok {
			t.Errorf("job %d above a partition limit started", id)
		}
	}
}

func TestSubmitRefusals(t *testing.T) {
	tests := []struct {
		job      *st.JobBuilder
		code     string
		message  string
		admitted bool
	}{
		{st.Job(1).Partition("nope"), "InvalidPartition", "Invalid partition name specified", false},
		{st.Job(2).Nodes(5), "InvalidNodeCount", "Requested node configuration is not available", false},
		// Deadline before now+limit (Slurm's submit check).
		{st.Job(3).Limit(100).Deadline(50), "InvalidTimeLimit", "Requested time limit is invalid (missing or exceeds some limit)", false},
		{st.Job(4).Limit(100).Begin(100).Deadline(150), "InvalidTimeLimit", "Requested time limit is invalid (missing or exceeds some limit)", false},
		{st.Job(5).Limit(100).Deadline(100), "", "", true},
		{st.Job(6).Limit(1e9), "", "", true}, // above MaxTime: pending, not refused
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.job.Build().ID), func(t *testing.T) {
			h := st.New(t, st.Cluster(4).Partition("batch", "batch").MaxTime(3600).Config())
			acts := h.Submit(tc.job)
			if len(acts) == 0 {
				t.Fatal("no action")
			}
			switch a := acts[0].(type) {
			case scheduler.Admit:
				if !tc.admitted {
					t.Fatalf("admitted, want refusal %s", tc.code)
				}
			case scheduler.Reject:
				if tc.admitted {
					t.Fatalf("refused %v, want admitted", a.Err)
				}
				if a.Err.Verdict != scheduler.Never || a.Err.Code != tc.code || a.Err.Message != tc.message {
					t.Errorf("refusal %+v, want Never %s %q", *a.Err, tc.code, tc.message)
				}
				if _, ok := h.Eng.Job(a.ID); ok {
					t.Errorf("refused job %d kept", a.ID)
				}
			}
		})
	}
}

func TestHoldLetsOthersPass(t *testing.T) {
	h := st.New(t, st.Cluster(2).Partition("batch", "batch").Config())
	h.Submit(st.Job(1).Nodes(1).Limit(100).Run(100))
	h.Submit(st.Job(2).Nodes(2).Limit(100).Run(100))
	h.Submit(st.Job(3).Nodes(1).Limit(500).Run(500))
	if _, ok := h.StartOf(3); ok {
		t.Fatal("job 3 backfilled although it delays the head")
	}
	h.Advance(10)
	h.Handle(scheduler.Hold{Now: 10, ID: 2})
	if s, ok := h.StartOf(3); !ok || s.At != 10 {
		t.Fatalf("job 3 did not start when the head was held: %+v", s)
	}
	if r := h.Eng.Reason(2); r != "JobHeldUser" {
		t.Errorf("held job reason %q", r)
	}
	h.Advance(600)
	if _, ok := h.StartOf(2); ok {
		t.Fatal("held job started")
	}
	h.Handle(scheduler.Release{Now: 600, ID: 2})
	if s, ok := h.StartOf(2); !ok || s.At != 600 {
		t.Fatalf("released job did not start at 600: %+v", s)
	}
}

func TestDeadlineExpiry(t *testing.T) {
	h := st.New(t, st.Cluster(1).Partition("batch", "batch").Config())
	h.Submit(st.Job(1).Limit(100).Run(100))
	h.Advance(10)
	h.Submit(st.Job(2).Limit(50).Deadline(120)) // latest start 70
	h.Submit(st.Job(3).Limit(50).Deadline(150)) // latest start 100: just in time
	if got := h.Eng.NextWakeup(); got != 70 {
		t.Fatalf("NextWakeup = %v, want 70", got)
	}
	h.Advance(69)
	if _, ended := h.Ends[2]; ended {
		t.Fatal("job 2 ended before its latest start")
	}
	h.Advance(70)
	e, ended := h.Ends[2]
	if !ended || e.State != "DEADLINE" || e.Reason != "DeadLine" {
		t.Fatalf("job 2 at its latest start: %+v ended=%v", e, ended)
	}
	if h.Eng.Reason(2) != "" {
		t.Error("expired job still known")
	}
	h.Advance(200)
	if s, ok := h.StartOf(3); !ok || s.At != 100 {
		t.Fatalf("job 3 should start at its latest start 100: %+v", s)
	}
	if _, ended := h.Ends[3]; ended {
		t.Fatal("job 3 both started and expired")
	}
}

func TestCancel(t *testing.T) {
	h := st.New(t, st.Cluster(2).Partition("batch", "batch").Config())
	h.Submit(st.Job(1).Nodes(1).Limit(100))
	h.Submit(st.Job(2).Nodes(2).Limit(100))
	h.Submit(st.Job(3).Nodes(1).Limit(500))
	// Cancelling the pending head lets job 3 start.
	h.Handle(scheduler.Cancel{Now: 5, ID: 2})
	if s, ok := h.StartOf(3); !ok || s.At != 5 {
		t.Fatalf("job 3 after the head left: %+v", s)
	}
	// Cancelling a running job frees nothing until Finished.
	h.Submit(st.Job(4).Nodes(1).Limit(10))
	h.Handle(scheduler.Cancel{Now: 6, ID: 1})
	if _, ok := h.StartOf(4); ok {
		t.Fatal("job 4 started on the node of a cancelled job still running")
	}
	if r := h.Eng.Reason(1); r != "None" {
		t.Errorf("cancelled running job reason %q, want None until it finishes", r)
	}
	h.Advance(7)
	h.Finish(1, scheduler.BatchStep, true)
	if s, ok := h.StartOf(4); !ok || s.At != 7 || s.Nodes[0] != "n0" {
		t.Fatalf("job 4 after the cancelled job finished: %+v", s)
	}
	if _, ok := h.Eng.Job(1); ok {
		t.Error("finished job still known")
	}
}

func TestNodeDownAndUp(t *testing.T) {
	h := st.New(t, st.Cluster(2).Partition("batch", "batch").Config())
	h.Handle(scheduler.NodeDown{Now: 0, Node: "n1"})
	h.Submit(st.Job(1).Nodes(2).Limit(100).Run(100))
	// The head can never start while n1 is down (shadow Inf), so any job
	// that fits backfills.
	h.Submit(st.Job(2).Nodes(1).Limit(1000).Run(1000))
	if s, ok := h.StartOf(2); !ok || s.Nodes[0] != "n0" {
		t.Fatalf("job 2: %+v", s)
	}
	if r := h.Eng.Reason(1); r != "Resources" {
		t.Errorf("head reason %q", r)
	}
	h.Advance(10)
	h.Handle(scheduler.NodeUp{Now: 10, Node: "n1"})
	h.Advance(math.Inf(1))
	if s, ok := h.StartOf(1); !ok || s.At != 1000 {
		t.Fatalf("job 1: %+v", s)
	}
}

func TestRestore(t *testing.T) {
	h := st.New(t, st.Cluster(4).Partition("batch", "batch").Config())
	restores := []scheduler.Restore{
		{Now: 10, Job: st.Job(1).Nodes(2).Limit(100).Submit(0).Build(), Running: true, Nodes: []string{"n2", "n3"}, Started: 0},
		{Now: 10, Job: st.Job(3).Nodes(2).Limit(50).Submit(2).Build()},
		{Now: 10, Job: st.Job(2).Nodes(4).Limit(100).Submit(1).Build()},
	}
	for _, r := range restores {
		if acts := h.Handle(r); len(acts) != 0 {
			t.Fatalf("Restore returned %v", acts)
		}
	}
	// Order comes from (Submit, ID), not from restore order.
	if got := h.Eng.Pending(""); !slices.Equal(got, []scheduler.JobID{2, 3}) {
		t.Fatalf("Pending = %v", got)
	}
	h.SetRun(3, 50)
	h.Handle(scheduler.Tick{Now: 10})
	// J1 keeps n2 n3 until 100: J2 (4 nodes) is head with shadow 100, J3
	// ends at 60 and backfills on n0 n1.
	if got := starts(h); !slices.Equal(got, []want{{3, 10, "n0 n1"}}) {
		t.Fatalf("starts after restart %v", got)
	}
	run := h.Eng.Running()
	if len(run) != 2 || run[0].ID != 3 || run[1].ID != 1 || run[1].Expect != 100 || strings.Join(run[1].Nodes, " ") != "n2 n3" {
		t.Fatalf("Running = %+v", run)
	}
	h.Advance(100)
	h.Finish(1, scheduler.BatchStep, false)
	if s, ok := h.StartOf(2); !ok || s.At != 100 {
		t.Fatalf("job 2: %+v", s)
	}
}

func TestBadBackfill(t *testing.T) {
	_, err := scheduler.New(st.Cluster(1).Partition("p1", "batch").Backfill("conservative").Config())
	if err == nil || !strings.Contains(err.Error(), `"p1"`) || !strings.Contains(err.Error(), "conservative") {
		t.Fatalf("err = %v", err)
	}
}

// Drain as horad does it: NodeDown on a node that runs a job. The job keeps
// running (no action touches it), its node is not given to anything once it
// ends, and NodeUp gives it back.
func TestNodeDownWhileBusyIsADrain(t *testing.T) {
	h := st.New(t, st.Cluster(2).Partition("batch", "batch").Config())
	h.Submit(st.Job(1).Nodes(1).Limit(100).Run(50))
	if s, ok := h.StartOf(1); !ok || s.Nodes[0] != "n0" {
		t.Fatalf("job 1: %+v", s)
	}
	for _, a := range h.Handle(scheduler.NodeDown{Now: 1, Node: "n0"}) {
		t.Fatalf("draining a busy node caused %#v", a)
	}
	h.Submit(st.Job(2).Nodes(1).Limit(100).Run(100))
	h.Submit(st.Job(3).Nodes(1).Limit(100).Run(100))
	if s, ok := h.StartOf(2); !ok || s.Nodes[0] != "n1" {
		t.Fatalf("job 2: %+v", s)
	}
	h.Advance(60) // job 1 ends at 50 on the drained node
	if _, ok := h.StartOf(3); ok {
		t.Fatal("job 3 started while the only free node is drained")
	}
	if _, ok := h.Eng.Job(1); ok {
		t.Fatal("job 1 did not end normally on the drained node")
	}
	h.Handle(scheduler.NodeUp{Now: 60, Node: "n0"})
	if s, ok := h.StartOf(3); !ok || s.Nodes[0] != "n0" || s.At != 60 {
		t.Fatalf("job 3 after the node returned: %+v", s)
	}
}
