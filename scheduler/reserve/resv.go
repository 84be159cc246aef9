package reserve

import (
	"slices"

	"hora/scheduler"
)

// Resv is an advance reservation (thesis ch. 5: a co-allocated booking of
// fixed nodes and a fixed window): the nodes of the partition set aside for
// [Start, End) for the listed users. Nodes are partition node indices;
// Count asks for that many nodes chosen by the index when Nodes is empty.
type Resv struct {
	Name  string
	Start int64
	End   int64
	Nodes []int
	Count int
	Users []uint32
}

// ResvError is a refused reservation operation. Code and Message are the
// Slurm strerror texts scontrol prints; EarliestStart is, when known, the
// earliest start at which a window of the same length and size would fit.
type ResvError struct {
	Code          string
	Message       string
	EarliestStart int64
}

func (e *ResvError) Error() string { return e.Message }

// Slurm's strerror texts for reservations (slurm_errno.c).
const (
	MsgResvInvalid  = "Requested reservation is invalid"
	MsgResvBusy     = "Requested nodes are busy"
	MsgResvInUse    = "Requested reservation is in use"
	MsgResvAccess   = "Access denied to requested reservation"
	MsgResvNotUsabl = "Requested reservation not usable now"
	MsgNodeConfig   = "Requested node configuration is not available"
	MsgResvDup      = "Duplicate reservation name"
)

// resv is a reservation held by the policy: its booking in the partition's
// index keeps every other job and reservation off its nodes and window, and
// its own index over its nodes books the jobs that ask for it.
type resv struct {
	Resv
	book int64  // booking id in the partition's index
	sub  *Index // index over Nodes (sub node k = partition node Nodes[k]), idle in [Start, End) only
}

// allows reports whether uid may use the reservation.
func (r *resv) allows(uid uint32) bool { return slices.Contains(r.Users, uid) }

// CreateResv books a reservation into the partition's idle-period index.
// With explicit Nodes every node must be idle (no job booking, no other
// reservation) through the window; with Count the lowest-numbered nodes idle
// through the window are taken (the range search of thesis §5.4). Refused:
// a *ResvError, with the earliest start that would fit when one exists.
func (pl *Policy) CreateResv(now float64, r Resv) (Resv, error) {
	ix := pl.decide(now)
	if _, dup := pl.resvs[r.Name]; dup || r.Name == "" {
		return Resv{}, &ResvError{Code: "ReservationInvalid", Message: MsgResvDup}
	}
	got, err := pl.bookResv(ix, r)
	if err != nil {
		return Resv{}, err
	}
	pl.resvs[got.Name] = got
	return got.Resv, nil
}

func (pl *Policy) bookResv(ix *Index, r Resv) (*resv, error) {
	// A window that began in the past is booked from now on; r keeps the
	// start as asked, so that an update can tell what changed.
	w := r
	w.Start = max(r.Start, ix.Now())
	if w.End <= w.Start {
		return nil, &ResvError{Code: "ReservationInvalid", Message: MsgResvInvalid}
	}
	// Count above len(Nodes) keeps Nodes and adds the lowest-numbered free
	// nodes up to Count (scontrol update NodeCnt= grows a reservation that
	// way, keeping the nodes it has).
	n := max(len(w.Nodes), w.Count)
	if n < 1 || n > ix.NumNodes() {
		return nil, &ResvError{Code: "InvalidNodeCount", Message: MsgNodeConfig}
	}
	nodes := slices.Clone(w.Nodes)
	slices.Sort(nodes)
	if len(nodes) < n {
		kept := len(nodes)
		for _, i := range pl.freeIn(w.Start, w.End, n) {
			if len(nodes) < n && !slices.Contains(nodes[:kept], i) {
				nodes = append(nodes, i)
			}
		}
		if len(nodes) < n {
			wide := w
			if kept > 0 {
				wide.Nodes = nil // the earliest start for n nodes anywhere
			}
			return nil, &ResvError{Code: "NodesBusy", Message: MsgResvBusy, EarliestStart: pl.earliestWindow(ix, wide, n)}
		}
		slices.Sort(nodes)
	}
	for k, i := range nodes {
		if i < 0 || i >= ix.NumNodes() || (k > 0 && nodes[k-1] == i) {
			return nil, &ResvError{Code: "InvalidNodeCount", Message: MsgNodeConfig}
		}
	}
	b, err := ix.Occupy(nodes, w.Start, w.End)
	if err != nil {
		return nil, &ResvError{Code: "NodesBusy", Message: MsgResvBusy, EarliestStart: pl.earliestWindow(ix, w, n)}
	}
	w.Nodes, w.Count = nodes, len(nodes)
	sub, err := pl.subIndex(w)
	if err != nil {
		_ = ix.Cancel(b.ID)
		return nil, &ResvError{Code: "ReservationInvalid", Message: MsgResvInvalid}
	}
	r.Nodes, r.Count = nodes, len(nodes)
	r.Users = slices.Clone(r.Users)
	return &resv{Resv: r, book: b.ID, sub: sub}, nil
}

