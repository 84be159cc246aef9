package reserve

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"hora/scheduler"
)

// PolicyName is the name in PartitionSpec.Policy.
const PolicyName = "reserve"

func init() { scheduler.RegisterPolicy(PolicyName, NewPolicy) }

// Slurm reason codes of the jobs this policy holds.
const (
	ReasonReservation = "Reservation" // booked, waiting for its start
	ReasonResources   = "Resources"   // due, but its nodes are not free (an overrun)
	ReasonHeld        = "JobHeldUser"
)

// Policy books every rigid job of a partition at submit time: Admit finds an
// interval inside [Begin, Deadline] on Nodes nodes for TimeLimit seconds (on
// a node of rate μ: ⌈TimeLimit/μ⌉) or refuses with the earliest start and
// deadline it could guarantee; the job starts at its booked time. Time is
// whole seconds.
//
// Params: strategy (min-lip default, min-tip, best-fit, first-fit, max-lip,
// max-tip, lact, ff-ha+), lmin (seconds, default 60), m (default 4),
// dt (co-allocation retry step, seconds, default lmin), maxret (default 64),
// share (the RT share s in (0, 1] of the [mix] fairness ratio, default 1: a
// job of length LEN is booked for LEN/s, DESIGN.md §1).
type Policy struct {
	p     *scheduler.Partition
	cfg   Config
	share float64 // RT share s of every node: a job is booked for LEN/s
	ix    *Index
	jobs  map[scheduler.JobID]*booked
	now   float64
	// pass is the now of the last Schedule: a booking due by then was tried.
	pass float64
	// resvs are the advance reservations of the partition (resv.go).
	resvs map[string]*resv
	// doomed are restored jobs of a reservation that can no longer run in
	// it (gone, or its window too short now): the next pass ends them.
	doomed map[scheduler.JobID]bool
	// fs holds the stand-ins for jobs of other partitions on shared nodes
	// (shared.go).
	fs foreignState
	// ps mirrors the bookings of other reserve partitions of the nodes
	// (peers.go).
	ps peerState
}

type booked struct {
	job     *scheduler.Job
	b       Booking
	running bool
	in      *resv // the reservation the job runs in; b is then in its index
}

// NewPolicy is the scheduler.PolicyFactory of "reserve".
func NewPolicy(p *scheduler.Partition) (scheduler.Policy, error) {
	prm := p.Spec().Params
	st, err := ParseStrategy(prm["strategy"])
	if err != nil {
		return nil, fmt.Errorf("partition %q: strategy: %w", p.Spec().Name, err)
	}
	num := func(k string, def int64) (int64, error) {
		v, ok := prm[k]
		if !ok || v == "" {
			return def, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("partition %q: %s: want a positive integer, got %q", p.Spec().Name, k, v)
		}
		return n, nil
	}
	cfg := Config{Strategy: st}
	if cfg.LMin, err = num("lmin", 60); err != nil {
		return nil, err
	}
	var m, mr int64
	if m, err = num("m", 4); err != nil {
		return nil, err
	}
	if cfg.DeltaT, err = num("dt", cfg.LMin); err != nil {
		return nil, err
	}
	if mr, err = num("maxret", 64); err != nil {
		return nil, err
	}
	cfg.M, cfg.MaxRet = int(m), int(mr)
	share := 1.0
	if v, ok := prm["share"]; ok && v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0 && f <= 1) {
			return nil, fmt.Errorf("partition %q: share: want a number in (0, 1], got %q", p.Spec().Name, v)
		}
		share = f
	}
	for i := range p.Len() {
		cfg.Rates = append(cfg.Rates, p.Rate(i))
	}
	return &Policy{p: p, cfg: cfg, share: share, jobs: map[scheduler.JobID]*booked{}, pass: math.Inf(-1),
		resvs: map[string]*resv{}, doomed: map[scheduler.JobID]bool{}}, nil
}

