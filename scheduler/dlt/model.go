// Package dlt is hora's divisible-load real-time scheduling: the DLT cost
// model, admission control (AC-FAST and the reference algorithms), the MNA
// dispatcher and feedback from measured chunk times. It is pure: no clock, no
// goroutines, no I/O; time is whatever `now` the caller passes.
//
// Sources: papers/rt-dlt-2005 (cost model, MCDF and the FIFO/EDF baselines),
// papers/ac-fast-2009 (AC-FAST, MNA dispatcher), papers/dlt-feedback
// (different processor available times, overrun and underrun). README.md in
// this directory records how every ambiguity of the pseudo-code was read.
package dlt

import (
	"math"
)

// Model is the linear DLT cost model of one homogeneous cluster
// (rt-dlt-2005 §3): transmitting σ data units costs ST + σ·Cms on the single
// channel, computing them costs SC + σ·Cps on one node.
type Model struct {
	Cms float64 // time to transmit one data unit from the head node
	Cps float64 // time to compute one data unit on one node
	ST  float64 // communication setup cost per chunk (0 = none)
	SC  float64 // computation setup cost per chunk (0 = none)
	// Share is the real-time class's guaranteed share s of every node
	// (DESIGN.md §1); 0 means 1 (RT owns the nodes).
	Share float64
}

// cps is the effective per-unit compute cost every formula uses: Cps/s
// (DESIGN.md §1). It is the only place that reads Model.Cps.
func (m Model) cps() float64 {
	s := m.Share
	if s <= 0 || s > 1 {
		s = 1
	}
	return m.Cps / s
}

// EffCps is the per-unit compute cost the model plans with (Cps/s).
func (m Model) EffCps() float64 { return m.cps() }

// unit is Cms + Cps: the cost of one data unit sent and computed.
func (m Model) unit() float64 { return m.Cms + m.cps() }

// setup reports whether the model has setup costs.
func (m Model) setup() bool { return m.ST > 0 || m.SC > 0 }

// Beta is β = Cps/(Cms+Cps), rt-dlt-2005 eq. (4.5), ac-fast-2009 eq. (2).
func (m Model) Beta() float64 { return m.cps() / m.unit() }

// phi is φ = ST/(σ(Cms+Cps)), rt-dlt-2005 eq. (4.11).
func (m Model) phi(sigma float64) float64 { return m.ST / (sigma * m.unit()) }

// b is 𝓑(n) = (1−β)/(1−βⁿ) + nφ/(1−βⁿ) − φ/(1−β), rt-dlt-2005 eq. (4.12):
// the first node's fraction α₁ under the optimal partitioning rule.
//
// With Cms = 0 (β = 1) it is the limit 1/n + φ(n−1)/2 (α_{j+1} = α_j − φ).
func (m Model) b(sigma float64, n int) float64 {
	if m.Cms == 0 {
		return 1/float64(n) + m.phi(sigma)*float64(n-1)/2
	}
	beta := m.Beta()
	bn := math.Pow(beta, float64(n))
	if m.ST == 0 {
		return (1 - beta) / (1 - bn)
	}
	phi := m.phi(sigma)
	return (1-beta)/(1-bn) + float64(n)*phi/(1-bn) - phi/(1-beta)
}

// Valid reports whether the optimal partition of σ over n nodes gives every
// node a positive fraction (with a communication setup cost the last
// fractions α_j = α₁β^{j−1} − φ(1−β^{j−1})/(1−β) turn negative for large n).
func (m Model) Valid(sigma float64, n int) bool {
	if n < 1 || sigma <= 0 {
		return false
	}
	if m.ST == 0 {
		return true
	}
	return m.alpha(sigma, n, n) > 0
}

