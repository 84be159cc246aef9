package ssh_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"hora/nodes"
	"hora/nodes/ssh/sshtest"
)

// BenchmarkSSHLaunchToFirstLine measures Launch (over the pooled, already
// open connection) until the step's first line is in its output file.
func BenchmarkSSHLaunchToFirstLine(b *testing.B) {
	benchLaunch(b, start(b, 1))
}

// BenchmarkSSHLaunchToFirstLineSystemd is the same on a node whose init is
// systemd: the launch adds systemd-run's bus round trip and a scope unit.
func BenchmarkSSHLaunchToFirstLineSystemd(b *testing.B) {
	benchLaunch(b, start(b, 1, sshtest.WithSystemd(1)))
}

func benchLaunch(b *testing.B, v *env) {
	// Warm the connection.
	if err := v.e.Probe(b.Context(), "n1"); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		key := nodes.StepKey{Job: int64(i), Step: 0}
		spec := v.spec(key, "n1", "#!/bin/sh\necho x\n")
		if err := v.e.Launch(b.Context(), spec); err != nil {
			b.Fatal(err)
		}
		for n := 0; ; n++ {
			if fi, err := os.Stat(spec.Stdout); err == nil && fi.Size() > 0 {
				break
			}
			if n > 100000 {
				b.Fatal("no first line")
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
}

// BenchmarkSSHThroughput launches 1,000 short steps over 3 nodes, 8 at a
// time per node, and waits for every exit on Exits.
func BenchmarkSSHThroughput(b *testing.B) {
	v := start(b, 3)
	const steps = 1000
	round := 0
	for b.Loop() {
		round++
		var wg sync.WaitGroup
		errs := make(chan error, steps)
		for n, h := range v.c.Hosts {
			sem := make(chan struct{}, 8)
			for i := n; i < steps; i += len(v.c.Hosts) {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					key := nodes.StepKey{Job: int64(round*steps + i), Step: 0}
					spec := v.spec(key, h.Name, "#!/bin/sh\nexit 0\n")
					spec.Stdout = filepath.Join(v.out, fmt.Sprintf("t%d.out", i))
					if err := v.e.Launch(b.Context(), spec); err != nil {
						errs <- err
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		for i := 0; i < steps; i++ {
			st := v.exits.wait(b, nodes.StepKey{Job: int64(round*steps + i), Step: 0}, 120*time.Second)
			if st.ExitCode != 0 || st.Err != "" {
				b.Fatalf("step %d: %+v", i, st)
			}
		}
	}
	b.ReportMetric(float64(steps*b.N)/b.Elapsed().Seconds(), "steps/s")
}
