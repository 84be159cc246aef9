package scheduler_test

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"

	"hora/scheduler"
	"hora/scheduler/reserve"
	st "hora/scheduler/schedtest"
)

// TestPropReservePeersNoDoubleBooking: two reserve partitions over
// overlapping node ranges (ra on n0…hiA−1, rb on loB…n−1) take random rigid
// jobs and advance reservations, cancellations and deletions over time, while
// a batch partition over all nodes runs best-effort jobs among them (the
// reserve policies book stand-ins for those, which come and go).
// Whatever the history, no node is booked twice at any instant: the
// bookings each policy reports for a node (Booked: its jobs and
// reservations, not the mirrors or stand-ins) never overlap across the two
// partitions, and every admitted job starts when it was booked for.
func TestPropReservePeersNoDoubleBooking(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 6).Draw(t, "nodes")
		hiA := rapid.IntRange(1, n).Draw(t, "hiA")
		loB := rapid.IntRange(0, hiA-1).Draw(t, "loB") // at least one shared node
		cfg := st.Cluster(n).Partition("batch", "batch").Partition("ra", "reserve").NodeRange(0, hiA).
			Partition("rb", "reserve").NodeRange(loB, n).Config()
		h := st.New(t, cfg)
		parts := []struct {
			name   string
			lo, hi int
		}{{"ra", 0, hiA}, {"rb", loB, n}}
		var resvs [2][]string
		booked := map[scheduler.JobID]float64{}
		id := scheduler.JobID(0)
		check := func(step int) {
			for g := range n {
				var ws [2][]scheduler.Window
				for k, p := range parts {
					if g >= p.lo && g < p.hi {
						ws[k] = resvPolicy(t, h, p.name).Booked(g-p.lo, h.Now, nil)
					}
				}
				for _, a := range ws[0] {
					for _, b := range ws[1] {
						if a.Start < b.End && b.Start < a.End && math.Max(a.Start, b.Start) < math.Min(a.End, b.End) {
							t.Fatalf("step %d: node n%d booked twice: ra [%v,%v) and rb [%v,%v)", step, g, a.Start, a.End, b.Start, b.End)
						}
					}
				}
			}
		}
		for step := range rapid.IntRange(1, 40).Draw(t, "steps") {
			k := rapid.IntRange(0, 1).Draw(t, "part")
			p := parts[k]
			size := p.hi - p.lo
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 5: // a best-effort job over all nodes: stand-ins come and go
				id++
				limit := float64(rapid.IntRange(1, 600).Draw(t, "blimit"))
				h.Submit(st.Job(id).Partition("batch").Nodes(rapid.IntRange(1, n).Draw(t, "bnodes")).Limit(limit).
					Run(float64(rapid.IntRange(1, int(limit)).Draw(t, "brun"))))
			case 0: // a rigid job booked at submit
				id++
				limit := float64(rapid.IntRange(60, 600).Draw(t, "limit"))
				b := st.Job(id).Partition(p.name).Nodes(rapid.IntRange(1, size).Draw(t, "jnodes")).Limit(limit).
					Begin(h.Now + float64(rapid.IntRange(0, 900).Draw(t, "begin"))).Run(limit)
				h.Submit(b)
				if _, refused := h.Rejects[id]; refused {
					break
				}
				if s, ok := h.StartOf(id); ok {
					booked[id] = s.At
				} else if ps, ok := h.Eng.PlannedStart(id); ok {
					booked[id] = ps
				}
			case 1: // an advance reservation, by count or by names
				r := reserve.Resv{Name: fmt.Sprintf("%s%d", p.name, step),
					Start: int64(h.Now) + int64(rapid.IntRange(0, 900).Draw(t, "rstart")), Users: []uint32{0}}
				r.End = r.Start + int64(rapid.IntRange(60, 900).Draw(t, "rlen"))
				if rapid.Bool().Draw(t, "byCount") {
					r.Count = rapid.IntRange(1, size).Draw(t, "count")
				} else {
					r.Nodes = []int{rapid.IntRange(0, size-1).Draw(t, "node")}
				}
				if _, err := resvPolicy(t, h, p.name).CreateResv(h.Now, r); err == nil {
					resvs[k] = append(resvs[k], r.Name)
					h.Handle(scheduler.Tick{Now: h.Now})
				}
			case 2: // a reservation given back
				if len(resvs[k]) > 0 {
					j := rapid.IntRange(0, len(resvs[k])-1).Draw(t, "del")
					if resvPolicy(t, h, p.name).DeleteResv(h.Now, resvs[k][j]) == nil {
						resvs[k] = append(resvs[k][:j], resvs[k][j+1:]...)
						h.Handle(scheduler.Tick{Now: h.Now})
					}
				}
			case 3: // a job cancelled before it starts
				if id > 0 {
					c := scheduler.JobID(rapid.IntRange(1, int(id)).Draw(t, "cancel"))
					if _, started := h.StartOf(c); started {
						break // the harness lets a killed job run to its end
					}
					h.Handle(scheduler.Cancel{Now: h.Now, ID: c})
					delete(booked, c)
				}
			default:
				h.Advance(h.Now + float64(rapid.IntRange(1, 400).Draw(t, "gap")))
			}
			check(step)
		}
		h.Advance(math.Inf(1))
		for j, at := range booked {
			if s, ok := h.StartOf(j); !ok || s.At != at {
				t.Fatalf("job %d booked for %v: started %v (%v); starts %+v", j, at, s.At, ok, h.Starts)
			}
		}
	})
}