func floorT(t float64) int64 { return int64(math.Floor(t)) }
func ceilT(t float64) int64  { return int64(math.Ceil(t)) }

// index builds the index at the first call, so that time starts at the
// driver's first now.
func (pl *Policy) index(now float64) *Index {
	pl.now = max(pl.now, now)
	if pl.ix == nil {
		cfg := pl.cfg
		cfg.Start = floorT(now)
		ix, err := New(cfg)
		if err != nil {
			panic(err) // validated by NewPolicy
		}
		pl.ix = ix
	}
	pl.ix.Advance(floorT(now))
	return pl.ix
}

// decide is index for a call that books or answers about free time: the
// stand-ins for other partitions' jobs are brought up to date first
// (shared.go). Calls that only start, end or forget jobs skip that.
func (pl *Policy) decide(now float64) *Index {
	ix := pl.index(now)
	pl.syncPeers() // first: it may drop a stand-in that a mirror clipped
	pl.syncForeign()
	return ix
}

func (pl *Policy) request(now float64, j *scheduler.Job) (Request, *scheduler.AdmissionError) {
	if math.IsInf(j.TimeLimit, 1) || j.TimeLimit <= 0 {
		return Request{}, &scheduler.AdmissionError{Verdict: scheduler.Never, Code: "InvalidTimeLimit",
			Message: "Requested time limit is invalid (missing or exceeds some limit)"}
	}
	// With BE sharing the nodes RT is sure of only the share s of each, so
	// the job's length is planned as LEN/s (DESIGN.md §1).
	share := pl.share
	if share == 0 {
		share = 1
	}
	req := Request{Release: ceilT(max(now, j.Begin)), Work: ceilT(j.TimeLimit / share), Nodes: j.Nodes}
	if j.Deadline > 0 {
		req.Deadline = floorT(j.Deadline)
	}
	return req, nil
}

func (pl *Policy) refusal(err error) *scheduler.AdmissionError {
	ref, ok := err.(*Refusal)
	if !ok || ref.Never {
		return &scheduler.AdmissionError{Verdict: scheduler.Never, Code: "InvalidNodeCount", Message: err.Error()}
	}
	return &scheduler.AdmissionError{
		Verdict:          scheduler.NotNow,
		Code:             "DeadlineNotGuaranteed",
		Message:          "Job can not be booked by its deadline",
		EarliestStart:    float64(ref.EarliestStart),
		EarliestDeadline: float64(ref.EarliestDeadline),
	}
}

// Admit books the job or refuses it.
func (pl *Policy) Admit(now float64, j *scheduler.Job) error {
	pl.decide(now)
	if j.Reservation != "" {
		b, r, ae := pl.admitIn(now, j, false)
		if ae != nil {
			return ae
		}
		pl.jobs[j.ID] = &booked{job: j, b: b, in: r}
		return nil
	}
	req, ae := pl.request(now, j)
	if ae != nil {
		return ae
	}
	b, err := pl.reserve(req, false)
	if err != nil {
		return pl.refusal(err)
	}
	pl.jobs[j.ID] = &booked{job: j, b: b}
	return nil
}

// Restore re-books a job known before a restart: a running one keeps its
// nodes until its limit; a pending one is booked again (without its deadline
// if that no longer fits: it was admitted before).
func (pl *Policy) Restore(now float64, j *scheduler.Job, running bool) {
	ix := pl.decide(now)
	if j.Reservation != "" {
		pl.restoreIn(now, j, running)
		return
	}
	if running {
		// The Engine gave the job its nodes; they are the busy ones whose
		// expected end the index does not know yet.
		var nodes []int
		until := int64(0)
		for _, bz := range pl.p.Busy() {
			if h, _ := pl.p.Holder(bz.Node); h == j.ID {
				nodes = append(nodes, bz.Node)
				until = max(until, ceilT(min(bz.Until, 1e15)))
			}
		}
		if len(nodes) > j.Nodes {
			nodes = nodes[:j.Nodes]
		}
		if b, err := ix.Occupy(nodes, ix.Now(), max(until, ix.Now()+1)); err == nil {
			pl.jobs[j.ID] = &booked{job: j, b: b, running: true}
		}
		return
	}
	req, ae := pl.request(now, j)
	if ae != nil {
		return
	}
	if b, err := pl.rebook(req); err == nil {
		pl.jobs[j.ID] = &booked{job: j, b: b}
	}
}

