package dlt

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkAdmission measures one admission decision once n tasks wait in the
// queue (ac-fast-2009 §5.2, Table 3 setup: N = 512, Cms = 1, Cps = 1000, long
// deadlines so that every task is admitted). Each iteration admits one task
// (deadline at a random place in the queue) and removes it again, so the
// queue keeps n tasks; ns/op is therefore one decision plus one removal.
//
// The planners re-plan every waiting task on each decision (O(n·N log N));
// their sub-benchmarks exist only for n = 300 (edf-dlt also n = 1000):
// the larger ones are not generated at all.
func BenchmarkAdmission(b *testing.B) {
	m := Model{Cms: 1, Cps: 1000}
	const nodes = 512
	limit := map[string]int{"ac-fast": 30000, "ac-fast-ref": 30000, "edf-dlt": 1000,
		"fifo-an": 300, "fifo-mn": 300, "edf-an": 300, "edf-mn": 300,
		"fifo-anna": 300, "edf-anna": 300, "mcdf": 300}
	for _, alg := range Algorithms {
		for _, n := range []int{300, 1000, 3000, 10000, 30000} {
			if n > limit[alg] {
				continue
			}
			b.Run(fmt.Sprintf("%s/n=%d", alg, n), func(b *testing.B) {
				s, err := New(alg, m, nodes)
				if err != nil {
					b.Fatal(err)
				}
				r := rand.New(rand.NewPCG(3, 5))
				id := int64(0)
				task := func() Task {
					id++
					return Task{ID: id, Size: 50 + 100*r.Float64(), Deadline: 1e9 + 1e9*r.Float64()}
				}
				for range n {
					if err := s.Admit(0, task()); err != nil {
						b.Fatal(err)
					}
				}
				if s.Queued() != n {
					b.Fatalf("queued %d, want %d", s.Queued(), n)
				}
				b.ResetTimer()
				for b.Loop() {
					t := task()
					if err := s.Admit(0, t); err != nil {
						b.Fatal(err)
					}
					s.Remove(t.ID)
				}
			})
		}
	}
}

// BenchmarkNodeLossRecheck measures a node going down and coming back (two
// rechecks of every guarantee: the AC-FAST queue rebuilt and re-admitted
// in order) with n tasks waiting, in the BenchmarkAdmission setup (long
// deadlines: every task stays guaranteed).
func BenchmarkNodeLossRecheck(b *testing.B) {
	m := Model{Cms: 1, Cps: 1000}
	for _, n := range []int{300, 3000, 30000} {
		b.Run(fmt.Sprintf("ac-fast/n=%d", n), func(b *testing.B) {
			s, err := New("ac-fast", m, 512)
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(3, 5))
			for i := range n {
				if err := s.Admit(0, Task{ID: int64(i + 1), Size: 50 + 100*r.Float64(), Deadline: 1e9 + 1e9*r.Float64()}); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if lost := s.SetNode(0, 7, false); len(lost) != 0 {
					b.Fatalf("%d tasks lost their guarantee", len(lost))
				}
				s.SetNode(0, 7, true)
			}
			if s.Queued() != n {
				b.Fatalf("queued %d, want %d", s.Queued(), n)
			}
		})
	}
}
