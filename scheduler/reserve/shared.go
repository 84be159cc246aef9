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

// foreignHorizon stands for "until further notice" in the index (an
// unlimited job of another partition, a node down): far beyond any window,
// finite so that the index's arithmetic stays exact.
const foreignHorizon int64 = 1 << 50

// occ is the booking that stands for another partition's job on a node.
type occ struct {
	node  int
	id    int64
	until float64 // the job's expected end when it was booked
}

// Booked lists the bookings of partition node i ending after now, without
// the stand-ins for other partitions' jobs (those policies know their own).
func (pl *Policy) Booked(i int, now float64, dst []scheduler.Window) []scheduler.Window {
	if pl.ix == nil {
		return dst
	}
	skip := int64(-1)
	if k := pl.occAt(i); k >= 0 {
		skip = pl.occs[k].id
	}
	for _, sl := range pl.ix.nodes[i].slots {
		if float64(sl.end) <= now || sl.id == skip {
			continue
		}
		dst = append(dst, scheduler.Window{Start: float64(sl.start), End: float64(sl.end)})
	}
	return dst
}

func (pl *Policy) occAt(i int) int {
	for k := range pl.occs {
		if pl.occs[k].node == i {
			return k
		}
	}
	return -1
}

// syncForeign makes the index hold, on every node that runs a job of another
// partition, a booking from now to that job's expected end, and gives back
// the stand-ins of jobs that ended or whose expected end moved (a suspended
// job). Where the node already has a booking in that time (the job overran,
// or was suspended past it), only the idle part up to that booking is
// taken. O(busy nodes + stand-ins).
func (pl *Policy) syncForeign() {
	ix := pl.ix
	p := pl.p
	// Stale stand-ins first, so that a moved end is booked afresh.
	for k := 0; k < len(pl.occs); {
		o := pl.occs[k]
		_, busy := p.Holder(o.node)
		if busy && p.Foreign(o.node) && p.State(o.node) != scheduler.StateDown && pl.untilOf(o.node) == o.until {
			k++
			continue
		}
		_ = ix.Cancel(o.id)
		pl.occs = slices.Delete(pl.occs, k, k+1)
	}
	for _, bz := range p.Busy() {
		if !p.Foreign(bz.Node) || pl.occAt(bz.Node) >= 0 {
			continue
		}
		s := ix.Now()
		e := foreignHorizon
		if !math.IsInf(bz.Until, 1) {
			e = max(ceilT(bz.Until), s+1)
		}
		e = min(e, pl.idleEnd(bz.Node, s))
		if e <= s {
			continue // a booking covers now: the job overran into it
		}
		if b, err := ix.Occupy([]int{bz.Node}, s, e); err == nil {
			pl.occs = append(pl.occs, occ{node: bz.Node, id: b.ID, until: bz.Until})
		}
	}
}

// untilOf is the expected end of the busy node i, NaN if it is not busy.
func (pl *Policy) untilOf(i int) float64 {
	for _, bz := range pl.p.Busy() {
		if bz.Node == i {
			return bz.Until
		}
	}
	return math.NaN()
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
// whenever the other nodes can serve it: for the time of the search every
// idle gap of a down node from now on is booked (maskDown), and given back
// afterwards (unmask). Only when the request cannot be served without them
// is it searched again over all nodes, and such a booking waits at its start
// for the node to come back, as before. Slurm picks the nodes of a
// reservation by count from the available ones only (unless MAINT) and takes
// named nodes as given; hora does the same for named nodes.

// maskDown books the idle time of the partition's down nodes; it returns the
// booking ids to give back.
func (pl *Policy) maskDown() []int64 {
	ix := pl.ix
	var ids []int64
	for i := range pl.p.Len() {
		if pl.p.State(i) != scheduler.StateDown {
			continue
		}
		ns := &ix.nodes[i]
		prev := ns.floor
		gap := func(st, end int64) {
			st = max(st, ix.Now())
			if end > st {
				if b, err := ix.Occupy([]int{i}, st, end); err == nil {
					ids = append(ids, b.ID)
				}
			}
		}
		for k := range ns.slots {
			st, end := prev, ns.slots[k].start
			prev = ns.slots[k].end
			gap(st, end)
		}
		gap(prev, foreignHorizon)
	}
	return ids
}

func (pl *Policy) unmask(ids []int64) {
	for _, id := range ids {
		_ = pl.ix.Cancel(id)
	}
}

// reserve books req away from down nodes if it can, else anywhere.
func (pl *Policy) reserve(req Request, plan bool) (Booking, error) {
	ix := pl.ix
	do := ix.Reserve
	if plan {
		do = ix.Plan
	}
	if ids := pl.maskDown(); len(ids) > 0 {
		b, err := do(req)
		pl.unmask(ids)
		if err == nil {
			return b, nil
		}
	}
	return do(req)
}

// freeIn is the range search away from down nodes when enough others are
// free, else over all nodes.
func (pl *Policy) freeIn(a, b int64, n int) []int {
	if ids := pl.maskDown(); len(ids) > 0 {
		free := pl.ix.FreeIn(a, b)
		pl.unmask(ids)
		if len(free) >= n {
			return free
		}
	}
	return pl.ix.FreeIn(a, b)
}
