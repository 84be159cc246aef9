package reserve

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// model is the naive list model: every node's bookings in a slice, idle
// periods recomputed from scratch, every candidate examined.
type model struct {
	cfg   Config
	width int64
	now   int64
	books [][][2]int64 // per node, sorted [start, end)
}

func newModel(cfg Config) *model {
	m := 1
	if cfg.M > 0 {
		m = cfg.M
	}
	return &model{cfg: cfg, width: int64(m) * 2 * cfg.LMin, now: cfg.Start, books: make([][][2]int64, len(cfg.Rates))}
}

func (m *model) rate(i int) float64 {
	if m.cfg.Rates[i] == 0 {
		return 1
	}
	return m.cfg.Rates[i]
}

func (m *model) dur(i int, w int64) int64 {
	if m.rate(i) == 1 {
		return w
	}
	return max(1, int64(math.Ceil(float64(w)/m.rate(i))))
}

type gap struct {
	node    int
	st, end int64
}

// gaps lists the idle periods the index should hold: clipped to the first
// live strip, unexpired, long enough for l_min on their node.
func (m *model) gaps() []gap {
	floor := floorDiv(m.now, m.width) * m.width
	var out []gap
	for i, bs := range m.books {
		prev := m.cfg.Start
		add := func(st, end int64) {
			st = max(st, floor)
			if end > m.now && span(st, end) >= m.dur(i, m.cfg.LMin) {
				out = append(out, gap{i, st, end})
			}
		}
		for _, b := range bs {
			if b[0] > prev {
				add(prev, b[0])
			}
			prev = max(prev, b[1])
		}
		add(prev, Inf)
	}
	return out
}

func (m *model) completion(i int) int64 {
	if bs := m.books[i]; len(bs) > 0 {
		return bs[len(bs)-1][1]
	}
	return m.cfg.Start
}

func (m *model) plan(req Request) (Booking, bool) {
	r := max(req.Release, m.now)
	d := req.Deadline
	if d <= 0 {
		d = Inf
	}
	w := max(req.Work, m.cfg.LMin)
	if req.Nodes == 1 {
		st := m.cfg.Strategy
		best := cand{k: worst}
		var bestNode int
		consider := func(g gap) {
			D := m.dur(g.node, w)
			q := query{r: r, d: d, D: D, stLo: math.MinInt64, stHi: math.MaxInt64}
			p := &period{node: int32(g.node), st: g.st, end: g.end}
			if !q.fits(p) {
				return
			}
			s, k := place(st, p, &q)
			if st == FFHA {
				k = key{int64(m.rank(g.node)), g.st, int64(g.node)}
			}
			if k.less(best.k) {
				best = cand{p: p, s: s, k: k}
				bestNode = g.node
			}
		}
		if st == LACT {
			for i := range m.books {
				consider(gap{i, m.completion(i), Inf})
			}
		} else {
			for _, g := range m.gaps() {
				consider(g)
			}
		}
		if best.p == nil {
			return Booking{}, false
		}
		return Booking{Start: best.s, Nodes: []int{bestNode}, Ends: []int64{best.s + m.dur(bestNode, w)}}, true
	}
	dt, mr := m.cfg.DeltaT, m.cfg.MaxRet
	if dt <= 0 {
		dt = m.cfg.LMin
	}
	if mr <= 0 {
		mr = 64
	}
	fastest := Inf
	for i := range m.books {
		fastest = min(fastest, m.dur(i, w))
	}
	gs := m.gaps()
	for k := 0; k <= mr; k++ {
		s := r + int64(k)*dt
		if s+fastest > d {
			break
		}
		var ok []gap
		for _, g := range gs {
			e := s + m.dur(g.node, w)
			if g.st <= s && e <= g.end && e <= d {
				ok = append(ok, g)
			}
		}
		if len(ok) < req.Nodes {
			continue
		}
		slices.SortFunc(ok, func(a, b gap) int {
			if a.st != b.st {
				if a.st > b.st {
					return -1
				}
				return 1
			}
			return a.node - b.node
		})
		ok = ok[:req.Nodes]
		slices.SortFunc(ok, func(a, b gap) int { return a.node - b.node })
		b := Booking{Start: s}
		for _, g := range ok {
			b.Nodes = append(b.Nodes, g.node)
			b.Ends = append(b.Ends, s+m.dur(g.node, w))
		}
		return b, true
	}
	return Booking{}, false
}

// rank is the FF-HA+ order of node i's rate class.
func (m *model) rank(i int) int {
	rs := map[float64]bool{}
	for j := range m.books {
		rs[m.rate(j)] = true
	}
	n := 0
	for r := range rs {
		if r < m.rate(i) {
			n++
		}
	}
	return n
}

