package ssh_test

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	hssh "hora/nodes/ssh"
	"hora/nodes/ssh/sshtest"
)

// BenchmarkTDMSwitch4 is one tdm division switch across 4 systemd hosts
// (TDMDivision on every node at once, as horad's driver does): ns/op is how
// long after the boundary the last node has applied it, the bound on the
// switch skew; max-ms the worst switch of the run.
func BenchmarkTDMSwitch4(b *testing.B) {
	const n = 4
	var opts []sshtest.Option
	for i := 1; i <= n; i++ {
		opts = append(opts, sshtest.WithSystemd(i))
	}
	c := sshtest.StartCluster(b, n, opts...)
	cfg := fastConfig(c, b.TempDir())
	cfg.Mix = &hssh.Mix{RTWeight: 5000, BEWeight: 5000}
	cfg.Logger = slog.New(slog.DiscardHandler)
	e, err := hssh.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	owners := []string{"rt", "be"}
	var worst time.Duration
	switchAll := func(owner string) {
		var wg sync.WaitGroup
		for _, h := range c.Hosts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := e.TDMDivision(b.Context(), h.Name, owner); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	switchAll("none") // connections made
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		switchAll(owners[i%2])
		worst = max(worst, time.Since(t0))
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms")
}
