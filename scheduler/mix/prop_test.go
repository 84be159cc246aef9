package mix

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// Random place/remove/optimise sequences keep the matrix consistent: a job's
// cells all lie in its own columns, its primary rows are in its class's set,
// it runs in at least the rows it was given, and Remove frees everything.
func TestMatrixProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := rapid.IntRange(1, 12).Draw(rt, "p")
		m := rapid.IntRange(2, 8).Draw(rt, "m")
		r := Ratio{rapid.IntRange(1, 5).Draw(rt, "x"), rapid.IntRange(1, 5).Draw(rt, "y")}
		x, err := NewMatrix(p, m, r)
		if err != nil {
			rt.Fatal(err)
		}
		type info struct {
			class Class
			size  int
			rows  int
		}
		live := map[int64]info{}
		for step := range rapid.IntRange(1, 40).Draw(rt, "steps") {
			id := int64(step + 1)
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0, 1:
				c := Class(rapid.IntRange(0, 1).Draw(rt, "class"))
				size := rapid.IntRange(1, p).Draw(rt, "size")
				rows := rapid.IntRange(1, 3).Draw(rt, "rows")
				x.ClearReplicas()
				if x.Place(id, c, size, rows) {
					live[id] = info{c, size, rows}
				}
				x.Optimize(func(id int64) bool { return id%2 == 0 })
			case 2:
				var ids []int64
				for id := range live {
					ids = append(ids, id)
				}
				if len(ids) > 0 {
					slices.Sort(ids)
					v := ids[rapid.IntRange(0, len(ids)-1).Draw(rt, "victim")]
					x.Remove(v)
					delete(live, v)
				}
			case 3:
				x.ClearReplicas()
			}
			for id, in := range live {
				cols := x.Cols(id)
				if len(cols) != in.size {
					rt.Fatalf("job %d holds %d columns, asked %d", id, len(cols), in.size)
				}
				if x.Rows(id) < in.rows {
					rt.Fatalf("job %d runs in %d rows, was given %d", id, x.Rows(id), in.rows)
				}
				lo, hi := x.Set(in.class)
				for _, row := range x.jobs[id].rows {
					if row < lo || row >= hi {
						rt.Fatalf("job %d (%s) primary row %d outside its set [%d,%d)", id, in.class, row, lo, hi)
					}
				}
			}
			for row := range m {
				for col := range p {
					id, _ := x.Slot(row, col)
					if id == 0 {
						continue
					}
					if _, ok := live[id]; !ok {
						rt.Fatalf("removed job %d still in row %d col %d", id, row, col)
					}
					if !slices.Contains(x.Cols(id), col) {
						rt.Fatalf("job %d in column %d outside its columns %v", id, col, x.Cols(id))
					}
				}
			}
		}
	})
}

// The 1GS guarantee of §4.4 on a simulated rotation: a job holding
// GangRows rows, fed a frame every d, never has a frame older than b·d
// unprocessed, however its rows are spread over the cycle.
func TestGangRowsGuarantee(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := rapid.IntRange(2, 8).Draw(rt, "m")
		x, _ := NewMatrix(1, m, Ratio{rapid.IntRange(1, 4).Draw(rt, "x"), 1})
		q := rapid.Float64Range(0.05, 1).Draw(rt, "Q")
		delta := rapid.Float64Range(0, 0.01).Draw(rt, "δ")
		d := rapid.Float64Range(0.01, 0.1).Draw(rt, "d")
		cycle := float64(m) * (q + delta)
		b := int(math.Ceil(cycle/d)) + rapid.IntRange(0, 50).Draw(rt, "extra b")
		zeta := rapid.Float64Range(0.001, 1).Draw(rt, "u") * d
		r, ok := x.GangRows(q, delta, d, b, zeta)
		if !ok {
			return
		}
		// r rows anywhere in the cycle.
		rows := rapid.Permutation(func() []int {
			v := make([]int, m)
			for i := range v {
				v[i] = i
			}
			return v
		}()).Draw(rt, "rows")[:r]
		mine := make([]bool, m)
		for _, row := range rows {
			mine[row] = true
		}
		// Fluid frames: processed ≤ arrived; a frame arrived at a is due by a + b·d.
		const steps = 50
		done := 0.0
		start := rapid.Float64Range(0, cycle).Draw(rt, "phase")
		for k := range 4 * m {
			row := k % m
			t0 := start + float64(k)*(q+delta) + delta
			if mine[row] {
				for i := range steps {
					t1 := t0 + q*float64(i+1)/steps
					done = min(done+q/steps/zeta, (t1-start)/d)
				}
			}
			tEnd := start + float64(k+1)*(q+delta)
			if due := (tEnd - start - float64(b)*d) / d; done < due-1e-6 {
				rt.Fatalf("r=%d rows %v of %d: at %g s %g frames done, %g due", r, rows, m, tEnd-start, done, due)
			}
		}
	})
}

// Loads against a naive model: the heap's top has the most laxity, the
// admission inequality holds on every node after any sequence, and a refusal
// or a release restores exactly the previous sums.
func TestLoadsProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 10).Draw(rt, "nodes")
		r := Ratio{rapid.IntRange(1, 4).Draw(rt, "x"), rapid.IntRange(0, 3).Draw(rt, "y")}
		l := NewLoads(n, r)
		const d, b = 1.0 / 30, 100
		live := map[int64]bool{}
		for step := range rapid.IntRange(1, 30).Draw(rt, "steps") {
			id := int64(step + 1)
			if rapid.Bool().Draw(rt, "release") && len(live) > 0 {
				var ids []int64
				for id := range live {
					ids = append(ids, id)
				}
				slices.Sort(ids)
				v := ids[rapid.IntRange(0, len(ids)-1).Draw(rt, "victim")]
				l.Release(v)
				delete(live, v)
			} else {
				k := rapid.IntRange(1, 2*n).Draw(rt, "procs")
				job := RTJob{Frame: d, Buffer: b}
				for range k {
					job.Work = append(job.Work, rapid.Float64Range(0.01, 0.5).Draw(rt, "u")*d)
				}
				before := slices.Clone(l.sigma)
				dec := l.Place(id, job, Admission{On: true})
				if dec.Verdict == Admitted {
					live[id] = true
				} else if !slices.Equal(before, l.sigma) {
					rt.Fatalf("refused job changed Σ: %v → %v", before, l.sigma)
				}
			}
			best := math.Inf(-1)
			for i := range n {
				best = max(best, l.Laxity(i))
				if l.Sigma(i) > l.share*l.Omega(i)+1e-9 {
					rt.Fatalf("node %d: Σ %g above s·Ω %g", i, l.Sigma(i), l.share*l.Omega(i))
				}
			}
			if l.Laxity(l.heap[0]) != best {
				rt.Fatalf("heap top laxity %g, best %g", l.Laxity(l.heap[0]), best)
			}
		}
		for id := range live {
			l.Release(id)
		}
		for i := range n {
			if l.Sigma(i) != 0 || !math.IsInf(l.Omega(i), 1) {
				rt.Fatalf("node %d not empty after releasing everything: Σ %g Ω %g", i, l.Sigma(i), l.Omega(i))
			}
		}
	})
}
