package reserve

import (
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// TestTreeSummaries: random insertions and removals on one strip tree with
// its secondary trees, large enough that a removed period is often the
// extreme of one summary only; after each step every summary must be what
// a full recomputation gives.
func TestTreeSummaries(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Uint64().Draw(t, "seed")
		rng := rand.New(rand.NewPCG(seed, 1))
		var ops int64
		tr := newTree(&ops)
		tr.withSec()
		var in []*period
		used := map[[2]int64]bool{}
		for range 400 {
			if len(in) > 0 && rng.IntN(3) == 0 {
				k := rng.IntN(len(in))
				p := in[k]
				in[k] = in[len(in)-1]
				in = in[:len(in)-1]
				if !tr.remove(p) {
					t.Fatalf("period %+v not found", *p)
				}
				delete(used, [2]int64{p.st, int64(p.node)})
			} else {
				p := &period{node: int32(rng.IntN(30)), st: rng.Int64N(200)}
				if used[[2]int64{p.st, int64(p.node)}] {
					continue
				}
				used[[2]int64{p.st, int64(p.node)}] = true
				p.end = p.st + 1 + rng.Int64N(100)
				if rng.IntN(10) == 0 {
					p.end = Inf
				}
				tr.insert(p)
				in = append(in, p)
			}
			primCheck(t, tr.root)
			secCheck(t, tr)
			if tr.len() != len(in) {
				t.Fatalf("size %d, want %d", tr.len(), len(in))
			}
		}
	})
}
