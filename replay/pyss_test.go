package replay

import (
	"path/filepath"
	"testing"

	"hora/replay/swf"
)

var dataDir = swf.SharedDataDir()

// engines are the schedulers every cross-check runs on: the independent
// reference EASY and hora's Engine.
var engines = []string{"hora", "reference"}

// comparePyss replays a pyss output file and compares every job's start.
func comparePyss(t testing.TB, name string, opt Options) (Agreement, *Summary) {
	t.Helper()
	m, s, err := ReferenceAgreement(t.Context(), filepath.Join(dataDir, "easy-reference", name), opt)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// TestPyssKTH: EASY on pyss' KTH input starts ≥ 99% of the jobs at the very
// second pyss did.
func TestPyssKTH(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			m, s := comparePyss(t, "KTH-SP2.pyss-easy-reqtime.out.swf.gz", Options{Engine: eng})
			t.Logf("KTH %s: %v; avg wait %.1f s (pyss 6,836.9), bsld %.4f (pyss 92.5765)", eng, m, s.AvgWait, s.AvgBsld)
			if m.Share() < 0.99 {
				t.Errorf("identical starts %.3f%%, want ≥ 99%%", 100*m.Share())
			}
			if s.AvgWait < 6836.9*0.98 || s.AvgWait > 6836.9*1.02 || s.AvgBsld < 92.5765*0.98 || s.AvgBsld > 92.5765*1.02 {
				t.Errorf("averages %.1f s / %.4f, want within 2%% of pyss' 6,836.9 s / 92.5765", s.AvgWait, s.AvgBsld)
			}
		})
	}
}

// TestPyssAll: under the pyss tie rule hora's Engine starts every job of
// the three pyss schedules at the very second pyss did; the reference
// oracle, which schedules after every event, stays ≥ 99% on KTH and SDSC
// and diverges first at simultaneous terminations.
func TestPyssAll(t *testing.T) {
	if testing.Short() {
		t.Log("short mode: KTH only (TestPyssKTH)")
		return
	}
	cases := []struct {
		name       string
		refShare   float64 // the reference oracle's bound
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
				if eng == "hora" {
					if m.Same != m.Jobs {
						t.Errorf("%d of %d jobs start at another second than in pyss, want none", m.Jobs-m.Same, m.Jobs)
					}
					// pyss' file gives its averages to 0.1 s and 1e-4.
					if abs(s.AvgWait-c.wait) > 0.05 || abs(s.AvgBsld-c.bsld) > 0.00005 {
						t.Errorf("averages %.2f / %.5f, want pyss' %.1f / %.4f", s.AvgWait, s.AvgBsld, c.wait, c.bsld)
					}
					return
				}
				if m.Share() < c.refShare {
					t.Errorf("identical starts %.3f%%, want ≥ %.0f%%", 100*m.Share(), 100*c.refShare)
				}
				if !m.Tie {
					t.Errorf("first divergence at t=%.0f is not at simultaneous terminations: a cause other than the tie rule", m.FirstDiffTime)
				}
				if abs(s.AvgWait/c.wait-1) > 0.05 || abs(s.AvgBsld/c.bsld-1) > 0.05 {
					t.Errorf("averages %.1f / %.4f more than 5%% from pyss", s.AvgWait, s.AvgBsld)
				}
			})
		}
	}
}

// TestPyssTieRules: on CTC each part of the pyss tie rule matters, so the
// full agreement above comes from the rule and not from chance. With the
// terminations first (still grouped) a submission at a termination's
// second loses its place to a queued job; with a pass after every event, a
// backfill takes the nodes that a job ending at its limit in the same
// second gives the queue.
func TestPyssTieRules(t *testing.T) {
	if testing.Short() {
		t.Log("short mode: CTC is 77,199 jobs")
		return
	}
	const name = "CTC-SP2.pyss-easy-reqtime.out.swf.gz"
	ends, _ := comparePyss(t, name, Options{Ties: TiesEndsFirst})
	per, _ := comparePyss(t, name, Options{Ties: TiesPerEvent})
	t.Logf("ends-first: %v", ends)
	t.Logf("per-event: %v", per)
	if ends.Same == ends.Jobs || ends.Share() < 0.99 {
		t.Errorf("ends-first: %.3f%% identical, want between 99%% and 100%% exclusive", 100*ends.Share())
	}
	if per.Share() > 0.9 || !per.Tie {
		t.Errorf("per-event: %.3f%% identical (tie %v), want < 90%% with the first divergence at simultaneous terminations", 100*per.Share(), per.Tie)
	}
}