// rebook books again a job admitted before (a restore, a release). When no
// booking meets its deadline any more (its nodes are down, horad was down past
// its latest start, it was held too long) it is booked without it, and ends
// DEADLINE at the pass that finds its latest start passed (Schedule), as Slurm
// ends a pending job only once its time limit no longer fits before its
// deadline. Ending it at once instead ended a job released 81 s before its
// latest start (fault harness).
func (pl *Policy) rebook(req Request) (Booking, error) {
	b, err := pl.reserve(req, false)
	if err != nil {
		req.Deadline = 0
		b, err = pl.reserve(req, false)
	}
	return b, err
}

// Remove cancels a pending job's booking or releases the rest of a running one.
func (pl *Policy) Remove(now float64, id scheduler.JobID) {
	pl.index(now)
	delete(pl.doomed, id)
	if bk := pl.jobs[id]; bk != nil {
		_ = pl.bookIx(bk).Finish(bk.b.ID, ceilT(now))
		delete(pl.jobs, id)
	}
}

// Hold keeps the booking; a job still held at its start does not start.
func (pl *Policy) Hold(now float64, id scheduler.JobID) { pl.index(now) }

// Release books a released job again if its booked start has passed.
func (pl *Policy) Release(now float64, id scheduler.JobID) {
	pl.decide(now)
	bk := pl.jobs[id]
	if bk == nil || bk.running || float64(bk.b.Start) >= now {
		return
	}
	_ = pl.bookIx(bk).Cancel(bk.b.ID)
	if bk.in != nil {
		if b, _, ae := pl.admitIn(now, bk.job, false); ae == nil {
			bk.b = b
			return
		}
	} else if req, ae := pl.request(now, bk.job); ae == nil {
		if b, err := pl.rebook(req); err == nil {
			bk.b = b
			return
		}
	}
	delete(pl.jobs, id)
	_ = pl.p.End(id, scheduler.JobStateDeadline, scheduler.ReasonDeadline)
}

// StepFinished ends the job and gives the rest of its booking back (§4.5:
// the time of an early finish is re-planned capacity).
func (pl *Policy) StepFinished(now float64, id scheduler.JobID, step int, failed bool) bool {
	pl.index(now)
	if bk := pl.jobs[id]; bk != nil {
		_ = pl.bookIx(bk).Finish(bk.b.ID, ceilT(now))
		delete(pl.jobs, id)
	}
	return true
}

// Schedule starts the jobs whose booked start has come.
func (pl *Policy) Schedule(now float64) {
	if len(pl.doomed) == 0 && !pl.due(now) {
		// Nothing to start: the pass costs nothing, and the index moves
		// its clock at the next call that needs it. (On nodes shared with
		// a batch partition every batch job's end asks for a pass here.)
		pl.now = max(pl.now, now)
		pl.pass = now
		return
	}
	pl.index(now)
	pl.pass = now
	pl.endDoomed()
	for _, id := range pl.order() {
		bk := pl.jobs[id]
		if bk.running || bk.job.Held {
			continue
		}
		if late(bk, now) {
			// Its latest start has passed: its booked start slipped (its
			// nodes were held past their bookings, horad was stopped), or it
			// was booked without its deadline (Restore). The deadline is
			// never broken by a late start.
			_ = pl.bookIx(bk).Cancel(bk.b.ID)
			delete(pl.jobs, id)
			_ = pl.p.End(id, scheduler.JobStateDeadline, scheduler.ReasonDeadline)
			continue
		}
		if float64(bk.b.Start) > now {
			continue
		}
		nodes := bk.partNodes()
		free := true
		for _, i := range nodes {
			free = free && pl.p.IsFree(i)
		}
		if !free {
			continue // a previous job overran its limit; retried each pass
		}
		if err := pl.p.Start(id, scheduler.BatchStep, nodes, 0, 0, float64(bk.b.End())); err == nil {
			bk.running = true
		}
	}
}

