package controller

import (
	"testing"

	"hora/api"
)

// BenchmarkSubmitArray10k: horad's side of `sbatch --array=0-9999` (the
// Engine's batch and the one store transaction), without the client.
func BenchmarkSubmitArray10k(b *testing.B) {
	f := newFixture(b)
	f.cfg.MaxArraySize = 10001
	c := f.controller(b)
	spec := f.spec("true")
	spec.Hold = true
	spec.Array = "0-9999"
	for b.Loop() {
		if _, err := c.submit(b.Context(), root, api.SubmitRequest{Spec: spec}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCancelArray10k: `scancel <array>` of 10,000 pending tasks, horad's
// side (each task gets its row with its cancel, all in one transaction).
func BenchmarkCancelArray10k(b *testing.B) {
	f := newFixture(b)
	f.cfg.MaxArraySize = 10001
	c := f.controller(b)
	spec := f.spec("true")
	spec.Hold = true
	spec.Array = "0-9999"
	for b.Loop() {
		b.StopTimer()
		resp, err := c.submit(b.Context(), root, api.SubmitRequest{Spec: spec})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		r, err := c.cancel(b.Context(), root, api.CancelRequest{IDs: c.expandIDs([]int64{resp.JobID}, nil)})
		if err != nil || len(r.Results) != 10000 || r.Results[0].Error != "" {
			b.Fatalf("cancel: %v %d results", err, len(r.Results))
		}
	}
}
