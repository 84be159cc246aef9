package dlt

import (
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// The MNA dispatcher's chunk plan on a worked case (ac-fast-2009 §4.2):
// N = 4, Cms = 1, Cps = 9, σ = 25, A = 0, D = 100.
// t=0:  σ̂ = min(100/10, 25) = 10 on node 0, ends at 100; channel free at 10.
// t=10: σ̂ = min(90/10, 15) = 9 on node 1, ends at 100; channel free at 19.
// t=19: σ̂ = min(81/10, 6) = 6 on node 2, ends at 19 + 60 = 79.
func TestMNAChunkPlan(t *testing.T) {
	s, _ := New("ac-fast", Model{Cms: 1, Cps: 9}, 4)
	if err := s.Admit(0, Task{ID: 7, Size: 25, Deadline: 100}); err != nil {
		t.Fatal(err)
	}
	want := []Chunk{
		{Task: 7, Step: 0, Node: 0, Offset: 0, Size: 10, Start: 0, End: 100},
		{Task: 7, Step: 1, Node: 1, Offset: 10, Size: 9, Start: 10, End: 100},
		{Task: 7, Step: 2, Node: 2, Offset: 19, Size: 6, Start: 19, End: 79},
	}
	var got []Chunk
	for _, now := range []float64{0, 10, 19, 25} {
		if n := s.Next(); now < 25 && n != now {
			t.Fatalf("Next = %g, want %g", n, now)
		}
		got = append(got, s.Dispatch(now)...)
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		g := got[i]
		if g.Task != want[i].Task || g.Step != want[i].Step || g.Node != want[i].Node ||
			!near(g.Offset, want[i].Offset) || !near(g.Size, want[i].Size) || !near(g.Start, want[i].Start) || !near(g.End, want[i].End) {
			t.Fatalf("chunk %d = %+v, want %+v", i, g, want[i])
		}
	}
	if s.Queued() != 0 || !math.IsInf(s.Next(), 1) {
		t.Fatalf("queued %d next %g", s.Queued(), s.Next())
	}
}

// With setup costs each chunk pays ST on the channel and ST+SC on its node.
func TestMNASetupCosts(t *testing.T) {
	m := Model{Cms: 1, Cps: 9, ST: 2, SC: 3}
	s, _ := New("ac-fast", m, 4)
	if err := s.Admit(0, Task{ID: 1, Size: 25, Deadline: 105}); err != nil {
		t.Fatal(err)
	}
	c := s.Dispatch(0)
	if len(c) != 1 || !near(c[0].Size, 10) || !near(c[0].End, 105) || !near(s.Next(), 12) {
		t.Fatalf("chunk %+v, next %g", c, s.Next())
	}
}

// An underrun frees the node at once: the next task starts on it at the
// moment of the early completion.
func TestUnderrunFreesNode(t *testing.T) {
	for _, alg := range []string{"ac-fast", "edf-dlt", "edf-mn"} {
		s, _ := New(alg, Model{Cms: 1, Cps: 9}, 1)
		if err := s.Admit(0, Task{ID: 1, Size: 10, Deadline: 100}); err != nil {
			t.Fatal(alg, err)
		}
		if err := s.Admit(0, Task{ID: 2, Size: 5, Deadline: 1000}); err != nil {
			t.Fatal(alg, err)
		}
		c := s.Dispatch(0)
		if len(c) != 1 || c[0].Task != 1 {
			t.Fatalf("%s: %+v", alg, c)
		}
		if !s.Finished(40, 0) { // planned 100, measured 40
			t.Fatalf("%s: task 1 not done", alg)
		}
		if alg != "ac-fast" {
			// a planner keeps its plan, but a new admission sees the node free
			if err := s.Admit(40, Task{ID: 3, Size: 5, Deadline: 95}); err != nil {
				t.Fatalf("%s: node freed by the underrun not seen: %v", alg, err)
			}
			continue
		}
		c = s.Dispatch(40)
		if len(c) != 1 || c[0].Task != 2 || c[0].Start != 40 {
			t.Fatalf("%s: after underrun %+v", alg, c)
		}
	}
}

// An overrun continues while nobody needs its node, and is killed as soon as
// an admitted task needs it (dlt-feedback §3.2).
func TestOverrunKilledWhenNeeded(t *testing.T) {
	for _, alg := range []string{"ac-fast", "edf-dlt"} {
		s, _ := New(alg, Model{Cms: 1, Cps: 9}, 1)
		if err := s.Admit(0, Task{ID: 1, Size: 10, Deadline: 100}); err != nil {
			t.Fatal(err)
		}
		s.Dispatch(0)
		if k := s.Kills(150); len(k) != 0 {
			t.Fatalf("%s: killed %+v with nothing waiting", alg, k)
		}
		if err := s.Admit(150, Task{ID: 2, Size: 5, Deadline: 250}); err != nil {
			t.Fatalf("%s: the overrun blocked an admission: %v", alg, err)
		}
		k := s.Kills(150)
		if len(k) != 1 || k[0].Task != 1 {
			t.Fatalf("%s: kills %+v", alg, k)
		}
		if c := s.Dispatch(150); len(c) != 0 {
			t.Fatalf("%s: dispatched %+v before the kill was reported", alg, c)
		}
		if k := s.Kills(150); len(k) != 0 {
			t.Fatalf("%s: killed twice: %+v", alg, k)
		}
		s.Finished(150, 0)
		c := s.Dispatch(150)
		if len(c) != 1 || c[0].Task != 2 || c[0].Node != 0 {
			t.Fatalf("%s: after kill %+v", alg, c)
		}
	}
}

// Under underruns (actual ≤ estimate) the guarantee holds; with random
// overruns, only tasks that overran may miss.
func TestGuaranteeFeedback(t *testing.T) {
	for _, alg := range []string{"ac-fast", "edf-dlt", "edf-mn", "mcdf"} {
		r := rand.New(rand.NewPCG(9, 9))
		killed := 0
		for k := range 300 {
			w := genWorkload(r, 10+r.IntN(30))
			over := k%2 == 1
			res := simulate(alg, w, func(c Chunk) float64 {
				if over && r.IntN(5) == 0 {
					return 1.2 + r.Float64()
				}
				return 0.3 + 0.7*r.Float64()
			})
			if res.err != "" || res.missedClean > 0 {
				t.Fatalf("%s workload %d (%v, overruns %v): %+v", alg, k, w, over, res)
			}
			killed += res.killed
		}
		t.Logf("%s: %d overrunning chunks killed", alg, killed)
	}
}

// The estimator: constant samples converge to the sample; noisy samples give
// an estimate above their mean; nothing changes before MinSamples.
func TestEstimator(t *testing.T) {
	m := Model{Cms: 1, Cps: 9, ST: 1, SC: 1}
	e := &Estimator{MinSamples: 3}
	e.Observe(m, 10, 2+10*15) // u = 15
	e.Observe(m, 10, 2+10*15)
	if got := e.Apply(m); got != m {
		t.Fatalf("changed before MinSamples: %+v", got)
	}
	e.Observe(m, 10, 2+10*15)
	if got := e.Apply(m); !near(got.Cps, 14) {
		t.Fatalf("Cps = %g, want 14", got.Cps)
	}
	rapid.Check(t, func(rt *rapid.T) {
		e := &Estimator{}
		sum, n := 0.0, rapid.IntRange(8, 50).Draw(rt, "n")
		for range n {
			u := rapid.Float64Range(5, 20).Draw(rt, "u")
			sum += u
			e.Observe(Model{Cms: 1, Cps: 1}, 1, u)
		}
		lo, hi := 5.0, 20.0
		if !(e.Upper() >= e.mean) || e.mean < lo || e.mean > hi {
			rt.Fatalf("mean %g upper %g", e.mean, e.Upper())
		}
	})
}

// The share divides Cps in the estimator's output as everywhere: an RT share
// of ½ and measured unit cost u plan with cps() = u − Cms.
func TestEstimatorShare(t *testing.T) {
	m := Model{Cms: 1, Cps: 4, Share: 0.5}
	e := &Estimator{MinSamples: 1}
	e.Observe(m, 1, 11)
	if got := e.Apply(m); !near(got.cps(), 10) {
		t.Fatalf("cps() = %g, want 10", got.cps())
	}
}

// A refusal carries a deadline the same test accepts, and where the test is
// monotone nothing noticeably earlier is accepted.
func TestPropEarliestDeadline(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		alg := rapid.SampledFrom([]string{"ac-fast", "edf-dlt", "edf-mn", "fifo-an"}).Draw(rt, "alg")
		w := genWorkload(rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 1)), rapid.IntRange(1, 20).Draw(rt, "count"))
		onRefusal = func(s *Scheduler, now float64, tk Task, ref *Refusal) {
			e := ref.EarliestDeadline
			if e <= 0 {
				rt.Fatalf("%s: no earliest deadline for %+v", alg, tk)
			}
			u := tk
			u.Deadline = e
			if !s.Test(now, u) {
				rt.Fatalf("%s: earliest %g refused", alg, e)
			}
			// Only FIFO-AN's test is monotone in the deadline (the start and
			// the node count do not depend on it); EDF orders move with it.
			u.Deadline = now + (e-now)*(1-1e-6)
			if alg == "fifo-an" && s.Test(now, u) {
				rt.Fatalf("%s: %g accepted below the earliest %g", alg, u.Deadline, e)
			}
		}
		defer func() { onRefusal = nil }()
		if res := simulate(alg, w, nil); res.err != "" || res.missed > 0 {
			rt.Fatalf("%+v", res)
		}
	})
}

