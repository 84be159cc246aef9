package reserve

import (
	"errors"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func mustNew(t *testing.T, cfg Config) *Index {
	t.Helper()
	ix, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func occupy(t *testing.T, ix *Index, node int, s, e int64) {
	t.Helper()
	if _, err := ix.Occupy([]int{node}, s, e); err != nil {
		t.Fatal(err)
	}
}

// fig32 is a 3-server schedule in the spirit of thesis Figure 3.2: node 0
// idle in [10,40) (starts early, ends late), node 1 in [25,35) (starts after
// r, fits exactly with slack 2), node 2 in [18,29) (starts before r, ends
// soon after the job could), all nodes idle again from 100.
func fig32(t *testing.T, st Strategy) *Index {
	ix := mustNew(t, Config{Rates: []float64{1, 1, 1}, LMin: 2, Strategy: st})
	occupy(t, ix, 0, 0, 10)
	occupy(t, ix, 0, 40, 100)
	occupy(t, ix, 1, 0, 25)
	occupy(t, ix, 1, 35, 100)
	occupy(t, ix, 2, 0, 18)
	occupy(t, ix, 2, 29, 100)
	return ix
}

func TestStrategiesChoose(t *testing.T) {
	// job: r = 20, l = 8, d = 60.
	req := Request{Release: 20, Work: 8, Deadline: 60, Nodes: 1}
	for _, tc := range []struct {
		st    Strategy
		node  int
		start int64
	}{
		{MinLIP, 1, 25},   // R_2 holds node 1's period: no leading idle time
		{MaxLIP, 0, 20},   // the earliest start, 10 time units before r
		{FirstFit, 0, 20}, // the earliest-starting period
		{FFHA, 0, 20},
		{BestFit, 1, 25}, // the smallest period (10 long)
		{MinTIP, 2, 21},  // ends exactly at node 2's period end 29
		{MaxTIP, 0, 20},  // leaves [28,40) behind
	} {
		ix := fig32(t, tc.st)
		b, err := ix.Reserve(req)
		if err != nil {
			t.Fatalf("%v: %v", tc.st, err)
		}
		if b.Nodes[0] != tc.node || b.Start != tc.start || b.Ends[0] != tc.start+8 {
			t.Errorf("%v: got node %d [%d,%d), want node %d from %d", tc.st, b.Nodes[0], b.Start, b.Ends[0], tc.node, tc.start)
		}
	}
	// LACT only knows completion times (all 100): the job misses its deadline
	// although three idle periods could hold it (§3.1).
	ix := fig32(t, LACT)
	_, err := ix.Reserve(req)
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Never {
		t.Fatalf("LACT: want a NotNow refusal, got %v", err)
	}
	if ref.EarliestStart != 20 || ref.EarliestDeadline != 28 {
		t.Fatalf("earliest start/deadline = %d/%d, want 20/28", ref.EarliestStart, ref.EarliestDeadline)
	}
}

func TestRefusalEarliest(t *testing.T) {
	ix := mustNew(t, Config{Rates: []float64{1, 1}, LMin: 1})
	occupy(t, ix, 0, 0, 50)
	occupy(t, ix, 1, 0, 70)
	_, err := ix.Reserve(Request{Release: 0, Work: 30, Deadline: 60, Nodes: 1})
	var ref *Refusal
	if !errors.As(err, &ref) || ref.EarliestStart != 50 || ref.EarliestDeadline != 80 {
		t.Fatalf("got %v", err)
	}
	_, err = ix.Reserve(Request{Release: 0, Work: 30, Deadline: 60, Nodes: 3})
	if !errors.As(err, &ref) || !ref.Never {
		t.Fatalf("3 of 2 nodes: got %v", err)
	}
}

func TestHeterogeneous(t *testing.T) {
	// ⌈10/0.5⌉ = 20 on the slow node, ⌈10/2⌉ = 5 on the fast one.
	ix := mustNew(t, Config{Rates: []float64{2, 0.5, 1}, LMin: 1, Strategy: FFHA})
	b, err := ix.Reserve(Request{Release: 0, Work: 10, Nodes: 1})
	if err != nil || b.Nodes[0] != 1 || b.Ends[0] != 20 {
		t.Fatalf("FF-HA+ should take the slowest class first: %v %v", b, err)
	}
	// a deadline of 8 only the fast node meets.
	b, err = ix.Reserve(Request{Release: 0, Work: 10, Deadline: 8, Nodes: 1})
	if err != nil || b.Nodes[0] != 0 || b.Ends[0] != 5 {
		t.Fatalf("fast node: %v %v", b, err)
	}
	// first-fit sees lengths per node too: rate 1 needs 10 ≤ 12.
	ix2 := mustNew(t, Config{Rates: []float64{0.5, 1}, LMin: 1, Strategy: FirstFit})
	b, err = ix2.Reserve(Request{Release: 0, Work: 10, Deadline: 12, Nodes: 1})
	if err != nil || b.Nodes[0] != 1 {
		t.Fatalf("first-fit heterogeneous: %v %v", b, err)
	}
}

// The dual-plane test of §4.3.2 agrees with the integer test the trees use.
func TestDualTransform(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mu := rapid.SampledFrom([]float64{0.25, 0.5, 1, 2, 4}).Draw(t, "mu")
		r := rapid.Int64Range(0, 1<<20).Draw(t, "r")
		l := rapid.Int64Range(1, 1<<16).Draw(t, "l")
		et := r + rapid.Int64Range(-100, 1<<17).Draw(t, "len")
		want := et-r >= int64(math.Ceil(float64(l)/mu))
		if got := dualBelow(mu, et, r, l); got != want {
			t.Fatalf("μ=%v et=%d r=%d l=%d: dual %v, integer %v", mu, et, r, l, got, want)
		}
	})
}

