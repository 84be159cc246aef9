package dlt

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// rtDLT2005Workload is the simulation setup of rt-dlt-2005 §6.1: N = 10,
// Cms = Cps = 10, sizes Normal(100, 100) (redrawn until positive), 1–10 tasks
// per arrival instant, Poisson instants, relative deadlines uniform between
// the minimum and the maximum execution time (𝓔(σ, n*) and 𝓔(σ, 1)). System
// load = Σ minimum execution times / time, so instants are on average
// 5.5·𝓔(100, 10)/L apart (README: how the interval was read).
func rtDLT2005Workload(seed uint64, load, setup float64, count int) workload {
	r := rand.New(rand.NewPCG(seed, 2005))
	w := workload{n: 10, m: Model{Cms: 10, Cps: 10, ST: setup, SC: setup}, load: load}
	gap := 5.5 * w.m.Exec(100, w.m.BestN(100, w.n)) / load
	now := 0.0
	for id := int64(1); len(w.tasks) < count; {
		now += r.ExpFloat64() * gap
		for range 1 + r.IntN(10) {
			sigma := -1.0
			for sigma <= 0 {
				sigma = 100 + 100*r.NormFloat64()
			}
			lo := w.m.Exec(sigma, w.m.BestN(sigma, w.n))
			hi := w.m.Exec(sigma, 1)
			w.tasks = append(w.tasks, Task{ID: id, Arrival: now, Size: sigma, Deadline: now + lo + r.Float64()*(hi-lo)})
			id++
		}
	}
	w.tasks = w.tasks[:count]
	return w
}

// TestReproRTDLT2005 runs the comparison of rt-dlt-2005 §6.2–6.3 and checks
// what must hold whatever the numbers: no admitted task of a guaranteeing
// algorithm misses, and without admission control most tasks miss at full
// load. The table it logs is docs/reproductions/dlt-rt-dlt-2005.md.
func TestReproRTDLT2005(t *testing.T) {
	loads := []float64{0.2, 0.5, 1.0, 2.0}
	var b strings.Builder
	for _, setup := range []float64{0, 10} {
		fmt.Fprintf(&b, "\nST = SC = %g: task reject ratio (miss ratio for -anna)\n\n| algorithm |", setup)
		for _, l := range loads {
			fmt.Fprintf(&b, " L = %.1f |", l)
		}
		b.WriteString("\n|---|" + strings.Repeat("---:|", len(loads)) + "\n")
		for _, alg := range Algorithms {
			if alg == "ac-fast-ref" {
				continue
			}
			fmt.Fprintf(&b, "| %s |", alg)
			for _, l := range loads {
				rej, miss, total := 0, 0, 0
				for seed := range uint64(1) {
					w := rtDLT2005Workload(seed, l, setup, 600)
					res := simulate(alg, w, nil)
					if res.err != "" {
						t.Fatalf("%s L=%g: %s", alg, l, res.err)
					}
					if Guaranteed(alg) && res.missed > 0 {
						t.Fatalf("%s L=%g setup=%g: %d admitted tasks missed", alg, l, setup, res.missed)
					}
					rej += res.rejected
					miss += res.missed
					total += len(w.tasks)
				}
				ratio := float64(rej) / float64(total)
				if !Guaranteed(alg) {
					ratio = float64(miss) / float64(total)
					if l >= 1 && ratio < 0.5 {
						t.Fatalf("%s L=%g: miss ratio %.2f without admission control", alg, l, ratio)
					}
				}
				fmt.Fprintf(&b, " %.3f |", ratio)
			}
			b.WriteString("\n")
		}
	}
	t.Log(b.String())
}