// due reports whether a pending job's booked start, or its latest start,
// has come.
func (pl *Policy) due(now float64) bool {
	for _, bk := range pl.jobs {
		if !bk.running && (float64(bk.b.Start) <= now || late(bk, now)) {
			return true
		}
	}
	return false
}

// late reports whether a job's time limit no longer fits before its
// deadline if it starts now.
func late(bk *booked, now float64) bool {
	return bk.job.Deadline > 0 && now > latestStart(bk.job)
}

// latestStart is the last time a deadline job can start with its time limit
// still ending by its deadline.
func latestStart(j *scheduler.Job) float64 { return j.Deadline - j.MinRun() }

// order lists the pending jobs by (booked start, id).
func (pl *Policy) order() []scheduler.JobID {
	ids := make([]scheduler.JobID, 0, len(pl.jobs))
	for id, bk := range pl.jobs {
		if !bk.running {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b scheduler.JobID) int {
		sa, sb := pl.jobs[a].b.Start, pl.jobs[b].b.Start
		if sa != sb {
			if sa < sb {
				return -1
			}
			return 1
		}
		if a < b {
			return -1
		}
		return 1
	})
	return ids
}

// Test plans the job without booking it.
func (pl *Policy) Test(now float64, j *scheduler.Job) (float64, []string, error) {
	pl.decide(now)
	var bk booked
	if j.Reservation != "" {
		b, r, ae := pl.admitIn(now, j, true)
		if ae != nil {
			return 0, nil, ae
		}
		bk = booked{b: b, in: r}
	} else {
		req, ae := pl.request(now, j)
		if ae != nil {
			return 0, nil, ae
		}
		b, err := pl.reserve(req, true)
		if err != nil {
			return 0, nil, pl.refusal(err)
		}
		bk.b = b
	}
	nodes := bk.partNodes()
	names := make([]string, len(nodes))
	for k, i := range nodes {
		names[k] = pl.p.Name(i)
	}
	return float64(bk.b.Start), names, nil
}

// Reason is the Slurm reason of a pending job.
func (pl *Policy) Reason(id scheduler.JobID) string {
	bk := pl.jobs[id]
	switch {
	case bk == nil || bk.running:
		return ""
	case bk.job.Held:
		return ReasonHeld
	case float64(bk.b.Start) <= pl.now:
		return ReasonResources
	}
	return ReasonReservation
}

// Pending lists the pending jobs by booked start.
func (pl *Policy) Pending(dst []scheduler.JobID) []scheduler.JobID {
	return append(dst, pl.order()...)
}

// NextWakeup is the earliest booked start that no pass has tried yet. It is
// measured from the last pass, not the last call: a refused Submit at the
// very second a booking starts runs no pass, and that start is still due.
func (pl *Policy) NextWakeup() float64 {
	t := math.Inf(1)
	for _, bk := range pl.jobs {
		if s := float64(bk.b.Start); !bk.running && s > pl.pass {
			t = min(t, s)
		}
		// A job booked past its latest start ends DEADLINE at that start
		// (Schedule), not at its booked one.
		if ls := latestStart(bk.job); !bk.running && bk.job.Deadline > 0 && ls >= pl.pass {
			t = min(t, ls+1e-3)
		}
	}
	return t
}

// PlannedStart is the booked start of a pending job (scheduler.Planner).
func (pl *Policy) PlannedStart(id scheduler.JobID) (float64, bool) {
	bk := pl.jobs[id]
	if bk == nil || bk.running {
		return 0, false
	}
	return float64(bk.b.Start), true
}
