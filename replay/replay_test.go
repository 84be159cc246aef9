package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"hora/replay/swf"
	"hora/scheduler"
)

func readLog(t testing.TB, name string, mode swf.Mode) *Workload {
	t.Helper()
	lg, err := swf.ReadFile(filepath.Join(dataDir, name), mode)
	if err != nil {
		t.Fatal(err)
	}
	w, err := FromSWF(lg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestAsRecorded reproduces REFERENCES.md's "as recorded" figures exactly
// (at the precision they are published).
func TestAsRecorded(t *testing.T) {
	cases := []struct {
		file string
		wait string // avg wait, s, rounded
		bsld string // avg bsld, one decimal
	}{
		{"KTH-SP2-1996-2.1-cln.swf.gz", "15296", "193.4"},
		{"CTC-SP2-1996-3.1-cln.swf.gz", "25540", "77.5"},
		{"SDSC-SP2-1998-4.2-cln.swf.gz", "25652", "68.9"},
		{"HPC2N-2002-2.2-cln.swf.gz", "54108", "631.5"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			w := readLog(t, c.file, swf.Raw)
			s := Summarize(AsRecorded(w, 0, 1), 0, "as-recorded")
			if got := f0(s.AvgWait); got != c.wait {
				t.Errorf("avg wait %s s, want %s", got, c.wait)
			}
			if got := f1(s.AvgBsld); got != c.bsld {
				t.Errorf("avg bsld %s, want %s", got, c.bsld)
			}
		})
	}
}

// TestEasyKTHPublished: EASY on the KTH log lands in the published range
// (Tsafrir et al. 114.2 min / 89.9; AccaSim 101.6 min / 81.2), FCFS far worse.
func TestEasyKTHPublished(t *testing.T) {
	w := readLog(t, "KTH-SP2-1996-2.1-cln.swf.gz", swf.Lenient)
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			o, err := Simulate(t.Context(), w, Options{Engine: eng, Policy: "easy"})
			if err != nil {
				t.Fatal(err)
			}
			easy := Summarize(o, 0.01, "simulated")
			t.Logf("EASY KTH (1%% warm-up): %.1f min, bsld %.2f", easy.AvgWait/60, easy.AvgBsld)
			if m := easy.AvgWait / 60; m < 95 || m > 125 {
				t.Errorf("EASY avg wait %.1f min, want 95–125 (published 101.6–114.2)", m)
			}
			if easy.AvgBsld < 75 || easy.AvgBsld > 100 {
				t.Errorf("EASY avg bsld %.2f, want 75–100 (published 81.2–89.9)", easy.AvgBsld)
			}
			o, err = Simulate(t.Context(), w, Options{Engine: eng, Policy: "fcfs"})
			if err != nil {
				t.Fatal(err)
			}
			fcfs := Summarize(o, 0.01, "simulated")
			t.Logf("FCFS KTH: %.1f min, bsld %.2f", fcfs.AvgWait/60, fcfs.AvgBsld)
			if fcfs.AvgWait < 10*easy.AvgWait {
				t.Errorf("FCFS avg wait %.1f min not far worse than EASY's %.1f", fcfs.AvgWait/60, easy.AvgWait/60)
			}
		})
	}
}

// job builds a one-line workload job: n processors, run and limit seconds.
func job(id int, submit, run, limit float64, n int) Job {
	return Job{ID: scheduler.JobID(id), Submit: submit, Run: run, Limit: limit, Procs: n, RecordedWait: -1}
}

func starts(t *testing.T, jobs []Job, opt Options) []float64 {
	t.Helper()
	w := &Workload{Name: "t", Procs: 4, Jobs: jobs}
	o, err := Simulate(t.Context(), w, opt)
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, r := range o.Results {
		if !r.Started {
			t.Fatalf("a job never started: %+v", o.Results)
		}
		out = append(out, r.Start, r.End)
	}
	return out
}

