package batch_test

import (
	"bufio"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"hora/scheduler"
	"hora/scheduler/reserve"
	st "hora/scheduler/schedtest"
)

// workload draws n jobs for a cluster of `nodes`: node counts skewed to
// small powers of two, limits 1 min–10 h, run times a fraction of the
// limit, arrivals Poisson at about 90 % offered load, so that a queue forms
// and EASY has to backfill.
func workload(n, nodes int, seed uint64) []*st.JobBuilder {
	r := rand.New(rand.NewPCG(seed, 1))
	jobs := make([]*st.JobBuilder, n)
	type spec struct{ nodes, limit, run float64 }
	specs := make([]spec, n)
	work := 0.0
	for i := range specs {
		k := 1 << r.IntN(7) // 1..64
		if r.IntN(3) > 0 {
			k = 1 + r.IntN(4)
		}
		k = min(k, nodes)
		limit := float64(60 + r.IntN(36000))
		run := max(1, float64(int(limit*(0.05+0.95*r.Float64()))))
		specs[i] = spec{float64(k), limit, run}
		work += float64(k) * run
	}
	gap := work / float64(n) / (0.9 * float64(nodes))
	now := 0.0
	for i, s := range specs {
		now += float64(int(r.ExpFloat64() * gap))
		jobs[i] = st.Job(scheduler.JobID(i + 1)).Nodes(int(s.nodes)).Limit(s.limit).Run(s.run).Submit(now)
	}
	return jobs
}

func benchPlay(b *testing.B, cfg scheduler.Config, jobs []*st.JobBuilder) {
	events := 0
	for b.Loop() {
		h := st.New(b, cfg)
		h.NoLog = true
		h.Play(jobs...)
		if len(h.Starts) != len(jobs) {
			b.Fatalf("%d of %d jobs started", len(h.Starts), len(jobs))
		}
		events += h.Events
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}

// BenchmarkEngineEASY: 10,000 jobs on 128 nodes through the harness.
func BenchmarkEngineEASY(b *testing.B) {
	for _, bf := range []string{"easy", "fcfs"} {
		b.Run(bf, func(b *testing.B) {
			benchPlay(b, cluster(128, bf), workload(10000, 128, 7))
		})
	}
}

// BenchmarkEngineSWF replays a real log (HORA_SWF=path to .swf or .swf.gz,
// HORA_SWF_NODES=cluster size, default 240 as HPC2N) with EASY: requested
// time as limit, actual run time to finish, one node per processor, no
// kill at the limit. Skipped quietly without HORA_SWF (it needs the data).
func BenchmarkEngineSWF(b *testing.B) {
	path := os.Getenv("HORA_SWF")
	if path == "" {
		b.Log("HORA_SWF not set; nothing to replay")
		return
	}
	nodes := 240
	if s := os.Getenv("HORA_SWF_NODES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("HORA_SWF_NODES: %v", err)
		}
		nodes = n
	}
	jobs, err := readSWF(path, nodes)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: %d jobs on %d nodes", path, len(jobs), nodes)
	benchPlay(b, cluster(nodes, "easy"), jobs)
}

// readSWF reads the fields the scheduler needs from a Standard Workload
// Format log: 1 job, 2 submit, 4 run, 5 allocated and 8 requested
// processors, 9 requested time. Jobs that cannot run are left out.
func readSWF(path string, nodes int) ([]*st.JobBuilder, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, err
		}
		r = z
	}
	var jobs []*st.JobBuilder
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == ';' {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) < 9 {
			continue
		}
		num := func(i int) float64 { v, _ := strconv.ParseFloat(fs[i-1], 64); return v }
		procs := num(8)
		if procs <= 0 {
			procs = num(5)
		}
		run, limit := num(4), num(9)
		if limit <= 0 {
			limit = run
		}
		if procs <= 0 || int(procs) > nodes || run < 0 || limit <= 0 {
			continue
		}
		jobs = append(jobs, st.Job(scheduler.JobID(num(1))).Nodes(int(procs)).Limit(limit).
			Run(max(run, 0)).Submit(num(2)))
	}
	return jobs, sc.Err()
}

// BenchmarkEngineEASYShared: the workload of BenchmarkEngineEASY on 128
// nodes that a reserve partition shares, with 40 advance reservations of 8
// nodes for two hours spread over the run: every pass takes the path that
// reads the bookings (scanBooked).
func BenchmarkEngineEASYShared(b *testing.B) {
	cfg := st.Cluster(128).Partition("batch", "batch").Partition("res", "reserve").Config()
	jobs := workload(10000, 128, 7)
	horizon := jobs[len(jobs)-1].Build().Submit
	events := 0
	for b.Loop() {
		h := st.New(b, cfg)
		h.NoLog = true
		pol, _ := h.Eng.Policy("res")
		for k := range 40 {
			start := int64(horizon) * int64(k+1) / 41
			nodes := make([]int, 8)
			for i := range nodes {
				nodes[i] = (k*8 + i) % 128
			}
			if _, err := pol.(*reserve.Policy).CreateResv(0, reserve.Resv{Name: strconv.Itoa(k), Start: start,
				End: start + 7200, Nodes: nodes, Users: []uint32{0}}); err != nil {
				b.Fatal(err)
			}
		}
		h.Play(jobs...)
		if len(h.Starts) != len(jobs) {
			b.Fatalf("%d of %d jobs started", len(h.Starts), len(jobs))
		}
		events += h.Events
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}