// Reading 2 (README): with the MNA dispatcher a task that left the queue may
// hold every node until its deadline. N = 2, Cms = 1, Cps = 9: task 1
// (σ = 19, due 100) has 𝓔(19, 2) = 100 and is cut into 10 on node 0 and 9 on
// node 1, both busy to 100. Task 2 (σ = 1, due 30) arriving at 11 would pass
// Algorithm 1 read literally (S = A = 11, 𝓔 = 5.26) and then miss; it is
// refused, with the earliest deadline 100 + 𝓔(1, 2).
func TestACFastStartAfterDispatchedWork(t *testing.T) {
	m := Model{Cms: 1, Cps: 9}
	s, _ := New("ac-fast", m, 2)
	if err := s.Admit(0, Task{ID: 1, Size: 19, Deadline: 100 + 1e-6}); err != nil {
		t.Fatal(err)
	}
	s.Dispatch(0)
	s.Dispatch(s.Next())
	if s.Queued() != 0 || s.running[0] == nil || s.running[1] == nil {
		t.Fatalf("task 1 not fully dispatched: queued %d", s.Queued())
	}
	err := s.Admit(11, Task{ID: 2, Size: 1, Deadline: 30})
	r, ok := err.(*Refusal)
	if !ok {
		t.Fatalf("admitted a task no node can serve before 100: %v", err)
	}
	if want := m.Exec(19, 2) + m.Exec(1, 2); math.Abs(r.EarliestDeadline-want) > 1e-6 {
		t.Fatalf("earliest %g, want %g", r.EarliestDeadline, want)
	}
}

