package replay

import (
	"testing"

	"hora/replay/swf"
)

// BenchmarkReplay replays HPC2N (202,871 jobs, 240 processors) under EASY,
// reading excluded, on each engine.
func BenchmarkReplay(b *testing.B) {
	w := readLog(b, "HPC2N-2002-2.2-cln.swf.gz", swf.Lenient)
	for _, eng := range engines {
		b.Run(eng, func(b *testing.B) {
			for b.Loop() {
				if _, err := Simulate(b.Context(), w, Options{Engine: eng}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
