package reserve

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"hora/scheduler"
	"hora/scheduler/schedtest"
)

// TestHideDownRestores: after random bookings and node failures, hiding the
// down nodes' idle periods takes exactly those out of the search trees (and
// the mirror and completion trees), and showing them puts the index back as
// it was; a booking made in between never uses a down node.
func TestHideDownRestores(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 6).Draw(t, "nodes")
		st := rapid.SampledFrom(Strategies()).Draw(t, "strategy")
		cfg := schedtest.Cluster(n).Partition("rt", PolicyName).Param("lmin", "10").Param("strategy", st.String()).Config()
		eng, err := scheduler.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		pol, _ := eng.Policy("rt")
		pl := pol.(*Policy)
		now := 0.0
		for id := range scheduler.JobID(rapid.IntRange(1, 15).Draw(t, "jobs")) {
			now += float64(rapid.IntRange(0, 30).Draw(t, "gap"))
			eng.Handle(scheduler.Submit{Now: now, Job: scheduler.Job{ID: id + 1, Nodes: rapid.IntRange(1, n).Draw(t, "n"),
				TimeLimit: float64(rapid.IntRange(10, 200).Draw(t, "limit")), Begin: now + float64(rapid.IntRange(0, 300).Draw(t, "begin"))}})
		}
		down := map[int]bool{}
		for range rapid.IntRange(1, n-1).Draw(t, "downs") {
			i := rapid.IntRange(0, n-1).Draw(t, "down")
			down[i] = true
			eng.Handle(scheduler.NodeDown{Now: now, Node: schedtest.NodeName(i)})
		}
		ix := pl.decide(now)
		snap := func() ([]gap, []gap, []gap) {
			e := entries(t, ix)
			sortGaps(e)
			var m, l []gap
			if ix.mir != nil {
				m = mirrorEntries(t, ix)
				sortGaps(m)
			}
			if ix.tails != nil {
				for _, tt := range ix.tails {
					tt.each(func(p *period) { l = append(l, gap{int(p.node), p.st, p.end}) })
				}
				sortGaps(l)
			}
			return e, m, l
		}
		e0, m0, l0 := snap()
		hs := pl.hideDown()
		e1, m1, l1 := snap()
		for _, g := range slices.Concat(e1, m1, l1) {
			if down[g.node] {
				t.Fatalf("down node %d still indexed while hidden: %+v", g.node, g)
			}
		}
		keep := func(gs []gap) []gap {
			return slices.DeleteFunc(slices.Clone(gs), func(g gap) bool { return down[g.node] })
		}
		if !slices.Equal(e1, keep(e0)) || !slices.Equal(m1, keep(m0)) || !slices.Equal(l1, keep(l0)) {
			t.Fatalf("hiding changed more than the down nodes:\n%v\n%v", e0, e1)
		}
		b, err := ix.Plan(Request{Release: ceilT(now), Work: 20, Nodes: 1})
		if err == nil && down[b.Nodes[0]] {
			t.Fatalf("booked hidden node %d", b.Nodes[0])
		}
		pl.show(hs)
		e2, m2, l2 := snap()
		if !slices.Equal(e2, e0) || !slices.Equal(m2, m0) || !slices.Equal(l2, l0) {
			t.Fatalf("show did not restore the index:\nbefore %v\nafter  %v", e0, e2)
		}
	})
}
