package scheduler_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"hora/scheduler"
	"hora/scheduler/batch"
	"hora/scheduler/reserve"
	st "hora/scheduler/schedtest"
)

func nodesOf(t *testing.T, h *st.Harness, id scheduler.JobID) []string {
	t.Helper()
	s, ok := h.StartOf(id)
	if !ok {
		t.Fatalf("job %d did not start", id)
	}
	return s.Nodes
}

// The e2e scenario in virtual time: a reservation on n0,n1 from 120 to 720
// over a batch partition of four nodes.
func TestSharedBatchRespectsReservation(t *testing.T) {
	h := st.New(t, sharedCluster(4, 0, "easy"))
	if _, err := createResv(t, h, 0, reserve.Resv{Name: "maint", Start: 120, End: 720, Nodes: []int{0, 1}, Users: []uint32{0}}); err != nil {
		t.Fatal(err)
	}
	// sbatch --test-only sees the window.
	for _, tc := range []struct {
		nodes int
		limit float64
		start float64
		on    []string
	}{
		{4, 300, 720, []string{"n0", "n1", "n2", "n3"}},
		{2, 300, 0, []string{"n2", "n3"}},
		{2, 120, 0, []string{"n0", "n1"}},
		{1, math.Inf(1), 0, []string{"n2"}},
		{3, math.Inf(1), 720, []string{"n0", "n1", "n2"}}, // after the window, for ever
	} {
		start, on, err := h.Eng.Test(0, st.Job(99).Partition("batch").Nodes(tc.nodes).Limit(tc.limit).Build())
		if err != nil || start != tc.start || !slices.Equal(on, tc.on) {
			t.Errorf("Test -N%d -t%v = %v %v %v, want %v %v", tc.nodes, tc.limit, start, on, err, tc.start, tc.on)
		}
	}
	h.Submit(st.Job(1).Partition("batch").Nodes(4).Limit(300).Run(300))
	if _, ok := h.StartOf(1); ok {
		t.Fatalf("-N4 -t5 started across the reservation")
	}
	if r := h.Eng.Reason(1); r != batch.ReasonReserved {
		t.Fatalf("reason %q, want %q", r, batch.ReasonReserved)
	}
	h.Submit(st.Job(2).Partition("batch").Nodes(2).Limit(300).Run(300))
	if got := nodesOf(t, h, 2); !slices.Equal(got, []string{"n2", "n3"}) {
		t.Fatalf("-N2 -t5 on %v, want n2 n3", got)
	}
	// Ends at 120, when the window opens: allowed (Slurm: the limit ends
	// before the reservation starts).
	h.Submit(st.Job(3).Partition("batch").Nodes(2).Limit(120).Run(100))
	if got := nodesOf(t, h, 3); !slices.Equal(got, []string{"n0", "n1"}) {
		t.Fatalf("-N2 -t2 on %v, want n0 n1", got)
	}
	h.Advance(10)
	// Would end at 131, inside the window: stays pending, behind the head.
	h.Submit(st.Job(4).Partition("batch").Nodes(1).Limit(121).Run(1))
	h.Advance(119)
	if _, ok := h.StartOf(4); ok {
		t.Fatalf("job 4 started into the window")
	}
	if r := h.Eng.Reason(4); r != batch.ReasonPriority {
		t.Fatalf("job 4 reason %q", r)
	}
	// The head's shadow is the window's end: all four nodes are clear then.
	h.Advance(math.Inf(1))
	if s, _ := h.StartOf(1); s.At != 720 {
		t.Fatalf("head started at %v, want 720 (end of the window)", s.At)
	}
	// Job 4 (one node, 121 s) backfills as soon as it ends by the shadow
	// or runs on a node the head does not need: at 300 n2,n3 free up, and
	// 300+121 ≤ 720.
	if s, _ := h.StartOf(4); s.At != 300 {
		t.Fatalf("job 4 started at %v, want 300", s.At)
	}
}