func TestScheduleSmall(t *testing.T) {
	jobs := []Job{
		job(1, 0, 10, 10, 2),  // runs 0–10
		job(2, 1, 10, 10, 4),  // head: reservation at 10
		job(3, 2, 8, 8, 2),    // ends by 10: backfilled under EASY
		job(4, 3, 5, 20, 2),   // would delay job 2: waits
		job(5, 20, 30, 20, 4), // submitted when job 2 ends: terminations first
	}
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			got := starts(t, jobs, Options{Engine: eng, Policy: "easy"})
			want := []float64{0, 10, 10, 20, 2, 10, 20, 25, 25, 55}
			if !equal(got, want) {
				t.Errorf("easy: start/end %v, want %v", got, want)
			}
			got = starts(t, jobs, Options{Engine: eng, Policy: "fcfs"})
			want = []float64{0, 10, 10, 20, 20, 28, 20, 25, 28, 58}
			if !equal(got, want) {
				t.Errorf("fcfs: start/end %v, want %v", got, want)
			}
			// --kill-at-limit ends job 5 at its 20 s limit.
			got = starts(t, jobs, Options{Engine: eng, Policy: "easy", KillAtLimit: true})
			if got[9] != 45 {
				t.Errorf("kill at limit: job 5 ends at %v, want 45", got[9])
			}
			// Two cores per node: 4 processors = 2 nodes, a 1-proc job takes a node.
			got = starts(t, []Job{job(1, 0, 10, 10, 1), job(2, 0, 10, 10, 1), job(3, 0, 10, 10, 1)},
				Options{Engine: eng, CoresPerNode: 2})
			if !equal(got, []float64{0, 10, 0, 10, 10, 20}) {
				t.Errorf("cores per node: %v", got)
			}
		})
	}
}

// --per-cpu: jobs take processors on shared nodes, through the Engine's
// resource arithmetic; EASY backfills a short job next to running ones
// while a job wanting every processor waits for them.
func TestSchedulePerCPU(t *testing.T) {
	jobs := []Job{job(1, 0, 10, 10, 1), job(2, 0, 10, 10, 1), job(3, 0, 10, 10, 1), job(4, 0, 10, 10, 4), job(5, 1, 5, 5, 1)}
	got := starts(t, jobs, Options{CoresPerNode: 2, PerCPU: true, Policy: "easy"})
	if want := []float64{0, 10, 0, 10, 0, 10, 10, 20, 1, 6}; !equal(got, want) {
		t.Errorf("per-cpu: start/end %v, want %v", got, want)
	}
	got = starts(t, jobs, Options{CoresPerNode: 2, Policy: "easy"})
	if equal(got, []float64{0, 10, 0, 10, 0, 10, 10, 20, 1, 6}) {
		t.Errorf("whole nodes scheduled like per-cpu: %v", got)
	}
	if _, err := Simulate(t.Context(), &Workload{Name: "t", Procs: 4, Jobs: jobs}, Options{Engine: "reference", PerCPU: true}); err == nil {
		t.Error("the reference engine accepted --per-cpu")
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMetrics(t *testing.T) {
	if Bsld(0, 5) != 1 || Bsld(90, 10) != 10 || Bsld(20, 0) != 2 {
		t.Fatal("bsld formula")
	}
	w := &Workload{Name: "m", Procs: 4, Jobs: []Job{job(1, 0, 10, 10, 4), job(2, 0, 10, 10, 4), job(3, 0, 10, 10, 8)}}
	o, err := Simulate(t.Context(), w, Options{Engine: "reference"})
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(o, 0, "simulated")
	if s.Jobs != 3 || s.Rejected != 1 || s.Admitted != 2 || s.AvgWait != 5 || s.AvgBsld != 1.5 ||
		s.Makespan != 20 || s.Utilization != 1 || f4(s.RejectRatio) != "0.3333" || f4(s.WorkLossRate) != "0.5000" {
		t.Errorf("summary %+v", s)
	}
	s = Summarize(o, 0.5, "simulated")
	if s.WarmupDropped != 1 || s.Jobs != 2 || s.AvgWait != 10 {
		t.Errorf("warm-up: %+v", s)
	}
	if _, name := sizeBin(5); name != "5-8" {
		t.Errorf("size bin of 5: %s", name)
	}
}

// TestCLIDeterministic runs the CLI twice with every output and compares the
// bytes; it also checks that flags after the log are parsed.
func TestCLIDeterministic(t *testing.T) {
	log := filepath.Join(dataDir, "KTH-SP2-1996-2.1-cln.swf.gz")
	var outs [2][]byte
	for i := range outs {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		code := Main(t.Context(), []string{log, "--engine", "reference", "--json", "--out", dir,
			"--out-swf", filepath.Join(dir, "sched.swf"), "--warmup-fraction=0.01"}, &stdout, &stderr)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		var m map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"jobs", "admitted", "rejected", "reject_ratio", "deadline_misses", "avg_wait_s",
			"avg_bsld", "utilization", "makespan_s"} {
			if _, ok := m[k]; !ok {
				t.Errorf("JSON lacks %q", k)
			}
		}
		b := stdout.Bytes()
		for _, f := range []string{"jobs.csv", "summary.json", "utilization.svg", "wait-cdf.svg", "bsld-by-size.svg", "sched.swf"} {
			data, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil || len(data) == 0 {
				t.Fatalf("%s: %v", f, err)
			}
			b = append(b, data...)
		}
		outs[i] = b
		// The simulated schedule reads back as a valid SWF log.
		lg, err := swf.ReadFile(filepath.Join(dir, "sched.swf"), swf.Raw)
		if err != nil || len(lg.Records) != 28467 {
			t.Fatalf("sched.swf: %v", err)
		}
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Error("two runs differ")
	}
}

func TestCLIErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.swf")
	os.WriteFile(bad, []byte("; MaxProcs: 4\n1 0 0 10 2 -1 -1 2 5 -1 1 1 -1 -1 -1 -1 -1 -1\n"), 0o644)
	cases := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{bad, "--strict"}, 1, bad + ":2: field 4 (run time): run time 10 above the requested time 5"},
		{[]string{"--policy", "sjf", bad, "--engine=reference"}, 1, `unknown policy "sjf"`},
		{[]string{"--warmup-fraction", "1", bad}, 2, "--warmup-fraction"},
		{[]string{"--bogus", bad}, 2, "bogus"},
		{[]string{"--synthetic", "nope"}, 1, `synthetic workload "nope" unknown (known: ac-fast-2009, castillo-ch3, castillo-ch4, rt-dlt-2005)`},
		{[]string{"--synthetic", "castillo-ch3", "--param", "q=2"}, 1, `castillo-ch3: q="2": want a number in [0, 1]`},
		{[]string{"--synthetic", "castillo-ch3", "--param", "bogus=1"}, 1, "castillo-ch3: unknown parameter bogus"},
		{[]string{"--load", "0.5", bad}, 2, "--load, --jobs and --param set up a --synthetic workload"},
		{[]string{"--deadline-factor", "0.5", bad}, 2, "deadline factor 0.5: want k ≥ 1"},
		{[]string{"--advance-fraction", "2", bad}, 2, "advance fraction 2"},
		{[]string{bad, "--engine=reference", "--kill-at-limit"}, 0, ""},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := Main(t.Context(), c.args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr.String(), c.code, c.stderr)
		}
	}
	var stdout bytes.Buffer
	if code := Main(t.Context(), []string{"--help"}, &stdout, &stdout); code != 0 || !strings.Contains(stdout.String(), "--kill-at-limit") {
		t.Errorf("--help: %d %s", code, stdout.String())
	}
}

