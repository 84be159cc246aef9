package reserve

import (
	"math"
	"slices"

	"hora/scheduler"
)

// A node of a reserve partition may also belong to partitions of other
// policies (a batch partition over the same nodes). Two rules keep the
// bookings true on such a node:
//
//   - Booked (scheduler.Booker) shows the other policies every booking of the
//     node (jobs booked at submit, advance reservations), so that the batch
//     policy starts nothing that would still run when a booking begins.
//   - syncForeign books, before every decision, the time a job of another
//     partition still holds a node: from now to its expected end (its time
//     limit; Inf for an unlimited job), so that no new booking is placed
//     where a best-effort job will still be running.

// foreignHorizon is how far ahead an unlimited job of another partition is
// booked: the index keeps its strips in a ring that must reach the start of
// every node's trailing idle period, so "for ever" cannot be booked. The
// stand-in is renewed whenever less than half of it is left, and every
// booking is preceded by that renewal, so no booking can land on the node
// while the job runs unless it starts more than half a horizon ahead.
const foreignHorizon int64 = 7 * 24 * 3600

// occ is the booking that stands for another partition's job on a node.
type occ struct {
	has   bool
	id    int64
	until float64 // the job's expected end when it was booked
	end   int64   // end of the stand-in booking
}

// foreignState is what syncForeign keeps between calls.
type foreignState struct {
	occ    []occ     // per partition node
	cur    []float64 // scratch: expected end of a foreign job per node, NaN if none
	gen    uint64    // Partition.Generation at the last sync
	synced bool
	renew  int64 // earliest time a stand-in of an unlimited job must be renewed
}

// Booked lists the bookings of partition node i ending after now, without
// the stand-ins for other partitions' jobs (those policies know their own).
func (pl *Policy) Booked(i int, now float64, dst []scheduler.Window) []scheduler.Window {
	if pl.ix == nil {
		return dst
	}
	skip := int64(-1)
	if i < len(pl.fs.occ) && pl.fs.occ[i].has {
		skip = pl.fs.occ[i].id
	}
	for _, sl := range pl.ix.nodes[i].slots {
		if float64(sl.end) <= now || sl.id == skip || pl.ps.isMir[sl.id] {
			continue
		}
		dst = append(dst, scheduler.Window{Start: float64(sl.start), End: float64(sl.end)})
	}
	return dst
}

// syncForeign makes the index hold, on every node that runs a job of another
// partition, a booking from now to that job's expected end, and gives back
// the stand-ins of jobs that ended or whose expected end moved (a suspended
// job). Where the node already has a booking in that time (the job overran,
// or was suspended past it), only the idle part up to that booking is
// taken. Nothing is done while the partition's busy list is unchanged and
// no stand-in is due for renewal; otherwise O(nodes).
func (pl *Policy) syncForeign() {
	ix := pl.ix
	p := pl.p
	fs := &pl.fs
	if fs.synced && fs.gen == p.Generation() && ix.Now() < fs.renew {
		return
	}
	if fs.occ == nil {
		fs.occ = make([]occ, p.Len())
		fs.cur = make([]float64, p.Len())
		for i := range fs.cur {
			fs.cur[i] = math.NaN()
		}
	}
	fs.gen, fs.synced, fs.renew = p.Generation(), true, Inf
	// Every node, not Busy(): a drained node is down for new work but its
	// job runs on.
	for i := range fs.cur {
		u, busy := p.Until(i)
		switch {
		case !busy:
		case p.Foreign(i):
			fs.cur[i] = u
		case u > float64(pl.ownEnd(i)):
			// A job of this policy expected to run past its booking (it
			// was suspended): the rest is booked after the booking.
			fs.cur[i] = u
		}
	}
	for i := range fs.occ {
		o := &fs.occ[i]
		if o.has && (fs.cur[i] != o.until || math.IsInf(o.until, 1) && o.end-ix.Now() < foreignHorizon/2) {
			_ = ix.Cancel(o.id) // ended, moved, or due for renewal
			o.has = false
		}
		if !o.has && !math.IsNaN(fs.cur[i]) {
			pl.standIn(i, fs.cur[i])
		}
		if o.has && math.IsInf(o.until, 1) {
			fs.renew = min(fs.renew, o.end-foreignHorizon/2)
		}
		fs.cur[i] = math.NaN()
	}
}

