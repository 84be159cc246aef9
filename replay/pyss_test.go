package replay

import (
	"fmt"
	"path/filepath"
	"testing"

	"hora/replay/swf"
)

const dataDir = "/work/shared/data/swf"

// engines are the schedulers every cross-check runs on: the independent
// reference EASY and hora's Engine.
var engines = []string{"hora", "reference"}

// startMatch compares simulated starts with pyss' published EASY schedule.
type startMatch struct {
	jobs, same     int
	earlier, later int     // hora started the job earlier / later than pyss
	maxDiff        float64 // largest |difference|, seconds
	// firstDiff is the job whose start differs first in time, and tie tells
	// whether that instant saw several terminations (the known cause).
	firstDiff     int64
	firstDiffTime float64
	tie           bool
}

func (m startMatch) share() float64 { return float64(m.same) / float64(m.jobs) }

func (m startMatch) String() string {
	return fmt.Sprintf("%d/%d identical starts (%.3f%%), %d earlier, %d later, max |diff| %.0f s; first divergence job %d at t=%.0f, simultaneous terminations there: %v",
		m.same, m.jobs, 100*m.share(), m.earlier, m.later, m.maxDiff, m.firstDiff, m.firstDiffTime, m.tie)
}

// comparePyss replays the input columns of a pyss output file (fields 2, 4,
// 5, 8, 9) and compares every job's start with pyss' (submit + field 3).
func comparePyss(t testing.TB, name string, opt Options) (startMatch, *Summary) {
	t.Helper()
	lg, err := swf.ReadFile(filepath.Join(dataDir, "easy-reference", name), swf.Lenient)
	if err != nil {
		t.Fatal(err)
	}
	if lg.Stats.Skipped != 0 || lg.Stats.Found[swf.RunOverRequest] != 0 {
		t.Fatalf("pyss input is pre-filtered, yet %d records skipped, %d overrun", lg.Stats.Skipped, lg.Stats.Found[swf.RunOverRequest])
	}
	w, err := FromSWF(lg)
	if err != nil {
		t.Fatal(err)
	}
	ref := make([]float64, len(w.Jobs))
	for i := range w.Jobs {
		ref[i] = w.Jobs[i].Submit + w.Jobs[i].RecordedWait
		w.Jobs[i].RecordedWait = -1
	}
	o, err := Simulate(t.Context(), w, opt)
	if err != nil {
		t.Fatal(err)
	}
	m := startMatch{firstDiff: -1, firstDiffTime: 1e300}
	ends := map[float64]int{} // pyss termination times → count
	for i, j := range w.Jobs {
		ends[ref[i]+j.Run]++
	}
	for i, r := range o.Results {
		m.jobs++
		d := r.Start - ref[i]
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
		if d != 0 && min(r.Start, ref[i]) < m.firstDiffTime {
			m.firstDiff, m.firstDiffTime = int64(w.Jobs[i].ID), min(r.Start, ref[i])
		}
		m.maxDiff = max(m.maxDiff, abs(d))
	}
	m.tie = ends[m.firstDiffTime] > 1
	return m, Summarize(o, 0, "simulated")
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestPyssKTH: EASY on pyss' KTH input starts ≥ 99% of the jobs at the very
// second pyss did.
func TestPyssKTH(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			m, s := comparePyss(t, "KTH-SP2.pyss-easy-reqtime.out.swf.gz", Options{Engine: eng})
			t.Logf("KTH %s: %v; avg wait %.1f s (pyss 6,836.9), bsld %.4f (pyss 92.5765)", eng, m, s.AvgWait, s.AvgBsld)
			if m.share() < 0.99 {
				t.Errorf("identical starts %.3f%%, want ≥ 99%%", 100*m.share())
			}
			if s.AvgWait < 6836.9*0.98 || s.AvgWait > 6836.9*1.02 || s.AvgBsld < 92.5765*0.98 || s.AvgBsld > 92.5765*1.02 {
				t.Errorf("averages %.1f s / %.4f, want within 2%% of pyss' 6,836.9 s / 92.5765", s.AvgWait, s.AvgBsld)
			}
		})
	}
}

// TestPyssAll reports (and bounds loosely) the agreement on the three logs.
func TestPyssAll(t *testing.T) {
	if testing.Short() {
		t.Log("short mode: KTH only (TestPyssKTH)")
		return
	}
	cases := []struct {
		name       string
		minShare   float64
		wait, bsld float64
	}{
		{"KTH-SP2", 0.99, 6836.9, 92.5765},
		{"CTC-SP2", 0.5, 14272.6, 49.5713},
		{"SDSC-SP2", 0.99, 20497.8, 87.8703},
	}
	for _, eng := range engines {
		for _, c := range cases {
			t.Run(eng+"/"+c.name, func(t *testing.T) {
				m, s := comparePyss(t, c.name+".pyss-easy-reqtime.out.swf.gz", Options{Engine: eng})
				t.Logf("%s %s: %v; avg wait %.1f s (pyss %.1f), bsld %.4f (pyss %.4f)", c.name, eng, m, s.AvgWait, c.wait, s.AvgBsld, c.bsld)
				if m.share() < c.minShare {
					t.Errorf("identical starts %.3f%%, want ≥ %.0f%%", 100*m.share(), 100*c.minShare)
				}
				if !m.tie {
					t.Errorf("first divergence at t=%.0f is not at simultaneous terminations: a cause other than the documented tie rule", m.firstDiffTime)
				}
				if abs(s.AvgWait/c.wait-1) > 0.05 || abs(s.AvgBsld/c.bsld-1) > 0.05 {
					t.Errorf("averages %.1f / %.4f more than 5%% from pyss", s.AvgWait, s.AvgBsld)
				}
			})
		}
	}
}
