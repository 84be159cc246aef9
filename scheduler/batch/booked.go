package batch

import (
	"math"
	"slices"

	"hora/scheduler"
)

// ReasonReserved is Slurm's reason (state_desc) for a job that cannot run
// because nodes it needs are reserved during its time limit (COMPAT.md §3.7).
const ReasonReserved = "ReqNodeNotAvail, Reserved for maintenance"

// bookedState is the scratch of a pass over a partition that shares nodes
// with a booking policy (scheduler.Booker): the future bookings of each node
// and the nodes the head job will take at its shadow time.
type bookedState struct {
	wins  [][]scheduler.Window // per node, bookings ending after now
	inA   []bool               // node available to the head at the shadow time
	cand  []int
	other []int
	times []float64
	ends  []float64
	// wake is the earliest end of a booking seen by the last pass: a job
	// kept off a reserved node may start then.
	wake float64
	// reserved: the head cannot run now because of bookings, not only
	// because nodes are busy (reason ReqNodeNotAvail).
	reserved bool
}

// clear reports whether node i has no booking meeting [s, e). A job
// without a limit (e = Inf) meets every booking after s: Slurm starts it
// on a reserved node not at all.
func (st *bookedState) clear(i int, s, e float64) bool {
	for _, w := range st.wins[i] {
		if w.Start >= e {
			return true
		}
		if w.End > s {
			return false
		}
	}
	return true
}

func (b *Policy) loadBookings(now float64) {
	st := &b.bk
	n := b.p.Len()
	if len(st.wins) != n {
		st.wins = make([][]scheduler.Window, n)
		st.inA = make([]bool, n)
	}
	st.wake = math.Inf(1)
	for i := range n {
		st.wins[i] = b.p.Booked(i, now, st.wins[i][:0])
		for _, w := range st.wins[i] {
			st.wake = min(st.wake, w.End)
		}
	}
}

// candidates lists the free nodes on which a job may run [s, e) without
// meeting a booking, lowest index first.
func (b *Policy) candidates(s, e float64) []int {
	st := &b.bk
	st.cand = st.cand[:0]
	for i := range b.p.Len() {
		if b.p.IsFree(i) && st.clear(i, s, e) {
			st.cand = append(st.cand, i)
		}
	}
	return st.cand
}

// shadowBooked is EASY's shadow time when bookings make some nodes
// unavailable for part of the future: the earliest t ≥ now at which j.Nodes
// nodes are both expected free (free now, or busy until their expected end)
// and clear of bookings over [t, t+limit). A node's feasible starts form
// intervals whose left ends are its free time or the end of one of its
// bookings, so only those instants (and now) need be tried. It marks in
// st.inA the nodes available to the head at that time and returns the
// shadow and the extra nodes (available − needed); Inf and 0 if never.
// Cost O(T·N·B) for T candidate instants and B bookings per node: paid only
// by partitions that share nodes with a booking policy.
func (b *Policy) shadowBooked(j *scheduler.Job, now float64) (float64, int) {
	st := &b.bk
	p := b.p
	n := p.Len()
	freeAt := make([]float64, n)
	// Candidate instants: now, the bookings' ends (sorted here) merged with
	// the busy nodes' ends (Busy is sorted already).
	st.ends = st.ends[:0]
	for i := range n {
		switch {
		case p.IsFree(i):
			freeAt[i] = now
		default:
			freeAt[i] = math.Inf(1) // down, or held by an unknown step
		}
		for _, w := range st.wins[i] {
			st.ends = append(st.ends, w.End)
		}
	}
	slices.Sort(st.ends)
	st.times = append(st.times[:0], now)
	k := 0
	for _, bz := range p.Busy() {
		u := max(now, bz.Until)
		freeAt[bz.Node] = u
		for ; k < len(st.ends) && st.ends[k] < u; k++ {
			st.times = append(st.times, st.ends[k])
		}
		st.times = append(st.times, u)
	}
	st.times = append(st.times, st.ends[k:]...)
	st.times = slices.Compact(st.times)
	for _, t := range st.times {
		if math.IsInf(t, 1) {
			break
		}
		cnt := 0
		for i := range n {
			st.inA[i] = freeAt[i] <= t && st.clear(i, t, t+j.TimeLimit)
			if st.inA[i] {
				cnt++
			}
		}
		if cnt >= j.Nodes {
			return t, cnt - j.Nodes
		}
	}
	clear(st.inA)
	return math.Inf(1), 0
}

