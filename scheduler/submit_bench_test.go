package scheduler_test

import (
	"fmt"
	"testing"

	"hora/scheduler"
	st "hora/scheduler/schedtest"
)

// BenchmarkSubmitLargeQueue: one submission to a batch partition of 4,096
// nodes, all busy, whose queue holds `queued` jobs (nine in ten held, as in
// a queue filled with `sbatch --hold`). "held" submits a held job, "pending"
// one that waits for nodes. The cost should not grow with the queue where
// the submission cannot change what starts (issue 16 item 5).
func BenchmarkSubmitLargeQueue(b *testing.B) {
	const nodes = 4096
	for _, queued := range []int{1_500, 10_000} {
		for _, held := range []bool{true, false} {
			name := fmt.Sprintf("queued=%d/pending", queued)
			if held {
				name = fmt.Sprintf("queued=%d/held", queued)
			}
			b.Run(name, func(b *testing.B) {
				e, err := scheduler.New(st.Cluster(nodes).Partition("batch", "batch").Default().Config())
				if err != nil {
					b.Fatal(err)
				}
				id := scheduler.JobID(1)
				e.Handle(scheduler.Submit{Now: 1, Job: st.Job(id).Nodes(nodes).Limit(3600).Build()})
				for k := range queued {
					id++
					jb := st.Job(id).Nodes(1).Limit(600)
					if k%10 != 0 {
						jb = jb.Held()
					}
					e.Handle(scheduler.Submit{Now: 2, Job: jb.Build()})
				}
				for b.Loop() {
					id++
					jb := st.Job(id).Nodes(1).Limit(600)
					if held {
						jb = jb.Held()
					}
					e.Handle(scheduler.Submit{Now: 3, Job: jb.Build()})
				}
			})
		}
	}
}
