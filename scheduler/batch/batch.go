// Package batch is hora's best-effort policy: FCFS with EASY backfilling
// over whole nodes (Lifka 1995; Mu'alem & Feitelson 2001).
//
// Pending jobs queue in (Priority descending, Submit, ID) order: with
// equal priorities (replay), FCFS. A pass starts jobs from the front
// while they fit. The first eligible job that does not fit is the head: it
// gets a reservation at the shadow time, the earliest time enough nodes are
// expected free by the running jobs' limits. Any later job may start now if
// it fits in the free nodes and either ends by the shadow time or takes only
// "extra" nodes, those the head will not need at the shadow time. With
// Backfill "fcfs" nothing starts behind the head. Held jobs and jobs before
// their Begin are skipped and never head. Nodes are taken lowest index first.
//
// Register by blank import: import _ "hora/scheduler/batch".
package batch

import (
	"fmt"
	"math"
	"slices"

	"hora/scheduler"
)

// Name is the policy name in PartitionSpec.Policy.
const Name = "batch"

func init() { scheduler.RegisterPolicy(Name, New) }

// Slurm reason codes this policy gives to pending jobs.
const (
	ReasonPriority  = "Priority"
	ReasonResources = "Resources"
	ReasonBeginTime = "BeginTime"
	ReasonHeld      = "JobHeldUser"
)

// Policy is one partition's FCFS/EASY queue.
type Policy struct {
	p    *scheduler.Partition
	easy bool
	// queue is the pending jobs in (−Priority, Submit, ID) order.
	queue []*scheduler.Job
	byID  map[scheduler.JobID]*scheduler.Job
	// head is the job that blocked the last pass (reason Resources).
	head    scheduler.JobID
	hasHead bool
	now     float64
	// begins and deadlines are lazy min-heaps: entries of jobs that left
	// are dropped when they surface.
	begins    timeHeap // Begin of jobs not yet eligible
	deadlines timeHeap // latest start Deadline−MinRun of jobs with a deadline
	atRisk    []*scheduler.Job
	nodes     []int // scratch for node choice
	// bk is the state of passes over nodes shared with a booking policy
	// (booked.go); unused otherwise.
	bk bookedState
	// nreq counts queued jobs that asked for resources (tres.go).
	nreq   int
	failed map[shapeKey]bool
	shadow float64 // the head's reservation in the last pass on resources
	// byFree and freeOf: the nodes by free CPUs at the start of a pass on
	// resources (scheduler.Partition.ByFree).
	byFree, freeOf []int
	planned        []int // scratch: the nodes of a plan being started (tres.go)
}

// New builds the policy for a partition; Backfill must be "", "easy" or "fcfs".
func New(p *scheduler.Partition) (scheduler.Policy, error) {
	b := &Policy{p: p, byID: map[scheduler.JobID]*scheduler.Job{}}
	switch p.Spec().Backfill {
	case "", "easy":
		b.easy = true
	case "fcfs":
	default:
		return nil, fmt.Errorf("batch: unknown backfill %q (want easy or fcfs)", p.Spec().Backfill)
	}
	return b, nil
}

func before(a, b *scheduler.Job) int {
	switch {
	case a.Priority > b.Priority:
		return -1
	case a.Priority < b.Priority:
		return 1
	case a.Submit < b.Submit:
		return -1
	case a.Submit > b.Submit:
		return 1
	case a.ID < b.ID:
		return -1
	case a.ID > b.ID:
		return 1
	}
	return 0
}

// Admit refuses, as Slurm does at submission, a deadline that leaves less
// than the job's minimum run after its earliest start; otherwise queues it.
func (b *Policy) Admit(now float64, j *scheduler.Job) error {
	if j.Deadline > 0 && j.Deadline < max(now, j.Begin)+j.MinRun() {
		return &scheduler.AdmissionError{Verdict: scheduler.Never, Code: "InvalidTimeLimit",
			Message: "Requested time limit is invalid (missing or exceeds some limit)"}
	}
	b.enqueue(now, j)
	return nil
}

// Restore queues a pending job; running jobs need nothing here, since the
// Partition already accounts for their nodes.
func (b *Policy) Restore(now float64, j *scheduler.Job, running bool) {
	if !running {
		b.enqueue(now, j)
	}
}

func (b *Policy) enqueue(now float64, j *scheduler.Job) {
	// Arrivals come in order almost always, so the search ends at the tail.
	k := len(b.queue)
	if k > 0 && before(b.queue[k-1], j) > 0 {
		k, _ = slices.BinarySearchFunc(b.queue, j, before)
	}
	b.queue = slices.Insert(b.queue, k, j)
	b.byID[j.ID] = j
	if j.Req != nil {
		b.nreq++
	}
	if j.Begin > now {
		b.begins.push(j.Begin, j)
	}
	if j.Deadline > 0 {
		b.deadlines.push(j.Deadline-j.MinRun(), j)
	}
}

