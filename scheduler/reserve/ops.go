package reserve

import (
	"fmt"
	"slices"
	"sort"
)

// norm turns a request into (r, d, w) in ticks, or a refusal that time
// cannot change.
func (ix *Index) norm(req Request) (r, d, w int64, err *Refusal) {
	if req.Nodes < 1 || req.Nodes > len(ix.nodes) {
		return 0, 0, 0, &Refusal{Never: true, Reason: fmt.Sprintf("%d nodes requested, %d exist", req.Nodes, len(ix.nodes))}
	}
	if req.Work <= 0 {
		return 0, 0, 0, &Refusal{Never: true, Reason: "work must be positive"}
	}
	r = max(req.Release, ix.now)
	d = req.Deadline
	if d <= 0 {
		d = Inf
	}
	// §3.2.1: l_min is the minimum job size; shorter requests are rounded up.
	w = max(req.Work, ix.cfg.LMin)
	return r, d, w, nil
}

// Plan answers a request without booking: the nodes, start and ends the
// configured strategy would choose, or a refusal.
func (ix *Index) Plan(req Request) (Booking, error) {
	r, d, w, ref := ix.norm(req)
	if ref != nil {
		return Booking{}, ref
	}
	if b, ok := ix.plan(r, d, w, req.Nodes); ok {
		return b, nil
	}
	return Booking{}, ix.refuse(r, w, req.Nodes)
}

func (ix *Index) plan(r, d, w int64, n int) (Booking, bool) {
	if n == 1 {
		x := ix.find(ix.cfg.Strategy, r, d, w)
		if x.p == nil {
			return Booking{}, false
		}
		return Booking{Start: x.s, Nodes: []int{int(x.p.node)}, Ends: []int64{x.s + ix.dur(x.cls, w)}}, true
	}
	// Co-allocation (§5.4): try s_r, s_r+Δt, ... up to maxRet retries.
	for k := 0; k <= ix.cfg.MaxRet; k++ {
		s := r + int64(k)*ix.cfg.DeltaT
		if s+ix.fastest(w) > d {
			break
		}
		if got := ix.coFeasible(s, d, w, n); got != nil {
			b := Booking{Start: s}
			slices.SortFunc(got, func(a, b cand) int { return int(a.p.node - b.p.node) })
			for _, x := range got {
				b.Nodes = append(b.Nodes, int(x.p.node))
				b.Ends = append(b.Ends, s+ix.dur(x.cls, w))
			}
			return b, true
		}
	}
	return Booking{}, false
}

func (ix *Index) fastest(w int64) int64 {
	return ix.dur(ix.order[len(ix.order)-1], w)
}

func (ix *Index) slowest(w int64) int64 {
	return ix.dur(ix.order[0], w)
}

// refuse computes the earliest start that would be accepted without the
// deadline: exact for one node (first fit with d = ∞); for n nodes the first
// start on the Δt grid within maxRet retries, else the time when n nodes are
// idle for good.
func (ix *Index) refuse(r, w int64, n int) *Refusal {
	ref := &Refusal{Reason: "no idle period can hold the job by its deadline"}
	if n == 1 {
		x := ix.find(FirstFit, r, Inf, w)
		if x.p != nil {
			ref.EarliestStart = x.s
			ref.EarliestDeadline = x.s + ix.dur(x.cls, w)
		}
		return ref
	}
	ref.Reason = fmt.Sprintf("%d nodes are not idle together by the deadline", n)
	if b, ok := ix.plan(r, Inf, w, n); ok {
		ref.EarliestStart, ref.EarliestDeadline = b.Start, b.End()
		return ref
	}
	comp := make([]int64, len(ix.nodes))
	for i := range ix.nodes {
		comp[i] = ix.completion(i)
	}
	slices.Sort(comp)
	ref.EarliestStart = max(r, comp[n-1])
	ref.EarliestDeadline = ref.EarliestStart + ix.slowest(w)
	return ref
}

// completion is when node i becomes idle for good.
func (ix *Index) completion(i int) int64 {
	ns := &ix.nodes[i]
	if len(ns.slots) == 0 {
		return ns.floor
	}
	return ns.slots[len(ns.slots)-1].end
}