// An unlimited batch job never starts on a node with a future booking, and
// does on nodes without one.
func TestSharedUnlimitedAvoidsBookedNodes(t *testing.T) {
	h := st.New(t, sharedCluster(3, 1, "easy")) // res = n1, n2
	if _, err := createResv(t, h, 1, reserve.Resv{Name: "r", Start: 5000, End: 6000, Count: 2, Users: []uint32{0}}); err != nil {
		t.Fatal(err)
	}
	h.Submit(st.Job(1).Partition("batch").Nodes(1).Limit(math.Inf(1)).Run(10))
	if got := nodesOf(t, h, 1); !slices.Equal(got, []string{"n0"}) {
		t.Fatalf("unlimited job on %v, want n0", got)
	}
	h.Submit(st.Job(2).Partition("batch").Nodes(1).Limit(math.Inf(1)).Run(10))
	if _, ok := h.StartOf(2); ok {
		t.Fatalf("unlimited job started on a reserved node")
	}
	if r := h.Eng.Reason(2); r != batch.ReasonResources {
		t.Fatalf("reason %q, want Resources (n0 is clear, only busy)", r)
	}
	h.Advance(math.Inf(1))
	if got := nodesOf(t, h, 2); !slices.Equal(got, []string{"n0"}) {
		t.Fatalf("second unlimited job on %v, want n0", got)
	}
}

// The reserve policy books around a running batch job (its limit gives the
// latest end): named nodes are refused with the earliest start, counted
// nodes are taken elsewhere, and a rigid job is booked after it.
func TestSharedReserveAvoidsRunningBatch(t *testing.T) {
	h := st.New(t, sharedCluster(4, 0, "easy"))
	h.Submit(st.Job(1).Partition("batch").Nodes(2).Limit(600).Run(600))
	if got := nodesOf(t, h, 1); !slices.Equal(got, []string{"n0", "n1"}) {
		t.Fatalf("batch job on %v", got)
	}
	_, err := createResv(t, h, 0, reserve.Resv{Name: "a", Start: 100, End: 200, Nodes: []int{0}, Users: []uint32{0}})
	var re *reserve.ResvError
	if !errors.As(err, &re) || re.Message != reserve.MsgResvBusy || re.EarliestStart != 600 {
		t.Fatalf("named reservation over a running batch job: %v (%+v)", err, re)
	}
	w, err := createResv(t, h, 0, reserve.Resv{Name: "b", Start: 100, End: 200, Count: 2, Users: []uint32{0}})
	if err != nil || !slices.Equal(w.nodes, []string{"n2", "n3"}) {
		t.Fatalf("counted reservation: %v %v, want n2 n3", w.nodes, err)
	}
	h.Submit(st.Job(2).Partition("res").Nodes(4).Limit(60).Run(60))
	if ps, ok := h.Eng.PlannedStart(2); !ok || ps != 600 {
		t.Fatalf("rigid -N4 booked at %v (%v), want 600 when the batch job's limit ends", ps, ok)
	}
	// Listings ask for planned starts only where a policy books them.
	if !h.Eng.Plans("res") || h.Eng.Plans("batch") || !h.Eng.Plans("no-such-partition") {
		t.Fatalf("Plans: res %v, batch %v, unknown %v; want true, false, true",
			h.Eng.Plans("res"), h.Eng.Plans("batch"), h.Eng.Plans("no-such-partition"))
	}
	h.Advance(math.Inf(1))
	if s, _ := h.StartOf(2); s.At != 600 {
		t.Fatalf("rigid job started at %v, want 600", s.At)
	}
}

