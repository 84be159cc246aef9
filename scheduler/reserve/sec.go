package reserve

// Secondary trees of a strip (thesis §3.3.3, the second dimension of the
// best-fit tree T_h): the strip's finite idle periods once more, ordered
//
//	byEnd  by (end, node)         — t_h^e, augmented with the period of least
//	                                (length, node): best fit in region R_1
//	byLen  by (length, st, node)  — t_h^l: best fit in region R_2 is the
//	                                successor of the job's length
//
// The thesis hangs a secondary tree on every node u of the primary tree; hora
// keeps one of each per strip (the secondary trees of the primary root) and
// augments every secondary node with the first and last starting time of its
// subtree instead. A query whose starting-time bound cuts a strip (only the
// strip of r, and the strip of d−l) is answered by descending the secondary
// tree while the starting-time bounds say a subtree still holds a candidate;
// every other strip lies wholly in R_1 or R_2 and costs one O(log n) descent.
// Trailing idle periods of nodes (end ∞) are not stored here: they are
// looked up in the per-class tree of completion times (Index.tails).
//
// The trees exist only while the strategy is best-fit or max-TIP; every
// other strategy pays nothing for them.

type skind uint8

const (
	byEnd skind = iota
	byLen
)

type snode struct {
	p            *period
	prio         uint64
	l, r         *snode
	minSt, maxSt int64
	minLN        *period // least (length, node) in the subtree
	last         *period // greatest key in the subtree (its rightmost)
	k            skey    // p's key, copied so a descent does not read p
}

type skey struct {
	st, end int64
	node    int32
}

func keyOf(p *period) skey { return skey{p.st, p.end, p.node} }

func (k skey) length() int64 { return span(k.st, k.end) }

// secNodes are a period's nodes in the two secondary trees of its strip.
type secNodes struct{ e, l snode }

type stree struct {
	root *snode
	kind skind
	ops  *int64
}

// lnLess orders periods by (length, node): the best-fit order within R_1,
// where every candidate starts the job at r. The start breaks the last tie
// (two periods of one node with one length give the same booking) so that
// the order is total and the summaries are a function of the contents.
func lnLess(a, b *period) bool {
	la, lb := a.length(), b.length()
	if la != lb {
		return la < lb
	}
	if a.node != b.node {
		return a.node < b.node
	}
	return a.st < b.st
}

func (t *stree) less(a, b skey) bool {
	if t.kind == byEnd {
		if a.end != b.end {
			return a.end < b.end
		}
		if a.node != b.node {
			return a.node < b.node
		}
		return a.st < b.st // one node's periods are disjoint; kept total for tests
	}
	la, lb := a.length(), b.length()
	if la != lb {
		return la < lb
	}
	if a.st != b.st {
		return a.st < b.st
	}
	return a.node < b.node
}

func (n *snode) pull() {
	p := n.p
	n.minSt, n.maxSt, n.minLN, n.last = p.st, p.st, p, p
	if c := n.l; c != nil {
		n.minSt = min(n.minSt, c.minSt)
		n.maxSt = max(n.maxSt, c.maxSt)
		if lnLess(c.minLN, n.minLN) {
			n.minLN = c.minLN
		}
	}
	if c := n.r; c != nil {
		n.minSt = min(n.minSt, c.minSt)
		n.maxSt = max(n.maxSt, c.maxSt)
		if lnLess(c.minLN, n.minLN) {
			n.minLN = c.minLN
		}
		n.last = c.last
	}
}

func (t *stree) node(p *period) *snode {
	if t.kind == byEnd {
		return &p.sec.e
	}
	return &p.sec.l
}

func (t *stree) insert(p *period) {
	nn := t.node(p)
	// The priority hashes (st, node), unique per period, so the shape is a
	// deterministic function of the contents as in the primary tree; the
	// kind is mixed in so the two secondary trees do not share a shape.
	*nn = snode{p: p, prio: prioOf(p.st, p.node) ^ uint64(t.kind)*0x632be59bd9b4e019, k: keyOf(p)}
	nn.pull()
	t.root = t.ins(t.root, nn)
}

func (t *stree) ins(n, nn *snode) *snode {
	if n == nil {
		return nn
	}
	*t.ops++
	if nn.prio > n.prio {
		nn.l, nn.r = t.split(n, nn.k)
		nn.pull()
		return nn
	}
	// as in the primary tree: widen the summaries on the way down.
	n.minSt = min(n.minSt, nn.minSt)
	n.maxSt = max(n.maxSt, nn.maxSt)
	if lnLess(nn.p, n.minLN) {
		n.minLN = nn.p
	}
	if t.less(nn.k, n.k) {
		n.l = t.ins(n.l, nn)
	} else {
		if t.less(keyOf(n.last), nn.k) {
			n.last = nn.p
		}
		n.r = t.ins(n.r, nn)
	}
	return n
}

func (t *stree) split(n *snode, k skey) (*snode, *snode) {
	if n == nil {
		return nil, nil
	}
	*t.ops++
	if t.less(n.k, k) {
		a, b := t.split(n.r, k)
		n.r = a
		n.pull()
		return n, b
	}
	a, b := t.split(n.l, k)
	n.l = b
	n.pull()
	return a, n
}

