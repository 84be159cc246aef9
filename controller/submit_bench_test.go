package controller

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"hora/api"
	"hora/config"
	"hora/nodes/local"
	"hora/store"
)

// BenchmarkSubmitHeld: the daemon's side of `sbatch --hold` (checks,
// Engine, durable record) with `queued` held jobs already queued, one
// submitter ("seq") or 16 at once ("par16"). Issue 16 item 5: the cost
// should not grow with the queue, and concurrent submissions should share
// their commits.
func BenchmarkSubmitHeld(b *testing.B) {
	for _, queued := range []int{1_500, 10_000} {
		for _, par := range []int{1, 16} {
			b.Run(fmt.Sprintf("queued=%d/par=%d", queued, par), func(b *testing.B) {
				dir := b.TempDir()
				os.Chmod(dir, 0o755)
				st, err := store.Open(b.Context(), filepath.Join(dir, "hora.db"))
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				cfg := config.Default()
				cfg.StateDir = dir
				exec, err := local.New(local.Config{StateDir: filepath.Join(dir, "nodes"),
					ShepherdArgv: []string{os.Args[0], local.ShepherdCommand}})
				if err != nil {
					b.Fatal(err)
				}
				defer exec.Close()
				c, err := New(b.Context(), Options{Config: cfg, Store: st, Executor: exec})
				if err != nil {
					b.Fatal(err)
				}
				spec := api.JobSpec{Name: "t", Script: "#!/bin/sh\ntrue\n", WorkDir: dir, Stdout: "/dev/null", Hold: true}
				var wg sync.WaitGroup
				fill := func(n int) {
					for w := range par {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for k := w; k < n; k += par {
								if _, err := c.submit(b.Context(), root, api.SubmitRequest{Spec: spec}); err != nil {
									b.Error(err)
									return
								}
							}
						}()
					}
					wg.Wait()
				}
				par0 := par
				par = 16
				fill(queued)
				par = par0
				b.ResetTimer()
				fill(b.N)
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			})
		}
	}
}
