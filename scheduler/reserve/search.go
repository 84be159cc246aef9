package reserve

import (
	"math"
	"slices"
)

// query is one request seen from one rate class: work lasts D ticks there.
// Only periods with stLo <= st < stHi are considered.
type query struct {
	r, d, D    int64
	stLo, stHi int64
}

// fits: the job can run in p at s = max(st, r) and end by min(end, d)
// (thesis §3.2: p "completely contains" a point of the segment P–P').
func (q *query) fits(p *period) bool {
	if p.st < q.stLo || p.st >= q.stHi {
		return false
	}
	e := max(p.st, q.r) + q.D
	return e <= p.end && e <= q.d
}

// may is false only when no period of n's subtree fits. For a subtree lying
// entirely in region R_1 (st < r) it is exact by the latest end (§3.3.2
// step 2); for one lying in R_2 (st >= r) it uses the longest period
// (§3.3.2 step 1). For one rate class the test "end >= r + ⌈l/μ⌉" is the
// dual-plane test of §4.3.2, see dualBelow.
func (q *query) may(n *tnode) bool {
	if n.maxSt < q.stLo || n.minSt >= q.stHi {
		return false
	}
	if n.minSt > q.d-q.D || n.maxEnd < q.r+q.D {
		return false
	}
	if n.minSt >= q.r {
		return n.maxLen >= q.D
	}
	return true
}

// dualBelow is the capacity test of thesis §4.3.2 written in the dual plane:
// the idle period k of a server of rate μ is the point l_k* = (−μ, −μ·et_k)
// (eq. 4.6); the job's earliest point P = (r, l) is the line
// P* : y = r·x − l (eq. 4.7). k has the capacity for the job iff l_k* lies
// below P* at x = −μ, i.e. −μ·et_k <= −μ·r − l. Within one rate class the
// dual y-coordinate orders periods by their end, so the per-class primal
// tree's "latest end" is the dual tree's extreme point and the search uses the
// equivalent integer test et_k >= r + ⌈l/μ⌉ (exact with ticks).
func dualBelow(mu float64, et, r, l int64) bool {
	y := -mu * float64(et)                // l_k*: (−μ, −μ·et_k)
	line := float64(r)*(-mu) - float64(l) // P* at x = −μ
	return y <= line
}

func (ix *Index) leftmost(n *tnode, q *query) *period {
	for n != nil {
		ix.stats.Ops++
		if !q.may(n) {
			return nil
		}
		if x := ix.leftmost(n.l, q); x != nil {
			return x
		}
		if q.fits(n.p) {
			return n.p
		}
		n = n.r
	}
	return nil
}

func (ix *Index) rightmost(n *tnode, q *query) *period {
	for n != nil {
		ix.stats.Ops++
		if !q.may(n) {
			return nil
		}
		if x := ix.rightmost(n.r, q); x != nil {
			return x
		}
		if q.fits(n.p) {
			return n.p
		}
		n = n.l
	}
	return nil
}

// key is a lexicographic objective: smaller is better. Every strategy's
// key ends with the node, so the optimum is unique.
type key [3]int64

func (a key) less(b key) bool {
	if a[0] != b[0] {
		return a[0] < b[0]
	}
	if a[1] != b[1] {
		return a[1] < b[1]
	}
	return a[2] < b[2]
}

var worst = key{math.MaxInt64, math.MaxInt64, math.MaxInt64}

func neg(x int64) int64 {
	if x == Inf {
		return math.MinInt64
	}
	return -x
}

// place returns the start a strategy gives the job inside p and the key.
// This is the definition of the strategies; the trees only find its optimum
// faster. s is where the job starts.
func place(st Strategy, p *period, q *query) (s int64, k key) {
	node := int64(p.node)
	early := max(p.st, q.r)
	switch st {
	case MinLIP, LACT:
		return early, key{early - p.st, early, node}
	case MaxLIP:
		return early, key{neg(early - p.st), early, node}
	case FirstFit, FFHA:
		return early, key{p.st, node, 0}
	case MinTIP:
		c := min(p.end, q.d)
		if c == Inf {
			return early, key{Inf, early + q.D, node}
		}
		return c - q.D, key{span(c, p.end), c, node}
	case MaxTIP:
		return early, key{neg(span(early+q.D, p.end)), early, node}
	case BestFit:
		w := p.length()
		if w != Inf {
			w -= q.D
		}
		return early, key{w, early, node}
	}
	panic("reserve: bad strategy")
}