// A new booking avoids a drained or down node when the other nodes can
// serve it, and takes it (waiting for it) only when they cannot.
func TestReserveAvoidsDownNode(t *testing.T) {
	cfg := st.Cluster(3).Partition("res", "reserve").Config()
	h := st.New(t, cfg)
	h.Handle(scheduler.NodeDown{Now: 0, Node: "n0"})
	h.Submit(st.Job(1).Nodes(2).Limit(100).Run(100))
	if got := nodesOf(t, h, 1); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("job on %v, want n1 n2", got)
	}
	got, err := resvPolicy(t, h, "res").CreateResv(h.Now, reserve.Resv{Name: "r", Start: 200, End: 300, Count: 1, Users: []uint32{0}})
	if err != nil || !slices.Equal(got.Nodes, []int{1}) {
		t.Fatalf("counted reservation on %v (%v), want node 1 (n0 is down)", got.Nodes, err)
	}
	// Three nodes: only with n0; booked, and waits for it. (Co-allocation
	// tries starts every dt = l_min = 60 s: 120 is the first after 100.)
	h.Submit(st.Job(2).Nodes(3).Limit(50).Run(50))
	ps, ok := h.Eng.PlannedStart(2)
	if !ok || ps != 120 {
		t.Fatalf("-N3 planned at %v (%v), want 120", ps, ok)
	}
	h.Advance(150)
	if _, ok := h.StartOf(2); ok {
		t.Fatalf("job started on a down node")
	}
	h.Handle(scheduler.NodeUp{Now: 150, Node: "n0"})
	if s, ok := h.StartOf(2); !ok || s.At != 150 {
		t.Fatalf("job 2 after NodeUp: %v %v", s, ok)
	}
	// The hidden periods came back: with n0 up a count-3 window is found.
	if _, err := resvPolicy(t, h, "res").CreateResv(h.Now, reserve.Resv{Name: "s", Start: 400, End: 500, Count: 3, Users: []uint32{0}}); err != nil {
		t.Fatalf("3-node window after n0 returned: %v", err)
	}
}

// A suspended job's expected end moves with time and is fixed on resume at
// resume time + what was left; backfilling and the reserve policy read it.
func TestSuspendMovesExpectedEnd(t *testing.T) {
	h := st.New(t, sharedCluster(3, 0, "easy"))
	h.Submit(st.Job(1).Partition("batch").Nodes(2).Limit(100).Run(1000))
	h.Handle(scheduler.Suspend{Now: 10, ID: 1})
	expect := func() float64 {
		for _, a := range h.Eng.Running() {
			if a.ID == 1 {
				return a.Expect
			}
		}
		t.Fatalf("job 1 not running")
		return 0
	}
	h.Handle(scheduler.Tick{Now: 50})
	if e := expect(); e != 140 {
		t.Fatalf("suspended since 10, at 50 expect %v, want 140", e)
	}
	// Head needs all three nodes: shadow 140 with the suspension (100
	// without). An 80 s job ends at 130 ≤ 140 and backfills.
	h.Submit(st.Job(2).Partition("batch").Nodes(3).Limit(10).Run(10))
	h.Submit(st.Job(3).Partition("batch").Nodes(1).Limit(80).Run(80))
	if s, ok := h.StartOf(3); !ok || s.At != 50 {
		t.Fatalf("job 3 did not backfill at 50: %v %v", s, ok)
	}
	// The reserve policy sees the moved end: n0 is busy until 140.
	_, err := createResv(t, h, 0, reserve.Resv{Name: "x", Start: 120, End: 200, Nodes: []int{0}, Users: []uint32{0}})
	var re *reserve.ResvError
	if !errors.As(err, &re) || re.EarliestStart != 140 {
		t.Fatalf("reservation over the suspended job: %v %+v", err, re)
	}
	h.Handle(scheduler.Resume{Now: 60, ID: 1})
	h.Handle(scheduler.Tick{Now: 70})
	if e := expect(); e != 150 {
		t.Fatalf("resumed at 60 with 90 left: expect %v, want 150", e)
	}
	// A Resume of a job that is not suspended changes nothing.
	h.Handle(scheduler.Resume{Now: 80, ID: 1})
	if e := expect(); e != 150 {
		t.Fatalf("second resume moved the end to %v", e)
	}
}

