package reserve

import "math"

// Min-TIP works on vertical strips (thesis §3.3.4: "the plane must be
// partitioned into vertical strips … each tree must store the idle periods in
// increasing order of their ending times"). Rather than a second tree type,
// the vertical strips hold the mirror image of each period under time
// reversal, (st, end) → (−end, −st): the trailing idle period of the original
// is the leading idle period of the image, so min-TIP is min-LIP's search run
// on the images with the request (r, d) → (−d, −r). Strip j holds the periods
// ending in (jW, (j+1)W]; it expires whole once (j+1)W <= now, always in O(1).
// Trailing idle periods of nodes (end ∞) have no image; they are the last
// resort of min-TIP and are looked up in the per-class tree of completion
// times. The mirror is kept only when the strategy is min-TIP.

type mirror struct {
	slots []*strip
	head  int
	base  int64
}

func (m *mirror) at(j int64) *strip {
	off := j - m.base
	if off < 0 || off >= int64(len(m.slots)) {
		return nil
	}
	return m.slots[(m.head+int(off))%len(m.slots)]
}

func (m *mirror) top() int64 { return m.base + int64(len(m.slots)) }

func (m *mirror) get(j int64, ncls int) *strip {
	off := j - m.base
	for off >= int64(len(m.slots)) {
		ns := make([]*strip, 2*len(m.slots))
		for i := range m.slots {
			ns[i] = m.slots[(m.head+i)%len(m.slots)]
		}
		m.slots, m.head = ns, 0
	}
	i := (m.head + int(off)) % len(m.slots)
	if m.slots[i] == nil {
		m.slots[i] = &strip{trees: make([]*tree, ncls)}
	}
	return m.slots[i]
}

func (ix *Index) mirStrip(end int64) int64 { return floorDiv(end-1, ix.width) }

// mirAdd indexes the image of p.
func (ix *Index) mirAdd(p *period) {
	if ix.mir == nil || p.end == Inf {
		return
	}
	img := &period{node: p.node, st: -p.end, end: -p.st, twin: p}
	p.twin = img
	c := ix.nodes[p.node].cls
	s := ix.mir.get(ix.mirStrip(p.end), len(ix.classes))
	if s.trees[c] == nil {
		s.trees[c] = newTree(&ix.stats.Ops)
	}
	s.trees[c].insert(img)
}

func (ix *Index) mirDrop(p *period) {
	if img := p.twin; img != nil {
		if img.t != nil && !img.t.dead {
			img.t.remove(img)
		}
		p.twin = nil
	}
}

// mirAdvance discards the vertical strips whose periods all ended.
func (ix *Index) mirAdvance(now int64) {
	m := ix.mir
	nb := floorDiv(now, ix.width)
	if nb <= m.base {
		return
	}
	steps := min(nb-m.base, int64(len(m.slots)))
	for range steps {
		if s := m.slots[m.head]; s != nil {
			for _, t := range s.trees {
				if t != nil {
					t.dead = true
				}
			}
			m.slots[m.head] = nil
		}
		ix.stats.Rotations++
		ix.stats.O1Rotations++
		m.head = (m.head + 1) % len(m.slots)
	}
	m.base = nb
}

// minTIP finds min-TIP's choice: the period the job can end exactly at
// (end <= d) with the earliest end; else the one ending soonest after d
// (the job ends at d); else a node's trailing idle period.
func (ix *Index) minTIP(qs []query, ok []bool) cand {
	for step := 1; step <= 2; step++ {
		best := cand{k: worst}
		for c := range qs {
			if !ok[c] {
				continue
			}
			if x := ix.mirSearch(&qs[c], c, step); better(x, best) {
				best = x
			}
		}
		if best.p != nil {
			return best
		}
	}
	best := cand{k: worst}
	for c := range qs {
		if !ok[c] {
			continue
		}
		if x := ix.tailFit(MinTIP, &qs[c], c); better(x, best) {
			best = x
		}
	}
	return best
}

// mirSearch is step 1 (region R_2 of the image: end <= d) or step 2
// (region R_1 of the image: end > d) of min-LIP on the images of class c.
func (ix *Index) mirSearch(q *query, c, step int) cand {
	rr := int64(math.MinInt64 + 1) // −d for d = ∞
	if q.d != Inf {
		rr = -q.d
	}
	img := query{r: rr, d: -q.r, D: q.D, stLo: math.MinInt64, stHi: math.MaxInt64}
	var lo, hi int64
	if step == 1 {
		img.stLo = rr
		lo, hi = ix.mirStrip(q.r+q.D), ix.mir.top()-1
		if q.d != Inf {
			hi = min(hi, ix.mirStrip(q.d))
		}
	} else {
		if q.d == Inf {
			return cand{k: worst}
		}
		img.stHi = rr
		lo, hi = ix.mirStrip(q.d+1), ix.mir.top()-1
	}
	for j := max(lo, ix.mir.base); j <= hi; j++ {
		s := ix.mir.at(j)
		if s == nil || s.trees[c] == nil || s.trees[c].root == nil {
			continue
		}
		t := s.trees[c]
		ix.stats.Ops++
		p := ix.rightmost(t.root, &img)
		if p == nil {
			continue
		}
		// the same end on a lower-numbered node wins the tie.
		tie := img
		tie.stLo, tie.stHi = p.st, p.st+1
		p = ix.leftmost(t.root, &tie).twin
		s0, k := place(MinTIP, p, q)
		return cand{p, s0, k, c}
	}
	return cand{k: worst}
}

// tailFit picks among the trailing idle periods of class c (end ∞), for
// strategies whose key ranks them by (start as early as possible, node):
// the lowest node idle for good by max(r, …) if the deadline allows.
func (ix *Index) tailFit(st Strategy, q *query, c int) cand {
	t := ix.tails[c]
	if t.root == nil {
		return cand{k: worst}
	}
	var p *period
	if st == MinTIP && q.d != Inf {
		// the job ends at d: any tail starting by d − D, lowest node.
		if nd := t.minNodeStLE(q.d - q.D); nd >= 0 {
			p = ix.lact[nd]
		} else {
			return cand{k: worst}
		}
	} else if nd := t.minNodeStLE(q.r); nd >= 0 {
		p = ix.lact[nd]
	} else {
		p = t.first()
	}
	if !q.fits(p) {
		return cand{k: worst}
	}
	s, k := place(st, p, q)
	return cand{p, s, k, c}
}
