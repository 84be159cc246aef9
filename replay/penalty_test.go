package replay

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// penaltyOutcome is four jobs on 2 nodes with hand-computed penalties
// (W = start − ready, P^l = W / max(run, 10 s)):
//
//	A  BE 1 proc  submit 0           start 50  run 100  W 50  P 0.5   retries 2
//	B  BE 2 procs submit 10          start 30  run 5    W 20  P 2     retries 0
//	C  RT 2 procs submit 0, begin 100 start 150 run 200 W 50  P 0.25  retries 4
//	D  BE 1 proc  rejected
func penaltyOutcome(retries bool) *Outcome {
	w := &Workload{Name: "hand", Procs: 2, Jobs: []Job{
		{ID: 1, Submit: 0, Run: 100, Limit: 200, Procs: 1},
		{ID: 2, Submit: 10, Run: 5, Limit: 60, Procs: 2},
		{ID: 3, Submit: 0, Begin: 100, Deadline: 1000, Run: 200, Limit: 300, Procs: 2},
		{ID: 4, Submit: 20, Run: 10, Limit: 10, Procs: 1},
	}}
	return &Outcome{Workload: w, Nodes: 2, Cores: 1, Retries: retries, Results: []Result{
		{Admitted: true, Started: true, Start: 50, End: 150, Retries: 2},
		{Admitted: true, Started: true, Start: 30, End: 35},
		{Admitted: true, Started: true, Start: 150, End: 350, Retries: 4},
		{Rejected: true, End: 20},
	}}
}

func TestPenalties(t *testing.T) {
	s := Summarize(penaltyOutcome(true), 0, "simulated")
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	type want struct {
		name             string
		tpen, spen, retr float64
	}
	check := func(g Group, w want) {
		t.Helper()
		if g.Name != w.name || !near(g.TemporalPenalty, w.tpen) || !near(g.SpatialPenalty, w.spen) ||
			g.AvgRetries == nil || !near(*g.AvgRetries, w.retr) {
			r := math.NaN()
			if g.AvgRetries != nil {
				r = *g.AvgRetries
			}
			t.Errorf("%s: temporal %v, spatial %v, retries %v; want %+v", g.Name, g.TemporalPenalty, g.SpatialPenalty, r, w)
		}
	}
	if !near(s.TemporalPenalty, (0.5+2+0.25)/3) || !near(s.AvgDelay, 40) || s.AvgRetries == nil || !near(*s.AvgRetries, 2) {
		t.Errorf("all: temporal %v, delay %v, retries %v; want 0.9167, 40, 2", s.TemporalPenalty, s.AvgDelay, s.AvgRetries)
	}
	if len(s.Classes) != 2 || len(s.SizeBins) != 2 {
		t.Fatalf("groups: %d classes, %d size bins; want 2 and 2", len(s.Classes), len(s.SizeBins))
	}
	check(s.Classes[0], want{"BE", 1.25, 35, 1})
	check(s.Classes[1], want{"RT", 0.25, 50, 4})
	check(s.SizeBins[0], want{"1", 0.5, 50, 2})
	check(s.SizeBins[1], want{"2", 1.125, 35, 2})

	var md, csv bytes.Buffer
	if err := WriteMarkdown(&md, s); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"| temporal penalty W/l (thesis §5.5) | 0.9167 |",
		"| avg retries (Table 5.3) | 2.0000 |",
		"| RT | 1 | 0 | 0 | 150.0 | 350.0 | 1.7500 | 0.0000 | 0.2500 | 50.0 | 4.0000 |",
		"| 2 | 2 | 0 | 0 | 85.0 | 187.5 | 2.1250 | 0.0000 | 1.1250 | 35.0 | 2.0000 |",
	} {
		if !strings.Contains(md.String(), line) {
			t.Errorf("Markdown lacks %q:\n%s", line, md.String())
		}
	}
	if err := WriteJobsCSV(&csv, penaltyOutcome(true)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	if !strings.HasSuffix(lines[0], ",temporal_penalty,retries") || !strings.HasSuffix(lines[1], ",0.5000,2") ||
		!strings.HasSuffix(lines[2], ",2.0000,0") || !strings.HasSuffix(lines[4], ",,") {
		t.Errorf("CSV:\n%s", csv.String())
	}

	// Without retry counts (an Engine replay) there is no retries column.
	s = Summarize(penaltyOutcome(false), 0, "simulated")
	md.Reset()
	if err := WriteMarkdown(&md, s); err != nil {
		t.Fatal(err)
	}
	if s.AvgRetries != nil || s.Classes[0].AvgRetries != nil || strings.Contains(md.String(), "retries") {
		t.Errorf("retries reported for a run that does not count them:\n%s", md.String())
	}
}
