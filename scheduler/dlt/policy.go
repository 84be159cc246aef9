package dlt

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"hora/scheduler"
)

// PolicyName is the name in PartitionSpec.Policy.
const PolicyName = "dlt"

func init() { scheduler.RegisterPolicy(PolicyName, NewPolicy) }

// Policy runs divisible real-time jobs (Job.Load > 0, Job.Deadline > 0) on a
// partition: admission by the configured algorithm at submit time, chunks
// started as steps 0, 1, 2 … (one node each, data [Offset, Offset+Size),
// Expect = planned end), measured completions fed back.
//
// Params: cms, cps (seconds per data unit to send, to compute; defaults 0
// and 1), st, sc (setup seconds per chunk; default 0), share (RT share s of
// a node, default 1), admission (an algorithm of Algorithms, default
// ac-fast), adapt ("true": Cps follows measured chunk times, Estimator).
// Nodes are taken as identical (Rate is ignored).
type Policy struct {
	p     *scheduler.Partition
	s     *Scheduler
	jobs  map[scheduler.JobID]bool
	steps map[stepKey]int // running chunk → node
	now   float64
	// expire holds restored jobs whose deadline can no longer be guaranteed.
	expire []scheduler.JobID
	// gone holds the running steps of removed jobs, until their node is free.
	gone []stepKey
	// measured holds the transfer and compute seconds of a step that is
	// about to be reported finished (StepMeasured, then StepFinished).
	measured map[stepKey][2]float64
	// Node loss (nodeloss.go): admitted jobs whose guarantee was lost wait
	// in lost (none of their chunks started; they are admitted again when
	// the capacity allows, else end DEADLINE at their deadline); running
	// ones in atRisk are dispatched best-effort. Both show ReasonNodeLost.
	lost   map[scheduler.JobID]*scheduler.Job
	atRisk map[scheduler.JobID]bool
	job    map[scheduler.JobID]*scheduler.Job // the Engine's, while it holds the job
	// nodeFail holds the steps reported lost to their node or launch
	// (StepNodeFailed, then StepFinished); suspect the nodes taken out of
	// service by such a failure while the Engine still has them up, until
	// when (nodeloss.go, reading 23).
	nodeFail   map[stepKey]bool
	suspect    map[int]float64
	suspectFor float64
	// engDown holds the nodes the Engine has down; booked (nil until a
	// node is shared with a booking policy) those on which another
	// partition holds a booking (reading 24).
	engDown map[int]bool
	booked  []bool
	bookBuf []scheduler.Window
	// bookVer is the Partition.BookedVersion of the last scan; bookWake
	// the earliest end of a booking then seen (a node may come back).
	bookVer  uint64
	bookWake float64
}

// DefaultSuspect is how long (seconds) a node whose chunk failed to launch
// stays out of the dlt scheduler's service when the health prober has not
// declared it down: four times the prober's default time to declare a node
// down (3 misses 5 s apart).
const DefaultSuspect = 60

// ReasonNodeLost is the reason (squeue %r, scontrol Reason=) of a divisible
// job whose deadline is no longer guaranteed because a node went down:
// Slurm's code for a job waiting on a down node.
const ReasonNodeLost = "NodeDown"

type stepKey struct {
	id   scheduler.JobID
	step int
}

