package main

import (
	"testing"
)

// BenchmarkScontrolDrainResume: one `scontrol update State=DRAIN` process and
// one `State=RESUME` process per iteration against a real horad; each returns
// once the node's state is durable in SQLite and the Engine knows it.
func BenchmarkScontrolDrainResume(b *testing.B) {
	c := newClusterWith(b, localBatch)
	for b.Loop() {
		if r := c.run(0, c.dir, "scontrol", "update", "NodeName=local2", "State=DRAIN", "Reason=bench"); r.code != 0 {
			b.Fatalf("drain: %+v", r)
		}
		if r := c.run(0, c.dir, "scontrol", "update", "NodeName=local2", "State=RESUME"); r.code != 0 {
			b.Fatalf("resume: %+v", r)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(2*b.N), "ms/update")
}

// BenchmarkScontrolSuspendResume: `scontrol suspend` then `scontrol resume`
// of a running job per iteration (each durable; the signals are sent by the
// dispatcher after the answer).
func BenchmarkScontrolSuspendResume(b *testing.B) {
	c := newClusterWith(b, localBatch)
	id := c.submit(c.dir, "-o", "/dev/null", "--wrap", "sleep 600")
	c.waitState(id, "RUNNING")
	for b.Loop() {
		if r := c.run(0, c.dir, "scontrol", "suspend", id); r.code != 0 {
			b.Fatalf("suspend: %+v", r)
		}
		if r := c.run(0, c.dir, "scontrol", "resume", id); r.code != 0 {
			b.Fatalf("resume: %+v", r)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(2*b.N), "ms/command")
	c.run(0, c.dir, "scancel", id)
}