// subIndex builds the index of a reservation's own nodes, idle from Start
// on; every request in it has its deadline clipped to End (admitIn), so a
// job inside it is only ever booked within the window.
func (pl *Policy) subIndex(r Resv) (*Index, error) {
	cfg := pl.cfg
	cfg.Start = r.Start
	cfg.Rates = make([]float64, len(r.Nodes))
	for k, i := range r.Nodes {
		cfg.Rates[k] = pl.cfg.Rates[i]
	}
	return New(cfg)
}

// earliestWindow is the earliest start ≥ r.Start at which n of the
// candidate nodes (r.Nodes, or all) are idle together for the window's
// length, 0 if never. Each idle gap [st, end) of a node long enough for the
// window (and indexed: at least ⌈l_min/μ⌉, so that the range search finds it
// again) makes the starts [max(st, r.Start), end − l] feasible on it; a sweep
// over these intervals finds the first start covered n times. O(B log B) for
// B bookings on the candidate nodes.
func (pl *Policy) earliestWindow(ix *Index, r Resv, n int) int64 {
	l := r.End - r.Start
	type ev struct {
		t int64
		d int
	}
	var evs []ev
	nodes := r.Nodes
	if len(nodes) == 0 {
		nodes = make([]int, ix.NumNodes())
		for i := range nodes {
			nodes[i] = i
		}
	}
	for _, i := range nodes {
		ns := &ix.nodes[i]
		minDur := ix.classes[ns.cls].minDur
		gap := func(st, end int64) {
			lo := max(st, r.Start, ix.now)
			switch {
			case end == Inf:
				evs = append(evs, ev{lo, +1})
			case span(st, end) >= minDur && end-lo >= l:
				evs = append(evs, ev{lo, +1}, ev{end - l + 1, -1})
			}
		}
		prev := ns.floor
		for _, sl := range ns.slots {
			gap(prev, sl.start)
			prev = sl.end
		}
		gap(prev, Inf)
	}
	slices.SortFunc(evs, func(a, b ev) int {
		switch {
		case a.t < b.t:
			return -1
		case a.t > b.t:
			return 1
		}
		return a.d - b.d
	})
	cnt := 0
	for k, e := range evs {
		cnt += e.d
		if (k+1 == len(evs) || evs[k+1].t != e.t) && cnt >= n {
			return e.t
		}
	}
	return 0
}

// UpdateResv replaces a reservation's window, nodes or users. The new shape
// is booked in place of the old one or refused, leaving the old one as it
// was. A reservation with jobs booked in it may change its users only.
func (pl *Policy) UpdateResv(now float64, r Resv) (Resv, error) {
	ix := pl.decide(now)
	old := pl.resvs[r.Name]
	if old == nil {
		return Resv{}, &ResvError{Code: "ReservationInvalid", Message: MsgResvInvalid}
	}
	same := r.Start == old.Start && r.End == old.End && (len(r.Nodes) == 0 && r.Count == old.Count ||
		slices.Equal(r.Nodes, old.Nodes) && r.Count <= len(r.Nodes))
	if same {
		old.Users = slices.Clone(r.Users)
		return old.Resv, nil
	}
	if pl.resvJobs(r.Name) > 0 {
		return Resv{}, &ResvError{Code: "ReservationBusy", Message: MsgResvInUse}
	}
	_ = ix.Cancel(old.book)
	got, err := pl.bookResv(ix, r)
	if err != nil {
		// The old window is free again: it books as it was (from now on).
		if b, err2 := ix.Occupy(old.Nodes, max(old.Start, ix.Now()), old.End); err2 == nil {
			old.book = b.ID
		}
		return Resv{}, err
	}
	pl.resvs[r.Name] = got
	return got.Resv, nil
}

// DeleteResv gives a reservation's window back. A reservation that jobs
// are booked in or run in is not deleted (Slurm: "in use").
func (pl *Policy) DeleteResv(now float64, name string) error {
	ix := pl.index(now)
	r := pl.resvs[name]
	if r == nil {
		return &ResvError{Code: "ReservationInvalid", Message: MsgResvInvalid}
	}
	if pl.resvJobs(name) > 0 {
		return &ResvError{Code: "ReservationBusy", Message: MsgResvInUse}
	}
	_ = ix.Cancel(r.book)
	delete(pl.resvs, name)
	return nil
}