// A suspended job of the reserve policy runs past its booking: the rest of
// its expected run is booked after it, so a later job is not booked onto
// the node before the suspended job can end.
func TestSuspendedReserveJobExtendsItsBooking(t *testing.T) {
	h := st.New(t, st.Cluster(2).Partition("res", "reserve").Config())
	h.Submit(st.Job(1).Nodes(1).Limit(100).Run(1000))
	if got := nodesOf(t, h, 1); !slices.Equal(got, []string{"n0"}) {
		t.Fatalf("job 1 on %v", got)
	}
	h.Handle(scheduler.Suspend{Now: 10, ID: 1})
	h.Handle(scheduler.Tick{Now: 50}) // expected end now 140
	h.Submit(st.Job(2).Nodes(2).Limit(60).Run(60))
	ps, ok := h.Eng.PlannedStart(2)
	if !ok || ps < 140 {
		t.Fatalf("-N2 booked at %v (%v): before the suspended job can end (140)", ps, ok)
	}
}

// A booked deadline job whose start slips past the last one its deadline
// allows (a batch job on its node ran past its limit) ends DEADLINE when
// the node frees, instead of starting then and finishing after its
// deadline (the fault harness found a reserve job started 80 s too late).
func TestSharedReserveDeadlineNeverStartsLate(t *testing.T) {
	h := st.New(t, sharedCluster(1, 0, "easy"))
	h.Submit(st.Job(1).Partition("batch").Nodes(1).Limit(100).Run(300)) // overruns its limit
	h.Submit(st.Job(2).Partition("res").Nodes(1).Limit(60).Deadline(200).Run(60))
	if e, ok := h.Ends[2]; ok {
		t.Fatalf("job 2 refused at submit: %+v", e)
	}
	h.Advance(math.Inf(1))
	endedDeadlineUnstarted(t, h, 2)
}

// endedDeadlineUnstarted fails unless job id ended DEADLINE without starting.
func endedDeadlineUnstarted(t *testing.T, h *st.Harness, id scheduler.JobID) {
	t.Helper()
	if s, ok := h.StartOf(id); ok {
		t.Fatalf("job %d started at %v: its limit ends after its deadline", id, s.At)
	}
	if e := h.Ends[id]; e.State != scheduler.JobStateDeadline {
		t.Fatalf("job %d ended %+v, want DEADLINE", id, e)
	}
}

// A pending deadline job restored after its latest start has passed (horad
// was down) ends DEADLINE at the first pass; it was booked without its
// deadline and started late.
func TestReserveRestoreAfterLatestStartEnds(t *testing.T) {
	h := st.New(t, sharedCluster(1, 0, "easy"))
	j := st.Job(1).Partition("res").Nodes(1).Limit(60).Deadline(100).Build()
	h.Handle(scheduler.Restore{Now: 50, Job: j})
	h.Handle(scheduler.Tick{Now: 51})
	h.Advance(math.Inf(1))
	endedDeadlineUnstarted(t, h, 1)
}

// A deadline job restored while no booking can meet its deadline (a batch
// job holds its node past its latest start) waits, and ends DEADLINE at its
// latest start, as Slurm ends a pending job once its time limit no longer
// fits before its deadline: not at the restore, while it might still have
// run, nor at its late booking.
func TestReserveRestoreEndsAtLatestStart(t *testing.T) {
	h := st.New(t, sharedCluster(1, 0, "easy"))
	h.Submit(st.Job(1).Partition("batch").Nodes(1).Limit(1000).Run(1000))
	j := st.Job(2).Partition("res").Nodes(1).Limit(60).Deadline(200).Build()
	h.Handle(scheduler.Restore{Now: 0, Job: j})
	h.Handle(scheduler.Tick{Now: 1})
	if e, ok := h.Ends[2]; ok {
		t.Fatalf("job 2 ended at the restore (%+v): its limit still fit before its deadline", e)
	}
	if w := h.Eng.NextWakeup(); w < 140 || w > 141 {
		t.Fatalf("next wakeup %v, want its latest start 140", w)
	}
	h.Handle(scheduler.Tick{Now: h.Eng.NextWakeup()})
	endedDeadlineUnstarted(t, h, 2)
}