// Reading 4: a task arriving at a cluster that has been idle for a long time
// gets S = A: a deadline of A + 𝓔(σ, N) is accepted (Algorithm 3 read
// literally would add (N(1−β)/(1−β^N) − 1)·idle, here about 10⁶ seconds).
func TestACFastIdleClusterNoPenalty(t *testing.T) {
	m := Model{Cms: 1, Cps: 1000}
	s, _ := New("ac-fast", m, 64)
	if err := s.Admit(0, Task{ID: 1, Size: 5, Deadline: 1e4}); err != nil {
		t.Fatal(err)
	}
	c := s.Dispatch(0)
	s.Finished(c[0].End, c[0].Node)
	a := 1e7
	d := a + m.Exec(100, 64)*(1+1e-12)
	if err := s.Admit(a, Task{ID: 2, Size: 100, Deadline: d}); err != nil {
		t.Fatalf("refused at an idle cluster: %v", err)
	}
}

// With an estimator, chunks that run at 5 s per unit where 10 were planned
// bring Cps down to what they measure, and a tighter deadline then passes.
func TestEstimatorLearnsFromChunks(t *testing.T) {
	m := Model{Cms: 0, Cps: 10}
	s, _ := New("ac-fast", m, 1)
	s.SetEstimator(&Estimator{})
	now := 0.0
	tight := Task{ID: 100, Size: 10, Deadline: 0} // needs Cps ≤ 6 in 60 s
	for i := range 12 {
		tight.Deadline = now + 60
		if i == 0 && s.Test(now, tight) {
			t.Fatal("tight task admitted before learning")
		}
		if err := s.Admit(now, Task{ID: int64(i + 1), Size: 10, Deadline: now + 1000}); err != nil {
			t.Fatal(err)
		}
		c := s.Dispatch(now)
		now = c[0].Start + c[0].Size*5
		s.Finished(now, c[0].Node)
	}
	if got := s.Model().Cps; math.Abs(got-5) > 1e-9 {
		t.Fatalf("Cps = %g, want 5", got)
	}
	tight.Deadline = now + 60
	if !s.Test(now, tight) {
		t.Fatal("tight task still refused after learning")
	}
}
