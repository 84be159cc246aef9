package batch_test

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"hora/scheduler"
	st "hora/scheduler/schedtest"
)

// op is one driver step of a random history, drawn before it is run so
// that the same history can be replayed.
type op struct {
	kind    int // 0 submit, 1 advance, 2 cancel, 3 hold, 4 release, 5 down, 6 up
	job     *st.JobBuilder
	dt      float64
	id      scheduler.JobID
	node    string
	predict bool // ask Test before the submit
}

type genOpts struct {
	nodes   int
	chaos   bool // cancels, holds, node failures, begin times, deadlines, overruns
	exact   bool // run time = limit
	backCap int  // max nodes per job
}

func genOps(t *rapid.T, o genOpts) []op {
	n := rapid.IntRange(1, 60).Draw(t, "jobs")
	var ops []op
	now := 0.0
	for id := 1; id <= n; id++ {
		now += float64(rapid.IntRange(0, 200).Draw(t, "gap"))
		ops = append(ops, op{kind: 1, dt: now})
		limit := float64(rapid.IntRange(1, 1000).Draw(t, "limit"))
		run := limit
		if !o.exact {
			run = float64(rapid.IntRange(1, int(limit)).Draw(t, "run"))
		}
		b := st.Job(scheduler.JobID(id)).Nodes(rapid.IntRange(1, o.nodes).Draw(t, "nodes")).
			Limit(limit).Submit(now)
		if o.chaos {
			if rapid.IntRange(0, 9).Draw(t, "overrun") == 0 {
				run = limit * 2
			}
			if rapid.IntRange(0, 9).Draw(t, "held") == 0 {
				b.Held()
			}
			if rapid.IntRange(0, 9).Draw(t, "begin") == 0 {
				b.Begin(now + float64(rapid.IntRange(1, 500).Draw(t, "beginAt")))
			}
			if rapid.IntRange(0, 9).Draw(t, "deadline") == 0 {
				b.Deadline(now + limit + float64(rapid.IntRange(0, 500).Draw(t, "slack")))
			}
		}
		b.Run(run)
		ops = append(ops, op{kind: 0, job: b, predict: rapid.Bool().Draw(t, "predict")})
		if o.chaos {
			for range rapid.IntRange(0, 2).Draw(t, "extra") {
				k := rapid.IntRange(2, 6).Draw(t, "kind")
				ops = append(ops, op{kind: k, id: scheduler.JobID(rapid.IntRange(1, id).Draw(t, "target")),
					node: st.NodeName(rapid.IntRange(0, o.nodes-1).Draw(t, "node"))})
			}
		}
	}
	return ops
}

// runOps drives a harness through ops, calling check after every step.
func runOps(t *rapid.T, cfg scheduler.Config, ops []op, check func(h *st.Harness)) *st.Harness {
	h := st.New(t, cfg)
	for _, o := range ops {
		switch o.kind {
		case 0:
			if o.predict {
				// Test must not change anything: the run that follows is
				// compared with runs without it (determinism property).
				_, _, _ = h.Eng.Test(h.Now, o.job.Build())
			}
			h.Submit(o.job)
		case 1:
			h.Advance(o.dt)
		case 2:
			h.Handle(scheduler.Cancel{Now: h.Now, ID: o.id})
		case 3:
			h.Handle(scheduler.Hold{Now: h.Now, ID: o.id})
		case 4:
			h.Handle(scheduler.Release{Now: h.Now, ID: o.id})
		case 5:
			h.Handle(scheduler.NodeDown{Now: h.Now, Node: o.node})
		case 6:
			h.Handle(scheduler.NodeUp{Now: h.Now, Node: o.node})
		}
		check(h)
	}
	// Bring every node back and release every hold so the run can drain.
	for i := range cfg.Nodes {
		h.Handle(scheduler.NodeUp{Now: h.Now, Node: cfg.Nodes[i].Name})
	}
	for _, id := range h.Eng.Pending("") {
		h.Handle(scheduler.Release{Now: h.Now, ID: id})
	}
	h.Advance(math.Inf(1))
	check(h)
	return h
}

// noIdleHead: after every event, the first eligible pending job does not
// fit in the idle nodes (else the pass should have started it), and the
// Engine's node table agrees with what the harness applied.
func noIdleHead(t *rapid.T) func(h *st.Harness) {
	return func(h *st.Harness) {
		idle := 0
		for _, n := range h.Eng.Nodes() {
			if n.State == scheduler.StateIdle {
				idle++
			}
			if n.Busy && !h.Running(n.Job, n.Step) {
				t.Fatalf("t=%v: engine says %s runs job %d, harness does not", h.Now, n.Name, n.Job)
			}
		}
		for _, id := range h.Eng.Pending("") {
			j, _ := h.Eng.Job(id)
			if j.Held || j.Begin > h.Now {
				continue
			}
			if j.Nodes <= idle {
				t.Fatalf("t=%v: head %d needs %d nodes, %d idle, not started", h.Now, id, j.Nodes, idle)
			}
			break
		}
	}
}

