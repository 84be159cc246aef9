package replay

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hora/replay/swf"
)

const dataDir = "/work/shared/data/swf"

// startMatch compares simulated starts with pyss' published EASY schedule.
type startMatch struct {
	jobs, same      int
	earlier, later  int     // hora started the job earlier / later than pyss
	maxDiff         float64 // largest |difference|
	firstDiffJob    int64
	firstDiffSubmit float64
}

func (m startMatch) share() float64 { return float64(m.same) / float64(m.jobs) }

func (m startMatch) String() string {
	return fmt.Sprintf("%d/%d identical starts (%.3f%%), %d earlier, %d later, max |diff| %.0f s, first diff job %d",
		m.same, m.jobs, 100*m.share(), m.earlier, m.later, m.maxDiff, m.firstDiffJob)
}

// comparePyss replays the input columns of a pyss output file and compares
// every job's start time with pyss' (submit + field 3).
func comparePyss(t testing.TB, name string, opt Options) (startMatch, *Summary) {
	t.Helper()
	lg, err := swf.ReadFile(filepath.Join(dataDir, "easy-reference", name), swf.Lenient)
	if err != nil {
		t.Fatal(err)
	}
	if lg.Stats.Skipped != 0 {
		t.Fatalf("pyss input has %d unusable records", lg.Stats.Skipped)
	}
	w, err := FromSWF(lg)
	if err != nil {
		t.Fatal(err)
	}
	refStart := make([]float64, len(w.Jobs))
	for i := range w.Jobs {
		refStart[i] = w.Jobs[i].Submit + w.Jobs[i].RecordedWait
		w.Jobs[i].RecordedWait = -1
	}
	o, err := Simulate(t.Context(), w, opt)
	if err != nil {
		t.Fatal(err)
	}
	var m startMatch
	m.firstDiffJob = -1
	for i, r := range o.Results {
		m.jobs++
		d := r.Start - refStart[i]
		switch {
		case !r.Started:
			m.later++
		case d == 0:
			m.same++
		case d < 0:
			m.earlier++
		default:
			m.later++
		}
		if d != 0 && m.firstDiffJob < 0 {
			m.firstDiffJob, m.firstDiffSubmit = int64(w.Jobs[i].ID), w.Jobs[i].Submit
		}
		m.maxDiff = max(m.maxDiff, abs(d))
	}
	return m, Summarize(o, 0, "simulated")
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestPyssProbe(t *testing.T) {
	for _, f := range []string{"KTH-SP2", "CTC-SP2", "SDSC-SP2"} {
		for _, sf := range []bool{false, true} {
			m, s := comparePyss(t, f+".pyss-easy-reqtime.out.swf.gz", Options{Engine: "reference", SubmitsFirst: sf})
			t.Logf("%s submitsFirst=%v: %v; avg wait %.1f bsld %.4f", f, sf, m, s.AvgWait, s.AvgBsld)
		}
	}
	_ = slices.Sort[[]int]
	_ = strings.Cut
}
