package dlt

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// The treap answers every query exactly like the sorted-slice reference, on
// random operation sequences with integer values (so sums are exact).
func TestPropTreapMatchesSlice(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		fast, ref := &treapTWQ{}, &sliceTWQ{}
		var keys []key
		seq := uint64(0)
		ops := rapid.IntRange(1, 300).Draw(rt, "ops")
		for range ops {
			k := key{d: float64(rapid.IntRange(0, 50).Draw(rt, "d")), seq: uint64(rapid.IntRange(0, 400).Draw(rt, "qseq"))}
			switch rapid.IntRange(0, 6).Draw(rt, "op") {
			case 0, 1:
				seq++
				e := entry{k: key{d: k.d, seq: seq}, id: int64(seq), c: float64(rapid.IntRange(-100, 100).Draw(rt, "c"))}
				fast.insert(e)
				ref.insert(e)
				keys = append(keys, e.k)
			case 2:
				d := float64(rapid.IntRange(-20, 20).Draw(rt, "delta"))
				fast.addAfter(k, d)
				ref.addAfter(k, d)
			case 3:
				a, aok := fast.popMin()
				b, bok := ref.popMin()
				if aok != bok || a != b {
					rt.Fatalf("popMin: %+v %v vs %+v %v", a, aok, b, bok)
				}
			case 4:
				if len(keys) > 0 {
					x := keys[rapid.IntRange(0, len(keys)-1).Draw(rt, "victim")]
					if a, b := fast.remove(x), ref.remove(x); a != b {
						rt.Fatalf("remove %v: %v vs %v", x, a, b)
					}
				}
			}
			ca, oka := fast.pred(k)
			cb, okb := ref.pred(k)
			if oka != okb || ca != cb {
				rt.Fatalf("pred(%v): %g %v vs %g %v", k, ca, oka, cb, okb)
			}
			if a, b := fast.succMinSlack(k), ref.succMinSlack(k); a != b {
				rt.Fatalf("succMinSlack(%v): %g vs %g", k, a, b)
			}
			if fast.len() != ref.len() {
				rt.Fatalf("len %d vs %d", fast.len(), ref.len())
			}
			var fa, fb []entry
			fast.each(func(e entry) { fa = append(fa, e) })
			ref.each(func(e entry) { fb = append(fb, e) })
			for i := range fa {
				if fa[i] != fb[i] {
					rt.Fatalf("entry %d: %+v vs %+v", i, fa[i], fb[i])
				}
			}
		}
	})
}

// AC-FAST on the treap makes the same decision as AC-FAST on the reference
// queue, decision by decision, on random streams of arrivals, dispatches and
// chunk completions. A difference is allowed only at a floating-point tie:
// when moving the deadline by 1e-9 (relative) flips the reference's answer.
func TestPropFastMatchesReference(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := genModel(rt, rapid.Bool().Draw(rt, "setup"))
		n := rapid.IntRange(1, 64).Draw(rt, "n")
		fast, _ := New("ac-fast", m, n)
		ref, _ := New("ac-fast-ref", m, n)
		fast.noEarliest, ref.noEarliest = true, true
		scale := m.Exec(100, 1)
		now := 0.0
		steps := rapid.IntRange(1, 200).Draw(rt, "steps")
		for i := range steps {
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0, 1:
				sigma := rapid.Float64Range(1, 300).Draw(rt, "sigma")
				rel := rapid.Float64Range(0.01, 4).Draw(rt, "rel") * scale
				tk := Task{ID: int64(i + 1), Size: sigma, Deadline: now + rel}
				ea, eb := fast.Admit(now, tk), ref.Admit(now, tk)
				if (ea == nil) != (eb == nil) {
					lo, hi := tk, tk
					lo.Deadline -= 1e-9 * max(1, math.Abs(tk.Deadline))
					hi.Deadline += 1e-9 * max(1, math.Abs(tk.Deadline))
					if ref.Test(now, lo) == ref.Test(now, hi) {
						rt.Fatalf("task %+v at %g: fast %v, reference %v", tk, now, ea, eb)
					}
					return // floating tie: from here the two queues differ by design
				}
			case 2:
				now += rapid.Float64Range(0, 0.5).Draw(rt, "dt") * scale
			case 3:
				// finish every chunk planned to end by now
				for node := range n {
					if c := fast.running[node]; c != nil && c.End <= now {
						fast.Finished(now, node)
					}
					if c := ref.running[node]; c != nil && c.End <= now {
						ref.Finished(now, node)
					}
				}
			}
			ca, cb := fast.Dispatch(now), ref.Dispatch(now)
			if len(ca) != len(cb) {
				rt.Fatalf("dispatch at %g: %d vs %d chunks", now, len(ca), len(cb))
			}
			for j := range ca {
				if ca[j].Task != cb[j].Task || ca[j].Node != cb[j].Node || !near(ca[j].Size, cb[j].Size) {
					rt.Fatalf("chunk %d: %+v vs %+v", j, ca[j], cb[j])
				}
			}
			if fast.Queued() != ref.Queued() {
				rt.Fatalf("queued %d vs %d", fast.Queued(), ref.Queued())
			}
		}
	})
}
