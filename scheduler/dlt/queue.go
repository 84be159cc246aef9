package dlt

import "math"

// key orders the task waiting queue (TWQ): EDF by absolute deadline, ties by
// admission sequence (first admitted first).
type key struct {
	d   float64
	seq uint64
}

func (a key) less(b key) bool { return a.d < b.d || (a.d == b.d && a.seq < b.seq) }

// entry is what AC-FAST records of a queued task: its admission-view
// completion C (ac-fast-2009 Algorithm 1 line 24) and ANA execution time 𝓔.
// The slack is d − C (eq. 3).
type entry struct {
	k  key
	id int64
	c  float64
	e  float64
}

// twq is the task waiting queue of AC-FAST with the queries Algorithm 1
// needs. Two implementations: sliceTWQ, the literal O(n) reading of
// Algorithms 1–2, kept as the reference; treapTWQ, O(log n).
type twq interface {
	// pred is the C of the last task before k; ok false if none.
	pred(k key) (c float64, ok bool)
	// succMinSlack is slack_min of the first task after k (eq. 4); +Inf if none.
	succMinSlack(k key) float64
	insert(e entry)
	// addAfter adds delta to C of every task after k (Algorithm 1 lines 27–29;
	// their slacks fall by the same amount, Algorithm 2 lines 1–5).
	addAfter(k key, delta float64)
	popMin() (entry, bool)
	remove(k key) bool
	len() int
	// each visits the entries in order, with their current C.
	each(func(entry))
}

// sliceTWQ is the reference: a sorted slice, linear updates.
type sliceTWQ struct{ q []entry }

func (s *sliceTWQ) pos(k key) int { // first index with key ≥ k … strictly after
	i := 0
	for i < len(s.q) && s.q[i].k.less(k) {
		i++
	}
	return i
}

func (s *sliceTWQ) pred(k key) (float64, bool) {
	i := s.pos(k)
	if i == 0 {
		return 0, false
	}
	return s.q[i-1].c, true
}

func (s *sliceTWQ) succMinSlack(k key) float64 {
	m := math.Inf(1)
	for _, e := range s.q {
		if k.less(e.k) {
			m = math.Min(m, e.k.d-e.c)
		}
	}
	return m
}

func (s *sliceTWQ) insert(e entry) {
	i := s.pos(e.k)
	s.q = append(s.q, entry{})
	copy(s.q[i+1:], s.q[i:])
	s.q[i] = e
}

func (s *sliceTWQ) addAfter(k key, delta float64) {
	for i := range s.q {
		if k.less(s.q[i].k) {
			s.q[i].c += delta
		}
	}
}

func (s *sliceTWQ) popMin() (entry, bool) {
	if len(s.q) == 0 {
		return entry{}, false
	}
	e := s.q[0]
	s.q = s.q[1:]
	return e, true
}

func (s *sliceTWQ) remove(k key) bool {
	for i, e := range s.q {
		if e.k == k {
			s.q = append(s.q[:i], s.q[i+1:]...)
			return true
		}
	}
	return false
}

func (s *sliceTWQ) len() int { return len(s.q) }

func (s *sliceTWQ) each(f func(entry)) {
	for _, e := range s.q {
		f(e)
	}
}

// treapTWQ is a treap keyed by (deadline, seq), each node augmented with the
// minimum slack d − C of its subtree and a lazy addition to C pending for its
// children. Every operation is O(log n) expected.
type treapTWQ struct {
	root *tnode
	n    int
	rng  uint64 // xorshift state for priorities: deterministic
}

type tnode struct {
	e           entry
	prio        uint64
	lazy        float64 // to add to C of both children's subtrees
	min         float64 // min slack over this subtree (own values current)
	left, right *tnode
}

func (t *treapTWQ) nextPrio() uint64 {
	if t.rng == 0 {
		t.rng = 0x9e3779b97f4a7c15
	}
	x := t.rng
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	t.rng = x
	return x
}

func minSlack(x *tnode) float64 {
	if x == nil {
		return math.Inf(1)
	}
	return x.min
}