func (b *Policy) dequeue(j *scheduler.Job) {
	if b.byID[j.ID] == j && j.Req != nil {
		b.nreq--
	}
	delete(b.byID, j.ID)
	if k, ok := slices.BinarySearchFunc(b.queue, j, before); ok {
		b.queue[k] = nil
		b.queue = slices.Delete(b.queue, k, k+1)
	}
}

// Remove drops a pending job; a running one is not in the queue.
func (b *Policy) Remove(now float64, id scheduler.JobID) {
	if j := b.byID[id]; j != nil {
		b.dequeue(j)
	}
}

// Hold needs nothing: the pass reads Job.Held.
func (b *Policy) Hold(now float64, id scheduler.JobID) {}

// Release needs nothing: the pass reads Job.Held.
func (b *Policy) Release(now float64, id scheduler.JobID) {}

// StepFinished: a batch job has one step, so its end ends the job.
func (b *Policy) StepFinished(now float64, id scheduler.JobID, step int, failed bool) bool {
	return true
}

func (b *Policy) eligible(j *scheduler.Job, now float64) bool {
	return !j.Held && j.Begin <= now
}

// Schedule is one FCFS/EASY pass.
func (b *Policy) Schedule(now float64) {
	b.now = now
	for b.begins.len() > 0 {
		if t, _ := b.begins.peek(); t > now {
			break
		}
		b.begins.pop()
	}
	// Slurm's deadline_ok: a pending job that cannot finish by its deadline
	// if it started now is ended. A job exactly at its latest start may still
	// start in this pass; if it does not, it is ended after the pass.
	b.atRisk = b.atRisk[:0]
	for b.deadlines.len() > 0 {
		t, j := b.deadlines.peek()
		if t > now {
			break
		}
		b.deadlines.pop()
		if b.byID[j.ID] != j {
			continue
		}
		if now+j.MinRun() > j.Deadline {
			b.expire(j)
		} else {
			b.atRisk = append(b.atRisk, j)
		}
	}

	b.scan(now)
	expired := false
	for _, j := range b.atRisk {
		if b.byID[j.ID] == j {
			b.expire(j)
			expired = true
		}
	}
	if expired {
		// A job that blocked the pass at its latest start is gone: what
		// waited behind it may start now.
		b.scan(now)
	}
}

// scan walks the queue once, starting what may start; it costs O(queue)
// plus O(log busy) for the shadow time, and stops as soon as no node is left
// to backfill.
func (b *Policy) scan(now float64) {
	if b.useTres() {
		b.scanTres(now)
		return
	}
	if b.p.Shared() {
		b.scanBooked(now)
		return
	}
	b.hasHead = false
	free := b.p.FreeCount()
	shadow, extra := math.Inf(1), 0
	w := 0 // survivors are compacted to queue[:w]
	i := 0
	for ; i < len(b.queue); i++ {
		j := b.queue[i]
		if b.hasHead && (free == 0 || !b.easy) {
			break
		}
		if !b.eligible(j, now) || j.Nodes > free {
			if !b.hasHead && b.eligible(j, now) {
				b.hasHead, b.head = true, j.ID
				if b.easy {
					shadow = b.p.FreeAt(j.Nodes, now)
					extra = b.p.FreeBy(shadow) - j.Nodes
				}
			}
			b.queue[w] = j
			w++
			continue
		}
		end := now + j.TimeLimit
		switch {
		case !b.hasHead:
		case end <= shadow:
			// Ends before the head needs the nodes: no delay.
		case j.Nodes <= extra:
			// Runs on nodes the head will not need at the shadow time.
			extra -= j.Nodes
		default:
			b.queue[w] = j
			w++
			continue
		}
		if !b.start(j, now, end) {
			b.queue[w] = j
			w++
			continue
		}
		free -= j.Nodes
	}
	if w < i {
		n := copy(b.queue[w:], b.queue[i:])
		clear(b.queue[w+n:])
		b.queue = b.queue[:w+n]
	}
}

func (b *Policy) start(j *scheduler.Job, now, end float64) bool {
	b.nodes = b.p.LowestFree(j.Nodes, b.nodes[:0])
	if err := b.p.Start(j.ID, scheduler.BatchStep, b.nodes, 0, 0, end); err != nil {
		// Only a broken invariant gets here; leaving the job queued keeps
		// the Engine consistent and shows in the tests.
		return false
	}
	delete(b.byID, j.ID)
	return true
}

func (b *Policy) expire(j *scheduler.Job) {
	b.dequeue(j)
	_ = b.p.End(j.ID, scheduler.JobStateDeadline, scheduler.ReasonDeadline)
}

