package scheduler_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"hora/scheduler"
	st "hora/scheduler/schedtest"
)

func TestNewValidation(t *testing.T) {
	nodes := []scheduler.NodeSpec{{Name: "a"}, {Name: "b"}}
	part := func(name string, nodes ...string) scheduler.PartitionSpec {
		return scheduler.PartitionSpec{Name: name, Nodes: nodes}
	}
	tests := []struct {
		name string
		cfg  scheduler.Config
		want []string // substrings of the error; nil = no error
	}{
		{"ok", scheduler.Config{Nodes: nodes, Partitions: []scheduler.PartitionSpec{part("p", "a", "b")}}, nil},
		{"unknown node", scheduler.Config{Nodes: nodes, Partitions: []scheduler.PartitionSpec{part("p", "a", "zz")}}, []string{`"p"`, `"zz"`}},
		{"duplicate node", scheduler.Config{Nodes: append(slices.Clone(nodes), scheduler.NodeSpec{Name: "a"}), Partitions: []scheduler.PartitionSpec{part("p", "a")}}, []string{`"a"`, "twice"}},
		{"node twice in partition", scheduler.Config{Nodes: nodes, Partitions: []scheduler.PartitionSpec{part("p", "a", "a")}}, []string{`"p"`, `"a"`}},
		{"duplicate partition", scheduler.Config{Nodes: nodes, Partitions: []scheduler.PartitionSpec{part("p", "a"), part("p", "b")}}, []string{`"p"`, "twice"}},
		{"no partitions", scheduler.Config{Nodes: nodes}, []string{"no partitions"}},
		{"unknown policy", scheduler.Config{Nodes: nodes, Partitions: []scheduler.PartitionSpec{{Name: "rt", Nodes: []string{"a"}, Policy: "magic"}}}, []string{`"rt"`, `"magic"`, "batch"}},
		{"two defaults", scheduler.Config{Nodes: nodes, Partitions: []scheduler.PartitionSpec{{Name: "x", Default: true}, {Name: "y", Default: true}}}, []string{`"x"`, `"y"`}},
		{"negative max time", scheduler.Config{Nodes: nodes, Partitions: []scheduler.PartitionSpec{{Name: "x", MaxTime: -1}}}, []string{`"x"`, "MaxTime"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scheduler.New(tc.cfg)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	cfg := st.Cluster(2).Partition("a", "").NodeRange(0, 1).Partition("b", "batch").MaxTime(600).Config()
	eng, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := eng.PartitionSpec("a")
	b, _ := eng.PartitionSpec("b")
	if !a.Default || b.Default || a.Policy != "batch" {
		t.Errorf("first partition should be the default batch one: %+v", a)
	}
	if b.DefaultTime != 600 {
		t.Errorf("DefaultTime %v, want MaxTime 600", b.DefaultTime)
	}
	eng.Handle(scheduler.Submit{Job: scheduler.Job{ID: 1}})
	if j, _ := eng.Job(1); j.Partition != "a" || j.Nodes != 1 || !math.IsInf(j.TimeLimit, 1) {
		t.Errorf("resolved job %+v", j)
	}
	eng.Handle(scheduler.Submit{Job: scheduler.Job{ID: 2, Partition: "b"}})
	if j, _ := eng.Job(2); j.TimeLimit != 600 {
		t.Errorf("job without limit got %v, want partition default 600", j.TimeLimit)
	}
	acts := eng.Handle(scheduler.Submit{Job: scheduler.Job{ID: 2}})
	if r, ok := acts[0].(scheduler.Reject); !ok || r.Err.Verdict != scheduler.Never {
		t.Errorf("duplicate id: %v", acts)
	}
}

// Two partitions share node n1: a job in one keeps the other off it, and
// its end starts the other's waiting job.
func TestSharedNode(t *testing.T) {
	cfg := st.Cluster(3).Partition("a", "batch").NodeRange(0, 2).Partition("b", "batch").NodeRange(1, 3).Config()
	h := st.New(t, cfg)
	h.Submit(st.Job(1).Partition("a").Nodes(2).Limit(100).Run(100))
	h.Submit(st.Job(2).Partition("b").Nodes(2).Limit(100).Run(100))
	if _, ok := h.StartOf(2); ok {
		t.Fatal("job 2 started on a node of job 1")
	}
	if r := h.Eng.Reason(2); r != "Resources" {
		t.Errorf("job 2 reason %q", r)
	}
	h.Advance(math.Inf(1))
	if s, ok := h.StartOf(2); !ok || s.At != 100 || strings.Join(s.Nodes, " ") != "n1 n2" {
		t.Fatalf("job 2: %+v", s)
	}
}

func TestEngineTest(t *testing.T) {
	h := st.New(t, st.Cluster(4).Partition("batch", "batch").MaxTime(1000).Config())
	h.Submit(st.Job(1).Nodes(3).Limit(100))
	h.Submit(st.Job(2).Nodes(4).Limit(100))
	tests := []struct {
		name  string
		job   scheduler.Job
		start float64
		nodes string
		code  string
	}{
		{"backfills now", st.Job(0).Nodes(1).Limit(50).Build(), 0, "n3", ""},
		// Behind job 2 (which runs 100–200) in list order.
		{"waits for the queue", st.Job(0).Nodes(2).Limit(500).Build(), 200, "n0 n1", ""},
		{"too many nodes", st.Job(0).Nodes(5).Build(), 0, "", "InvalidNodeCount"},
		{"above MaxTime", st.Job(0).Limit(5000).Build(), 0, "", "InvalidTimeLimit"},
		{"bad partition", st.Job(0).Partition("x").Build(), 0, "", "InvalidPartition"},
	}
	before := h.Eng.Pending("")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start, nodes, err := h.Eng.Test(0, tc.job)
			if tc.code != "" {
				ae, ok := err.(*scheduler.AdmissionError)
				if !ok || ae.Code != tc.code {
					t.Fatalf("err = %v, want %s", err, tc.code)
				}
				return
			}
			if err != nil || start != tc.start || strings.Join(nodes, " ") != tc.nodes {
				t.Fatalf("Test = %v %v %v, want %v %v", start, nodes, err, tc.start, tc.nodes)
			}
		})
	}
	if got := h.Eng.Pending(""); !slices.Equal(got, before) || len(h.Starts) != 1 {
		t.Errorf("Test changed state: pending %v, starts %d", got, len(h.Starts))
	}
}

