package batch_test

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"hora/scheduler"
	st "hora/scheduler/schedtest"
)

// tresCluster is the scale: 4,096 nodes of 64 CPUs and 256 GB,
// fragmented as a busy cons_tres cluster is (each node runs a 16-, a 32-
// and a 13-CPU job, 3 CPUs free), with `pending` jobs queued behind: per-CPU
// requests of 1–4 tasks of 4–64 CPUs, some with memory, limits 1 min–10 h.
func tresCluster(b *testing.B, pending int) (*scheduler.Engine, float64) {
	return tresClusterOver(b, pending, "")
}

// tresClusterOver is tresCluster in a partition with OverSubscribe over;
// with FORCE:4 each node is filled by four 64-CPU jobs (every CPU held
// four times), so that no job fits either.
func tresClusterOver(b *testing.B, pending int, over string) (*scheduler.Engine, float64) {
	b.Helper()
	cfg := st.Cluster(4096).Resources(64, 256000).Partition("batch", "batch").Config()
	cfg.Partitions[0].OverSubscribe = over
	fillCPUs := []int{16, 32, 13}
	if over == "FORCE:4" {
		fillCPUs = []int{64, 64, 64, 64}
	}
	eng, err := scheduler.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var fill []scheduler.Event
	id := scheduler.JobID(0)
	add := func(evs []scheduler.Event, now float64, j scheduler.Job) []scheduler.Event {
		id++
		j.ID, j.Submit, j.Nodes = id, now, 1
		return append(evs, scheduler.Submit{Now: now, Job: j})
	}
	for i := range 4096 {
		for _, cpus := range fillCPUs {
			fill = add(fill, 0, scheduler.Job{TimeLimit: float64(3600 + 60*((i*7+cpus)%600)),
				Req: &scheduler.Request{NTasks: 1, CPUsPerTask: cpus, NodeList: []string{st.NodeName(i)}}})
		}
	}
	check := func(acts []scheduler.Action, err error) {
		if err != nil {
			b.Fatal(err)
		}
		for _, a := range acts {
			if r, ok := a.(scheduler.Reject); ok {
				b.Fatalf("job %d refused: %v", r.ID, r.Err)
			}
		}
	}
	check(eng.HandleBatch(0, fill))
	r := rand.New(rand.NewPCG(11, 1))
	var queue []scheduler.Event
	for range pending {
		q := &scheduler.Request{NTasks: 1 + r.IntN(4), CPUsPerTask: 4 << r.IntN(5)}
		if r.IntN(3) == 0 {
			q.MemPerCPU, q.MemGiven = int64(1000*(1+r.IntN(4))), true
		}
		queue = add(queue, 1, scheduler.Job{TimeLimit: float64(60 + r.IntN(36000)), Req: q})
	}
	check(eng.HandleBatch(1, queue))
	if n := len(eng.Pending("")); n != pending {
		b.Fatalf("%d pending, want %d", n, pending)
	}
	return eng, 2
}

// BenchmarkTresPass10k is one scheduling pass (a Tick) over 10,000 pending
// jobs on 4,096 × 64 CPUs, none of which fits now: the head's reservation
// is computed on resources and every other job is tried for backfilling.
func BenchmarkTresPass10k(b *testing.B) {
	eng, now := tresCluster(b, 10000)
	cpu := cpuTime()
	for b.Loop() {
		now += 0.001
		if acts := eng.Handle(scheduler.Tick{Now: now}); len(acts) != 0 {
			b.Fatalf("a pass started %d jobs on a full cluster", len(acts))
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkTresPassForce10k is BenchmarkTresPass10k in an
// OverSubscribe=FORCE:4 partition, every CPU held by four jobs: every
// queued job may share CPUs, and the pass's bounds count shareable CPUs.
func BenchmarkTresPassForce10k(b *testing.B) {
	eng, now := tresClusterOver(b, 10000, "FORCE:4")
	cpu := cpuTime()
	for b.Loop() {
		now += 0.001
		if acts := eng.Handle(scheduler.Tick{Now: now}); len(acts) != 0 {
			b.Fatalf("a pass started %d jobs on a full cluster", len(acts))
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkTresPassAfterEnd10k is the pass that follows a job's end on the
// same cluster: the freed CPUs go to what fits (a new job of the same
// shape is queued between iterations, untimed, to keep 10,000 pending).
func BenchmarkTresPassAfterEnd10k(b *testing.B) {
	eng, now := tresCluster(b, 10000)
	next := scheduler.JobID(1)
	started := 0
	var cpu time.Duration
	for b.Loop() {
		now += 0.001
		c0 := cpuTime()
		acts := eng.Handle(scheduler.Finished{Now: now, ID: next, Step: scheduler.BatchStep})
		cpu += cpuTime() - c0
		next++
		b.StopTimer()
		for _, a := range acts {
			if s, ok := a.(scheduler.Start); ok {
				started++
				j := scheduler.Job{ID: s.ID + 1000000, Submit: now, Nodes: 1, TimeLimit: 600,
					Req: &scheduler.Request{NTasks: 1, CPUsPerTask: 8}}
				eng.Handle(scheduler.Submit{Now: now, Job: j})
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(started)/float64(b.N), "starts/op")
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}

// cpuTime is this process's user+system CPU time: on a machine shared with
// other work, wall time per op says more about the load than the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
