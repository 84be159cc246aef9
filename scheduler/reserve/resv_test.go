package reserve

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"hora/scheduler"
	"hora/scheduler/schedtest"
)

func resvHarness(t *testing.T, n int) (*schedtest.Harness, *Policy) {
	t.Helper()
	cfg := schedtest.Cluster(n).Partition("rt", PolicyName).Default().Param("lmin", "10").Config()
	h := schedtest.New(t, cfg)
	p, ok := h.Eng.Policy("rt")
	if !ok {
		t.Fatal("no policy for partition rt")
	}
	return h, p.(*Policy)
}

// submitIn submits a job that asks for reservation name at the harness's now.
func submitIn(h *schedtest.Harness, b *schedtest.JobBuilder, name string, run float64) {
	j := b.Submit(h.Now).Build()
	j.Reservation = name
	h.SetRun(j.ID, run)
	h.Handle(scheduler.Submit{Now: h.Now, Job: j})
}

func resvCode(err error) string {
	var re *ResvError
	if errors.As(err, &re) {
		return re.Message
	}
	return ""
}

// A reservation keeps every other booking off its nodes and window; a job
// that asks for it runs there, only for its users and inside the window.
func TestResvBlocksOthersAndHostsItsJobs(t *testing.T) {
	h, pl := resvHarness(t, 4)
	r, err := pl.CreateResv(0, Resv{Name: "maint", Start: 100, End: 400, Count: 3, Users: []uint32{1000}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Nodes, []int{0, 1, 2}) || r.Start != 100 || r.End != 400 {
		t.Fatalf("booked %+v, want nodes 0-2 in [100,400)", r)
	}
	// Two nodes for [100,200) by 250: only node 3 is left outside the reservation.
	h.Submit(schedtest.Job(1).Nodes(2).Limit(100).Begin(100).Deadline(250))
	if ae := h.Rejects[1]; ae == nil || ae.Verdict != scheduler.NotNow || ae.EarliestStart != 400 {
		t.Fatalf("job 1 outside the reservation: want NotNow with earliest start 400, got %+v", ae)
	}
	// One node outside fits on node 3.
	h.Submit(schedtest.Job(2).Nodes(1).Limit(100).Begin(100).Deadline(250).Run(100))
	// Inside: user 1000, two nodes, started at the window's start at the earliest.
	submitIn(h, schedtest.Job(3).Nodes(2).Limit(100).User(1000), "maint", 50)
	// Wrong user, too many nodes, too long, unknown name.
	submitIn(h, schedtest.Job(4).Nodes(1).Limit(100).User(1001), "maint", 1)
	submitIn(h, schedtest.Job(5).Nodes(4).Limit(100).User(1000), "maint", 1)
	submitIn(h, schedtest.Job(6).Nodes(1).Limit(400).User(1000), "maint", 1)
	submitIn(h, schedtest.Job(7).Nodes(1).Limit(10).User(1000), "nope", 1)
	for id, msg := range map[scheduler.JobID]string{4: MsgResvAccess, 5: MsgNodeConfig, 6: MsgResvNotUsabl, 7: MsgResvInvalid} {
		if ae := h.Rejects[id]; ae == nil || ae.Message != msg || ae.Verdict != scheduler.Never {
			t.Errorf("job %d: want Never %q, got %+v", id, msg, ae)
		}
	}
	if got := pl.Reason(3); got != ReasonReservation {
		t.Errorf("job 3 waits with reason %q, want %q", got, ReasonReservation)
	}
	// A reservation with a job in it is in use: not deleted, window not moved.
	if err := pl.DeleteResv(0, "maint"); resvCode(err) != MsgResvInUse {
		t.Errorf("delete in use: %v", err)
	}
	if _, err := pl.UpdateResv(0, Resv{Name: "maint", Start: 150, End: 400, Count: 3}); resvCode(err) != MsgResvInUse {
		t.Errorf("move in use: %v", err)
	}
	h.Advance(math.Inf(1))
	s3, ok := h.StartOf(3)
	if !ok || s3.At != 100 {
		t.Fatalf("job 3 started %v at %v, want 100", ok, s3.At)
	}
	for _, n := range s3.Nodes {
		if n == schedtest.NodeName(3) {
			t.Errorf("job 3 ran on %s, outside the reservation", n)
		}
	}
	if s2, _ := h.StartOf(2); !slices.Equal(s2.Nodes, []string{schedtest.NodeName(3)}) {
		t.Errorf("job 2 ran on %v, want the unreserved node", s2.Nodes)
	}
	// The job is done: the reservation can be deleted, and its window is free.
	if err := pl.DeleteResv(h.Now, "maint"); err != nil {
		t.Fatal(err)
	}
	if len(pl.Resvs()) != 0 {
		t.Fatalf("reservations left: %+v", pl.Resvs())
	}
}

// Reservations never overlap: an overlapping one is refused with the
// earliest start at which the same window would fit; explicit nodes too.
func TestResvOverlapRefusedWithEarliest(t *testing.T) {
	_, pl := resvHarness(t, 2)
	if _, err := pl.CreateResv(0, Resv{Name: "a", Start: 100, End: 200, Nodes: []int{1}, Users: []uint32{1}}); err != nil {
		t.Fatal(err)
	}
	_, err := pl.CreateResv(0, Resv{Name: "b", Start: 150, End: 250, Count: 2, Users: []uint32{1}})
	var re *ResvError
	if !errors.As(err, &re) || re.Message != MsgResvBusy || re.EarliestStart != 200 {
		t.Fatalf("overlap: want %q earliest 200, got %v %+v", MsgResvBusy, err, re)
	}
	_, err = pl.CreateResv(0, Resv{Name: "c", Start: 120, End: 130, Nodes: []int{1}, Users: []uint32{1}})
	if !errors.As(err, &re) || re.Message != MsgResvBusy || re.EarliestStart != 200 {
		t.Fatalf("named busy node: got %v %+v", err, re)
	}
	// Node 0 is free there.
	if r, err := pl.CreateResv(0, Resv{Name: "d", Start: 150, End: 250, Count: 1, Users: []uint32{1}}); err != nil || !slices.Equal(r.Nodes, []int{0}) {
		t.Fatalf("free node: %+v %v", r, err)
	}
	if _, err := pl.CreateResv(0, Resv{Name: "d", Start: 500, End: 600, Count: 1, Users: []uint32{1}}); resvCode(err) != MsgResvDup {
		t.Fatalf("duplicate name: %v", err)
	}
	if _, err := pl.CreateResv(0, Resv{Name: "e", Start: 500, End: 600, Count: 3, Users: []uint32{1}}); resvCode(err) != MsgNodeConfig {
		t.Fatalf("too many nodes: %v", err)
	}
	// A failed update leaves the old booking: "a" cannot move onto "d".
	if _, err := pl.UpdateResv(0, Resv{Name: "a", Start: 100, End: 200, Nodes: []int{0}, Users: []uint32{1}}); resvCode(err) != MsgResvBusy {
		t.Fatalf("update onto d: %v", err)
	}
	if _, err := pl.CreateResv(0, Resv{Name: "f", Start: 100, End: 200, Nodes: []int{1}, Users: []uint32{1}}); resvCode(err) != MsgResvBusy {
		t.Fatalf("a's window was lost by the failed update: %v", err)
	}
	// A successful update moves it, and the old window is free.
	if r, err := pl.UpdateResv(0, Resv{Name: "a", Start: 300, End: 400, Nodes: []int{1}, Users: []uint32{2}}); err != nil || r.Start != 300 {
		t.Fatalf("move a: %+v %v", r, err)
	}
	if got := pl.FreeIn(0, 100, 200); !slices.Equal(got, []string{schedtest.NodeName(1)}) {
		t.Fatalf("free in [100,200) after the move: %v", got)
	}
	if got := pl.FreeIn(0, 310, 320); len(got) != 1 || got[0] != schedtest.NodeName(0) {
		t.Fatalf("free in [310,320): %v", got)
	}
}

// After a restart the driver books the reservations again before it
// restores the jobs; a pending job of a reservation is booked inside it
// again and starts there at the window's start.
func TestResvRestoreBooksJobsInside(t *testing.T) {
	h, pl := resvHarness(t, 3)
	if _, err := pl.CreateResv(0, Resv{Name: "r", Start: 100, End: 300, Nodes: []int{1, 2}, Users: []uint32{7}}); err != nil {
		t.Fatal(err)
	}
	j := schedtest.Job(1).Nodes(2).Limit(60).User(7).Build()
	j.Reservation = "r"
	h.Handle(scheduler.Restore{Now: 0, Job: j})
	h.SetRun(1, 60)
	// An outside job for the same window finds only node 0.
	h.Submit(schedtest.Job(2).Nodes(2).Limit(60).Begin(100).Deadline(250))
	if h.Rejects[2] == nil {
		t.Fatal("outside job booked onto the reservation")
	}
	h.Advance(math.Inf(1))
	s, ok := h.StartOf(1)
	if !ok || s.At != 100 || !slices.Equal(s.Nodes, []string{schedtest.NodeName(1), schedtest.NodeName(2)}) {
		t.Fatalf("restored job: started %v at %v on %v, want 100 on n1 n2", ok, s.At, s.Nodes)
	}
}

// BenchmarkResv measures the reservation operations on a partition whose
// index is filled with rigid bookings (thesis §3.4 workload, N nodes):
// create+delete of a 16-node reservation placed by the range search, a
// refused create (earliest window computed), and the range search alone.
func BenchmarkResv(b *testing.B) {
	for _, n := range []int{240, 1024} {
		cfg := schedtest.Cluster(n).Partition("rt", PolicyName).Default().Param("lmin", "60").Config()
		eng, err := scheduler.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		p, _ := eng.Policy("rt")
		pl := p.(*Policy)
		w := newWorkload(n, 0.9, 1)
		ix := pl.index(0)
		booked := 0
		for booked < 20*n {
			_, req := w.next()
			if _, err := ix.Reserve(req); err == nil {
				booked++
			}
		}
		from, to := int64(horizon*unit/2), int64(horizon*unit/2+3600)
		b.Run(fmt.Sprintf("create+delete/N=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := pl.CreateResv(0, Resv{Name: "x", Start: from, End: to, Count: 16, Users: []uint32{1}}); err != nil {
					b.Fatal(err)
				}
				if err := pl.DeleteResv(0, "x"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("refused/N=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := pl.CreateResv(0, Resv{Name: "x", Start: from, End: to, Count: n, Users: []uint32{1}}); err == nil {
					b.Fatal("all nodes reserved in a busy window")
				}
			}
		})
		b.Run(fmt.Sprintf("free/N=%d", n), func(b *testing.B) {
			for b.Loop() {
				pl.FreeIn(0, from, to)
			}
		})
		b.Logf("N=%d: %d bookings, %d idle periods indexed, %d nodes free in the window", n, booked, ix.Len(), len(ix.FreeIn(from, to)))
	}
}