func TestBlockedJobDeadline(t *testing.T) {
	h := st.New(t, st.Cluster(1).Partition("batch", "batch").MaxTime(100).Config())
	h.Submit(st.Job(1).Limit(200).Deadline(1000))
	if r := h.Eng.Reason(1); r != "PartitionTimeLimit" {
		t.Fatalf("reason %q", r)
	}
	if w := h.Eng.NextWakeup(); w != 800 {
		t.Fatalf("NextWakeup %v, want 800", w)
	}
	h.Advance(1000)
	if e, ok := h.Ends[1]; !ok || e.Reason != "DeadLine" || h.Log[len(h.Log)-1].Now != 800 {
		t.Fatalf("blocked job with a deadline should end at 800: %+v", h.Log[len(h.Log)-1])
	}
}

func TestUnknownEventsIgnored(t *testing.T) {
	h := st.New(t, st.Cluster(1).Partition("batch", "batch").Config())
	for _, ev := range []scheduler.Event{
		scheduler.Finished{ID: 9}, scheduler.Cancel{ID: 9}, scheduler.Hold{ID: 9},
		scheduler.Release{ID: 9}, scheduler.NodeDown{Node: "zz"}, scheduler.NodeUp{Node: "n0"},
	} {
		if acts := h.Handle(ev); len(acts) != 0 {
			t.Errorf("%T: %v", ev, acts)
		}
	}
}

func TestRestoreUnknownPartition(t *testing.T) {
	h := st.New(t, st.Cluster(2).Partition("batch", "batch").Config())
	h.Handle(scheduler.Restore{Job: st.Job(1).Partition("gone").Limit(100).Build(), Running: true, Nodes: []string{"n1", "nx"}})
	h.Handle(scheduler.Restore{Job: st.Job(2).Partition("gone").Build()})
	h.Submit(st.Job(3).Nodes(2))
	if r := h.Eng.Reason(2); r != "PartitionConfig" {
		t.Errorf("pending job of a removed partition: %q", r)
	}
	if _, ok := h.StartOf(3); ok {
		t.Fatal("job 3 took n1, which a restored job holds")
	}
	h.Finish(1, scheduler.BatchStep, false)
	if s, ok := h.StartOf(3); !ok || strings.Join(s.Nodes, " ") != "n0 n1" {
		t.Fatalf("job 3: %+v", s)
	}
}

