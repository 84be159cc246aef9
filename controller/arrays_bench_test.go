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
