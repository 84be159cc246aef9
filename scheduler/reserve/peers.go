package reserve

import (
	"math"
	"slices"
	"sort"

	"hora/scheduler"
)

// Two reserve partitions over the same nodes each keep their own index, so
// without more a reservation or rigid job booked in one could land on time
// the other has promised. Before every decision (decide) syncPeers books in
// this index, on each shared node, the windows the other partitions' Booked
// report (scheduler.Partition.Booked; the Engine asks every Booker of the
// node), so the search sees them as taken. These mirror bookings are left
// out of this policy's own Booked answer, as the stand-ins are: a peer
// would otherwise mirror its own bookings back, and a booking it gave up
// would live on through the echo.
//
// A mirror covers only the parts of a window that nothing else of this index
// covers yet (a stand-in for the peer's running job, say), so the index never
// holds two bookings at once on a node. When that other booking goes away the
// uncovered part is found by the coverage check and the node's mirrors are
// booked again. The other way round, a stand-in stops at the first booking
// after now, which may be a mirror: whenever a node's mirrors are booked
// again its stand-in is too, after them (decide runs syncPeers first).

// peerState is what syncPeers keeps between calls.
type peerState struct {
	synced bool
	ver    uint64               // Partition.BookedVersion at the last sync
	muts   uint64               // the index's mutation count after the last sync
	win    [][]scheduler.Window // per partition node: the windows mirrored
	ids    [][]int64            // per partition node: their booking ids
	scan   []scheduler.Window   // scratch
	isMir  map[int64]bool       // booking id → mirror (Booked skips them)
}

// BookVersion implements scheduler.BookVersioner: it grows with every
// booking placed or given back in this policy's index.
func (pl *Policy) BookVersion() uint64 {
	if pl.ix == nil {
		return 0
	}
	return pl.ix.muts
}

// syncPeers brings the mirrors of the other reserve partitions' bookings up
// to date. Nothing is done while neither their bookings nor this index
// changed; otherwise O(bookings on shared nodes).
func (pl *Policy) syncPeers() {
	p, ix, ps := pl.p, pl.ix, &pl.ps
	if !p.Shared() {
		return
	}
	v := p.BookedVersion()
	if ps.synced && v == ps.ver && ix.muts == ps.muts {
		return
	}
	if ps.win == nil {
		ps.win = make([][]scheduler.Window, p.Len())
		ps.ids = make([][]int64, p.Len())
		ps.isMir = map[int64]bool{}
	}
	now := float64(ix.Now())
	for i := range ps.win {
		ps.scan = p.Booked(i, now, ps.scan[:0])
		if slices.Equal(ps.scan, ps.win[i]) && pl.covered(i, ps.scan) {
			continue
		}
		for _, id := range ps.ids[i] {
			_ = ix.Cancel(id)
			delete(ps.isMir, id)
		}
		ps.ids[i] = ps.ids[i][:0]
		// A stand-in for another partition's job stops at the first
		// booking after now, a mirror maybe: book it again after the
		// mirrors (syncForeign runs next), so that a window given up by a
		// peer does not leave the job's time unbooked.
		if fs := &pl.fs; i < len(fs.occ) && fs.occ[i].has {
			_ = ix.Cancel(fs.occ[i].id)
			fs.occ[i].has, fs.synced = false, false
		}
		ps.win[i] = append(ps.win[i][:0], ps.scan...)
		for _, w := range ps.scan {
			pl.mirror(i, w)
		}
	}
	ps.synced, ps.ver, ps.muts = true, v, ix.muts
}

// span is a window in the index's whole seconds, widened outward and cut
// at now.
func (pl *Policy) span(w scheduler.Window) (s, e int64) {
	return max(int64(math.Floor(w.Start)), pl.ix.Now()), ceilT(w.End)
}

// mirror books on node i the parts of w that no booking of the index covers.
func (pl *Policy) mirror(i int, w scheduler.Window) {
	ix := pl.ix
	s, e := pl.span(w)
	var gaps [][2]int64
	for _, sl := range ix.nodes[i].slots {
		if sl.end <= s {
			continue
		}
		if sl.start >= e {
			break
		}
		if sl.start > s {
			gaps = append(gaps, [2]int64{s, sl.start})
		}
		s = max(s, sl.end)
	}
	if s < e {
		gaps = append(gaps, [2]int64{s, e})
	}
	for _, g := range gaps {
		if b, err := ix.Occupy([]int{i}, g[0], g[1]); err == nil {
			pl.ps.ids[i] = append(pl.ps.ids[i], b.ID)
			pl.ps.isMir[b.ID] = true
		}
	}
}

// covered reports whether every window of ws is wholly booked on node i.
func (pl *Policy) covered(i int, ws []scheduler.Window) bool {
	slots := pl.ix.nodes[i].slots
	for _, w := range ws {
		s, e := pl.span(w)
		// Windows of different peers may overlap: search from the start.
		k := sort.Search(len(slots), func(k int) bool { return slots[k].end > s })
		for s < e {
			for k < len(slots) && slots[k].end <= s {
				k++
			}
			if k == len(slots) || slots[k].start > s {
				return false
			}
			s = slots[k].end
		}
	}
	return true
}