// ownEnd is the end of the booking of this policy's job running on node i
// (Inf if none is known: a job in a reservation runs inside its window, a
// restored job may have no booking).
func (pl *Policy) ownEnd(i int) int64 {
	h, busy := pl.p.Holder(i)
	bk := pl.jobs[h]
	if !busy || bk == nil || !bk.running || bk.in != nil {
		return Inf
	}
	if k := slices.Index(bk.b.Nodes, i); k >= 0 {
		return bk.b.Ends[k]
	}
	return Inf
}

// standIn books [now, until) on node i for another partition's job, clipped
// to the idle time that contains now; for a job of this policy that runs
// past its booking, from the booking's end.
func (pl *Policy) standIn(i int, until float64) {
	ix := pl.ix
	s := ix.Now()
	if !pl.p.Foreign(i) {
		s = max(s, pl.ownEnd(i))
	}
	e := s + foreignHorizon
	if !math.IsInf(until, 1) {
		e = max(ceilT(until), s+1)
	}
	e = min(e, pl.idleEnd(i, s))
	if e <= s {
		return // a booking covers now: the job overran into it
	}
	if b, err := ix.Occupy([]int{i}, s, e); err == nil {
		pl.fs.occ[i] = occ{has: true, id: b.ID, until: until, end: e}
	}
}

// idleEnd is the end of the idle time of node i that contains s (s itself
// when a booking covers s).
func (pl *Policy) idleEnd(i int, s int64) int64 {
	for _, sl := range pl.ix.nodes[i].slots {
		if sl.end <= s {
			continue
		}
		if sl.start <= s {
			return s
		}
		return sl.start
	}
	return Inf
}

// Drained and down nodes. A new booking avoids a node that is down now
// whenever the other nodes can serve it: for the time of the search the
// node's idle periods are taken out of the search trees (hide) and put back
// afterwards (show), nothing else of the index changes. Only when the
// request cannot be served without them is it searched again over all
// nodes, and such a booking waits at its start for the node to come back,
// as before. Slurm picks the nodes of a reservation by count from the
// available ones only (unless MAINT) and takes named nodes as given; hora
// does the same for named nodes.

type hidden struct {
	p *period
	t *tree
}

// hideDown takes the idle periods of the partition's down nodes out of the
// search trees (and, for LACT and min-TIP, the node's completion entry).
func (pl *Policy) hideDown() []hidden {
	ix := pl.ix
	var out []hidden
	hide := func(p *period) {
		if p == nil || p.t == nil || p.t.dead {
			return
		}
		out = append(out, hidden{p, p.t})
		ix.mirDrop(p)
		p.t.remove(p)
	}
	for i := range pl.p.Len() {
		if pl.p.State(i) != scheduler.StateDown {
			continue
		}
		ns := &ix.nodes[i]
		for k := range ns.slots {
			hide(ns.slots[k].gap)
		}
		hide(ns.tail)
		if ix.tails != nil && ix.lact[i] != nil {
			out = append(out, hidden{ix.lact[i], ix.tails[ns.cls]})
			ix.tails[ns.cls].remove(ix.lact[i])
		}
	}
	return out
}

// show puts back what hideDown took out, in reverse order.
func (pl *Policy) show(hs []hidden) {
	for k := len(hs) - 1; k >= 0; k-- {
		h := hs[k]
		h.t.insert(h.p)
		if h.t != pl.ix.tailsOf(h.p) {
			pl.ix.mirAdd(h.p)
		}
	}
}

// tailsOf is the LACT/min-TIP completion tree that may hold p, if any.
func (ix *Index) tailsOf(p *period) *tree {
	if ix.tails == nil || ix.lact[p.node] != p {
		return nil
	}
	return ix.tails[ix.nodes[p.node].cls]
}

// reserve books req away from down nodes if it can, else anywhere.
func (pl *Policy) reserve(req Request, plan bool) (Booking, error) {
	ix := pl.ix
	do := ix.Reserve
	if plan {
		do = ix.Plan
	}
	if hs := pl.hideDown(); len(hs) > 0 {
		b, err := do(req)
		pl.show(hs)
		if err == nil {
			return b, nil
		}
	}
	return do(req)
}

// freeIn is the range search away from down nodes when enough others are
// free, else over all nodes.
func (pl *Policy) freeIn(a, b int64, n int) []int {
	if hs := pl.hideDown(); len(hs) > 0 {
		free := pl.ix.FreeIn(a, b)
		pl.show(hs)
		if len(free) >= n {
			return free
		}
	}
	return pl.ix.FreeIn(a, b)
}