func TestRotationDiscardsExpiredStrips(t *testing.T) {
	ix := mustNew(t, Config{Rates: []float64{1, 1}, LMin: 5}) // W = 10
	for k := int64(0); k < 20; k++ {
		occupy(t, ix, 0, 20*k+10, 20*k+20) // idle periods [20k, 20k+10)
	}
	before := ix.Len()
	ix.Advance(205)
	st := ix.Stats()
	if st.Rotations != 20 {
		t.Fatalf("rotations %d, want 20", st.Rotations)
	}
	// strips holding only expired periods go in O(1); node 1's trailing
	// idle period [0, ∞) is clipped to 200 and moved to the first live strip.
	if st.O1Rotations != 19 || st.MovedPeriods != 1 {
		t.Fatalf("O(1) rotations %d, moved %d", st.O1Rotations, st.MovedPeriods)
	}
	// node 0: [200,210) … [380,390) and [400,∞); node 1: [200,∞).
	if got := ix.Len(); got >= before || got != 12 {
		t.Fatalf("Len %d (before %d)", got, before)
	}
	b, err := ix.Reserve(Request{Release: 0, Work: 10, Nodes: 1})
	// min-LIP: node 0's [220,230) leaves no leading idle time; node 1 would
	// leave [200,205).
	if err != nil || b.Start != 220 || b.Nodes[0] != 0 {
		t.Fatalf("after the jump: %v %v", b, err)
	}
}

func TestCancelAndFinishMerge(t *testing.T) {
	ix := mustNew(t, Config{Rates: []float64{1}, LMin: 1, Strategy: FirstFit})
	a, _ := ix.Reserve(Request{Release: 0, Work: 10, Nodes: 1})
	b, _ := ix.Reserve(Request{Release: 0, Work: 10, Nodes: 1})
	c, _ := ix.Reserve(Request{Release: 0, Work: 10, Nodes: 1})
	if a.Start != 0 || b.Start != 10 || c.Start != 20 {
		t.Fatalf("%v %v %v", a, b, c)
	}
	if err := ix.Cancel(b.ID); err != nil {
		t.Fatal(err)
	}
	if err := ix.Finish(a.ID, 4); err != nil {
		t.Fatal(err)
	}
	// [4,20) is one idle period again: 16 fits, 17 does not.
	if _, err := ix.Plan(Request{Release: 0, Work: 16, Deadline: 20, Nodes: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Plan(Request{Release: 0, Work: 17, Deadline: 21, Nodes: 1}); err == nil {
		t.Fatal("17 fits in a 16-long hole")
	}
	if ix.Cancel(b.ID) != ErrUnknownBooking {
		t.Fatal("second cancel")
	}
}

func TestCoAllocation(t *testing.T) {
	ix := mustNew(t, Config{Rates: []float64{1, 1, 1}, LMin: 5, DeltaT: 10, MaxRet: 3})
	occupy(t, ix, 0, 0, 12)
	occupy(t, ix, 1, 0, 27)
	// three nodes together: first grid point r + kΔt where all are idle is 30.
	b, err := ix.Reserve(Request{Release: 0, Work: 10, Nodes: 3})
	if err != nil || b.Start != 30 || !slices.Equal(b.Nodes, []int{0, 1, 2}) {
		t.Fatalf("%v %v", b, err)
	}
	// maxRet = 3 stops the retries at r + 30; the refusal still tells when.
	ix2 := mustNew(t, Config{Rates: []float64{1, 1}, LMin: 5, DeltaT: 10, MaxRet: 3})
	occupy(t, ix2, 0, 0, 55)
	_, err = ix2.Reserve(Request{Release: 0, Work: 10, Nodes: 2})
	var ref *Refusal
	if !errors.As(err, &ref) || ref.EarliestStart != 55 || ref.EarliestDeadline != 65 {
		t.Fatalf("got %v", err)
	}
	// range search: who is idle through [12, 20)?
	if got := ix.FreeIn(12, 20); !slices.Equal(got, []int{0, 2}) {
		t.Fatalf("FreeIn = %v", got)
	}
}

func TestParseStrategy(t *testing.T) {
	for _, s := range Strategies() {
		if got, err := ParseStrategy(s.String()); err != nil || got != s {
			t.Fatalf("%v: %v %v", s, got, err)
		}
	}
	if _, err := ParseStrategy("worst-fit"); err == nil {
		t.Fatal("worst-fit accepted")
	}
	if s, _ := ParseStrategy(""); s != MinLIP {
		t.Fatal("default is not min-lip")
	}
}
