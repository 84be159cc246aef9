package replay

import (
	"context"
	"fmt"

	"hora/replay/swf"
)

// Agreement compares simulated start times with a reference schedule (a
// pyss output log) job by job.
type Agreement struct {
	Jobs, Same     int
	Earlier, Later int     // hora started the job earlier / later than the reference
	MaxDiff        float64 // largest |difference|, seconds
	// FirstDiff is the job whose start differs first in time, and Tie tells
	// whether that instant saw several terminations (the known cause: the
	// order of simultaneous events).
	FirstDiff     int64
	FirstDiffTime float64
	Tie           bool
}

// Share is the fraction of jobs started at the very same second.
func (m Agreement) Share() float64 { return float64(m.Same) / float64(max(m.Jobs, 1)) }

func (m Agreement) String() string {
	if m.FirstDiff < 0 {
		return fmt.Sprintf("%d/%d identical starts (%.3f%%), no divergence", m.Same, m.Jobs, 100*m.Share())
	}
	return fmt.Sprintf("%d/%d identical starts (%.3f%%), %d earlier, %d later, max |diff| %.0f s; first divergence job %d at t=%.0f, simultaneous terminations there: %v",
		m.Same, m.Jobs, 100*m.Share(), m.Earlier, m.Later, m.MaxDiff, m.FirstDiff, m.FirstDiffTime, m.Tie)
}

// ReferenceAgreement replays the input columns of a reference schedule
// (SWF fields 2, 4, 5, 8, 9 of a pyss output file) and compares every job's
// start with the reference's (submit + field 3).
func ReferenceAgreement(ctx context.Context, path string, opt Options) (Agreement, *Summary, error) {
	m := Agreement{FirstDiff: -1, FirstDiffTime: 1e300}
	lg, err := swf.ReadFile(path, swf.Lenient)
	if err != nil {
		return m, nil, err
	}
	if lg.Stats.Skipped != 0 || lg.Stats.Found[swf.RunOverRequest] != 0 {
		return m, nil, fmt.Errorf("%s: a reference schedule's input is pre-filtered, yet %d records skipped, %d overrun",
			path, lg.Stats.Skipped, lg.Stats.Found[swf.RunOverRequest])
	}
	w, err := FromSWF(lg)
	if err != nil {
		return m, nil, err
	}
	ref := make([]float64, len(w.Jobs))
	for i := range w.Jobs {
		ref[i] = w.Jobs[i].Submit + w.Jobs[i].RecordedWait
		w.Jobs[i].RecordedWait = -1
	}
	o, err := Simulate(ctx, w, opt)
	if err != nil {
		return m, nil, err
	}
	ends := map[float64]int{} // reference termination times → count
	for i, j := range w.Jobs {
		ends[ref[i]+j.Run]++
	}
	for i, r := range o.Results {
		m.Jobs++
		d := r.Start - ref[i]
		switch {
		case !r.Started:
			m.Later++
		case d == 0:
			m.Same++
		case d < 0:
			m.Earlier++
		default:
			m.Later++
		}
		if d != 0 && min(r.Start, ref[i]) < m.FirstDiffTime {
			m.FirstDiff, m.FirstDiffTime = int64(w.Jobs[i].ID), min(r.Start, ref[i])
		}
		m.MaxDiff = max(m.MaxDiff, abs(d))
	}
	m.Tie = ends[m.FirstDiffTime] > 1
	return m, Summarize(o, 0, "simulated"), nil
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