// feasibleAt: n nodes are idle in [s, s + their duration).
func (m *model) feasibleAt(s, w int64, n int) bool {
	w = max(w, m.cfg.LMin)
	c := 0
	for _, g := range m.gaps() {
		if g.st <= s && s+m.dur(g.node, w) <= g.end {
			c++
		}
	}
	return c >= n
}

func (m *model) book(b Booking) {
	for j, i := range b.Nodes {
		m.books[i] = append(m.books[i], [2]int64{b.Start, b.Ends[j]})
		slices.SortFunc(m.books[i], func(x, y [2]int64) int { return int(x[0] - y[0]) })
	}
}

func (m *model) finish(b Booking, at int64) {
	at = max(at, m.now)
	for _, i := range b.Nodes {
		bs := m.books[i]
		for k := range bs {
			if bs[k][0] != b.Start {
				continue
			}
			if at <= bs[k][0] {
				m.books[i] = slices.Delete(bs, k, k+1)
			} else if at < bs[k][1] {
				bs[k][1] = at
			}
			break
		}
	}
}

func (m *model) free(a, b int64) []int {
	var out []int
	for _, g := range m.gaps() {
		if g.st <= a && b <= g.end {
			out = append(out, g.node)
		}
	}
	slices.Sort(out)
	return out
}

// entries lists what the index's live strips hold, and fails on stale ones.
func entries(t *rapid.T, ix *Index) []gap {
	var out []gap
	for k := ix.base; k < ix.topStrip(); k++ {
		s := ix.stripAt(k)
		if s == nil {
			continue
		}
		for c, tr := range s.trees {
			if tr == nil {
				continue
			}
			if tr.dead {
				t.Fatalf("dead tree reachable in strip %d", k)
			}
			primCheck(t, tr.root)
			if ix.twoD {
				secCheck(t, tr)
			}
			tr.each(func(p *period) {
				if p.t != tr {
					t.Fatalf("period %+v thinks it is in another tree", *p)
				}
				if ix.stripOf(p.st) != k || ix.nodes[p.node].cls != c {
					t.Fatalf("period %+v in strip %d class %d", *p, k, c)
				}
				if p.end <= ix.now {
					if k != ix.base {
						t.Fatalf("expired period %+v outside the current strip", *p)
					}
					return
				}
				out = append(out, gap{int(p.node), p.st, p.end})
			})
		}
	}
	return out
}

// primCheck: every summary of a primary tree node is what pull computes
// from its children (insertions and removals update them incrementally).
func primCheck(t *rapid.T, n *tnode) {
	if n == nil {
		return
	}
	primCheck(t, n.l)
	primCheck(t, n.r)
	want := *n
	want.pull()
	if want != *n {
		t.Fatalf("stale summary at %+v: have %+v, want %+v", *n.p, *n, want)
	}
	for _, c := range []*tnode{n.l, n.r} {
		if c != nil && c.prio > n.prio {
			t.Fatalf("heap order broken at %+v", *n.p)
		}
	}
}

// secCheck: the secondary trees of a strip tree hold exactly its finite
// periods, in their key order, with correct subtree summaries.
func secCheck(t *rapid.T, tr *tree) {
	if tr.e == nil || tr.l == nil {
		t.Fatalf("strip tree without secondary trees")
	}
	var fin []*period
	tr.each(func(p *period) {
		if p.end != Inf {
			fin = append(fin, p)
		}
	})
	for _, st := range []*stree{tr.e, tr.l} {
		var got []*period
		st.each(func(p *period) { got = append(got, p) })
		want := slices.Clone(fin)
		slices.SortFunc(want, func(a, b *period) int {
			if st.less(keyOf(a), keyOf(b)) {
				return -1
			}
			if st.less(keyOf(b), keyOf(a)) {
				return 1
			}
			return 0
		})
		if !slices.Equal(got, want) {
			t.Fatalf("secondary tree (kind %d) holds %d periods, primary %d finite", st.kind, len(got), len(want))
		}
		var walk func(n *snode) (lo, hi int64, ln, last *period)
		walk = func(n *snode) (lo, hi int64, ln, last *period) {
			lo, hi, ln, last = n.p.st, n.p.st, n.p, n.p
			for i, c := range []*snode{n.l, n.r} {
				if c == nil {
					continue
				}
				if c.prio > n.prio {
					t.Fatalf("heap order broken")
				}
				a, b, l, z := walk(c)
				lo, hi = min(lo, a), max(hi, b)
				if lnLess(l, ln) {
					ln = l
				}
				if i == 1 {
					last = z
				}
			}
			if n.minSt != lo || n.maxSt != hi || n.minLN != ln || n.last != last || n.k != keyOf(n.p) {
				t.Fatalf("stale secondary summary (kind %d) at %+v: have %d %d %+v %+v, want %d %d %+v %+v", st.kind, *n.p, n.minSt, n.maxSt, *n.minLN, *n.last, lo, hi, *ln, *last)
			}
			return
		}
		if st.root != nil {
			walk(st.root)
		}
	}
}

