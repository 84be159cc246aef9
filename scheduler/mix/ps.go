package mix

import "math"

// PS is the top-level scheduler of 2DCS-PS on one node (be-rt-mix-2001 §4.3):
// a virtual time per class, advanced by Δ/share when that class ran for Δ;
// the ready class with the lower virtual time runs next. It is entirely
// local to the node. The zero value is not usable: NewPS.
type PS struct {
	share [2]float64
	vt    [2]float64
	ready [2]bool
}

// NewPS returns a node's PS state under ratio r, both classes idle.
func NewPS(r Ratio) *PS {
	p := &PS{share: [2]float64{r.Share(RT), r.Share(BE)}}
	for c, sh := range p.share {
		if sh == 0 {
			p.vt[c] = math.Inf(1)
		}
	}
	return p
}

// Pick says which class runs at a scheduling event, given which classes
// have a process ready; ok is false when neither has. A class that becomes
// ready after having nothing ready takes the other's virtual time (§4.3), so
// an idle spell neither banks credit nor is held against it; the fairness
// ratio matters only while both are ready. When both become ready at once
// (the paper does not say), both take the larger of the two.
func (p *PS) Pick(rtReady, beReady bool) (c Class, ok bool) {
	now := [2]bool{rtReady, beReady}
	fresh := [2]bool{now[0] && !p.ready[0], now[1] && !p.ready[1]}
	switch {
	case fresh[0] && fresh[1]:
		m := max(p.vt[0], p.vt[1])
		for k := range p.vt {
			if p.share[k] > 0 {
				p.vt[k] = m
			}
		}
		if math.IsInf(m, 1) { // one class has no share
			p.vt[0], p.vt[1] = p.zero(0), p.zero(1)
		}
	case fresh[0] || fresh[1]:
		k := 0
		if fresh[1] {
			k = 1
		}
		if p.share[k] > 0 && !math.IsInf(p.vt[1-k], 1) {
			p.vt[k] = p.vt[1-k]
		}
	}
	p.ready = now
	switch {
	case rtReady && beReady:
		if p.vt[BE] < p.vt[RT] {
			return BE, true
		}
		return RT, true // ties go to RT
	case rtReady:
		return RT, true
	case beReady:
		return BE, true
	}
	return RT, false
}

// Charge advances class c's virtual time after it ran for dt:
// vt_c = vt_c + Δ/(share of c) (§4.3). A class with no share (ratio 1:0 or
// 0:1) runs only when the other has nothing ready: its virtual time is +Inf.
func (p *PS) Charge(c Class, dt float64) {
	if p.share[c] == 0 {
		p.vt[c] = math.Inf(1)
		return
	}
	p.vt[c] += dt / p.share[c]
	// Keep both clocks near zero so that long runs lose no precision.
	if m := min(p.vt[0], p.vt[1]); m > 1e6 && !math.IsInf(m, 1) {
		p.vt[0] -= m
		p.vt[1] -= m
	}
}

// zero is the virtual time a class restarts from: 0, or +Inf without a share.
func (p *PS) zero(c int) float64 {
	if p.share[c] == 0 {
		return math.Inf(1)
	}
	return 0
}

// VirtualTime is class c's virtual time (for display and tests).
func (p *PS) VirtualTime(c Class) float64 { return p.vt[c] }
