package dlt

import "math"

// Estimator follows measured chunk times (dlt-feedback §3: estimates drift
// from reality; the scheduler learns from completions).
//
// A completed chunk of σ units that ran `d` seconds (transmission included)
// gives one sample of the per-unit cost u = (d − ST − SC)/σ = Cms + Cps.
// Cms cannot be told apart from Cps from a chunk's duration alone, so Cms is
// kept and Cps is estimated as u − Cms. The estimator keeps an exponentially
// weighted mean μ and variance v of u (weight Alpha per sample, like TCP's
// RTT estimator) and plans with the conservative upper quantile
// μ + K·√v (K = 2: about the 97.7% quantile of a normal spread); the
// configured Cps stays until MinSamples samples were seen.
type Estimator struct {
	Alpha      float64 // weight of a new sample; 0 = 1/8
	K          float64 // quantile factor; 0 = 2
	MinSamples int     // samples before the estimate replaces the configured Cps; 0 = 8

	n    int
	mean float64
	vari float64

	// Split samples (ObserveSplit): the transfer and the run of a chunk
	// measured apart, per unit.
	ns     int
	ms, ps moments
}

// moments is an exponentially weighted mean and variance.
type moments struct{ mean, vari float64 }

func (m *moments) add(first bool, a, x float64) {
	if first {
		m.mean, m.vari = x, 0
		return
	}
	diff := x - m.mean
	m.mean += a * diff
	m.vari = (1 - a) * (m.vari + a*diff*diff)
}

func (e *Estimator) alpha() float64 {
	if e.Alpha <= 0 || e.Alpha > 1 {
		return 1.0 / 8
	}
	return e.Alpha
}

func (e *Estimator) k() float64 {
	if e.K <= 0 {
		return 2
	}
	return e.K
}

// ObserveSplit adds a chunk of sigma units whose data transfer took
// transfer seconds and whose run took compute seconds (staged --input
// chunks, where both are measured apart). Per dlt-feedback §3.2 each cost
// is estimated from its own measurement: Cms from (transfer − ST)/σ and
// Cps from (compute − SC)/σ (rt-dlt-2005 §3 cost model: ST + σ·Cms on the
// channel, SC + σ·Cps on a node), so unlike Observe both can follow reality.
func (e *Estimator) ObserveSplit(m Model, sigma, transfer, compute float64) {
	if sigma <= 0 || !(transfer >= 0) || !(compute > 0) || math.IsInf(transfer, 0) || math.IsInf(compute, 0) {
		return
	}
	cms := max(transfer-m.ST, 0) / sigma
	cps := (compute - m.SC) / sigma
	if cps <= 0 {
		return
	}
	a := e.alpha()
	e.ms.add(e.ns == 0, a, cms)
	e.ps.add(e.ns == 0, a, cps)
	e.ns++
}

// SplitSamples is the number of split samples seen.
func (e *Estimator) SplitSamples() int { return e.ns }

// Observe adds the measured duration d of a chunk of sigma units.
func (e *Estimator) Observe(m Model, sigma, d float64) {
	if sigma <= 0 || !(d > 0) || math.IsInf(d, 0) {
		return
	}
	u := (d - m.ST - m.SC) / sigma
	if u <= 0 {
		return
	}
	mm := moments{e.mean, e.vari}
	mm.add(e.n == 0, e.alpha(), u)
	e.mean, e.vari = mm.mean, mm.vari
	e.n++
}

// Samples is the number of samples seen.
func (e *Estimator) Samples() int { return e.n }

// Upper is the conservative per-unit cost μ + K√v (Cms + Cps).
func (e *Estimator) Upper() float64 {
	return e.mean + e.k()*math.Sqrt(e.vari)
}

// Apply returns m with Cps replaced by the estimate once enough samples were
// seen. The estimate is per unit of the node's real-time share, so it is
// scaled back by the share (Cps = (u − Cms)·s) before cps() divides it again.
//
// Split samples, once there are enough of them, take precedence: Cms and
// Cps each become their own upper quantile (Cps scaled by the share as
// above; the channel is not shared with best-effort work).
func (e *Estimator) Apply(m Model) Model {
	need := e.MinSamples
	if need <= 0 {
		need = 8
	}
	s := m.Share
	if s <= 0 || s > 1 {
		s = 1
	}
	if e.ns >= need {
		if c := e.ps.mean + e.k()*math.Sqrt(e.ps.vari); c > 0 {
			m.Cps = c * s
			m.Cms = e.ms.mean + e.k()*math.Sqrt(e.ms.vari)
		}
		return m
	}
	if e.n < need {
		return m
	}
	c := (e.Upper() - m.Cms) * s
	if c <= 0 {
		return m
	}
	m.Cps = c
	return m
}
