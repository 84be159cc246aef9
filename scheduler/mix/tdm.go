package mix

import (
	"fmt"
	"math"
)

// TDM is the top-level scheduler of 2DCS-TDM (be-rt-mix-2001 §4.2): the
// whole cluster alternates between an RT division of s·Υ and a BE division
// of (1−s)·Υ, every division starting with a global synchronisation of cost
// δ during which nothing runs.
type TDM struct {
	Period float64 // Υ, seconds
	Sync   float64 // δ, seconds, paid at the start of each division
	RTPart float64 // s = x/(x+y)
}

// NewTDM checks Υ > 0, δ ≥ 0 and that each division that exists is longer
// than its synchronisation.
func NewTDM(r Ratio, period, sync float64) (TDM, error) {
	t := TDM{Period: period, Sync: sync, RTPart: r.Share(RT)}
	if !(period > 0) || math.IsInf(period, 0) || !(sync >= 0) {
		return t, fmt.Errorf("tdm: period %g s and sync %g s: want period > 0 and sync ≥ 0", period, sync)
	}
	for _, c := range []Class{RT, BE} {
		if l := t.length(c); l > 0 && l <= sync+1e-12 {
			return t, fmt.Errorf("tdm: the %s division (%g s of a %g s period) is not longer than the sync cost %g s", c, l, period, sync)
		}
	}
	return t, nil
}

func (t TDM) length(c Class) float64 {
	if c == RT {
		return t.RTPart * t.Period
	}
	return (1 - t.RTPart) * t.Period
}

// At gives the division in force at time now (periods start at multiples
// of Υ, RT first), the time the division ends, and the time its
// synchronisation ends: before syncEnd no process of either class runs.
func (t TDM) At(now float64) (owner Class, end, syncEnd float64) {
	k := math.Floor(now / t.Period)
	start := k * t.Period
	rtEnd := start + t.length(RT)
	if now < rtEnd && t.length(RT) > 0 {
		return RT, rtEnd, start + t.Sync
	}
	if t.length(BE) == 0 { // ratio x:0: the whole period is RT's
		return RT, start + t.Period, start + t.Sync
	}
	return BE, start + t.Period, rtEnd + t.Sync
}

// Lend is the optimisation of §4.2: the division's owner runs if it has a
// process ready; otherwise the division is lent to the other class. ok is
// false when neither class has anything ready.
func Lend(owner Class, rtReady, beReady bool) (c Class, ok bool) {
	ready := [2]bool{rtReady, beReady}
	switch {
	case ready[owner]:
		return owner, true
	case ready[owner.Other()]:
		return owner.Other(), true
	}
	return owner, false
}
