package replay

import (
	"fmt"
	"math/rand/v2"
)

// Deadline models turn a historic log, which has none, into real-time work.

// AdvanceAhead is how far ahead an advance reservation may start: thesis
// §5.5.2 sets the requested start "within zero to three hours in the future".
const AdvanceAhead = 3 * 3600.0

// AddAdvance makes a fraction f of the jobs, chosen by rng, advance
// reservations (thesis §5.5.2): Begin = submit + uniform(0, 3 h). Every job
// draws the same two numbers whether chosen or not, so the choice of one
// job does not shift another's.
func AddAdvance(w *Workload, f float64, rng *rand.Rand) error {
	if !(f >= 0 && f <= 1) {
		return fmt.Errorf("advance fraction %g: want 0 ≤ f ≤ 1", f)
	}
	for i := range w.Jobs {
		pick, ahead := rng.Float64(), rng.Float64()*AdvanceAhead
		if pick < f {
			w.Jobs[i].Begin = w.Jobs[i].Submit + ahead
		}
	}
	return nil
}

// AddDeadlines gives every job with a requested time a deadline k times
// that time after it may start: deadline = max(submit, begin) + k·requested.
// k ≥ 1, or no job could meet it. Jobs without a requested time stay
// best-effort.
func AddDeadlines(w *Workload, k float64) error {
	if !(k >= 1) {
		return fmt.Errorf("deadline factor %g: want k ≥ 1", k)
	}
	for i := range w.Jobs {
		j := &w.Jobs[i]
		if finite(j.Limit) && j.Limit > 0 {
			j.Deadline = j.ready() + k*j.Limit
		}
	}
	return nil
}