// ParseParams reads a dlt partition's Params into a model and an algorithm.
func ParseParams(prm map[string]string) (m Model, alg string, adapt bool, err error) {
	m = Model{Cms: 0, Cps: 1, Share: 1}
	num := func(k string, dst *float64, positive bool) {
		v, ok := prm[k]
		if !ok || v == "" || err != nil {
			return
		}
		f, e := strconv.ParseFloat(v, 64)
		if e != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || (positive && f == 0) {
			want := "a number ≥ 0"
			if positive {
				want = "a number > 0"
			}
			err = fmt.Errorf("%s: want %s, got %q", k, want, v)
			return
		}
		*dst = f
	}
	num("cms", &m.Cms, false)
	num("cps", &m.Cps, true)
	num("st", &m.ST, false)
	num("sc", &m.SC, false)
	num("share", &m.Share, true)
	// unit_bytes (bytes of --input per load unit) is the controller's; it
	// is checked here so a bad value stops horad at start-up.
	var unit, suspect float64
	num("unit_bytes", &unit, true)
	// suspect_s is read by NewPolicy (how long a node whose chunk failed to
	// launch stays out of service); checked here with the others.
	num("suspect_s", &suspect, false)
	if err == nil && m.Share > 1 {
		err = fmt.Errorf("share: want a number in (0, 1], got %g", m.Share)
	}
	alg = prm["admission"]
	if alg == "" {
		alg = DefaultAlgorithm
	}
	if err == nil && !slices.Contains(Algorithms, alg) {
		err = fmt.Errorf("admission: unknown algorithm %q (known: %v)", alg, Algorithms)
	}
	switch prm["adapt"] {
	case "", "false":
	case "true":
		adapt = true
	default:
		if err == nil {
			err = fmt.Errorf("adapt: want true or false, got %q", prm["adapt"])
		}
	}
	return m, alg, adapt, err
}

// NewPolicy is the scheduler.PolicyFactory of "dlt".
func NewPolicy(p *scheduler.Partition) (scheduler.Policy, error) {
	m, alg, adapt, err := ParseParams(p.Spec().Params)
	if err != nil {
		return nil, fmt.Errorf("partition %q: %w", p.Spec().Name, err)
	}
	s, err := New(alg, m, p.Len())
	if err != nil {
		return nil, fmt.Errorf("partition %q: %w", p.Spec().Name, err)
	}
	if adapt {
		s.SetEstimator(&Estimator{})
	}
	suspectFor := float64(DefaultSuspect)
	if v := p.Spec().Params["suspect_s"]; v != "" {
		suspectFor, _ = strconv.ParseFloat(v, 64) // checked by ParseParams
	}
	return &Policy{p: p, s: s, jobs: map[scheduler.JobID]bool{}, steps: map[stepKey]int{},
		lost: map[scheduler.JobID]*scheduler.Job{}, atRisk: map[scheduler.JobID]bool{},
		job: map[scheduler.JobID]*scheduler.Job{}, nodeFail: map[stepKey]bool{},
		suspect: map[int]float64{}, suspectFor: suspectFor, engDown: map[int]bool{}}, nil
}

// Scheduler is the policy's DLT scheduler (for inspection in tests).
func (pl *Policy) Scheduler() *Scheduler { return pl.s }

func (pl *Policy) task(now float64, j *scheduler.Job) (Task, *scheduler.AdmissionError) {
	switch {
	case !(j.Load > 0) || math.IsInf(j.Load, 0):
		return Task{}, &scheduler.AdmissionError{Verdict: scheduler.Never, Code: "BadRequest",
			Message: "A dlt partition runs divisible jobs only (--load)"}
	case !(j.Deadline > 0):
		return Task{}, &scheduler.AdmissionError{Verdict: scheduler.Never, Code: "BadRequest",
			Message: "A divisible job needs a deadline (--deadline)"}
	case j.Begin > now:
		return Task{}, &scheduler.AdmissionError{Verdict: scheduler.Never, Code: "BadRequest",
			Message: "A begin time is not supported for divisible jobs"}
	}
	return Task{ID: int64(j.ID), Arrival: now, Size: j.Load, Deadline: j.Deadline}, nil
}

func refusal(r *Refusal) *scheduler.AdmissionError {
	return &scheduler.AdmissionError{Verdict: scheduler.NotNow, Code: "DeadlineNotGuaranteed",
		Message: "Requested deadline cannot be guaranteed", EarliestDeadline: r.EarliestDeadline}
}