// scanBooked is scan for a partition that shares nodes with a booking
// policy. Slurm's rule for reserved nodes: a job may start on one only if
// its time limit ends by the start of the booking. The FCFS part starts
// jobs from the front while enough free nodes are clear of bookings through
// their limit; the head's reservation is at shadowBooked's time; a later job
// may backfill if it ends by the shadow, or else if it takes at most
// `extra` of the nodes the head would use then (nodes outside that set are
// taken first, as they cannot delay the head).
func (b *Policy) scanBooked(now float64) {
	b.hasHead = false
	b.bk.reserved = false
	b.loadBookings(now)
	shadow, extra := math.Inf(1), 0
	w := 0
	i := 0
	for ; i < len(b.queue); i++ {
		j := b.queue[i]
		if b.hasHead && (b.p.FreeCount() == 0 || !b.easy) {
			break
		}
		if !b.eligible(j, now) {
			b.queue[w] = j
			w++
			continue
		}
		end := now + j.TimeLimit
		cand := b.candidates(now, end)
		if len(cand) < j.Nodes {
			if !b.hasHead {
				b.hasHead, b.head = true, j.ID
				b.bk.reserved = b.reservedOut(j, now, end)
				if b.easy {
					shadow, extra = b.shadowBooked(j, now)
				}
			}
			b.queue[w] = j
			w++
			continue
		}
		var nodes []int
		switch {
		case !b.hasHead || end <= shadow:
			nodes = cand[:j.Nodes]
		default:
			// Nodes the head does not need at the shadow time first.
			st := &b.bk
			st.other = st.other[:0]
			used := 0
			for _, c := range cand {
				if !st.inA[c] && len(st.other) < j.Nodes {
					st.other = append(st.other, c)
				}
			}
			for _, c := range cand {
				if st.inA[c] && len(st.other) < j.Nodes {
					st.other = append(st.other, c)
					used++
				}
			}
			if used > extra {
				b.queue[w] = j
				w++
				continue
			}
			extra -= used
			for _, c := range st.other {
				st.inA[c] = false
			}
			slices.Sort(st.other)
			nodes = st.other
		}
		b.nodes = append(b.nodes[:0], nodes...)
		if err := b.p.Start(j.ID, scheduler.BatchStep, b.nodes, 0, 0, end); err != nil {
			b.queue[w] = j
			w++
			continue
		}
		delete(b.byID, j.ID)
	}
	if w < i {
		n := copy(b.queue[w:], b.queue[i:])
		clear(b.queue[w+n:])
		b.queue = b.queue[:w+n]
	}
}

// reservedOut reports whether bookings, rather than busy nodes, keep j from
// running now: fewer up nodes than it needs are clear of bookings through
// its limit (Slurm removes reserved nodes before it looks at busy ones, and
// then says ReqNodeNotAvail).
func (b *Policy) reservedOut(j *scheduler.Job, now, end float64) bool {
	cnt := 0
	for i := range b.p.Len() {
		if b.p.State(i) != scheduler.StateDown && b.bk.clear(i, now, end) {
			cnt++
		}
	}
	return cnt < j.Nodes
}

// testBooked is Test for a partition that shares nodes with a booking
// policy. Now, if a pass would start j now (the pass's own rule, with the
// same approximation as wouldStartNow for the jobs between the head and j);
// otherwise the eligible queue and then j are laid in order on the nodes'
// expected free times, each job at the earliest instant at which enough
// nodes are free and clear of bookings through its limit (the instants that
// can be first are the floor, the nodes' free times and the bookings' ends).
// It changes nothing the Policy shows (the bookings are pass scratch; the
// wakeup is kept).
func (b *Policy) testBooked(now float64, j *scheduler.Job) (float64, []string) {
	wake := b.bk.wake
	defer func() { b.bk.wake = wake }()
	b.loadBookings(now)
	st := &b.bk
	p := b.p
	n := p.Len()

	if b.eligible(j, now) {
		end := now + j.TimeLimit
		cand := b.candidates(now, end)
		if len(cand) >= j.Nodes {
			var head *scheduler.Job
			for _, q := range b.queue {
				if b.eligible(q, now) {
					head = q
					break
				}
			}
			start := head == nil
			if head != nil && b.easy {
				shadow, extra := b.shadowBooked(head, now)
				outside := 0
				for _, c := range cand {
					if !st.inA[c] {
						outside++
					}
				}
				start = end <= shadow || j.Nodes-min(outside, j.Nodes) <= extra
			}
			if start {
				return now, names(p, cand[:j.Nodes])
			}
		}
	}

	at := make([]float64, n)
	for i := range n {
		at[i] = math.Inf(1)
		if p.State(i) == scheduler.StateIdle {
			at[i] = now
		}
	}
	for _, bu := range p.Busy() {
		at[bu.Node] = max(now, bu.Until)
	}
	var ends []float64
	for i := range n {
		for _, w := range st.wins[i] {
			ends = append(ends, w.End)
		}
	}
	floor := now
	var chosen []int
	place := func(q *scheduler.Job) float64 {
		lo := max(floor, q.Begin)
		times := []float64{lo}
		for _, t := range at {
			if t > lo && !math.IsInf(t, 1) {
				times = append(times, t)
			}
		}
		for _, t := range ends {
			if t > lo {
				times = append(times, t)
			}
		}
		slices.Sort(times)
		for _, t := range slices.Compact(times) {
			chosen = chosen[:0]
			for i := range n {
				if at[i] <= t && st.clear(i, t, t+q.TimeLimit) && len(chosen) < q.Nodes {
					chosen = append(chosen, i)
				}
			}
			if len(chosen) == q.Nodes {
				for _, i := range chosen {
					at[i] = t + q.TimeLimit
				}
				if !b.easy {
					floor = t
				}
				return t
			}
		}
		chosen = chosen[:0]
		return math.Inf(1)
	}
	for _, q := range b.queue {
		if !q.Held {
			place(q)
		}
	}
	t := place(j)
	if math.IsInf(t, 1) {
		return t, nil
	}
	return t, names(p, chosen)
}
