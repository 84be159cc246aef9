package mix

import (
	"math/rand/v2"
	"testing"
)

// benchLoads is 1,024 nodes carrying 10,000 admitted RT jobs of 16
// processes (d = 1/30 s, b = 100), each process 0.1–0.4 % of a CPU.
func benchLoads(b *testing.B) *Loads {
	l := NewLoads(1024, Ratio{2, 1})
	rng := rand.New(rand.NewPCG(1, 2))
	for id := int64(1); id <= 10000; id++ {
		job := RTJob{Frame: 1.0 / 30, Buffer: 100, Work: make([]float64, 16)}
		for k := range job.Work {
			job.Work[k] = (0.001 + 0.003*rng.Float64()) / 30
		}
		if d := l.Place(id, job, Admission{On: true}); d.Verdict != Admitted {
			b.Fatalf("setup job %d: %s", id, d.Reason)
		}
	}
	return l
}

// BenchmarkAdmit is one admission decision (admitted) and the release that
// restores the state, on the loaded cluster.
func BenchmarkAdmit(b *testing.B) {
	for _, procs := range []int{16, 1024} {
		b.Run(map[int]string{16: "procs=16", 1024: "procs=1024"}[procs], func(b *testing.B) {
			l := benchLoads(b)
			job := RTJob{Frame: 1.0 / 30, Buffer: 100, Work: make([]float64, procs)}
			for k := range job.Work {
				job.Work[k] = 0.002 / 30
			}
			for b.Loop() {
				if d := l.Place(20000, job, Admission{On: true}); d.Verdict != Admitted {
					b.Fatal(d.Reason)
				}
				l.Release(20000)
			}
		})
	}
}

// BenchmarkRefuse is a refused decision: the first process passes, the
// second does not, so the work done is undone.
func BenchmarkRefuse(b *testing.B) {
	l := benchLoads(b)
	job := RTJob{Frame: 1.0 / 30, Buffer: 100, Work: make([]float64, 1025)}
	for k := range job.Work {
		job.Work[k] = 0.6 / 30
	}
	for b.Loop() {
		if d := l.Place(20000, job, Admission{On: true}); d.Verdict != NotNow {
			b.Fatal("admitted")
		}
	}
}