// chunks is a toy policy shaped like dlt: it splits a job with Load into
// one chunk per free node (Step 0, 1, …) and is done when every chunk has
// reported. It checks that the Engine accounts for steps one by one.
type chunks struct {
	p       *scheduler.Partition
	queue   []*scheduler.Job
	left    map[scheduler.JobID]int
	removed []scheduler.JobID
}

func init() {
	scheduler.RegisterPolicy("test-chunks", func(p *scheduler.Partition) (scheduler.Policy, error) {
		return &chunks{p: p, left: map[scheduler.JobID]int{}}, nil
	})
}

func (c *chunks) Admit(now float64, j *scheduler.Job) error {
	if j.Load <= 0 {
		return &scheduler.AdmissionError{Verdict: scheduler.NotNow, Code: "DeadlineNotGuaranteed", Message: "no load", EarliestDeadline: 42}
	}
	c.queue = append(c.queue, j)
	return nil
}
func (c *chunks) Restore(float64, *scheduler.Job, bool)  {}
func (c *chunks) Remove(now float64, id scheduler.JobID) { c.removed = append(c.removed, id) }
func (c *chunks) Hold(float64, scheduler.JobID)          {}
func (c *chunks) Release(float64, scheduler.JobID)       {}
func (c *chunks) StepFinished(now float64, id scheduler.JobID, step int, failed bool) bool {
	c.left[id]--
	return c.left[id] == 0
}
func (c *chunks) Schedule(now float64) {
	for len(c.queue) > 0 && c.p.FreeCount() > 0 {
		j := c.queue[0]
		c.queue = c.queue[1:]
		free := c.p.LowestFree(c.p.FreeCount(), nil)
		size := j.Load / float64(len(free))
		for k, i := range free {
			if err := c.p.Start(j.ID, k, []int{i}, float64(k)*size, size, now+size); err != nil {
				panic(err)
			}
		}
		c.left[j.ID] = len(free)
	}
}
func (c *chunks) Test(float64, *scheduler.Job) (float64, []string, error) { return 0, nil, nil }
func (c *chunks) Reason(scheduler.JobID) string                           { return "Resources" }
func (c *chunks) Pending(dst []scheduler.JobID) []scheduler.JobID         { return dst }
func (c *chunks) NextWakeup() float64                                     { return math.Inf(1) }

func TestChunkedSteps(t *testing.T) {
	h := st.New(t, st.Cluster(3).Partition("rt", "test-chunks").Config())
	acts := h.Submit(st.Job(1).Load(30))
	if len(acts) != 4 {
		t.Fatalf("want Admit + 3 chunk starts, got %v", acts)
	}
	for k, a := range acts[1:] {
		s := a.(scheduler.Start)
		if s.Step != k || s.Offset != float64(k)*10 || s.Size != 10 || s.Nodes[0] != st.NodeName(k) {
			t.Errorf("chunk %d: %+v", k, s)
		}
	}
	acts = h.Submit(st.Job(2))
	if r, ok := acts[0].(scheduler.Reject); !ok || r.Err.Verdict != scheduler.NotNow || r.Err.EarliestDeadline != 42 {
		t.Fatalf("refusal not passed through: %v", acts)
	}
	h.Finish(1, 1, false)
	if n := h.Eng.Nodes()[1]; n.State != scheduler.StateIdle {
		t.Errorf("node of finished chunk: %+v", n)
	}
	if n := h.Eng.Nodes()[0]; n.State != scheduler.StateAllocated || n.Job != 1 || n.Step != 0 {
		t.Errorf("node of running chunk: %+v", n)
	}
	if _, ok := h.Eng.Job(1); !ok {
		t.Fatal("job forgotten while chunks run")
	}
	// Cancel: the policy is told once; the rest ends by Finished.
	h.Handle(scheduler.Cancel{ID: 1})
	h.Finish(1, 0, true)
	h.Finish(1, 2, true)
	if _, ok := h.Eng.Job(1); ok {
		t.Fatal("job still known after its last chunk")
	}
	if got := h.Eng.Running(); len(got) != 0 {
		t.Errorf("Running = %v", got)
	}
}
