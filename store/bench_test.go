package store

import (
	"fmt"
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

// BenchmarkEncodeSubmitPayload: the JSON of a submit event, the job with a
// spec as sbatch sends it (40 environment variables, 1.5 KB), which the
// store's writer encodes for every submission.
func BenchmarkEncodeSubmitPayload(b *testing.B) {
	j := testJob(1)
	j.Spec.Env = make([]string, 40)
	for i := range j.Spec.Env {
		j.Spec.Env[i] = fmt.Sprintf("VARIABLE_%02d=/usr/local/share/some/path/of/thirty/%d", i, i)
	}
	ev := Event{JobID: 1, Time: 1_700_000_000, Kind: KindSubmit, Job: j}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodePayload(&ev); err != nil {
			b.Fatal(err)
		}
	}
}
