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
}

// Observe adds the measured duration d of a chunk of sigma units.
func (e *Estimator) Observe(m Model, sigma, d float64) {
	if sigma <= 0 || !(d > 0) || math.IsInf(d, 0) {
		return
	}
	u := (d - m.ST - m.SC) / sigma
	if u <= 0 {
		return
	}
	a := e.Alpha
	if a <= 0 || a > 1 {
		a = 1.0 / 8
	}
	if e.n == 0 {
		e.mean, e.vari = u, 0
	} else {
		diff := u - e.mean
		e.mean += a * diff
		e.vari = (1 - a) * (e.vari + a*diff*diff)
	}
	e.n++
}

// Samples is the number of samples seen.
func (e *Estimator) Samples() int { return e.n }

// Upper is the conservative per-unit cost μ + K√v (Cms + Cps).
func (e *Estimator) Upper() float64 {
	k := e.K
	if k <= 0 {
		k = 2
	}
	return e.mean + k*math.Sqrt(e.vari)
}

// Apply returns m with Cps replaced by the estimate once enough samples were
// seen. The estimate is per unit of the node's real-time share, so it is
// scaled back by the share (Cps = (u − Cms)·s) before cps() divides it again.
func (e *Estimator) Apply(m Model) Model {
	need := e.MinSamples
	if need <= 0 {
		need = 8
	}
	if e.n < need {
		return m
	}
	s := m.Share
	if s <= 0 || s > 1 {
		s = 1
	}
	c := (e.Upper() - m.Cms) * s
	if c <= 0 {
		return m
	}
	m.Cps = c
	return m
}
