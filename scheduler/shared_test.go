package scheduler_test

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"hora/scheduler"
	"hora/scheduler/batch"
	"hora/scheduler/reserve"
	st "hora/scheduler/schedtest"
)

// window is an advance reservation as the test saw it created: engine node
// names and [start, end), and when it was created.
type window struct {
	nodes      []string
	start, end float64
	created    float64
}

func resvPolicy(t st.TB, h *st.Harness, part string) *reserve.Policy {
	pol, ok := h.Eng.Policy(part)
	if !ok {
		t.Fatalf("no partition %q", part)
	}
	return pol.(*reserve.Policy)
}

// createResv books an advance reservation in partition "res" (nodes lo…)
// and sends the Tick a driver sends after it; it returns the window on
// success.
func createResv(t st.TB, h *st.Harness, lo int, r reserve.Resv) (window, error) {
	got, err := resvPolicy(t, h, "res").CreateResv(h.Now, r)
	if err != nil {
		return window{}, err
	}
	w := window{start: max(float64(got.Start), math.Floor(h.Now)), end: float64(got.End), created: h.Now}
	for _, i := range got.Nodes {
		w.nodes = append(w.nodes, st.NodeName(lo+i))
	}
	h.Handle(scheduler.Tick{Now: h.Now})
	return w, nil
}

func sharedCluster(n, lo int, backfill string) scheduler.Config {
	return st.Cluster(n).Partition("batch", "batch").Backfill(backfill).
		Partition("res", "reserve").NodeRange(lo, n).Config()
}

// TestPropSharedBookings: a batch partition and a reserve partition share
// nodes; random batch jobs, reserve jobs booked at submit and advance
// reservations arrive over time. Whatever the history:
//   - no batch job's time limit meets a reservation window on its nodes,
//     whether the window existed when the job started or was created while
//     it ran (the reserve policy books around running batch jobs);
//   - every admitted reserve job starts exactly at the time it was booked
//     for: no batch job sits on its nodes then;
//   - no node runs two jobs (the harness fails on it).
func TestPropSharedBookings(t *testing.T) {
	t.Run("calm", func(t *testing.T) { rapid.Check(t, func(t *rapid.T) { sharedBookings(t, false) }) })
	// With node failures, suspensions and cancels a booking may have to
	// wait (for a node that is down, or a job suspended past its limit);
	// what must still hold: no node runs two jobs, and no batch job starts
	// into a window that existed when it started.
	t.Run("chaos", func(t *testing.T) { rapid.Check(t, func(t *rapid.T) { sharedBookings(t, true) }) })
}