func (t *stree) merge(a, b *snode) *snode {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	*t.ops++
	if a.prio > b.prio {
		a.r = t.merge(a.r, b)
		a.pull()
		return a
	}
	b.l = t.merge(a, b.l)
	b.pull()
	return b
}

func (t *stree) remove(p *period) {
	t.root = t.del(t.root, p, keyOf(p))
}

func (t *stree) del(n *snode, p *period, k skey) *snode {
	if n == nil {
		panic("reserve: period missing from a secondary tree")
	}
	*t.ops++
	if n.p == p {
		return t.merge(n.l, n.r)
	}
	if t.less(k, n.k) {
		n.l = t.del(n.l, p, k)
	} else {
		n.r = t.del(n.r, p, k)
	}
	if k.st == n.minSt || k.st == n.maxSt || n.minLN == p || n.last == p {
		n.pull()
	}
	return n
}

func (t *stree) each(f func(*period)) {
	var walk func(*snode)
	walk = func(n *snode) {
		if n == nil {
			return
		}
		walk(n.l)
		f(n.p)
		walk(n.r)
	}
	walk(t.root)
}

// minLNEndGE is the period of least (length, node) among those ending at or
// after x (byEnd): the suffix end ≥ x is a union of O(log n) subtrees whose
// minLN pointers are read on the way down (thesis §3.3.3 step 1).
func (t *stree) minLNEndGE(x int64) *period {
	var best *period
	take := func(p *period) {
		if best == nil || lnLess(p, best) {
			best = p
		}
	}
	for n := t.root; n != nil; {
		*t.ops++
		if n.k.end >= x {
			take(n.p)
			if n.r != nil {
				take(n.r.minLN)
			}
			n = n.l
		} else {
			n = n.r
		}
	}
	return best
}

// bnbEnd is the best fit in R_1 of the strip that holds r: least (length,
// node) among periods ending at or after x that start before stHi. Branch
// and bound on the secondary byEnd tree: the key order cuts the ends before
// x, the starting-time summary cuts subtrees that start at or after stHi,
// and beats cuts a subtree whose lower bound cannot beat the best so far: a
// fitting period there is at least as long as its least length and at
// least x − (its latest start before stHi). Smaller ends first, which are
// the shorter periods, so that the bound bites early. Exact; O(log n) when
// one of the two conditions is slack, at worst the size of one strip.
func (t *stree) bnbEnd(n *snode, x, stHi int64, beats func(ln int64, nd int32) bool, best **period) {
	for n != nil {
		*t.ops++
		if n.minSt >= stHi {
			return
		}
		lb, nd := n.minLN.length(), n.minLN.node
		if b := x - min(n.maxSt, stHi-1); b > lb {
			lb, nd = b, -1 // any node may have that length
		}
		if !beats(lb, nd) {
			return
		}
		if n.k.end < x {
			n = n.r
			continue
		}
		// n and its right subtree end at or after x.
		t.bnbEnd(n.l, x, stHi, beats, best)
		if n.k.st < stHi && beats(n.k.length(), n.k.node) && (*best == nil || lnLess(n.p, *best)) {
			*best = n.p
		}
		n = n.r
	}
}

// leftLen is the least (length, st, node) among periods (byLen) of length at
// least D that start in [lo, hi] (thesis §3.3.3 step 2: "the idle period with
// the minimum length larger than the length of the job"). The starting-time
// bounds cut the subtrees that hold no candidate; with one bound slack it is
// a single O(log n) descent.
func (t *stree) leftLen(n *snode, D, lo, hi int64) *period {
	for n != nil {
		*t.ops++
		if n.maxSt < lo || n.minSt > hi {
			return nil
		}
		if n.k.length() < D {
			n = n.r
			continue
		}
		if x := t.leftLen(n.l, D, lo, hi); x != nil {
			return x
		}
		if n.k.st >= lo && n.k.st <= hi {
			return n.p
		}
		n = n.r
	}
	return nil
}

// rightInSt is the greatest key among periods starting in [lo, hi]: the
// longest finite period (byLen) or the latest finite end (byEnd).
func (t *stree) rightInSt(n *snode, lo, hi int64) *period {
	for n != nil {
		*t.ops++
		if n.maxSt < lo || n.minSt > hi {
			return nil
		}
		if x := t.rightInSt(n.r, lo, hi); x != nil {
			return x
		}
		if n.k.st >= lo && n.k.st <= hi {
			return n.p
		}
		n = n.l
	}
	return nil
}

// leftEndGE is the least (end, node) among periods (byEnd) ending at or
// after x that start in [lo, hi]: the lowest node among those with the
// latest end, for max-TIP's ties.
func (t *stree) leftEndGE(n *snode, x, lo, hi int64) *period {
	for n != nil {
		*t.ops++
		if n.maxSt < lo || n.minSt > hi {
			return nil
		}
		if n.k.end < x {
			n = n.r
			continue
		}
		if y := t.leftEndGE(n.l, x, lo, hi); y != nil {
			return y
		}
		if n.k.st >= lo && n.k.st <= hi {
			return n.p
		}
		n = n.r
	}
	return nil
}
