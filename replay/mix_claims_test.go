package replay

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"hora/scheduler/mix"
)

// The paper's claims that a run can contradict (be-rt-mix-2001 §4.4, §5.1,
// §5.2), at a size that runs in seconds: 20 minutes of arrivals instead of
// an hour. docs/reproductions/be-rt-mix-2001 has the full figures.
func TestMixPaperClaims(t *testing.T) {
	run := func(mode mix.Mode, rt, be int, rate float64, adm string, seed uint64) *MixResult {
		o := DefaultMixOptions()
		o.Mode, o.RT, o.BE, o.Rate, o.Admission, o.Seed = mode, rt, be, rate, adm, seed
		o.Arrivals, o.Drain = 1800, 3600
		r, err := SimulateMix(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			// Without admission the DCS schemes admit every RT job and miss heavily at high load.
			for _, m := range []mix.Mode{mix.TDMMode, mix.PSMode} {
				r := run(m, 9, 1, 0.06, "off", seed)
				if r.RTRejected != 0 || r.RTMissRate < 0.3 {
					t.Errorf("%s without admission, 9:1, λ=0.06: rejected %d, miss %.3f; want 0 and ≥ 0.3", m, r.RTRejected, r.RTMissRate)
				}
			}
			// With admission 1GS misses nothing, TDM and PS at most 1 %, and
			// admission turns many away at high load.
			for _, rate := range []float64{0.01, 0.04} {
				for _, m := range []mix.Mode{mix.GangMode, mix.TDMMode, mix.PSMode} {
					r := run(m, 9, 1, rate, "on", seed)
					limit := 0.01
					if m == mix.GangMode {
						limit = 0
					}
					if r.RTMissRate > limit || r.RTAdmitted == 0 {
						t.Errorf("%s with admission, λ=%g: miss %.4f (limit %g), %d admitted", m, rate, r.RTMissRate, limit, r.RTAdmitted)
					}
					if rate == 0.04 && r.RTRejectRatio < 0.3 {
						t.Errorf("%s with admission, λ=0.04: reject ratio %.3f, want many rejected", m, r.RTRejectRatio)
					}
				}
			}
			// Without admission, 1GS turns RT jobs away (no free row within w); the DCS do not.
			if r := run(mix.GangMode, 9, 1, 0.04, "off", seed); r.RTRejected == 0 {
				t.Error("1GS without admission at λ=0.04 rejected nothing")
			}
		})
	}
}

// The statistical admission sits between the strict test and none: it
// rejects fewer than "on" and misses less than "off".
func TestMixStatisticalBetween(t *testing.T) {
	run := func(adm string) *MixResult {
		o := DefaultMixOptions()
		o.Mode, o.RT, o.BE, o.Rate, o.Admission = mix.TDMMode, 9, 1, 0.03, adm
		o.Arrivals, o.Drain = 1800, 3600
		r, err := SimulateMix(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	on, st, off := run("on"), run("statistical:0.3"), run("off")
	if !(st.RTRejectRatio < on.RTRejectRatio && st.RTMissRate < off.RTMissRate) {
		t.Errorf("statistical:0.3 rejects %.3f (on %.3f) and misses %.3f (off %.3f)", st.RTRejectRatio, on.RTRejectRatio, st.RTMissRate, off.RTMissRate)
	}
}

// Invariant 5 (DESIGN.md §5) for the reproduction: the same seeds give
// byte-identical figures and README (at a reduced size).
func TestReproduceMixDeterministic(t *testing.T) {
	o := DefaultMixOptions()
	o.Arrivals, o.Drain = 300, 600
	var dirs [2]string
	for i := range dirs {
		dirs[i] = t.TempDir()
		if _, err := ReproduceMix(t.Context(), dirs[i], o, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dirs[0], MixDir, "*"))
	if len(files) != 14 {
		t.Fatalf("%d files, want 14 (13 figures and the README)", len(files))
	}
	for _, f := range files {
		a, _ := os.ReadFile(f)
		b, err := os.ReadFile(filepath.Join(dirs[1], MixDir, filepath.Base(f)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs (%v)", filepath.Base(f), err)
		}
	}
}
