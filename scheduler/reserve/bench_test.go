package reserve

import (
	"fmt"
	"math"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// workload is the simulation of thesis §3.4: bounded Pareto job sizes on
// [1, 50] with mean 3.28, Poisson arrivals at load ρ = λ·mean/n, ready
// times within the horizon L = 200, deadlines uniform in
// (r+l, r+l+q(L−r−l)) with q = 0.1. One time unit is 60 ticks = l_min.
type workload struct {
	rng   *rand.Rand
	n     int
	rho   float64
	alpha float64
	now   float64
}

const (
	unit    = 60
	horizon = 2000.0 // the thesis uses 200; 10× for a long horizon
	paretoL = 1.0
	paretoH = 50.0
	mean    = 3.28
	tight   = 0.1
)

func paretoMean(a float64) float64 {
	la, ha := math.Pow(paretoL, a), math.Pow(paretoH, a)
	return la / (1 - la/ha) * a / (a - 1) * (1/math.Pow(paretoL, a-1) - 1/math.Pow(paretoH, a-1))
}

func newWorkload(n int, rho float64, seed uint64) *workload {
	lo, hi := 1.01, 5.0 // mean decreases with α
	for range 100 {
		mid := (lo + hi) / 2
		if paretoMean(mid) > mean {
			lo = mid
		} else {
			hi = mid
		}
	}
	return &workload{rng: rand.New(rand.NewPCG(seed, 7)), n: n, rho: rho, alpha: (lo + hi) / 2}
}

func (w *workload) size() float64 {
	u := w.rng.Float64()
	la, ha := math.Pow(paretoL, w.alpha), math.Pow(paretoH, w.alpha)
	return math.Pow(-(u*ha-u*la-ha)/(ha*la), -1/w.alpha)
}

// next advances the arrival clock and returns (now, request) in ticks.
func (w *workload) next() (int64, Request) {
	lambda := w.rho * float64(w.n) / mean
	w.now += w.rng.ExpFloat64() / lambda
	l := w.size()
	r := w.now + w.rng.Float64()*(horizon-l)
	rel := r - w.now
	d := r + l + w.rng.Float64()*tight*(horizon-rel-l)
	return int64(w.now * unit), Request{
		Release:  int64(math.Ceil(r * unit)),
		Work:     int64(math.Ceil(l * unit)),
		Deadline: int64(d * unit),
		Nodes:    1,
	}
}

// BenchmarkReserve measures one request (advance time, search, book) on a
// fragmented schedule: the horizon is filled by first fit, which leaves
// ≥ 10^5 indexed idle periods at N = 4096, then the strategy under test
// takes over.
func BenchmarkReserve(b *testing.B) {
	for _, st := range Strategies() {
		b.Run(st.String(), func(b *testing.B) {
			for _, n := range []int{20, 240, 1024, 4096} {
				b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
					benchReserve(b, st, FirstFit, n)
				})
			}
		})
	}
}

// BenchmarkReserveSteady warms the schedule up with the strategy itself.
func BenchmarkReserveSteady(b *testing.B) {
	for _, st := range Strategies() {
		b.Run(st.String(), func(b *testing.B) {
			for _, n := range []int{20, 240, 1024, 4096} {
				b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
					benchReserve(b, st, st, n)
				})
			}
		})
	}
}

func benchReserve(b *testing.B, st, warm Strategy, n int) {
	ix, err := New(Config{Rates: make([]float64, n), LMin: unit, M: 4, Strategy: warm})
	if err != nil {
		b.Fatal(err)
	}
	w := newWorkload(n, 0.9, 1)
	step := func() bool {
		now, req := w.next()
		ix.Advance(now)
		_, err := ix.Reserve(req)
		return err == nil
	}
	// warm up until the horizon is full of bookings.
	for w.now < 1.5*horizon {
		step()
	}
	ix.setStrategy(st)
	ops0 := ix.stats.Ops
	acc := 0
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		if step() {
			acc++
		}
	}
	cpu := cpuTime() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(ix.stats.Ops-ops0)/float64(b.N), "treeops/req")
	// CPU time of the process (GC included) per request: on the shared
	// machine the wall time also counts the time other engineers' jobs
	// held the cores, the CPU time does not.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/req")
	b.ReportMetric(float64(ix.Len()), "periods")
	b.ReportMetric(float64(acc)/float64(b.N), "accepted")
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
