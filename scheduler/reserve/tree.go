package reserve

// The per-strip search tree of thesis §3.3.1: idle periods ordered by
// starting time (ties by node), every tree node augmented with summaries of
// its subtree. The thesis uses augmented red-black trees; this is a treap
// whose priorities are a hash of the key, so its shape is a deterministic
// function of its contents and balanced in expectation (O(log n) depth).
//
// Augmentation per subtree (the thesis keeps "the latest ending time" and
// "the longest period"; the other bounds serve the branch-and-bound
// strategies, FF-HA+ and co-allocation counting):
//
//	size            number of periods (phase-1 counting, §5.3)
//	minSt, maxSt    first and last starting time
//	maxEnd          latest ending time
//	maxLen          longest period (wall time)
//	minNd           lowest node (ties among trailing idle periods)

// period is one idle period of one node, [st, end). end == Inf for the
// trailing idle period of a node. t is the tree that holds it (nil when the
// period is too short to be indexed); a tree that was discarded by rotation
// is marked dead, which is how O(1) discards stay correct.
type period struct {
	// tn comes first: with the key right after it a period is 120 bytes,
	// two cache lines of its 128-byte size class, and a search touches both.
	tn   tnode // its node in the tree t (one allocation per period)
	node int32
	st   int64
	end  int64
	t    *tree
	// twin links a period and its mirror image (st, end) → (−end, −st) in
	// the end-ordered strips of min-TIP (see mirror.go).
	twin *period
	sec  *secNodes // its nodes in the secondary trees of t (best-fit, max-TIP)
}

func (p *period) length() int64 { return span(p.st, p.end) }

// span is b-a, saturating at Inf.
func span(a, b int64) int64 {
	if b == Inf {
		return Inf
	}
	return b - a
}

type tnode struct {
	p      *period
	prio   uint64
	l, r   *tnode
	size   int32
	minNd  int32 // lowest node number in the subtree
	minSt  int64
	maxSt  int64
	maxEnd int64
	maxLen int64
}

type tree struct {
	root *tnode
	dead bool
	ops  *int64 // shared operation counter of the index
	// e and l are the strip's secondary trees (sec.go), nil unless the
	// strategy needs them; they hold the finite periods of root.
	e, l *stree
}

func newTree(ops *int64) *tree { return &tree{ops: ops} }

func (t *tree) len() int {
	if t == nil || t.root == nil {
		return 0
	}
	return int(t.root.size)
}

