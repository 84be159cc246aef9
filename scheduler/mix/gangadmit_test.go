package mix

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// §4.4's rows test on 4 nodes, M = 6 at 2:1 (4 RT rows), Q = 0.5 s,
// δ = 1 ms, d = 1/30 s, b = 100: r = ⌈M(Q+δ)ζmax/(dQ)⌉, s_A slots down the
// same columns; a refusal changes nothing; a departure frees the rows.
func TestGangAdmit(t *testing.T) {
	g, err := NewGangAdmit(4, 6, Ratio{X: 2, Y: 1}, 0.5, 0.001)
	if err != nil {
		t.Fatal(err)
	}
	job := func(s int, zeta float64) RTJob {
		w := make([]float64, s)
		for k := range w {
			w[k] = zeta
		}
		return RTJob{Frame: 1.0 / 30, Buffer: 100, Work: w}
	}
	on := Admission{On: true}
	// ζ = 0.01 (30 % of a CPU): r = ⌈1.80⌉ = 2 rows.
	if d := g.Place(1, job(2, 0.01), on); d.Verdict != Admitted || !slices.Equal(d.Nodes, []int{0, 1}) || g.RowsOn(0) != 2 {
		t.Fatalf("job 1: %+v, rows on node 0: %d", d, g.RowsOn(0))
	}
	if d := g.Place(2, job(2, 0.01), on); d.Verdict != Admitted || !slices.Equal(d.Nodes, []int{2, 3}) {
		t.Fatalf("job 2: %+v", d)
	}
	// ζ = 0.0055: one row of 4 free slots (row 2).
	if d := g.Place(3, job(4, 0.0055), on); d.Verdict != Admitted || g.RowsOn(0) != 3 {
		t.Fatalf("job 3: %+v", d)
	}
	// Two rows with 4 free slots: only row 3 is left.
	before := g.Matrix().slot
	before = slices.Clone(before)
	d := g.Place(4, job(4, 0.01), on)
	if d.Verdict != NotNow || !strings.Contains(d.Reason, "2 of the 4 RT rows with 4 free slots") {
		t.Fatalf("job 4: %+v", d)
	}
	if !slices.Equal(before, g.Matrix().slot) || g.NodesOf(4) != nil {
		t.Fatal("a refused job changed the matrix")
	}
	if z := g.WouldFit(4, 1.0/30, 100); z < 0.0055 || z > 0.0056 {
		t.Errorf("WouldFit(4 processes) = %g, want one row's ζ = Q·d/(M(Q+δ)) ≈ 0.005546", z)
	}
	g.Release(1)
	if d := g.Place(4, job(2, 0.01), on); d.Verdict != Admitted || !slices.Equal(d.Nodes, []int{0, 1}) {
		t.Fatalf("job 4 after job 1 left: %+v", d)
	}
	for name, tc := range map[string]struct {
		j    RTJob
		want string
	}{
		"more rows than the RT set": {job(1, 0.025), "would need 5 rows"},
		"cycle over the buffer":     {RTJob{Frame: 1.0 / 30, Buffer: 10, Work: []float64{0.001}}, "longer than the buffer"},
		"more processes than nodes": {job(5, 0.001), "5 processes, 4 nodes"},
	} {
		if d := g.Place(9, tc.j, on); d.Verdict != Never || !strings.Contains(d.Reason, tc.want) {
			t.Errorf("%s: %+v, want Never naming %q", name, d, tc.want)
		}
	}
	// Restored without the test when no row is free: kept aside on its nodes.
	g.PlaceOn(10, job(4, 0.01), []int{3, 0, 1, 2})
	if n := g.NodesOf(10); !slices.Equal(n, []int{0, 1, 2, 3}) {
		t.Fatalf("restored job 10 on %v", n)
	}
	g.Release(10)
	if g.NodesOf(10) != nil {
		t.Fatal("job 10 still placed after Release")
	}
}

// TDMFreezeAt: δ opens each division (both classes stopped where both have
// processes, nothing stopped otherwise), then TDMFreeze's rule; next is the
// end of the sync, then of the division.
func TestTDMFreezeAt(t *testing.T) {
	p, err := NewTDM(Ratio{X: 2, Y: 1}, 3, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		now          float64
		rtHas, beHas bool
		want         [2]bool
		next         float64
	}{
		{30.05, true, true, [2]bool{true, true}, 30.1},    // RT division's sync
		{30.5, true, true, [2]bool{false, true}, 32},      // RT division
		{32.05, true, true, [2]bool{true, true}, 32.1},    // BE division's sync
		{32.5, true, true, [2]bool{true, false}, 33},      // BE division
		{30.05, true, false, [2]bool{false, false}, 30.1}, // one class only: nothing to separate
		{32.5, false, true, [2]bool{false, false}, 33},    // BE alone
	} {
		f, next := TDMFreezeAt(p, tc.now, tc.rtHas, tc.beHas)
		if f != tc.want || math.Abs(next-tc.next) > 1e-9 {
			t.Errorf("at %g (rt %v, be %v): %v until %g, want %v until %g", tc.now, tc.rtHas, tc.beHas, f, next, tc.want, tc.next)
		}
	}
}
