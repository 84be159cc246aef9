package dlt

import (
	"math/rand/v2"
	"testing"

	"hora/scheduler/mix"
)

// The DLT guarantee under the [mix] fairness ratio (DESIGN.md §1): plan
// with Cps/s, and whatever BE does — RT gets between its share s and the
// whole node, so a chunk takes between its planned time and s times it — no
// admitted task misses its deadline. At 1:0 this is TestGuarantee itself.
func TestGuaranteeUnderRatio(t *testing.T) {
	for _, ratio := range []string{"1:0", "2:1"} {
		r, err := mix.ParseRatio(ratio)
		if err != nil {
			t.Fatal(err)
		}
		s := r.Share(mix.RT)
		for _, alg := range []string{"ac-fast", "edf-dlt", "fifo-an"} {
			t.Run(ratio+"/"+alg, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(21, uint64(len(alg))))
				adm, rej := 0, 0
				for k := range 300 {
					w := genWorkload(rng, 10+rng.IntN(30))
					w.m.Share = s
					// the BE load decides, chunk by chunk, how much of the node RT gets
					got := rand.New(rand.NewPCG(uint64(k), 3))
					res := simulate(alg, w, func(Chunk) float64 { return s + (1-s)*got.Float64() })
					if res.err != "" || res.missed > 0 {
						t.Fatalf("workload %d (%v) at %s: %d admitted, %d missed; %s", k, w, ratio, res.admitted, res.missed, res.err)
					}
					adm += res.admitted
					rej += res.rejected
				}
				if adm == 0 || rej == 0 {
					t.Fatalf("degenerate: %d admitted, %d rejected", adm, rej)
				}
			})
		}
	}
	// And the share is what makes it hold: planning with s = 1 while RT gets
	// only 2/3 of the node misses.
	rng := rand.New(rand.NewPCG(5, 5))
	missed := 0
	for range 100 {
		w := genWorkload(rng, 30)
		w.load = 1.5
		res := simulate("ac-fast", w, func(Chunk) float64 { return 1.5 })
		missed += res.missed
	}
	if missed == 0 {
		t.Error("planning with the whole node while RT gets 2/3 of it never missed: the test cannot tell")
	}
}
