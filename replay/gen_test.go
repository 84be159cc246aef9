package replay

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func gen(t *testing.T, name string, seed uint64, prm map[string]string) *Workload {
	t.Helper()
	w, err := Generate(name, seed, prm)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func within(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if math.Abs(got/want-1) > rel {
		t.Errorf("%s = %.4g, want %.4g ± %.0f%%", what, got, want, 100*rel)
	} else {
		t.Logf("%s = %.4g (want %.4g)", what, got, want)
	}
}

// TestDLTGenerators checks rt-dlt-2005 §6.1 and ac-fast-2009 §5.1 on a
// large sample: mean load size of the positive-truncated Normal(100, 100),
// deadlines between E(σ, N) and E(σ, 1), 1–10 tasks per instant and the
// offered load each paper defines.
func TestDLTGenerators(t *testing.T) {
	for _, c := range []struct {
		name     string
		n        int
		cms, cps float64
	}{{"rt-dlt-2005", 10, 10, 10}, {"ac-fast-2009", 512, 1, 1000}} {
		t.Run(c.name, func(t *testing.T) {
			for _, load := range []float64{0.3, 1.2} {
				w := gen(t, c.name, 7, map[string]string{"load": strconv.FormatFloat(load, 'g', -1, 64), "jobs": "40000"})
				if len(w.Jobs) != 40000 || w.Cluster == nil || len(w.Cluster.Nodes) != c.n ||
					w.Cluster.Partitions[0].Policy != "dlt" || w.Cluster.Partitions[0].Params["cps"] != ftoa(c.cps) {
					t.Fatalf("workload shape: %d jobs, cluster %+v", len(w.Jobs), w.Cluster)
				}
				var sum, emin, eone float64
				batch, maxBatch := 1, 1
				for i, j := range w.Jobs {
					if j.Load <= 0 || j.Procs != 1 || !math.IsInf(j.Limit, 1) {
						t.Fatalf("job %d: %+v", j.ID, j)
					}
					lo, hi := DLTExec(j.Load, c.n, c.cms, c.cps), DLTExec(j.Load, 1, c.cms, c.cps)
					if d := j.Deadline - j.Submit; d < lo || d > hi {
						t.Fatalf("job %d: relative deadline %g outside [%g, %g]", j.ID, d, lo, hi)
					}
					sum += j.Load
					emin += lo
					eone += hi
					if i > 0 && j.Submit == w.Jobs[i-1].Submit {
						batch++
						maxBatch = max(maxBatch, batch)
					} else {
						batch = 1
					}
				}
				if maxBatch != 10 {
					t.Errorf("largest batch of simultaneous arrivals %d, want 10", maxBatch)
				}
				within(t, "mean σ", sum/float64(len(w.Jobs)), truncNormalMean(100, 100), 0.02)
				span := w.Jobs[len(w.Jobs)-1].Submit
				if c.name == "rt-dlt-2005" {
					within(t, "Σ E(σ,N) / time", emin/span, load, 0.06)
				} else {
					within(t, "Σ E(σ,1) / (N·time)", eone/(float64(c.n)*span), load, 0.06)
				}
			}
		})
	}
	if m := truncNormalMean(100, 100); math.Abs(m-128.76) > 0.01 {
		t.Errorf("mean of Normal(100,100) | > 0 = %.4f, want 128.76", m)
	}
	// β = 1/2 for Cms = Cps: E(σ, 1) = 2σ·10, E(σ, 2) = (1/2)/(3/4)·20σ.
	if e1, e2 := DLTExec(3, 1, 10, 10), DLTExec(3, 2, 10, 10); e1 != 60 || math.Abs(e2-40) > 1e-12 {
		t.Errorf("E(3,1) = %g, E(3,2) = %g; want 60, 40", e1, e2)
	}
}

func TestCastilloCh3(t *testing.T) {
	bp := ParetoWithMean(1, 50, 3.28)
	if m := bp.Mean(); math.Abs(m-3.28) > 1e-9 || bp.Alpha <= 0 {
		t.Fatalf("bounded Pareto shape %g has mean %g", bp.Alpha, m)
	}
	for _, load := range []float64{0.2, 1.1} {
		w := gen(t, "castillo-ch3", 3, map[string]string{"load": strconv.FormatFloat(load, 'g', -1, 64), "jobs": "60000"})
		var size float64
		for _, j := range w.Jobs {
			l := j.Run / castilloUnit
			r := (j.Begin - j.Submit) / castilloUnit
			d := (j.Deadline - j.Submit) / castilloUnit
			switch {
			case l < 1 || l > 50+1.0/60:
				t.Fatalf("job %d: size %g outside [1, 50]", j.ID, l)
			case r < 0 || r+l > 200+1.0/30:
				t.Fatalf("job %d: ready %g + size %g beyond the horizon 200", j.ID, r, l)
			case d < r+l-1e-9 || d > r+l+0.1*(200-r-l)+1.0/30:
				t.Fatalf("job %d: deadline %g outside (r+l, r+l+q(L−r−l)) = (%g, %g)", j.ID, d, r+l, r+l+0.1*(200-r-l))
			case j.Limit != j.Run || j.Procs != 1:
				t.Fatalf("job %d: %+v", j.ID, j)
			}
			size += l
		}
		n := float64(len(w.Jobs))
		within(t, "mean size (units)", size/n, 3.28, 0.03)
		span := w.Jobs[len(w.Jobs)-1].Submit / castilloUnit
		within(t, "ρ = λ·x̄/n", size/(20*span), load, 0.04)
	}
	w := gen(t, "castillo-ch3", 3, map[string]string{"strategy": "lact"})
	if p := w.Cluster.Partitions[0]; p.Policy != "reserve" || p.Params["strategy"] != "lact" || len(w.Cluster.Nodes) != 20 {
		t.Errorf("cluster %+v", w.Cluster)
	}
}

func TestCastilloCh4(t *testing.T) {
	for level := 0; level <= 4; level++ {
		rates := Ch4Rates(120, level)
		var sum float64
		for _, r := range rates {
			sum += r
		}
		if math.Abs(sum-120) > 1e-9 || slices.Min(rates) <= 0 {
			t.Errorf("level %d: rates sum %g, min %g", level, sum, slices.Min(rates))
		}
	}
	w := gen(t, "castillo-ch4", 5, map[string]string{"load": "0.7", "jobs": "40000", "level": "2"})
	var work float64
	short := 0
	for _, j := range w.Jobs {
		if j.Run < 60 || j.Run > 36*3600 || j.Deadline < j.Begin+j.Run || j.Deadline > j.Begin+j.Run+20*3600 ||
			j.Begin < j.Submit+60 || j.Begin > j.Submit+14*86400+1 {
			t.Fatalf("job %d: %+v", j.ID, j)
		}
		if j.Run < 4*3600 {
			short++
		}
		work += j.Run
	}
	n := float64(len(w.Jobs))
	within(t, "share of jobs under 4 h", float64(short)/n, 0.8, 0.02)
	within(t, "mean length (h)", work/n/3600, 5.6, 0.03)
	within(t, "ρ = λ·x̄/Σμ", work/(120*w.Jobs[len(w.Jobs)-1].Submit), 0.7, 0.04)
	if p := w.Cluster.Partitions[0]; p.Params["strategy"] != "ff-ha+" || w.Cluster.Nodes[0].Rate != 1.4 {
		t.Errorf("cluster %+v", p)
	}
}

// TestGeneratorsSeeded: a seed fixes the workload; another seed changes it.
func TestGeneratorsSeeded(t *testing.T) {
	for _, name := range Generators() {
		a := gen(t, name, 11, map[string]string{"jobs": "500"})
		b := gen(t, name, 11, map[string]string{"jobs": "500"})
		c := gen(t, name, 12, map[string]string{"jobs": "500"})
		if !slices.EqualFunc(a.Jobs, b.Jobs, sameJob) {
			t.Errorf("%s: same seed, different jobs", name)
		}
		if slices.EqualFunc(a.Jobs, c.Jobs, sameJob) {
			t.Errorf("%s: seeds 11 and 12 give the same jobs", name)
		}
	}
}

func sameJob(a, b Job) bool {
	return a.ID == b.ID && a.Submit == b.Submit && a.Run == b.Run && a.Begin == b.Begin &&
		a.Deadline == b.Deadline && a.Load == b.Load
}

func TestDeadlineModels(t *testing.T) {
	w := readLog(t, "KTH-SP2-1996-2.1-cln.swf.gz", 0)
	if err := AddAdvance(w, 0.3, newRand(1)); err != nil {
		t.Fatal(err)
	}
	if err := AddDeadlines(w, 3); err != nil {
		t.Fatal(err)
	}
	adv := 0
	for _, j := range w.Jobs {
		if j.Begin > 0 {
			adv++
			if j.Begin < j.Submit || j.Begin > j.Submit+3*3600 {
				t.Fatalf("job %d: begin %g not within 3 h of submit %g", j.ID, j.Begin, j.Submit)
			}
		}
		if finite(j.Limit) && j.Deadline != max(j.Submit, j.Begin)+3*j.Limit {
			t.Fatalf("job %d: deadline %g", j.ID, j.Deadline)
		}
	}
	within(t, "advance share", float64(adv)/float64(len(w.Jobs)), 0.3, 0.05)
	// EASY with deadlines: jobs it cannot start in time end as DEADLINE
	// and count as misses; none runs past its deadline unnoticed.
	o, err := Simulate(t.Context(), w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(o, 0, "simulated")
	t.Logf("KTH, 30%% advance, deadline 3×request: %d of %d deadline jobs missed, loss %.4f", s.DeadlineMisses, s.DeadlineJobs, s.JobLossRate)
	if s.DeadlineJobs < len(w.Jobs)*9/10 || s.DeadlineMisses == 0 || s.DeadlineMisses >= s.DeadlineJobs/2 {
		t.Errorf("deadline misses %d of %d", s.DeadlineMisses, s.DeadlineJobs)
	}
	for i, r := range o.Results {
		if r.Started && r.Start < w.Jobs[i].Begin {
			t.Fatalf("job %d started at %g before its begin %g", w.Jobs[i].ID, r.Start, w.Jobs[i].Begin)
		}
	}
}

// TestHelpListsGenerators: the --synthetic help names every generator.
func TestHelpListsGenerators(t *testing.T) {
	var out bytes.Buffer
	if code := Main(t.Context(), []string{"--help"}, &out, &out); code != 0 {
		t.Fatal(out.String())
	}
	for _, g := range Generators() {
		if !strings.Contains(out.String(), g) {
			t.Errorf("--help does not name %s", g)
		}
	}
}
