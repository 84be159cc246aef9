package reserve

import "math"

// Best-fit and max-TIP on the secondary trees of the strips (sec.go).
//
// Both objectives split the feasible region as min-LIP does (thesis §3.2.2,
// Figure 3.2(b)): in R_1 (st < r) the job starts at r and a finite period
// fits iff end ≥ r + D; in R_2 (r ≤ st ≤ d − D) it starts at st and fits iff
// length ≥ D. Strips below the strip of r lie wholly in R_1, strips from the
// one above it up to the strip of d − D wholly in R_2; only the strip of r
// (and the strip of d − D, for its upper bound) is cut.
//
// Trailing idle periods (end ∞) are not in the secondary trees: for best-fit
// they are the last resort (their key's first component is ∞), for max-TIP
// the first choice (an infinite trailing idle period); tailFit answers both.

// bestFit is thesis §3.3.3. Each strip costs one O(log n) descent: R_1
// strips read the least (length, node) over the suffix end ≥ r + D of their
// byEnd tree (step 1), R_2 strips take the successor of D in their byLen
// tree (step 2). The thesis searches every strip; hora visits R_1 strips
// from the strip of r downward and stops once r − (last start in the strip)
// — a lower bound on the leading plus trailing idle time of any period there
// — can no longer beat the best found, which leaves O((k + m') log n) with
// m' the strips within one best-fit length below r.
func (ix *Index) bestFit(qs []query, ok []bool) cand {
	best := cand{k: worst}
	for c := range qs {
		if ok[c] {
			ix.bestFitClass(&qs[c], c, &best)
		}
	}
	if best.p != nil {
		return best
	}
	for c := range qs {
		if ok[c] {
			if x := ix.tailFit(BestFit, &qs[c], c); better(x, best) {
				best = x
			}
		}
	}
	return best
}

func (ix *Index) consider(st Strategy, p *period, q *query, c int, best *cand) {
	if p == nil || !q.fits(p) {
		return
	}
	if s, k := place(st, p, q); k.less(best.k) {
		*best = cand{p, s, k, c}
	}
}

func (ix *Index) bestFitClass(q *query, c int, best *cand) {
	ks := ix.stripOf(q.r)
	kd := ix.lastStrip(q)
	hiSt := q.d - q.D // latest start in R_2
	// Step 2 first (R_2 holds at most k strips and its fits are often
	// tight), so that step 1 starts with a good bound.
	for k := max(ks, ix.base); k <= kd; k++ {
		t := ix.tree(k, c)
		// the root's last key is the strip's longest finite period.
		if t == nil || t.l.root == nil || t.l.root.last.length() < q.D {
			continue
		}
		ix.stats.Ops++
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		if k == ks {
			lo = q.r
		}
		if k == ix.stripOf(hiSt) {
			hi = hiSt
		}
		ix.consider(BestFit, t.l.leftLen(t.l.root, q.D, lo, hi), q, c, best)
	}
	// Step 1: R_1, from the strip of r downward.
	x := q.r + q.D
	for k := min(ks, ix.topStrip()-1); k >= ix.base; k-- {
		t := ix.tree(k, c)
		if t == nil || t.e.root == nil {
			continue
		}
		ix.stats.Ops++
		e := t.e.root
		// every period of strip k and of the strips below starts by
		// e.maxSt, so a fit there leaves at least r − e.maxSt idle.
		if lb := (key{q.r - e.maxSt, q.r, math.MinInt64}); !lb.less(best.k) {
			break
		}
		if e.last.end < x || !ix.r1Beats(e.minLN, q, best) {
			continue
		}
		if k < ks {
			ix.consider(BestFit, t.e.minLNEndGE(x), q, c, best)
			continue
		}
		// the strip of r: only its periods starting before r are in R_1.
		var got *period
		// a period of length ln on node nd (or a higher one) may still win.
		beats := func(ln int64, nd int32) bool {
			if got != nil {
				gl := got.length()
				return ln < gl || (ln == gl && nd <= got.node)
			}
			return key{ln - q.D, q.r, int64(nd)}.less(best.k)
		}
		t.e.bnbEnd(e, x, q.r, beats, &got)
		ix.consider(BestFit, got, q, c, best)
	}
}

// r1Beats: a period of R_1 as long as p (and with p's node or a higher one)
// could still beat best. The job starts at r there, so its best-fit key is
// (length − D, r, node).
func (ix *Index) r1Beats(p *period, q *query, best *cand) bool {
	return key{p.length() - q.D, q.r, int64(p.node)}.less(best.k)
}

// maxTIP maximises the trailing idle period end − (start + D). A trailing
// idle period of a node (end ∞) wins whenever one fits. Otherwise, in R_1
// the job starts at r, so the latest finite end wins: the last key of each
// strip's byEnd tree, O(1) per strip, with an O(log n) descent for the
// lowest node among equal ends (and for the start bound in the strip of r).
// In R_2 the job starts at st, so the longest period wins: the last key of
// each byLen tree with its start in [r, d − D]. O(k log n + m).
func (ix *Index) maxTIP(qs []query, ok []bool) cand {
	best := cand{k: worst}
	for c := range qs {
		if ok[c] {
			if x := ix.tailFit(MaxTIP, &qs[c], c); better(x, best) {
				best = x
			}
		}
	}
	if best.p != nil {
		return best
	}
	for c := range qs {
		if ok[c] {
			ix.maxTIPClass(&qs[c], c, &best)
		}
	}
	return best
}

func (ix *Index) maxTIPClass(q *query, c int, best *cand) {
	ks := ix.stripOf(q.r)
	kd := ix.lastStrip(q)
	hiSt := q.d - q.D
	x := q.r + q.D
	// R_1: latest end among periods starting before r.
	for k := ix.base; k <= min(ks, ix.topStrip()-1); k++ {
		t := ix.tree(k, c)
		if t == nil || t.e.root == nil {
			continue
		}
		ix.stats.Ops++
		e := t.e.root
		if k < ks {
			// key (−(end − r − D), r, node): a later end wins, an equal
			// one may win on the node.
			last := e.last.end
			if last < x || (best.p != nil && -(last-x) > best.k[0]) {
				continue
			}
			ix.consider(MaxTIP, t.e.leftEndGE(e, last, math.MinInt64, math.MaxInt64), q, c, best)
			continue
		}
		p := t.e.rightInSt(e, math.MinInt64, q.r-1)
		if p == nil || p.end < x {
			continue
		}
		ix.consider(MaxTIP, t.e.leftEndGE(e, p.end, math.MinInt64, q.r-1), q, c, best)
	}
	// R_2: longest period starting in [r, d − D], earliest start on ties.
	for k := max(ks, ix.base); k <= kd; k++ {
		t := ix.tree(k, c)
		if t == nil || t.l.root == nil {
			continue
		}
		ix.stats.Ops++
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		if k == ks {
			lo = q.r
		}
		if k == ix.stripOf(hiSt) {
			hi = hiSt
		}
		l := t.l.root
		p := t.l.rightInSt(l, lo, hi)
		if p == nil || p.length() < q.D {
			continue
		}
		ix.consider(MaxTIP, t.l.leftLen(l, p.length(), lo, hi), q, c, best)
	}
}