func TestNormalize(t *testing.T) {
	got := strings.Join(normalize([]string{"a.swf", "--procs", "8", "--json", "--out=d", "--", "-x"}), " ")
	if got != "--procs 8 --json --out=d -- a.swf -x" {
		t.Errorf("normalize: %s", got)
	}
}

// A Submit refused at the very second a booked job starts runs no
// scheduling pass; the reserve policy then still asks for a wakeup at that
// second, and the simulator must deliver it rather than wait for the next
// event (castillo-ch3 counted such late starts as deadline misses).
func TestReserveStartAtRefusedSubmit(t *testing.T) {
	w := &Workload{Name: "refused-at-start", Procs: 1, Cluster: reserveCluster("ar", []float64{0}, "min-lip")}
	w.Jobs = []Job{
		{ID: 1, Submit: 0, Begin: 100, Run: 60, Limit: 60, Deadline: 160, Procs: 1, RecordedWait: -1},   // booked [100, 160)
		{ID: 2, Submit: 100, Begin: 100, Run: 60, Limit: 60, Deadline: 170, Procs: 1, RecordedWait: -1}, // refused at 100
		{ID: 3, Submit: 500, Run: 60, Limit: 60, Procs: 1, RecordedWait: -1},                            // the next event
	}
	o, err := Simulate(context.Background(), w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := o.Results[1]; !r.Rejected {
		t.Fatalf("job 2 not refused: %+v", r)
	}
	if r := o.Results[0]; !r.Started || r.Start != 100 || r.End != 160 {
		t.Errorf("job 1 ran %v–%v (started %v), want 100–160", r.Start, r.End, r.Started)
	}
}

// --per-cpu is deterministic (invariant 5) and never overcommits a node
// (the simulator checks every start against the nodes' CPUs): the same
// random workload twice gives the same results.
func TestPerCPUDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 1))
	var jobs []Job
	now := 0.0
	for id := 1; id <= 400; id++ {
		now += float64(r.IntN(30))
		limit := float64(10 + r.IntN(500))
		jobs = append(jobs, job(id, now, float64(1+r.IntN(int(limit))), limit, 1+r.IntN(24)))
	}
	run := func() *Outcome {
		o, err := Simulate(t.Context(), &Workload{Name: "t", Procs: 32, Jobs: jobs}, Options{CoresPerNode: 8, PerCPU: true, Policy: "easy"})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	a, b := run(), run()
	if !reflect.DeepEqual(a.Results, b.Results) {
		t.Fatal("two replays of the same workload differ")
	}
	for i, res := range a.Results {
		if !res.Started {
			t.Fatalf("job %d never started", jobs[i].ID)
		}
	}
}