// Reserve books a request with the configured strategy.
func (ix *Index) Reserve(req Request) (Booking, error) {
	b, err := ix.Plan(req)
	if err != nil {
		return b, err
	}
	b.ID = ix.nextID
	ix.nextID++
	for j, i := range b.Nodes {
		ix.occupy(i, b.Start, b.Ends[j], b.ID)
	}
	bb := b
	bb.Nodes = slices.Clone(b.Nodes)
	bb.Ends = slices.Clone(b.Ends)
	ix.books[b.ID] = bb
	return b, nil
}

// Booking returns a live booking by id.
func (ix *Index) Booking(id int64) (Booking, bool) {
	b, ok := ix.books[id]
	if !ok {
		return Booking{}, false
	}
	b.Nodes, b.Ends = slices.Clone(b.Nodes), slices.Clone(b.Ends)
	return b, true
}

// prune forgets the bookings of node i that ended before the first live strip.
func (ix *Index) prune(i int) {
	ns := &ix.nodes[i]
	f := ix.clipFloor()
	j := 0
	for j < len(ns.slots) && ns.slots[j].end <= f {
		ix.dropGap(ns.slots[j].gap)
		ns.floor = ns.slots[j].end
		j++
	}
	if j > 0 {
		ns.slots = slices.Delete(ns.slots, 0, j)
	}
}

// gapAt returns the position j such that [s, e) lies in the idle period
// before slot j (or the tail when j == len(slots)).
func (ix *Index) gapAt(i int, s, e int64) int {
	ns := &ix.nodes[i]
	j := sort.Search(len(ns.slots), func(k int) bool { return ns.slots[k].start >= e })
	prev := ns.floor
	if j > 0 {
		prev = ns.slots[j-1].end
	}
	if s < prev {
		panic(fmt.Sprintf("reserve: node %d: [%d,%d) overlaps a booking ending %d", i, s, e, prev))
	}
	return j
}

func (ix *Index) prevEnd(i, j int) int64 {
	ns := &ix.nodes[i]
	if j > 0 {
		return ns.slots[j-1].end
	}
	return ns.floor
}

// occupy books [s, e) on node i: the idle period holding it is removed and
// the leading and trailing idle periods it leaves are indexed (§3.2.2).
func (ix *Index) occupy(i int, s, e, id int64) {
	ix.muts++
	ix.prune(i)
	ns := &ix.nodes[i]
	j := ix.gapAt(i, s, e)
	prev := ix.prevEnd(i, j)
	if j < len(ns.slots) {
		ix.dropGap(ns.slots[j].gap)
		ns.slots[j].gap = ix.addGap(i, e, ns.slots[j].start)
	}
	ns.slots = slices.Insert(ns.slots, j, slot{start: s, end: e, id: id})
	ns.slots[j].gap = ix.addGap(i, prev, s)
	if j == len(ns.slots)-1 {
		ix.setTail(i, e)
	}
}

// release gives back [max(at, start), end) of the booking starting at s on
// node i, merging it with the neighbouring idle periods.
func (ix *Index) release(i int, s, at int64) {
	ix.muts++
	ix.prune(i)
	ns := &ix.nodes[i]
	j := sort.Search(len(ns.slots), func(k int) bool { return ns.slots[k].start >= s })
	if j == len(ns.slots) || ns.slots[j].start != s {
		return // already pruned: it lies wholly in the past
	}
	if at >= ns.slots[j].end {
		return
	}
	last := j == len(ns.slots)-1
	if !last {
		ix.dropGap(ns.slots[j+1].gap)
	}
	if at > s {
		// early finish: keep [s, at), free [at, end).
		ns.slots[j].end = at
		if last {
			ix.setTail(i, at)
		} else {
			ns.slots[j+1].gap = ix.addGap(i, at, ns.slots[j+1].start)
		}
		return
	}
	prev := ix.prevEnd(i, j)
	ix.dropGap(ns.slots[j].gap)
	ns.slots = slices.Delete(ns.slots, j, j+1)
	if last {
		ix.setTail(i, prev)
	} else {
		ns.slots[j].gap = ix.addGap(i, prev, ns.slots[j].start)
	}
}