// The earliest window of a refused reservation is the first start at which
// enough nodes are idle together (checked against a brute-force scan over
// random schedules), and a reservation asked for at that start is booked.
func TestResvEarliestWindowAgainstScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 300 {
		nn := 1 + rng.IntN(5)
		cfg := schedtest.Cluster(nn).Partition("rt", PolicyName).Default().Param("lmin", "1").Config()
		eng, err := scheduler.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := eng.Policy("rt")
		pl := p.(*Policy)
		ix := pl.index(0)
		for range rng.IntN(12) {
			s := rng.Int64N(100)
			_, _ = ix.Occupy([]int{rng.IntN(nn)}, s, s+1+rng.Int64N(30))
		}
		r := Resv{Name: "x", Start: rng.Int64N(60), Users: []uint32{1}}
		r.End = r.Start + 1 + rng.Int64N(25)
		n := 1 + rng.IntN(nn)
		if rng.IntN(2) == 0 {
			r.Nodes = rng.Perm(nn)[:n]
			slices.Sort(r.Nodes)
		} else {
			r.Count = n
		}
		got := pl.earliestWindow(ix, r, n)
		want := int64(0)
		for s := r.Start; s < 400 && want == 0; s++ {
			cnt := 0
			for i := range nn {
				if (len(r.Nodes) == 0 || slices.Contains(r.Nodes, i)) && ix.idle(i, s, s+r.End-r.Start) {
					cnt++
				}
			}
			if cnt >= n {
				want = s
			}
		}
		if got != want {
			t.Fatalf("round %d: earliest window %d, scan says %d (resv %+v, n %d)", round, got, want, r, n)
		}
		r2 := r
		r2.Start, r2.End = got, got+r.End-r.Start
		if _, err := pl.CreateResv(0, r2); err != nil {
			t.Fatalf("round %d: reservation at the earliest window %d refused: %v", round, got, err)
		}
	}
}