// Reason gives Slurm's codes: the head that blocked the last pass waits for
// Resources, jobs behind it for Priority.
func (b *Policy) Reason(id scheduler.JobID) string {
	j := b.byID[id]
	switch {
	case j == nil:
		return ""
	case j.Held:
		return ReasonHeld
	case j.Begin > b.now:
		return ReasonBeginTime
	case b.hasHead && b.head == id && b.bk.reserved:
		return ReasonReserved
	case b.hasHead && b.head == id:
		return ReasonResources
	}
	return ReasonPriority
}

// Pending lists the queue in FCFS order, held jobs included.
func (b *Policy) Pending(dst []scheduler.JobID) []scheduler.JobID {
	for _, j := range b.queue {
		dst = append(dst, j.ID)
	}
	return dst
}

// NextWakeup is the next begin time or latest start of a pending job.
func (b *Policy) NextWakeup() float64 {
	t := math.Inf(1)
	for _, h := range []*timeHeap{&b.begins, &b.deadlines} {
		for h.len() > 0 {
			ht, j := h.peek()
			if b.byID[j.ID] != j {
				h.pop()
				continue
			}
			t = min(t, max(ht, b.now))
			break
		}
	}
	if b.p.Shared() && len(b.queue) > 0 && b.bk.wake > b.now {
		// A booking that ends frees its nodes for the jobs it kept off.
		t = min(t, b.bk.wake)
	}
	return t
}

// Test estimates when j would start. If a pass now would start it, now.
// Otherwise the queue ahead (eligible jobs in FCFS order, then j) is laid on
// the nodes' expected free times, each job on the nodes free earliest (lowest
// index among ties), no earlier than its Begin nor, for fcfs, than the job
// before it. The estimate is exact for fcfs when limits are run times and
// ignores EASY backfilling into holes ahead of j.
func (b *Policy) Test(now float64, j *scheduler.Job) (float64, []string, error) {
	if j.Deadline > 0 && j.Deadline < max(now, j.Begin)+j.MinRun() {
		return 0, nil, &scheduler.AdmissionError{Verdict: scheduler.Never, Code: "InvalidTimeLimit",
			Message: "Requested time limit is invalid (missing or exceeds some limit)"}
	}
	if b.useTres() || j.Req != nil {
		t, nodes := b.testTres(now, j)
		return t, nodes, nil
	}
	if b.p.Shared() {
		t, nodes := b.testBooked(now, j)
		return t, nodes, nil
	}
	p := b.p
	n := p.Len()
	at := make([]float64, n)
	for i := range n {
		switch p.State(i) {
		case scheduler.StateIdle:
			at[i] = now
		default:
			at[i] = math.Inf(1)
		}
	}
	for _, bu := range p.Busy() {
		at[bu.Node] = max(now, bu.Until)
	}
	order := make([]int, n)
	floor := now
	place := func(q *scheduler.Job) (float64, []int) {
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(x, y int) int {
			switch {
			case at[x] < at[y]:
				return -1
			case at[x] > at[y]:
				return 1
			}
			return 0
		})
		t := max(floor, q.Begin, at[order[q.Nodes-1]])
		chosen := slices.Clone(order[:q.Nodes])
		slices.Sort(chosen)
		for _, i := range chosen {
			at[i] = t + q.TimeLimit
		}
		if !b.easy {
			floor = t
		}
		return t, chosen
	}
	if b.wouldStartNow(now, j) {
		nodes := p.LowestFree(j.Nodes, nil)
		return now, names(p, nodes), nil
	}
	for _, q := range b.queue {
		if q.Held {
			continue
		}
		place(q)
	}
	t, chosen := place(j)
	if math.IsInf(t, 1) {
		return t, nil, nil
	}
	return t, names(p, chosen), nil
}

// wouldStartNow replays the pass's decisions without starting anything.
func (b *Policy) wouldStartNow(now float64, j *scheduler.Job) bool {
	if !b.eligible(j, now) {
		return false
	}
	free := b.p.FreeCount()
	var head *scheduler.Job
	for _, q := range b.queue {
		if !b.eligible(q, now) {
			continue
		}
		if q.Nodes > free {
			head = q
			break
		}
		free -= q.Nodes
	}
	if j.Nodes > free {
		return false
	}
	if head == nil {
		return true
	}
	if !b.easy {
		return false
	}
	// Approximation: jobs between the head and j that a pass would
	// backfill are not counted against the extra nodes.
	shadow := b.p.FreeAt(head.Nodes, now)
	return now+j.TimeLimit <= shadow || j.Nodes <= b.p.FreeBy(shadow)-head.Nodes
}

func names(p *scheduler.Partition, idx []int) []string {
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = p.Name(i)
	}
	return out
}
