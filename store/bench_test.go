package store

import (
	"sync"
	"testing"
)

// One durable submission at a time: each waits for its own fsync, the
// pattern of a single sbatch loop. The system goal is >= 300 jobs/s.
func BenchmarkSubmitSequential(b *testing.B) {
	s := openStore(b, b.TempDir())
	defer s.Close()
	ctx := b.Context()
	n := 0
	for b.Loop() {
		n++
		if err := s.Submit(ctx, testJob(n)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(float64(n)/float64(s.commits.Load()), "jobs/commit")
}

// Sixteen clients submitting at once; one op is one submission from each,
// so ns/op covers 16 jobs. Group commit lets them share fsyncs.
func BenchmarkSubmitConcurrent16(b *testing.B) {
	const clients = 16
	s := openStore(b, b.TempDir())
	defer s.Close()
	ctx := b.Context()
	n := 0
	for b.Loop() {
		var wg sync.WaitGroup
		for c := range clients {
			job := testJob(n*clients + c)
			wg.Go(func() {
				if err := s.Submit(ctx, job); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		n++
	}
	b.ReportMetric(float64(n*clients)/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(float64(n*clients)/float64(s.commits.Load()), "jobs/commit")
}