// Admit runs the admission test.
func (pl *Policy) Admit(now float64, j *scheduler.Job) error {
	pl.now = now
	pl.syncBooked(now) // booked nodes are not counted (reading 24)
	t, ae := pl.task(now, j)
	if ae != nil {
		return ae
	}
	if err := pl.s.Admit(now, t); err != nil {
		if r, ok := err.(*Refusal); ok {
			return refusal(r)
		}
		return err
	}
	pl.jobs[j.ID] = true
	pl.job[j.ID] = j
	return nil
}

// Restore re-admits a pending job (its guarantee is re-checked: if it cannot
// be given any more, the job is ended DEADLINE at once). A job that was
// running keeps its nodes as the Engine records them; its chunks are not
// known, so nothing more is started for it.
func (pl *Policy) Restore(now float64, j *scheduler.Job, running bool) {
	pl.now = now
	if running {
		return
	}
	t, ae := pl.task(now, j)
	if ae == nil && pl.s.Admit(now, t) == nil {
		pl.jobs[j.ID] = true
		pl.job[j.ID] = j
		return
	}
	pl.expire = append(pl.expire, j.ID) // ended at the next pass
}

// Remove forgets a job; a running one gets no more chunks. The Engine does
// not report the steps of a removed job, so Schedule frees their nodes in the
// scheduler once the Partition shows them free.
func (pl *Policy) Remove(now float64, id scheduler.JobID) {
	pl.now = now
	pl.s.Drop(int64(id))
	delete(pl.jobs, id)
	delete(pl.lost, id)
	delete(pl.atRisk, id)
	delete(pl.job, id)
	for k := range pl.steps {
		if k.id == id {
			pl.gone = append(pl.gone, k)
		}
	}
	slices.SortFunc(pl.gone, func(a, b stepKey) int {
		if a.id != b.id {
			return int(a.id - b.id)
		}
		return a.step - b.step
	})
}

// Hold and Release are ignored: an admitted job's deadline is a promise, and
// a held job would give back capacity that a release could not get again.
func (pl *Policy) Hold(now float64, id scheduler.JobID) { pl.now = now }

// Release: see Hold.
func (pl *Policy) Release(now float64, id scheduler.JobID) { pl.now = now }

// StepFinished feeds a chunk's completion back (an early end frees its node
// at once) and says whether the job is done.
func (pl *Policy) StepFinished(now float64, id scheduler.JobID, step int, failed bool) bool {
	pl.now = now
	k := stepKey{id, step}
	node, ok := pl.steps[k]
	if !ok {
		return !pl.jobs[id]
	}
	delete(pl.steps, k)
	nodeFail := pl.nodeFail[k]
	delete(pl.nodeFail, k)
	if failed {
		pl.s.killing[node] = true // a failed chunk is no measurement
	}
	if failed && nodeFail && !pl.s.Down(node) {
		// Lost to a node the Engine still has up (the prober may still be
		// counting misses): the node is suspect, out of this scheduler's
		// service for suspectFor, and the chunk is lost with it (reading 23).
		pl.suspect[node] = now + pl.suspectFor
		pl.sync(now, node)
	}
	var done bool
	if failed && pl.s.Down(node) {
		// Lost with its node: the range is planned again (nodeloss.go).
		var ids []int64
		done, ids = pl.s.Lost(now, node)
		pl.unguaranteed(ids)
	} else if m, ok := pl.measured[k]; ok {
		delete(pl.measured, k)
		done = pl.s.FinishedMeasured(now, node, m[0], m[1])
	} else {
		done = pl.s.Finished(now, node)
	}
	if done || pl.s.Left(int64(id)) == 0 && !pl.hasSteps(id) {
		delete(pl.jobs, id)
		delete(pl.atRisk, id)
		delete(pl.job, id)
		return true
	}
	return false
}