func sharedBookings(t *rapid.T, chaos bool) {
	{
		n := rapid.IntRange(2, 8).Draw(t, "nodes")
		lo := rapid.IntRange(0, n-1).Draw(t, "resFirstNode")
		bf := rapid.SampledFrom([]string{"easy", "fcfs"}).Draw(t, "backfill")
		h := st.New(t, sharedCluster(n, lo, bf))
		var wins []window
		batchJobs := map[scheduler.JobID]float64{} // id → run time
		booked := map[scheduler.JobID]float64{}    // reserve job → booked start
		id := scheduler.JobID(0)
		ops := 3
		if chaos {
			ops = 7
		}
		for range rapid.IntRange(1, 50).Draw(t, "steps") {
			switch rapid.IntRange(0, ops).Draw(t, "op") {
			case 4, 5:
				node := st.NodeName(rapid.IntRange(0, n-1).Draw(t, "node"))
				if rapid.Bool().Draw(t, "up") {
					h.Handle(scheduler.NodeUp{Now: h.Now, Node: node})
				} else {
					h.Handle(scheduler.NodeDown{Now: h.Now, Node: node})
				}
			case 6:
				if id > 0 {
					target := scheduler.JobID(rapid.IntRange(1, int(id)).Draw(t, "target"))
					if rapid.Bool().Draw(t, "resume") {
						h.Handle(scheduler.Resume{Now: h.Now, ID: target})
					} else {
						h.Handle(scheduler.Suspend{Now: h.Now, ID: target})
					}
				}
			case 7:
				if id > 0 {
					h.Handle(scheduler.Cancel{Now: h.Now, ID: scheduler.JobID(rapid.IntRange(1, int(id)).Draw(t, "cancel"))})
				}
			case 0:
				h.Advance(h.Now + float64(rapid.IntRange(1, 400).Draw(t, "gap")))
			case 1:
				id++
				limit := float64(rapid.IntRange(1, 900).Draw(t, "limit"))
				run := float64(rapid.IntRange(1, int(limit)).Draw(t, "run"))
				if rapid.IntRange(0, 9).Draw(t, "unlimited") == 0 {
					limit = math.Inf(1)
				}
				batchJobs[id] = run
				h.Submit(st.Job(id).Partition("batch").Nodes(rapid.IntRange(1, n).Draw(t, "bnodes")).Limit(limit).Run(run))
			case 2:
				id++
				limit := float64(rapid.IntRange(60, 600).Draw(t, "rlimit"))
				b := st.Job(id).Partition("res").Nodes(rapid.IntRange(1, n-lo).Draw(t, "rnodes")).Limit(limit).
					Begin(h.Now + float64(rapid.IntRange(0, 600).Draw(t, "begin"))).
					Run(float64(rapid.IntRange(1, int(limit)).Draw(t, "rrun")))
				acts := h.Submit(b)
				if _, refused := h.Rejects[id]; refused {
					continue
				}
				if s, ok := h.StartOf(id); ok {
					booked[id] = s.At
				} else if ps, ok := h.Eng.PlannedStart(id); ok {
					booked[id] = ps
				} else {
					t.Fatalf("reserve job %d admitted but neither started nor planned: %v", id, acts)
				}
			case 3:
				r := reserve.Resv{Name: "r" + string(rune('a'+len(wins))),
					Start: int64(h.Now) + int64(rapid.IntRange(0, 900).Draw(t, "rstart")),
					Users: []uint32{0}}
				r.End = r.Start + int64(rapid.IntRange(60, 900).Draw(t, "rlen"))
				if rapid.Bool().Draw(t, "byCount") {
					r.Count = rapid.IntRange(1, n-lo).Draw(t, "count")
				} else {
					for i := range n - lo {
						if rapid.Bool().Draw(t, "pick") {
							r.Nodes = append(r.Nodes, i)
						}
					}
					if len(r.Nodes) == 0 {
						r.Nodes = []int{0}
					}
				}
				if w, err := createResv(t, h, lo, r); err == nil {
					wins = append(wins, w)
				}
			}
		}
		for i := range n {
			h.Handle(scheduler.NodeUp{Now: h.Now, Node: st.NodeName(i)})
		}
		for j := range id {
			h.Handle(scheduler.Resume{Now: h.Now, ID: j + 1})
		}
		h.Advance(math.Inf(1))
		for _, s := range h.Starts {
			run, isBatch := batchJobs[s.ID]
			if chaos {
				run = 0 // only windows that existed at the start count
			}
			if !isBatch {
				if want, ok := booked[s.ID]; ok && s.At != want && !chaos {
					t.Fatalf("reserve job %d booked for %v started at %v", s.ID, want, s.At)
				}
				continue
			}
			for _, w := range wins {
				if w.created > s.At+run || w.created == s.At+run && run > 0 {
					continue // created after the job had ended
				}
				for _, node := range s.Nodes {
					if slices.Contains(w.nodes, node) && s.At < w.end && w.start < s.Expect {
						t.Fatalf("batch job %d on %s for [%v,%v) meets reservation [%v,%v) made at %v",
							s.ID, node, s.At, s.Expect, w.start, w.end, w.created)
					}
				}
			}
		}
		for rid := range booked {
			if _, ok := h.StartOf(rid); !ok && !chaos {
				t.Fatalf("reserve job %d booked for %v never started", rid, booked[rid])
			}
		}
	}
}