// A held job of a reservation released after its booked start is booked
// again inside the reservation, or ends DEADLINE when the window is gone.
func TestResvHeldJobRebookedInside(t *testing.T) {
	h, pl := resvHarness(t, 2)
	if _, err := pl.CreateResv(0, Resv{Name: "r", Start: 100, End: 400, Nodes: []int{1}, Users: []uint32{7}}); err != nil {
		t.Fatal(err)
	}
	submitIn(h, schedtest.Job(1).Limit(50).User(7).Held(), "r", 10)
	submitIn(h, schedtest.Job(2).Limit(50).User(7).Held(), "r", 10)
	// Job 1 was booked [100,150), job 2 [150,200); both pass held. A held
	// job keeps its booking, so job 1, released at 160, gets [200,250).
	h.Advance(160)
	h.Handle(scheduler.Release{Now: 160, ID: 1})
	h.Advance(380)
	h.Handle(scheduler.Release{Now: 380, ID: 2})
	h.Advance(math.Inf(1))
	if s, ok := h.StartOf(1); !ok || s.At != 200 || !slices.Equal(s.Nodes, []string{schedtest.NodeName(1)}) {
		t.Fatalf("job 1 released at 160: started %v at %v on %v, want 200 on n1", ok, s.At, s.Nodes)
	}
	if _, ok := h.StartOf(2); ok || h.Ends[2].State != scheduler.JobStateDeadline {
		t.Fatalf("job 2 released at 380 (window ends 400, limit 50): started %v, end %+v", ok, h.Ends[2])
	}
}

