package reserve

import (
	"errors"
	"testing"
)

// TestCoPlan: the first grid start s = r + kΔt at which n nodes are idle
// for the whole work, and k, the retries; one node goes on the grid too;
// nothing is booked.
func TestCoPlan(t *testing.T) {
	ix := mustNew(t, Config{Rates: []float64{1, 1, 1}, LMin: 5, DeltaT: 10, MaxRet: 4})
	occupy(t, ix, 0, 0, 12)  // node 0 idle from 12
	occupy(t, ix, 1, 0, 27)  // node 1 idle from 27
	occupy(t, ix, 2, 15, 40) // node 2 idle in [0,15) and from 40
	cases := []struct {
		release, work int64
		n             int
		start         int64
		retries       int
	}{
		{0, 10, 1, 0, 0},   // node 2 at once
		{3, 13, 1, 13, 1},  // [3,15) is too short on node 2; node 0 at the grid point 13, not at 12
		{3, 12, 1, 3, 0},   // [3,15) holds exactly 12
		{0, 10, 2, 30, 3},  // s=0, 10: node 2 alone (its [0,15) too short from 10); s=20: node 0 alone; s=30: nodes 0 and 1
		{0, 10, 3, 40, 4},  // all three from 40: k = 4
		{0, 100, 2, 30, 3}, // 0 and 1 from 30 (node 2 is booked in [15,40))
	}
	for _, c := range cases {
		s, k, err := ix.CoPlan(c.release, c.work, c.n)
		if err != nil || s != c.start || k != c.retries {
			t.Errorf("CoPlan(r=%d, w=%d, n=%d) = %d, %d, %v; want %d, %d", c.release, c.work, c.n, s, k, err, c.start, c.retries)
		}
	}
	if len(ix.books) != 3 {
		t.Errorf("CoPlan booked: %d bookings, want the 3 occupied", len(ix.books))
	}
	// Beyond maxRet: a refusal with maxRet retries.
	if _, k, err := ix.CoPlan(0, 10, 3); err != nil || k != 4 {
		t.Fatalf("baseline: %d %v", k, err)
	}
	ix2 := mustNew(t, Config{Rates: []float64{1, 1}, LMin: 5, DeltaT: 10, MaxRet: 2})
	occupy(t, ix2, 0, 0, 35)
	var ref *Refusal
	if _, k, err := ix2.CoPlan(0, 10, 2); !errors.As(err, &ref) || ref.Never || k != 2 {
		t.Errorf("beyond maxRet: %d retries, %v; want a refusal after 2", k, err)
	}
	if _, k, err := ix2.CoPlan(0, 10, 3); !errors.As(err, &ref) || !ref.Never || k != 0 {
		t.Errorf("3 nodes of 2: %d retries, %v; want a Never refusal", k, err)
	}
}