// StepMeasured records a staged chunk's measured transfer and compute
// seconds for the StepFinished that follows (scheduler.Measurer).
func (pl *Policy) StepMeasured(now float64, id scheduler.JobID, step int, transfer, compute float64) {
	if pl.measured == nil {
		pl.measured = map[stepKey][2]float64{}
	}
	pl.measured[stepKey{id, step}] = [2]float64{transfer, compute}
}

func (pl *Policy) hasSteps(id scheduler.JobID) bool {
	for k := range pl.steps {
		if k.id == id {
			return true
		}
	}
	return false
}

// Schedule kills overruns that are in the way, then starts the chunks due.
func (pl *Policy) Schedule(now float64) {
	pl.now = now
	for _, id := range pl.expire {
		_ = pl.p.End(id, scheduler.JobStateDeadline, scheduler.ReasonDeadline)
	}
	pl.expire = pl.expire[:0]
	pl.endSuspects(now)
	pl.syncBooked(now)
	pl.retryLost(now)
	kept := pl.gone[:0]
	for _, k := range pl.gone {
		node := pl.steps[k]
		if !pl.p.IsFree(node) {
			kept = append(kept, k)
			continue
		}
		pl.s.killing[node] = true // not a measurement
		pl.s.Finished(now, node)
		delete(pl.steps, k)
	}
	pl.gone = kept
	for _, c := range pl.s.Kills(now) {
		pl.p.Signal(scheduler.JobID(c.Task), c.Step, "KILL")
	}
	for _, c := range pl.s.Dispatch(now) {
		id := scheduler.JobID(c.Task)
		if err := pl.p.Start(id, c.Step, []int{c.Node}, c.Offset, c.Size, c.End); err != nil {
			// The Engine refused the node (down, or a policy bug): the chunk
			// is lost and its job will miss; free the scheduler's view.
			pl.s.killing[c.Node] = true
			pl.s.Finished(now, c.Node)
			continue
		}
		pl.steps[stepKey{id, c.Step}] = c.Node
	}
}

// Test says whether j would be admitted now (start: now).
func (pl *Policy) Test(now float64, j *scheduler.Job) (float64, []string, error) {
	t, ae := pl.task(now, j)
	if ae != nil {
		return 0, nil, ae
	}
	if pl.s.Test(now, t) {
		return now, nil, nil
	}
	return 0, nil, refusal(&Refusal{Task: t.ID, EarliestDeadline: pl.s.earliest(max(now, pl.s.last), t)})
}

// Reason of a waiting job: its chunks wait for nodes or the channel.
func (pl *Policy) Reason(id scheduler.JobID) string {
	if pl.lost[id] != nil {
		return ReasonNodeLost
	}
	if ts := pl.s.tasks[int64(id)]; ts != nil && ts.step > 0 {
		return "" // restored between chunks: it runs, no pending reason
	}
	if pl.jobs[id] {
		return "Resources"
	}
	return ""
}

// Pending lists the admitted jobs none of whose chunks started, in service order.
func (pl *Policy) Pending(dst []scheduler.JobID) []scheduler.JobID {
	for _, id := range pl.s.Waiting(nil) {
		dst = append(dst, scheduler.JobID(id))
	}
	return append(dst, pl.lostIDs()...)
}

// NextWakeup is when a node, the channel or a planned chunk is due, or a
// running chunk passes its planned end.
func (pl *Policy) NextWakeup() float64 {
	t := math.Inf(1)
	if n := pl.s.Next(); n > pl.now {
		t = n
	}
	for _, j := range pl.lost { // a lost job ends DEADLINE at its deadline
		if j.Deadline > pl.now {
			t = min(t, j.Deadline)
		}
	}
	for _, until := range pl.suspect { // a suspect node returns to service
		t = min(t, max(until, pl.now))
	}
	if pl.booked != nil && pl.bookWake > pl.now { // a booking ends: its node may come back
		t = min(t, pl.bookWake)
	}
	return t
}