func cluster(n int, backfill string) scheduler.Config {
	return st.Cluster(n).Partition("batch", "batch").Backfill(backfill).Config()
}

// TestPropSafety: under random histories with cancels, holds, begin
// times, deadlines, overruns and node failures, no node is given to two
// running steps or to a down node (the harness fails on it), every job
// starts when its nodes are free, and no eligible head idles.
func TestPropSafety(t *testing.T) {
	for _, bf := range []string{"easy", "fcfs"} {
		t.Run(bf, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				n := rapid.IntRange(1, 12).Draw(t, "cluster")
				ops := genOps(t, genOpts{nodes: n, chaos: true})
				h := runOps(t, cluster(n, bf), ops, noIdleHead(t))
				// Every job ends up started, ended, or cancelled.
				for _, o := range ops {
					if o.kind != 0 {
						continue
					}
					if r := h.Eng.Reason(o.job.Build().ID); r != "" {
						t.Fatalf("job %d left behind with reason %q", o.job.Build().ID, r)
					}
				}
			})
		})
	}
}

// TestPropEASYHeadNotDelayed: with run times equal to limits, the head job
// starts no later than the reservation it had when it became head.
func TestPropEASYHeadNotDelayed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 16).Draw(t, "cluster")
		ops := genOps(t, genOpts{nodes: n, exact: true})
		reservation := map[scheduler.JobID]float64{}
		check := func(h *st.Harness) {
			for _, id := range h.Eng.Pending("") {
				if h.Eng.Reason(id) != "Resources" {
					continue
				}
				if _, seen := reservation[id]; seen {
					break
				}
				j, _ := h.Eng.Job(id)
				reservation[id] = shadowOf(h, j.Nodes)
			}
		}
		h := runOps(t, cluster(n, "easy"), ops, check)
		for id, res := range reservation {
			s, ok := h.StartOf(id)
			if !ok || s.At > res {
				t.Fatalf("head %d reserved for %v started at %v (started=%v)", id, res, s.At, ok)
			}
		}
	})
}

// shadowOf computes, from the Engine's public snapshot, when k nodes are
// expected free: an oracle independent of Partition.FreeAt.
func shadowOf(h *st.Harness, k int) float64 {
	var ends []float64
	for _, n := range h.Eng.Nodes() {
		if n.State == scheduler.StateIdle {
			ends = append(ends, h.Now)
		}
	}
	for _, a := range h.Eng.Running() {
		for range a.Nodes {
			ends = append(ends, max(h.Now, a.Expect))
		}
	}
	slices.Sort(ends)
	return ends[k-1]
}

// TestPropFCFSOrder: without backfilling no job starts before one
// submitted earlier, and Test predicts each job's start exactly (run times
// equal limits, and in FCFS later arrivals cannot change an earlier job).
func TestPropFCFSOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 16).Draw(t, "cluster")
		ops := genOps(t, genOpts{nodes: n, exact: true})
		predicted := map[scheduler.JobID]float64{}
		h := st.New(t, cluster(n, "fcfs"))
		for _, o := range ops {
			switch o.kind {
			case 0:
				j := o.job.Build()
				start, nodes, err := h.Eng.Test(h.Now, j)
				if err != nil || len(nodes) != j.Nodes {
					t.Fatalf("Test(%d) = %v %v %v", j.ID, start, nodes, err)
				}
				predicted[j.ID] = start
				h.Submit(o.job)
			case 1:
				h.Advance(o.dt)
			}
		}
		h.Advance(math.Inf(1))
		last := 0.0
		for id := scheduler.JobID(1); ; id++ {
			s, ok := h.StartOf(id)
			if !ok {
				if _, submitted := predicted[id]; submitted {
					t.Fatalf("job %d never started", id)
				}
				break
			}
			if s.At < last {
				t.Fatalf("job %d started at %v, before an earlier job (%v)", id, s.At, last)
			}
			last = s.At
			if predicted[id] != s.At {
				t.Fatalf("job %d: Test predicted %v, started %v", id, predicted[id], s.At)
			}
		}
	})
}

// TestPropDeterminism: the same history twice gives identical actions, and
// Test calls change nothing.
func TestPropDeterminism(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "cluster")
		bf := rapid.SampledFrom([]string{"easy", "fcfs"}).Draw(t, "backfill")
		ops := genOps(t, genOpts{nodes: n, chaos: true})
		nop := func(*st.Harness) {}
		a := runOps(t, cluster(n, bf), ops, nop)
		quiet := slices.Clone(ops)
		for i := range quiet {
			quiet[i].predict = false
		}
		b := runOps(t, cluster(n, bf), quiet, nop)
		if !reflect.DeepEqual(a.Log, b.Log) {
			for i := range min(len(a.Log), len(b.Log)) {
				if !reflect.DeepEqual(a.Log[i], b.Log[i]) {
					t.Fatalf("event %d differs:\n%s\n%s", i, fmt.Sprint(a.Log[i]), fmt.Sprint(b.Log[i]))
				}
			}
			t.Fatalf("logs differ in length %d vs %d", len(a.Log), len(b.Log))
		}
	})
}