// alpha is α_j of the optimal partition over n nodes, rt-dlt-2005 §4.2:
// α_j = α₁β^{j−1} − φ(1−β^{j−1})/(1−β) with α₁ = 𝓑(n) (eq. 4.12).
func (m Model) alpha(sigma float64, n, j int) float64 {
	if m.Cms == 0 {
		return m.b(sigma, n) - float64(j-1)*m.phi(sigma)
	}
	beta := m.Beta()
	a1 := m.b(sigma, n)
	bj := math.Pow(beta, float64(j-1))
	if m.ST == 0 {
		return a1 * bj
	}
	return a1*bj - (1-bj)/(1-beta)*m.phi(sigma)
}

// Exec is the execution time 𝓔(σ, n) of load σ on n nodes under the optimal
// partitioning rule: 𝓔 = ST + SC + σ(Cms+Cps)𝓑(n), rt-dlt-2005 eq. (4.13);
// without setup costs 𝓔 = σ(Cms+Cps)(1−β)/(1−βⁿ), eq. (4.6) and
// ac-fast-2009 eq. (1). It is +Inf when the partition is not valid (see
// Valid) and 0 for σ ≤ 0.
func (m Model) Exec(sigma float64, n int) float64 {
	if sigma <= 0 {
		return 0
	}
	if !m.Valid(sigma, n) {
		return math.Inf(1)
	}
	return m.ST + m.SC + sigma*m.unit()*m.b(sigma, n)
}

// Partition is the optimal partition of σ over n nodes (the data sizes α_jσ,
// rt-dlt-2005 §4.1–4.2); nil if not valid. The sizes sum to σ.
func (m Model) Partition(sigma float64, n int) []float64 {
	if !m.Valid(sigma, n) {
		return nil
	}
	out := make([]float64, n)
	beta, phi := m.Beta(), 0.0
	if m.ST > 0 {
		phi = m.phi(sigma)
	}
	a1 := m.b(sigma, n)
	bj, sum := 1.0, 0.0  // bj = β^{j−1}
	for j := range out { // α_j = α₁β^{j−1} − φ(1−β^{j−1})/(1−β) (rt-dlt-2005 §4.2)
		geo := float64(j) // (1−β^{j−1})/(1−β) = 1 + β + … + β^{j−2}
		if beta < 1 {
			geo = (1 - bj) / (1 - beta)
		}
		out[j] = (a1*bj - phi*geo) * sigma
		sum += out[j]
		bj *= beta
	}
	out[0] += sigma - sum // absorb rounding (in the largest part) so the sizes sum to σ
	return out
}