// TestPropSharedEASYHeadNotDelayed: with reservations on some nodes and run
// times equal to limits, an EASY head job starts no later than the shadow
// time it had when it became head, computed here from the public snapshot
// and the windows: the earliest instant at which enough nodes are expected
// free and clear of every window through the head's limit.
func TestPropSharedEASYHeadNotDelayed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 8).Draw(t, "nodes")
		h := st.New(t, sharedCluster(n, 0, "easy"))
		var wins []window
		for k := range rapid.IntRange(1, 4).Draw(t, "resvs") {
			r := reserve.Resv{Name: "r" + string(rune('a'+k)), Count: rapid.IntRange(1, n).Draw(t, "count"),
				Start: int64(rapid.IntRange(0, 1500).Draw(t, "rstart")), Users: []uint32{0}}
			r.End = r.Start + int64(rapid.IntRange(60, 600).Draw(t, "rlen"))
			if w, err := createResv(t, h, 0, r); err == nil {
				wins = append(wins, w)
			}
		}
		shadow := map[scheduler.JobID]float64{}
		check := func() {
			for _, id := range h.Eng.Pending("batch") {
				r := h.Eng.Reason(id)
				if r != batch.ReasonResources && r != batch.ReasonReserved {
					continue
				}
				if _, seen := shadow[id]; !seen {
					j, _ := h.Eng.Job(id)
					shadow[id] = oracleShadow(h, wins, j)
				}
				break
			}
		}
		for id := range scheduler.JobID(rapid.IntRange(1, 40).Draw(t, "jobs")) {
			h.Advance(h.Now + float64(rapid.IntRange(0, 200).Draw(t, "gap")))
			check()
			limit := float64(rapid.IntRange(1, 900).Draw(t, "limit"))
			h.Submit(st.Job(id + 1).Partition("batch").Nodes(rapid.IntRange(1, n).Draw(t, "bnodes")).Limit(limit).Run(limit))
			check()
		}
		for len(h.Eng.Pending("batch")) > 0 {
			next := h.Eng.NextWakeup()
			if math.IsInf(next, 1) {
				break
			}
			h.Advance(next)
			check()
		}
		h.Advance(math.Inf(1))
		for id, sh := range shadow {
			s, ok := h.StartOf(id)
			if !ok || s.At > sh {
				t.Fatalf("head %d with shadow %v started at %v (started=%v)", id, sh, s.At, ok)
			}
		}
	})
}

// oracleShadow: the earliest t ≥ now, among now, the running steps' ends and
// the windows' ends, at which j.Nodes nodes are idle or expected free and
// no window on them meets [t, t+limit).
func oracleShadow(h *st.Harness, wins []window, j scheduler.Job) float64 {
	freeAt := map[string]float64{}
	times := []float64{h.Now}
	for _, nd := range h.Eng.Nodes() {
		if nd.State == scheduler.StateIdle {
			freeAt[nd.Name] = h.Now
		}
	}
	for _, a := range h.Eng.Running() {
		for _, nd := range a.Nodes {
			freeAt[nd] = max(h.Now, a.Expect)
			times = append(times, freeAt[nd])
		}
	}
	for _, w := range wins {
		times = append(times, w.end)
	}
	slices.Sort(times)
	for _, t := range times {
		if t < h.Now {
			continue
		}
		cnt := 0
		for name, f := range freeAt {
			ok := f <= t
			for _, w := range wins {
				if slices.Contains(w.nodes, name) && w.start < t+j.TimeLimit && t < w.end {
					ok = false
				}
			}
			if ok {
				cnt++
			}
		}
		if cnt >= j.Nodes {
			return t
		}
	}
	return math.Inf(1)
}