func (x *tnode) apply(delta float64) {
	if x == nil {
		return
	}
	x.e.c += delta
	x.min -= delta
	x.lazy += delta
}

func (x *tnode) push() {
	if x.lazy != 0 {
		x.left.apply(x.lazy)
		x.right.apply(x.lazy)
		x.lazy = 0
	}
}

func (x *tnode) pull() {
	x.min = math.Min(x.e.k.d-x.e.c, math.Min(minSlack(x.left), minSlack(x.right)))
}

// split cuts x into keys < k and keys ≥ k.
func split(x *tnode, k key) (l, r *tnode) {
	if x == nil {
		return nil, nil
	}
	x.push()
	if x.e.k.less(k) {
		x.right, r = split(x.right, k)
		x.pull()
		return x, r
	}
	l, x.left = split(x.left, k)
	x.pull()
	return l, x
}

func merge(a, b *tnode) *tnode {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		a.push()
		a.right = merge(a.right, b)
		a.pull()
		return a
	default:
		b.push()
		b.left = merge(a, b.left)
		b.pull()
		return b
	}
}

func (t *treapTWQ) pred(k key) (float64, bool) {
	var acc float64 // lazies of the ancestors, pending for the current node
	var best float64
	ok := false
	for x := t.root; x != nil; {
		if x.e.k.less(k) {
			best, ok = x.e.c+acc, true
			acc += x.lazy
			x = x.right
		} else {
			acc += x.lazy
			x = x.left
		}
	}
	return best, ok
}

func (t *treapTWQ) succMinSlack(k key) float64 {
	m := math.Inf(1)
	var acc float64
	for x := t.root; x != nil; {
		if k.less(x.e.k) {
			m = math.Min(m, x.e.k.d-(x.e.c+acc))
			m = math.Min(m, minSlack(x.right)-(acc+x.lazy))
			acc += x.lazy
			x = x.left
		} else {
			acc += x.lazy
			x = x.right
		}
	}
	return m
}

func (t *treapTWQ) insert(e entry) {
	nd := &tnode{e: e, prio: t.nextPrio(), min: e.k.d - e.c}
	l, r := split(t.root, e.k)
	t.root = merge(merge(l, nd), r)
	t.n++
}

// addAfter walks one root-to-leaf path: O(depth).
func (t *treapTWQ) addAfter(k key, delta float64) {
	var walk func(x *tnode)
	walk = func(x *tnode) {
		if x == nil {
			return
		}
		x.push()
		if k.less(x.e.k) {
			x.e.c += delta
			x.right.apply(delta)
			walk(x.left)
		} else {
			walk(x.right)
		}
		x.pull()
	}
	walk(t.root)
}

func (t *treapTWQ) popMin() (entry, bool) {
	if t.root == nil {
		return entry{}, false
	}
	var walk func(x *tnode) (*tnode, entry)
	walk = func(x *tnode) (*tnode, entry) {
		x.push()
		if x.left == nil {
			return x.right, x.e
		}
		var e entry
		x.left, e = walk(x.left)
		x.pull()
		return x, e
	}
	var e entry
	t.root, e = walk(t.root)
	t.n--
	return e, true
}

func (t *treapTWQ) remove(k key) bool {
	l, r := split(t.root, k)
	// r's minimum is k if present.
	var found bool
	if r != nil {
		var walk func(x *tnode) *tnode
		walk = func(x *tnode) *tnode {
			x.push()
			if x.left == nil {
				if x.e.k == k {
					found = true
					return x.right
				}
				return x
			}
			x.left = walk(x.left)
			x.pull()
			return x
		}
		r = walk(r)
	}
	t.root = merge(l, r)
	if found {
		t.n--
	}
	return found
}

func (t *treapTWQ) len() int { return t.n }

func (t *treapTWQ) each(f func(entry)) {
	var walk func(x *tnode, acc float64)
	walk = func(x *tnode, acc float64) {
		if x == nil {
			return
		}
		walk(x.left, acc+x.lazy)
		e := x.e
		e.c += acc
		f(e)
		walk(x.right, acc+x.lazy)
	}
	walk(t.root, 0)
}