// NMin is n_min: the fewest nodes, at most nmax, that run σ within `avail`
// time units (𝓔(σ,n) ≤ avail); ok is false when no n ≤ nmax does.
// Without setup costs it is the closed form n_min = ⌈ln γ / ln β⌉ with
// γ = 1 − σCms/(A+D−s), rt-dlt-2005 §4.1 (checked against 𝓔 to absorb
// rounding). With setup costs constraint (4.13) is solved numerically: 𝓔
// falls then rises in n (Theorem 5.2), so a binary search finds the minimum
// n* and a second one the smallest n ≤ n* that fits.
func (m Model) NMin(sigma, avail float64, nmax int) (n int, ok bool) {
	if nmax < 1 || avail <= 0 {
		return 0, false
	}
	if sigma <= 0 {
		return 1, true
	}
	fits := func(n int) bool { return m.Exec(sigma, n) <= avail }
	if !m.setup() {
		gamma := 1 - sigma*m.Cms/avail
		if gamma <= 0 {
			return 0, false
		}
		if m.Cms == 0 {
			// β = 1: 𝓔 = σCps/n.
			n = int(math.Ceil(sigma * m.cps() / avail))
		} else {
			n = int(math.Ceil(math.Log(gamma) / math.Log(m.Beta())))
		}
		n = max(n, 1)
		for n > 1 && fits(n-1) {
			n--
		}
		for n <= nmax && !fits(n) {
			n++
		}
		if n > nmax {
			return 0, false
		}
		return n, true
	}
	best := m.BestN(sigma, nmax)
	if !fits(best) {
		return 0, false
	}
	lo, hi := 1, best // fits(hi); find the smallest
	for lo < hi {
		mid := (lo + hi) / 2
		if fits(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, true
}

// BestN is the n ≤ nmax that minimises 𝓔(σ, n): nmax without setup costs
// (Theorem 5.1), an interior n* with them (Theorem 5.2).
func (m Model) BestN(sigma float64, nmax int) int {
	if !m.setup() || sigma <= 0 {
		return max(nmax, 1)
	}
	lo, hi := 1, max(nmax, 1)
	for lo < hi { // first n with 𝓔(n+1) ≥ 𝓔(n)
		mid := (lo + hi) / 2
		if m.Exec(sigma, mid+1) < m.Exec(sigma, mid) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// Cost is W(n) = n·𝓔(σ, n), rt-dlt-2005 §5 (Theorem 5.3: increasing in n).
func (m Model) Cost(sigma float64, n int) float64 { return float64(n) * m.Exec(sigma, n) }

// HetEstimate is the execution time and partition of σ over n = len(r) nodes
// with different available times r₁ ≤ … ≤ r_n, dlt-feedback eq. (1)–(9)
// (after Lin et al., ICPP 2007): a node free earlier is modelled as faster,
// Cps_i = 𝓔/(𝓔 + r_n − r_i)·Cps (eq. 1), Cms_i = Cms (eq. 2),
// X_i = Cps_{i−1}/(Cms + Cps_i) (eq. 4), σ₁ = σ/(1 + Σ_{i≥2} Π_{j=2..i} X_j)
// (eq. 8), σ_i = Π_{j=2..i} X_j · σ₁ (eq. 9) and
// 𝓔̂ = σCms + σ_n·Cps (eq. 3), the task ending at r_n + 𝓔̂. Setup costs are
// ignored (the paper's model has none). r must be sorted.
func (m Model) HetEstimate(sigma float64, r []float64) (ehat float64, parts []float64) {
	n := len(r)
	if n == 0 || sigma <= 0 {
		return 0, nil
	}
	nm := Model{Cms: m.Cms, Cps: m.Cps, Share: m.Share}
	e := nm.Exec(sigma, n)
	rn := r[n-1]
	cpsI := func(i int) float64 { return e / (e + rn - r[i]) * m.cps() } // eq. (1)
	parts = make([]float64, n)
	prod, den := 1.0, 1.0
	parts[0] = 1
	for i := 1; i < n; i++ {
		prod *= cpsI(i-1) / (m.Cms + cpsI(i)) // eq. (4)
		parts[i] = prod
		den += prod
	}
	for i := range parts { // eq. (8), (9)
		parts[i] *= sigma / den
	}
	return sigma*m.Cms + parts[n-1]*m.cps(), parts // eq. (3)
}

// Fill is the exact schedule of one task on nodes free at r (sorted) when the
// single channel is free from c: node i's transmission starts at
// t_i = max(r_i, end of the previous transmission) and its chunk is sized to
// end exactly at `end`: σ_i = (end − t_i − ST − SC)/(Cms+Cps). Nodes that
// could not get a positive chunk are skipped. It is the capacity of those
// nodes by `end` and the engine of the exact (IIT-aware) planners; the sizes
// are not capped by any task size.
func (m Model) Fill(r []float64, c, end float64, visit func(i int, start, size float64)) (total float64) {
	ch := c
	for i, ri := range r {
		t := max(ri, ch)
		s := (end - t - m.ST - m.SC) / m.unit()
		if s <= 0 {
			continue
		}
		if visit != nil {
			visit(i, t, s)
		}
		total += s
		ch = t + m.ST + s*m.Cms
	}
	return total
}

// ChunkTime is how long a chunk of σ runs on a node, transmission included.
func (m Model) ChunkTime(sigma float64) float64 { return m.ST + m.SC + sigma*m.unit() }

// SendTime is how long a chunk of σ holds the channel.
func (m Model) SendTime(sigma float64) float64 { return m.ST + sigma*m.Cms }