type cand struct {
	p   *period
	s   int64
	k   key
	cls int
}

func (ix *Index) queryFor(c int, r, d, w int64) (query, bool) {
	D := ix.dur(c, w)
	if r > d-D {
		return query{}, false
	}
	return query{r: r, d: d, D: D, stLo: math.MinInt64, stHi: math.MaxInt64}, true
}

// lastStrip is the last strip that may hold a period starting by d−D.
func (ix *Index) lastStrip(q *query) int64 {
	hi := ix.topStrip() - 1
	if q.d-q.D < Inf/2 {
		hi = min(hi, ix.stripOf(q.d-q.D))
	}
	return hi
}

func (ix *Index) tree(k int64, c int) *tree {
	s := ix.stripAt(k)
	if s == nil {
		return nil
	}
	return s.trees[c]
}

func better(a, b cand) bool { return a.p != nil && (b.p == nil || a.k.less(b.k)) }

// find returns the strategy's choice for one node (n = 1), or p == nil.
func (ix *Index) find(st Strategy, r, d, w int64) cand {
	best := cand{k: worst}
	// a few rate classes fit on the stack: no allocation per request.
	var qbuf [4]query
	var obuf [4]bool
	qs, ok := qbuf[:0], obuf[:0]
	if n := len(ix.classes); n <= len(qbuf) {
		qs, ok = qbuf[:n], obuf[:n]
	} else {
		qs, ok = make([]query, n), make([]bool, n)
	}
	any := false
	for c := range ix.classes {
		qs[c], ok[c] = ix.queryFor(c, r, d, w)
		any = any || ok[c]
	}
	if !any {
		return best
	}
	switch st {
	case FirstFit, MaxLIP:
		// strips in increasing order, first feasible period of each tree (§3.3.4).
		return ix.firstFit(st, qs, ok, nil)
	case FFHA:
		// FF-HA+ (§4.4): the classes in ascending rate, first fit in each.
		for _, c := range ix.order {
			if ok[c] {
				only := make([]bool, len(ok))
				only[c] = true
				if x := ix.firstFit(st, qs, only, nil); x.p != nil {
					return x
				}
			}
		}
		return best
	case MinLIP:
		return ix.minLIP(qs, ok)
	case MinTIP:
		return ix.minTIP(qs, ok)
	case LACT:
		for c := range ix.classes {
			if !ok[c] {
				continue
			}
			q := qs[c]
			if x := ix.lipIn(func(int64) *tree { return ix.tails[c] }, 0, 0, 0, &q, c); better(x, best) {
				best = x
			}
		}
		return best
	case BestFit:
		return ix.bestFit(qs, ok)
	case MaxTIP:
		return ix.maxTIP(qs, ok)
	}
	panic("reserve: bad strategy")
}

// firstFit scans strips upward; the first strip with a fitting period holds
// the earliest-starting one.
func (ix *Index) firstFit(st Strategy, qs []query, ok []bool, _ []int) cand {
	best := cand{k: worst}
	hi := int64(math.MinInt64)
	for c := range qs {
		if ok[c] {
			hi = max(hi, ix.lastStrip(&qs[c]))
		}
	}
	for k := ix.base; k <= hi; k++ {
		for c := range qs {
			if !ok[c] || k > ix.lastStrip(&qs[c]) {
				continue
			}
			if t := ix.tree(k, c); t != nil {
				if p := ix.leftmost(t.root, &qs[c]); p != nil {
					s, kk := place(st, p, &qs[c])
					if x := (cand{p, s, kk, c}); better(x, best) {
						best = x
					}
				}
			}
		}
		if best.p != nil {
			return best
		}
	}
	return best
}

// minLIP is the algorithm of thesis §3.3.2: step 1 searches region R_2
// (st >= r) strip by strip downward in time from the strip of r, where any
// fit leaves no leading idle period, taking the earliest start; step 2
// searches region R_1 (st < r) from the strip of r back to the first live
// strip for the latest-starting period that fits, which minimises r − st.
func (ix *Index) minLIP(qs []query, ok []bool) cand {
	best := cand{k: worst}
	for c := range qs {
		if !ok[c] {
			continue
		}
		q := qs[c]
		tr := func(k int64) *tree { return ix.tree(k, c) }
		if x := ix.lipIn(tr, ix.base, ix.lastStrip(&q), ix.stripOf(q.r), &q, c); better(x, best) {
			best = x
		}
	}
	return best
}