func prioOf(st int64, node int32) uint64 {
	// splitmix64 of the key: deterministic, well spread.
	x := uint64(st)*0x9e3779b97f4a7c15 ^ uint64(uint32(node))
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func less(a, b *period) bool {
	if a.st != b.st {
		return a.st < b.st
	}
	return a.node < b.node
}

func (n *tnode) pull() {
	p := n.p
	n.size = 1
	n.minSt, n.maxSt = p.st, p.st
	n.maxEnd = p.end
	n.maxLen = p.length()
	n.minNd = p.node
	if c := n.l; c != nil {
		n.size += c.size
		n.minSt = c.minSt
		n.maxEnd = max(n.maxEnd, c.maxEnd)
		n.maxLen = max(n.maxLen, c.maxLen)
		n.minNd = min(n.minNd, c.minNd)
	}
	if c := n.r; c != nil {
		n.size += c.size
		n.maxSt = c.maxSt
		n.maxEnd = max(n.maxEnd, c.maxEnd)
		n.maxLen = max(n.maxLen, c.maxLen)
		n.minNd = min(n.minNd, c.minNd)
	}
}

// split cuts n into keys < p and keys >= p.
func (t *tree) split(n *tnode, p *period) (*tnode, *tnode) {
	if n == nil {
		return nil, nil
	}
	*t.ops++
	if less(n.p, p) {
		a, b := t.split(n.r, p)
		n.r = a
		n.pull()
		return n, b
	}
	a, b := t.split(n.l, p)
	n.l = b
	n.pull()
	return a, n
}

func (t *tree) merge(a, b *tnode) *tnode {
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

func (t *tree) insert(p *period) {
	nn := &p.tn
	*nn = tnode{p: p, prio: prioOf(p.st, p.node)}
	nn.pull()
	t.root = t.ins(t.root, nn)
	p.t = t
	if t.e != nil && p.end != Inf {
		t.secAdd(p)
	}
}

func (t *tree) secAdd(p *period) {
	if p.sec == nil {
		p.sec = new(secNodes)
	}
	t.e.insert(p)
	t.l.insert(p)
}

// withSec gives t its secondary trees, filled from the primary.
func (t *tree) withSec() {
	if t.e != nil {
		return
	}
	t.e, t.l = &stree{kind: byEnd, ops: t.ops}, &stree{kind: byLen, ops: t.ops}
	t.each(func(p *period) {
		if p.end != Inf {
			t.secAdd(p)
		}
	})
}

func (t *tree) ins(n, nn *tnode) *tnode {
	if n == nil {
		return nn
	}
	*t.ops++
	if nn.prio > n.prio {
		nn.l, nn.r = t.split(n, nn.p)
		nn.pull()
		return nn
	}
	// Adding a period only widens the summaries, so they are updated on
	// the way down from the new period alone: the sibling subtrees are
	// not read (one cache miss fewer per level; n.pull would read both).
	n.absorb(nn)
	if less(nn.p, n.p) {
		n.l = t.ins(n.l, nn)
	} else {
		n.r = t.ins(n.r, nn)
	}
	return n
}

// absorb widens n's summaries by the single period of leaf x.
func (n *tnode) absorb(x *tnode) {
	n.size++
	n.minSt = min(n.minSt, x.minSt)
	n.maxSt = max(n.maxSt, x.maxSt)
	n.maxEnd = max(n.maxEnd, x.maxEnd)
	n.maxLen = max(n.maxLen, x.maxLen)
	n.minNd = min(n.minNd, x.minNd)
}

// holds reports whether p attains one of n's summaries, so that removing
// it may change them; otherwise only the size drops.
func (n *tnode) holds(p *period) bool {
	return p.st == n.minSt || p.st == n.maxSt || p.end == n.maxEnd ||
		p.length() == n.maxLen || p.node == n.minNd
}

// remove deletes p (matched by key and identity); it reports whether p was found.
func (t *tree) remove(p *period) bool {
	var ok bool
	t.root = t.del(t.root, p, &ok)
	if ok {
		p.t = nil
		if t.e != nil && p.end != Inf {
			t.e.remove(p)
			t.l.remove(p)
		}
	}
	return ok
}

func (t *tree) del(n *tnode, p *period, ok *bool) *tnode {
	if n == nil {
		return nil
	}
	*t.ops++
	if n.p == p {
		*ok = true
		return t.merge(n.l, n.r)
	}
	if less(p, n.p) {
		n.l = t.del(n.l, p, ok)
	} else {
		n.r = t.del(n.r, p, ok)
	}
	if *ok {
		if n.holds(p) {
			n.pull()
		} else {
			n.size--
		}
	}
	return n
}

// each calls f for every period in key order.
func (t *tree) each(f func(*period)) {
	var walk func(*tnode)
	walk = func(n *tnode) {
		if n == nil {
			return
		}
		walk(n.l)
		f(n.p)
		walk(n.r)
	}
	walk(t.root)
}

// countStLE counts periods with st <= s using subtree sizes (§5.4 phase 1).
func (t *tree) countStLE(s int64) int {
	c := 0
	n := t.root
	for n != nil {
		*t.ops++
		if n.maxSt <= s {
			return c + int(n.size)
		}
		if n.p.st <= s {
			c++
			if n.l != nil {
				c += int(n.l.size)
			}
			n = n.r
		} else {
			n = n.l
		}
	}
	return c
}

// minNodeStLE is the lowest node among periods with st <= x (-1 if none).
func (t *tree) minNodeStLE(x int64) int32 {
	best := int32(-1)
	take := func(v int32) {
		if best < 0 || v < best {
			best = v
		}
	}
	n := t.root
	for n != nil {
		*t.ops++
		if n.maxSt <= x {
			take(n.minNd)
			break
		}
		if n.p.st <= x {
			take(n.p.node)
			if n.l != nil {
				take(n.l.minNd)
			}
			n = n.r
		} else {
			n = n.l
		}
	}
	return best
}

// first is the leftmost period.
func (t *tree) first() *period {
	n := t.root
	if n == nil {
		return nil
	}
	for n.l != nil {
		n = n.l
	}
	return n.p
}
