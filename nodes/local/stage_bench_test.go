package local

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"hora/nodes"
)

// BenchmarkStage measures staging throughput (64 MiB per op, MB/s) and the
// per-chunk overhead (1 byte per op: directory, create, chown, rename).
func BenchmarkStage(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"64MiB", 64 << 20}, {"1B", 1}} {
		b.Run(size.name, func(b *testing.B) {
			e, err := New(Config{StateDir: filepath.Join(b.TempDir(), "state"), ShepherdArgv: shepherdArgv})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			data := make([]byte, size.n)
			b.SetBytes(int64(size.n))
			uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
			step := 0
			for b.Loop() {
				step++
				key := nodes.StepKey{Job: 1, Step: step}
				if _, err := e.Stage(b.Context(), nodes.StageSpec{Key: key, Node: "local1", UID: uid, GID: gid,
					Data: bytes.NewReader(data), Size: int64(len(data))}); err != nil {
					b.Fatal(err)
				}
				_ = e.removeStaged("local1", key)
			}
		})
	}
}
