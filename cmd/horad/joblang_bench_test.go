package main

import (
	"strings"
	"testing"
)

// arrayConfig lets arrays of 10,000 tasks in (MaxArraySize 10,001) on the
// four local nodes.
const arrayConfig = "max_array_size = 10001\n" + localBatch

// BenchmarkSbatchArray10k: one `sbatch --array=0-9999` process, end to end
// (the client, horad's Engine batch and the one SQLite transaction).
// Every task is held (-H) so that nothing runs between iterations.
func BenchmarkSbatchArray10k(b *testing.B) {
	c := newClusterWith(b, arrayConfig)
	for b.Loop() {
		r := c.run(0, c.dir, "sbatch", "-H", "--array=0-9999", "-o", "/dev/null", "--wrap", "true")
		if r.code != 0 {
			b.Fatalf("sbatch: %+v", r)
		}
	}
	b.ReportMetric(10000*float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
}

// BenchmarkSqueueArrayTasks100k: a whole `squeue` process over 100,000
// pending array tasks (ten held arrays of 10,000): folded as Slurm folds
// them (default), and expanded one line per task (-r).
func BenchmarkSqueueArrayTasks100k(b *testing.B) {
	c := newClusterWith(b, arrayConfig)
	for range 10 {
		if r := c.run(0, c.dir, "sbatch", "-H", "--array=0-9999", "-o", "/dev/null", "--wrap", "true"); r.code != 0 {
			b.Fatalf("sbatch: %+v", r)
		}
	}
	for _, mode := range []struct {
		name string
		args []string
		rows int
	}{{"folded", nil, 10}, {"expanded", []string{"-r"}, 100000}} {
		b.Run(mode.name, func(b *testing.B) {
			for b.Loop() {
				r := c.run(0, c.dir, "squeue", append([]string{"-h"}, mode.args...)...)
				if r.code != 0 || strings.Count(r.stdout, "\n") != mode.rows {
					b.Fatalf("squeue %v: exit %d, %d lines", mode.args, r.code, strings.Count(r.stdout, "\n"))
				}
			}
		})
	}
}