// A pending job of a reservation that is gone after a restart (it expired
// while horad was down) cannot run: the first pass ends it DEADLINE instead
// of leaving it pending for ever; so does one whose window is too short now.
func TestResvRestoreWithoutReservationEnds(t *testing.T) {
	h, pl := resvHarness(t, 2)
	if _, err := pl.CreateResv(0, Resv{Name: "short", Start: 0, End: 100, Nodes: []int{0}, Users: []uint32{7}}); err != nil {
		t.Fatal(err)
	}
	for id, name := range map[scheduler.JobID]string{1: "gone", 2: "short"} {
		j := schedtest.Job(id).Limit(200).User(7).Build()
		j.Reservation = name
		h.Handle(scheduler.Restore{Now: 0, Job: j})
	}
	if len(h.Ends) != 0 {
		t.Fatalf("ended before a pass: %+v", h.Ends)
	}
	h.Handle(scheduler.Tick{Now: 1})
	for _, id := range []scheduler.JobID{1, 2} {
		if e := h.Ends[id]; e.State != scheduler.JobStateDeadline {
			t.Errorf("job %d: end %+v, want DEADLINE", id, e)
		}
	}
	if _, ok := h.Eng.Job(1); ok {
		t.Error("job 1 still in the Engine")
	}
}

// Users of an active reservation with a job in it can be changed (its
// window cannot): the update is recognised as users-only although the
// window began before now.
func TestResvUsersUpdateWhileInUse(t *testing.T) {
	h, pl := resvHarness(t, 2)
	h.Advance(10)
	// Created at 10 for a window from 0: booked from 10, shown from 0.
	if _, err := pl.CreateResv(10, Resv{Name: "r", Start: 0, End: 500, Nodes: []int{0}, Users: []uint32{7}}); err != nil {
		t.Fatal(err)
	}
	h.Advance(50)
	submitIn(h, schedtest.Job(1).Limit(100).User(7), "r", 100)
	if _, ok := h.StartOf(1); !ok {
		t.Fatal("job 1 did not start in the active reservation")
	}
	if _, err := pl.UpdateResv(60, Resv{Name: "r", Start: 0, End: 500, Nodes: []int{0}, Users: []uint32{7, 8}}); err != nil {
		t.Fatalf("users-only update of a reservation in use: %v", err)
	}
	if _, err := pl.UpdateResv(60, Resv{Name: "r", Start: 0, End: 600, Nodes: []int{0}, Users: []uint32{7, 8}}); resvCode(err) != MsgResvInUse {
		t.Fatalf("window change of a reservation in use: %v", err)
	}
	submitIn(h, schedtest.Job(2).Limit(100).User(8), "r", 10)
	if ae := h.Rejects[2]; ae != nil {
		t.Fatalf("added user refused: %+v", ae)
	}
}

// A held deadline job released after its booked start, when no booking
// meets its deadline at that moment (the node is booked for another job
// next), stays pending and ends DEADLINE at its latest start, as Slurm ends
// a pending job once its limit no longer fits; it ended at its release, 230
// s early, before (the fault harness: "ended DEADLINE while its limit still
// fit").
func TestHeldDeadlineJobReleasedEndsAtLatestStart(t *testing.T) {
	h, _ := resvHarness(t, 1)
	h.Submit(schedtest.Job(1).Limit(60).Deadline(300).Held().Run(60)) // booked [0,60)
	h.Submit(schedtest.Job(2).Limit(250).Deadline(1000).Run(250))     // booked [60,310)
	h.Advance(10)
	h.Handle(scheduler.Release{Now: 10, ID: 1}) // [10,70) meets job 2's booking; after 310 is too late
	if e, ok := h.Ends[1]; ok {
		t.Fatalf("job 1 ended at its release (%+v), 230 s before its latest start 240", e)
	}
	h.Advance(239)
	if e, ok := h.Ends[1]; ok {
		t.Fatalf("job 1 ended before its latest start 240: %+v", e)
	}
	h.Advance(241)
	if _, ok := h.StartOf(1); ok || h.Ends[1].State != scheduler.JobStateDeadline {
		t.Fatalf("job 1 by 241: started %v, end %+v; want DEADLINE at its latest start 240, never started", ok, h.Ends[1])
	}
}