// Resvs lists the reservations by name.
func (pl *Policy) Resvs() []Resv {
	out := make([]Resv, 0, len(pl.resvs))
	for _, r := range pl.resvs {
		rr := r.Resv
		rr.Nodes, rr.Users = slices.Clone(r.Nodes), slices.Clone(r.Users)
		out = append(out, rr)
	}
	slices.SortFunc(out, func(a, b Resv) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// resvJobs counts the jobs booked or running in a reservation.
func (pl *Policy) resvJobs(name string) int {
	n := 0
	for _, bk := range pl.jobs {
		if bk.in != nil && bk.in.Name == name {
			n++
		}
	}
	return n
}

// FreeIn is the range search of the partition (thesis §5.4): the names of
// the nodes idle through [a, b), nothing booked.
func (pl *Policy) FreeIn(now float64, a, b int64) []string {
	ix := pl.decide(now)
	idx := ix.FreeIn(max(a, ix.Now()), b)
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = pl.p.Name(i)
	}
	return out
}

// admitIn books a job inside its reservation: only the reservation's users,
// on its nodes, inside its window.
func (pl *Policy) admitIn(now float64, j *scheduler.Job, plan bool) (Booking, *resv, *scheduler.AdmissionError) {
	r := pl.resvs[j.Reservation]
	if r == nil {
		return Booking{}, nil, &scheduler.AdmissionError{Verdict: scheduler.Never, Code: "ReservationInvalid", Message: MsgResvInvalid}
	}
	if !r.allows(j.User) {
		return Booking{}, nil, &scheduler.AdmissionError{Verdict: scheduler.Never, Code: "AccessDenied", Message: MsgResvAccess}
	}
	if j.Nodes > len(r.Nodes) {
		return Booking{}, nil, &scheduler.AdmissionError{Verdict: scheduler.Never, Code: "InvalidNodeCount", Message: MsgNodeConfig}
	}
	req, ae := pl.request(now, j)
	if ae != nil {
		return Booking{}, nil, ae
	}
	req.Release = max(req.Release, r.Start)
	if req.Deadline == 0 || req.Deadline > r.End {
		req.Deadline = r.End
	}
	r.sub.Advance(max(floorT(now), r.sub.Now()))
	var b Booking
	var err error
	if plan {
		b, err = r.sub.Plan(req)
	} else {
		b, err = r.sub.Reserve(req)
	}
	if err != nil {
		ref, ok := err.(*Refusal)
		if !ok || ref.Never || ref.EarliestStart >= r.End || ref.EarliestDeadline > r.End || ref.EarliestDeadline <= 0 {
			return Booking{}, nil, &scheduler.AdmissionError{Verdict: scheduler.Never, Code: "ReservationNotUsable", Message: MsgResvNotUsabl}
		}
		return Booking{}, nil, &scheduler.AdmissionError{Verdict: scheduler.NotNow, Code: "DeadlineNotGuaranteed",
			Message: "Job can not be booked by its deadline", EarliestStart: float64(ref.EarliestStart),
			EarliestDeadline: float64(ref.EarliestDeadline)}
	}
	return b, r, nil
}

// partNodes maps a booking's nodes to partition indices.
func (bk *booked) partNodes() []int {
	if bk.in == nil {
		return bk.b.Nodes
	}
	out := make([]int, len(bk.b.Nodes))
	for k, i := range bk.b.Nodes {
		out[k] = bk.in.Nodes[i]
	}
	return out
}

// bookIx is the index that holds the job's booking.
func (pl *Policy) bookIx(bk *booked) *Index {
	if bk.in != nil {
		bk.in.sub.Advance(max(floorT(pl.now), bk.in.sub.Now()))
		return bk.in.sub
	}
	return pl.ix
}

// restoreIn re-books a job of a reservation after a restart.
func (pl *Policy) restoreIn(now float64, j *scheduler.Job, running bool) {
	r := pl.resvs[j.Reservation]
	if r == nil {
		if !running {
			pl.doomed[j.ID] = true
		}
		return
	}
	if running {
		var nodes []int
		until := int64(0)
		for _, bz := range pl.p.Busy() {
			if h, _ := pl.p.Holder(bz.Node); h != j.ID {
				continue
			}
			if k := slices.Index(r.Nodes, bz.Node); k >= 0 {
				nodes = append(nodes, k)
				until = max(until, ceilT(min(bz.Until, 1e15)))
			}
		}
		if len(nodes) > j.Nodes {
			nodes = nodes[:j.Nodes]
		}
		sub := r.sub
		sub.Advance(max(floorT(now), sub.Now()))
		until = min(max(until, sub.Now()+1), r.End)
		if b, err := sub.Occupy(nodes, sub.Now(), until); err == nil {
			pl.jobs[j.ID] = &booked{job: j, b: b, running: true, in: r}
		}
		return
	}
	if b, _, ae := pl.admitIn(now, j, false); ae == nil {
		pl.jobs[j.ID] = &booked{job: j, b: b, in: r}
		return
	}
	pl.doomed[j.ID] = true
}

// endDoomed ends the restored jobs that their reservation can no longer
// hold (it ended or was deleted while horad was down, or too little of its
// window is left): Slurm holds such jobs (ReservationDeleted); hora, which
// books at submit, ends them with state DEADLINE, as it ends a released job
// whose booking has passed.
func (pl *Policy) endDoomed() {
	ids := make([]scheduler.JobID, 0, len(pl.doomed))
	for id := range pl.doomed {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		delete(pl.doomed, id)
		_ = pl.p.End(id, scheduler.JobStateDeadline, scheduler.ReasonDeadline)
	}
}
