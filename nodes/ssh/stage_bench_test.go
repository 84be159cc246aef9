package ssh_test

import (
	"bytes"
	"testing"

	"hora/nodes"
)

// BenchmarkSSHStage measures staging over the pooled connection to one
// sshd host: throughput with 64 MiB per op (MB/s) and the per-chunk
// overhead with 1 byte per op (one exec session, the remote script;
// the cleaning Forget is not counted).
func BenchmarkSSHStage(b *testing.B) {
	v := start(b, 1)
	if err := v.e.Probe(b.Context(), "n1"); err != nil {
		b.Fatal(err)
	}
	for _, size := range []struct {
		name string
		n    int
	}{{"64MiB", 64 << 20}, {"1B", 1}} {
		b.Run(size.name, func(b *testing.B) {
			data := make([]byte, size.n)
			b.SetBytes(int64(size.n))
			step := 0
			for b.Loop() {
				step++
				key := nodes.StepKey{Job: int64(size.n), Step: step}
				if _, err := v.e.Stage(b.Context(), nodes.StageSpec{Key: key, Node: "n1", UID: v.uid, GID: v.gid,
					Data: bytes.NewReader(data), Size: int64(len(data))}); err != nil {
					b.Fatal(err)
				}
				// 64 MiB files are removed at once (Forget's cost is small
				// beside the transfer); 1-byte ones after the loop, so that
				// the overhead measured is Stage's alone.
				if size.n > 1 {
					if err := v.e.Forget(b.Context(), "n1", key); err != nil {
						b.Fatal(err)
					}
				}
			}
			for i := 1; i <= step; i++ {
				_ = v.e.Forget(b.Context(), "n1", nodes.StepKey{Job: int64(size.n), Step: i})
			}
		})
	}
}