// lipIn runs both steps of min-LIP on the trees of strips lo..hi of one
// class; rs is the strip of r. For LACT the single tree of completion times
// is strip 0.
func (ix *Index) lipIn(tr func(int64) *tree, lo, hi, rs int64, q *query, c int) cand {
	// Step 1: region R_2, st >= r, earliest start first.
	q2 := *q
	q2.stLo = q.r
	for k := max(rs, lo); k <= hi; k++ {
		if t := tr(k); t != nil && t.root != nil {
			ix.stats.Ops++
			if p := ix.leftmost(t.root, &q2); p != nil {
				s, kk := place(MinLIP, p, q)
				return cand{p, s, kk, c}
			}
		}
	}
	// Step 2: region R_1, st < r, latest start first.
	q1 := *q
	q1.stHi = q.r
	for k := min(rs, hi); k >= lo; k-- {
		if t := tr(k); t != nil && t.root != nil {
			if p := ix.rightmost(t.root, &q1); p != nil {
				// the same start on a lower-numbered node wins the tie.
				q1.stLo, q1.stHi = p.st, p.st+1
				p = ix.leftmost(t.root, &q1)
				s, kk := place(MinLIP, p, q)
				return cand{p, s, kk, c}
			}
		}
	}
	return cand{k: worst}
}

// coQuery is one co-allocation probe at start s (§5.4).
func (ix *Index) coFeasible(s, d, w int64, n int) []cand {
	// Phase 1: count candidate periods (st <= s) with subtree sizes.
	ks := min(ix.stripOf(s), ix.topStrip()-1)
	count := 0
	for k := ix.base; k <= ks && count < n; k++ {
		st := ix.stripAt(k)
		if st == nil {
			continue
		}
		for _, t := range st.trees {
			if t == nil || t.root == nil {
				continue
			}
			ix.stats.Ops++
			if k < ks {
				count += int(t.root.size)
			} else {
				count += t.countStLE(s)
			}
		}
	}
	if count < n {
		return nil
	}
	// Phase 2: among the candidates, those that end after s + D, latest
	// start first (strips from the one holding s back in time).
	var got []cand
	for k := ks; k >= ix.base && len(got) < n; k-- {
		var here []cand
		for c := range ix.classes {
			t := ix.tree(k, c)
			if t == nil || t.root == nil {
				continue
			}
			D := ix.dur(c, w)
			if s+D > d {
				continue
			}
			q := query{r: s, d: d, D: D, stLo: math.MinInt64, stHi: s + 1}
			ix.collect(t.root, &q, c, &here)
		}
		slices.SortFunc(here, func(a, b cand) int {
			if a.p.st != b.p.st {
				if a.p.st > b.p.st {
					return -1
				}
				return 1
			}
			return int(a.p.node - b.p.node)
		})
		got = append(got, here...)
	}
	if len(got) < n {
		return nil
	}
	return got[:n]
}

func (ix *Index) collect(n *tnode, q *query, c int, out *[]cand) {
	for n != nil {
		ix.stats.Ops++
		if !q.may(n) {
			return
		}
		ix.collect(n.l, q, c, out)
		if q.fits(n.p) {
			*out = append(*out, cand{p: n.p, s: q.r, cls: c})
		}
		n = n.r
	}
}

// FreeIn is the range search of thesis §5.4: the nodes idle during the whole
// window [a, b), in increasing order, without booking anything. Idle periods
// shorter than ⌈l_min/μ⌉ are not indexed, so a window shorter than that may
// miss a node that is free.
func (ix *Index) FreeIn(a, b int64) []int {
	if b <= a {
		return nil
	}
	var out []int
	ks := min(ix.stripOf(a), ix.topStrip()-1)
	for k := ix.base; k <= ks; k++ {
		for c := range ix.classes {
			if t := ix.tree(k, c); t != nil {
				q := query{r: a, d: Inf, D: b - a, stLo: math.MinInt64, stHi: a + 1}
				var got []cand
				ix.collect(t.root, &q, c, &got)
				for _, x := range got {
					out = append(out, int(x.p.node))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