// Cancel removes a booking and gives its time back; the part already past
// (before Now) stays used.
func (ix *Index) Cancel(id int64) error { return ix.Finish(id, ix.now) }

// Finish ends a booking early at time at (>= Now): the rest is released.
func (ix *Index) Finish(id int64, at int64) error {
	b, ok := ix.books[id]
	if !ok {
		return ErrUnknownBooking
	}
	at = max(at, ix.now)
	for _, i := range b.Nodes {
		ix.release(i, b.Start, at)
	}
	delete(ix.books, id)
	return nil
}

// Advance moves time to now (never backward). Strips whose starting times
// are all in the past are discarded by rotating the ring (§3.3.1): in O(1)
// when every period in them has expired (the latest end of the tree says
// so), otherwise their live periods are clipped to the new first strip and
// moved there.
func (ix *Index) Advance(now int64) {
	if now <= ix.now {
		return
	}
	ix.now = now
	if ix.mir != nil {
		ix.mirAdvance(now)
	}
	nb := ix.stripOf(now)
	if nb <= ix.base {
		return
	}
	var live []*period
	steps := min(nb-ix.base, int64(len(ix.ring)))
	for range steps {
		if s := ix.ring[ix.head]; s != nil {
			moved := false
			for _, t := range s.trees {
				if t == nil {
					continue
				}
				t.dead = true
				if t.root != nil && t.root.maxEnd > now {
					moved = true
					ix.live(t.root, now, &live)
				}
			}
			if !moved {
				ix.stats.O1Rotations++
			}
			ix.ring[ix.head] = nil
		} else {
			ix.stats.O1Rotations++
		}
		ix.stats.Rotations++
		ix.head = (ix.head + 1) % len(ix.ring)
	}
	ix.base = nb
	ix.stats.MovedPeriods += int64(len(live))
	f := ix.clipFloor()
	for _, p := range live {
		ix.mirDrop(p)
		p.st = max(p.st, f)
		c := ix.nodes[p.node].cls
		p.t = nil
		if span(p.st, p.end) < ix.classes[c].minDur {
			continue
		}
		ix.stripTree(p.st, c).insert(p)
		ix.mirAdd(p)
	}
}

func (ix *Index) live(n *tnode, now int64, out *[]*period) {
	for n != nil && n.maxEnd > now {
		ix.stats.Ops++
		ix.live(n.l, now, out)
		if n.p.end > now {
			*out = append(*out, n.p)
		}
		n = n.r
	}
}

// Occupy books [start, end) on the given nodes without a search (an
// operator's reservation on named nodes, or a job found running after a
// restart). It fails, changing nothing, if a node is not idle throughout.
func (ix *Index) Occupy(nodes []int, start, end int64) (Booking, error) {
	start = max(start, ix.now)
	if end <= start || len(nodes) == 0 {
		return Booking{}, fmt.Errorf("reserve: empty interval [%d,%d) or no nodes", start, end)
	}
	seen := map[int]bool{}
	for _, i := range nodes {
		if i < 0 || i >= len(ix.nodes) || seen[i] {
			return Booking{}, fmt.Errorf("reserve: bad or repeated node %d", i)
		}
		seen[i] = true
		if !ix.idle(i, start, end) {
			return Booking{}, fmt.Errorf("reserve: node %d is not idle in [%d,%d)", i, start, end)
		}
	}
	b := Booking{ID: ix.nextID, Start: start, Nodes: slices.Clone(nodes)}
	ix.nextID++
	slices.Sort(b.Nodes)
	for _, i := range b.Nodes {
		b.Ends = append(b.Ends, end)
		ix.occupy(i, start, end, b.ID)
	}
	bb := b
	bb.Nodes, bb.Ends = slices.Clone(b.Nodes), slices.Clone(b.Ends)
	ix.books[b.ID] = bb
	return b, nil
}

// idle reports whether node i has no booking meeting [s, e).
func (ix *Index) idle(i int, s, e int64) bool {
	ns := &ix.nodes[i]
	j := sort.Search(len(ns.slots), func(k int) bool { return ns.slots[k].start >= e })
	return j == 0 || ns.slots[j-1].end <= s
}