func mirrorEntries(t *rapid.T, ix *Index) []gap {
	var out []gap
	for j := ix.mir.base; j < ix.mir.top(); j++ {
		s := ix.mir.at(j)
		if s == nil {
			continue
		}
		for _, tr := range s.trees {
			if tr == nil {
				continue
			}
			if tr.dead {
				t.Fatalf("dead mirror tree reachable")
			}
			tr.each(func(p *period) {
				if ix.mirStrip(-p.st) != j || p.twin == nil || p.twin.twin != p {
					t.Fatalf("bad image %+v in strip %d", *p, j)
				}
				if -p.st > ix.now {
					out = append(out, gap{int(p.node), -p.end, -p.st})
				}
			})
		}
	}
	return out
}

func sortGaps(g []gap) {
	slices.SortFunc(g, func(a, b gap) int {
		if a.node != b.node {
			return a.node - b.node
		}
		if a.st != b.st {
			if a.st < b.st {
				return -1
			}
			return 1
		}
		return 0
	})
}

func genConfig(t *rapid.T) Config {
	n := rapid.IntRange(1, 7).Draw(t, "nodes")
	rateSet := rapid.SampledFrom([][]float64{{1}, {1, 0.5}, {1, 2, 0.25}, {0.75, 1.5}}).Draw(t, "rates")
	rates := make([]float64, n)
	for i := range rates {
		rates[i] = rapid.SampledFrom(rateSet).Draw(t, "rate")
	}
	return Config{
		Rates:    rates,
		LMin:     rapid.Int64Range(1, 8).Draw(t, "lmin"),
		M:        rapid.IntRange(1, 3).Draw(t, "M"),
		Strategy: rapid.SampledFrom(Strategies()).Draw(t, "strategy"),
		Start:    rapid.Int64Range(-50, 50).Draw(t, "start"),
		DeltaT:   rapid.Int64Range(0, 10).Draw(t, "dt"),
		MaxRet:   rapid.IntRange(0, 12).Draw(t, "maxret"),
	}
}

func TestIndexAgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := genConfig(t)
		ix, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		m := newModel(cfg)
		live := map[int64]Booking{}
		reqs := map[int64]Request{}
		var ids []int64
		check := func() {
			if ix.mir != nil {
				// the vertical strips hold the image of every finite live period.
				img, prim := mirrorEntries(t, ix), entries(t, ix)
				prim = slices.DeleteFunc(prim, func(g gap) bool { return g.end == Inf })
				sortGaps(img)
				sortGaps(prim)
				if !slices.Equal(img, prim) {
					t.Fatalf("mirror holds\n%v\nprimal has\n%v", img, prim)
				}
			}
			got, want := entries(t, ix), m.gaps()
			sortGaps(got)
			sortGaps(want)
			if !slices.Equal(got, want) {
				t.Fatalf("index holds\n%v\nmodel has\n%v", got, want)
			}
			// no node booked twice at any instant
			for i, bs := range m.books {
				for k := 1; k < len(bs); k++ {
					if bs[k][0] < bs[k-1][1] {
						t.Fatalf("node %d booked twice: %v", i, bs)
					}
				}
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"reserve": func(t *rapid.T) {
				r := ix.Now() + rapid.Int64Range(-5, 120).Draw(t, "r")
				w := rapid.Int64Range(1, 40).Draw(t, "w")
				d := int64(0)
				if rapid.Bool().Draw(t, "hasDeadline") {
					d = r + rapid.Int64Range(0, 150).Draw(t, "slack")
				}
				n := 1
				if rapid.IntRange(0, 3).Draw(t, "co") == 0 {
					n = rapid.IntRange(1, len(cfg.Rates)+1).Draw(t, "n")
				}
				req := Request{Release: r, Work: w, Deadline: d, Nodes: n}
				want, wok := m.plan(req)
				got, err := ix.Reserve(req)
				if n > len(cfg.Rates) {
					if ref, ok := err.(*Refusal); !ok || !ref.Never {
						t.Fatalf("want a Never refusal, got %v", err)
					}
					return
				}
				if wok != (err == nil) {
					t.Fatalf("%v: feasibility differs: index %v %v, model %v %v", req, got, err, wok, want)
				}
				if err != nil {
					ref := err.(*Refusal)
					if ref.Never {
						t.Fatalf("Never for a feasible shape: %v", ref)
					}
					// the earliest start is feasible without the deadline,
					// and for one node nothing earlier is.
					rr := max(r, ix.Now())
					if ref.EarliestStart < rr || !m.feasibleAt(ref.EarliestStart, w, n) {
						t.Fatalf("%v: earliest start %d not feasible", req, ref.EarliestStart)
					}
					if n == 1 {
						for s := rr; s < ref.EarliestStart && s < rr+400; s++ {
							if m.feasibleAt(s, w, 1) {
								t.Fatalf("%v: %d is feasible, earlier than %d", req, s, ref.EarliestStart)
							}
						}
					}
					if ref.EarliestDeadline <= ref.EarliestStart {
						t.Fatalf("bad earliest deadline %v", ref)
					}
					return
				}
				got.ID = 0
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%v strategy %v: index chose %v, model %v", req, cfg.Strategy, got, want)
				}
				rr := max(r, ix.Now())
				for _, e := range got.Ends {
					if got.Start < rr || (d > 0 && e > d) || e <= got.Start {
						t.Fatalf("booking %v outside [%d,%d]", got, rr, d)
					}
				}
				id := ix.nextID - 1
				m.book(got)
				got.ID = id
				live[id] = got
				reqs[id] = req
				ids = append(ids, id)
			},
			"cancel": func(t *rapid.T) {
				if len(ids) == 0 {
					return
				}
				k := rapid.IntRange(0, len(ids)-1).Draw(t, "k")
				id := ids[k]
				ids = slices.Delete(ids, k, k+1)
				if err := ix.Cancel(id); err != nil {
					t.Fatal(err)
				}
				m.finish(live[id], m.now)
				delete(live, id)
				if ix.Cancel(id) != ErrUnknownBooking {
					t.Fatal("double cancel accepted")
				}
			},
			"finish": func(t *rapid.T) {
				if len(ids) == 0 {
					return
				}
				k := rapid.IntRange(0, len(ids)-1).Draw(t, "k")
				id := ids[k]
				ids = slices.Delete(ids, k, k+1)
				at := ix.Now() + rapid.Int64Range(0, 60).Draw(t, "at")
				if err := ix.Finish(id, at); err != nil {
					t.Fatal(err)
				}
				m.finish(live[id], at)
				delete(live, id)
			},
			"occupy": func(t *rapid.T) {
				k := rapid.IntRange(1, len(cfg.Rates)).Draw(t, "k")
				nodes := rapid.SliceOfNDistinct(rapid.IntRange(0, len(cfg.Rates)-1), k, k, rapid.ID[int]).Draw(t, "on")
				s := ix.Now() + rapid.Int64Range(0, 80).Draw(t, "s")
				e := s + rapid.Int64Range(1, 30).Draw(t, "len")
				free := true
				for _, i := range nodes {
					for _, b := range m.books[i] {
						free = free && (b[1] <= s || b[0] >= e)
					}
				}
				b, err := ix.Occupy(nodes, s, e)
				if free != (err == nil) {
					t.Fatalf("Occupy(%v,%d,%d): free %v, err %v", nodes, s, e, free, err)
				}
				if err == nil {
					m.book(b)
					live[b.ID] = b
					ids = append(ids, b.ID)
				}
			},
			"strategy": func(t *rapid.T) {
				// a live index switches strategy (the benchmarks do): the
				// structures a strategy needs are built from what is there.
				st := rapid.SampledFrom(Strategies()).Draw(t, "switch")
				ix.setStrategy(st)
				m.cfg.Strategy = st
				cfg.Strategy = st
			},
			"advance": func(t *rapid.T) {
				now := ix.Now() + rapid.Int64Range(0, 40).Draw(t, "dt")
				ix.Advance(now)
				m.now = now
			},
			"range": func(t *rapid.T) {
				lm := int64(0)
				for i := range cfg.Rates {
					lm = max(lm, m.dur(i, cfg.LMin))
				}
				a := ix.Now() + rapid.Int64Range(0, 100).Draw(t, "a")
				b := a + lm + rapid.Int64Range(0, 50).Draw(t, "len")
				if got, want := ix.FreeIn(a, b), m.free(a, b); !slices.Equal(got, want) {
					t.Fatalf("FreeIn(%d,%d) = %v, model %v", a, b, got, want)
				}
			},
			"": func(t *rapid.T) { check() },
		})
	})
}
