package mix

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestParseRatio(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    Ratio
		wantErr string
	}{
		{"2:1", Ratio{2, 1}, ""},
		{" 1:0 ", Ratio{1, 0}, ""},
		{"0:3", Ratio{0, 3}, ""},
		{"0:0", Ratio{}, "cannot both be 0"},
		{"-1:2", Ratio{}, `"-1" is not a whole number`},
		{"2:1:3", Ratio{}, "want x:y"},
		{"2", Ratio{}, "want x:y"},
		{"a:b", Ratio{}, "not a whole number"},
	} {
		got, err := ParseRatio(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), c.in) {
				t.Errorf("ParseRatio(%q) = %v, %v; want error with %q naming the input", c.in, got, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseRatio(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	if s := (Ratio{2, 1}).Share(RT); math.Abs(s-2.0/3) > 1e-15 {
		t.Errorf("share 2:1 = %g", s)
	}
	if _, err := ParseMode("fifo"); err == nil || !strings.Contains(err.Error(), `"fifo"`) {
		t.Errorf("ParseMode(fifo) = %v", err)
	}
	for _, m := range Modes {
		if got, err := ParseMode(string(m)); err != nil || got != m {
			t.Errorf("ParseMode(%s) = %v, %v", m, got, err)
		}
	}
}

// Both classes always ready: time divides x:y to within one slice.
func TestPSShare(t *testing.T) {
	for _, r := range []Ratio{{2, 1}, {1, 1}, {1, 9}, {5, 3}} {
		p := NewPS(r)
		var got [2]float64
		const dt = 0.01
		for range 10000 {
			c, ok := p.Pick(true, true)
			if !ok {
				t.Fatal("nothing picked")
			}
			p.Charge(c, dt)
			got[c] += dt
		}
		want := r.Share(RT) * 100
		if math.Abs(got[RT]-want) > 2*dt {
			t.Errorf("%s: RT ran %g s of 100, want %g", r, got[RT], want)
		}
	}
}

// A class that was idle does not bank credit: on becoming ready it takes the
// other's virtual time, and the ratio holds from then on.
func TestPSReadyResets(t *testing.T) {
	p := NewPS(Ratio{1, 1})
	for range 100 { // BE alone for 100 slices
		c, _ := p.Pick(false, true)
		if c != BE {
			t.Fatal("BE alone not picked")
		}
		p.Charge(BE, 1)
	}
	var rt int
	for range 10 {
		c, _ := p.Pick(true, true)
		p.Charge(c, 1)
		if c == RT {
			rt++
		}
	}
	if rt < 4 || rt > 6 {
		t.Errorf("after BE ran alone, RT got %d of 10 slices at 1:1; want about 5 (no banked credit)", rt)
	}
	if _, ok := p.Pick(false, false); ok {
		t.Error("picked with nothing ready")
	}
	q := NewPS(Ratio{1, 0})
	for range 5 {
		c, _ := q.Pick(true, true)
		if c != RT {
			t.Fatal("1:0 gave BE the CPU while RT was ready")
		}
		q.Charge(c, 1)
	}
	if c, _ := q.Pick(false, true); c != BE {
		t.Error("1:0: BE not run when RT has nothing")
	}
}

func TestTDM(t *testing.T) {
	if _, err := NewTDM(Ratio{2, 1}, 0, 0); err == nil {
		t.Error("period 0 accepted")
	}
	if _, err := NewTDM(Ratio{2, 1}, 0.003, 0.001); err == nil {
		t.Error("a BE division of 1 ms with a 1 ms sync accepted")
	}
	d, err := NewTDM(Ratio{2, 1}, 3, 0.001)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		now  float64
		own  Class
		end  float64
		sync bool
	}{{0, RT, 2, true}, {0.5, RT, 2, false}, {2.0005, BE, 3, true}, {2.5, BE, 3, false}, {3.2, RT, 5, false}, {8.9, BE, 9, false}} {
		own, end, syncEnd := d.At(c.now)
		sync := c.now < syncEnd
		if own != c.own || math.Abs(end-c.end) > 1e-9 || sync != c.sync {
			t.Errorf("At(%g) = %s %g %t; want %s %g %t", c.now, own, end, sync, c.own, c.end, c.sync)
		}
	}
	all, _ := NewTDM(Ratio{1, 0}, 3, 0.001)
	if own, _, _ := all.At(2.9); own != RT {
		t.Error("1:0: BE division exists")
	}
	if c, ok := Lend(RT, false, true); !ok || c != BE {
		t.Error("idle RT division not lent to BE")
	}
	if c, ok := Lend(BE, true, true); !ok || c != BE {
		t.Error("BE division taken by RT while BE is ready")
	}
	if _, ok := Lend(RT, false, false); ok {
		t.Error("lent with nothing ready")
	}
}

func TestMatrix(t *testing.T) {
	x, err := NewMatrix(4, 3, Ratio{2, 1}) // the paper's Figure 2
	if err != nil {
		t.Fatal(err)
	}
	if x.RTRows != 2 {
		t.Fatalf("RT rows = %d, want 2", x.RTRows)
	}
	if !x.Place(1, RT, 3, 1) || !x.Place(2, BE, 4, 1) {
		t.Fatal("placements refused")
	}
	if x.Place(3, BE, 1, 1) {
		t.Error("BE job placed in the RT set")
	}
	if !x.Place(4, RT, 1, 1) {
		t.Error("1-wide RT job not placed beside job 1")
	}
	if x.Place(5, RT, 2, 2) {
		t.Error("2 rows × 2 columns placed where the RT set has 1 and 4 free slots")
	}
	x.Optimize(func(int64) bool { return true })
	if got := x.Rows(1); got != 2 { // replicated in row 1 (RT set); BE row full
		t.Errorf("job 1 runs in %d rows after optimisation, want 2", got)
	}
	x.ClearReplicas()
	if got := x.Rows(1); got != 1 {
		t.Errorf("job 1 runs in %d rows after clearing replicas, want 1", got)
	}
	x.Remove(2)
	x.Optimize(func(int64) bool { return false })
	if got := x.Rows(1); got != 1 {
		t.Errorf("an RT job meeting its throughput was replicated (%d rows)", got)
	}
	if !x.Place(6, BE, 2, 1) {
		t.Error("BE job not placed in the emptied BE row")
	}
	x.Optimize(func(int64) bool { return false })
	if got := x.Rows(6); got != 2 { // step 4: BE into the idle RT slots of row 1
		t.Errorf("BE job in %d rows, want 2 (borrowed RT row)", got)
	}
}

func TestGangRows(t *testing.T) {
	x, _ := NewMatrix(16, 6, Ratio{2, 1})
	// Appendix A: Q = 500 ms, δ = 1 ms, d = 1/30 s, b = 100. Υ = 3.006 s.
	r, ok := x.GangRows(0.5, 0.001, 1.0/30, 100, 0.01) // 30 % of a CPU
	if !ok || r != 2 {
		t.Errorf("ζ = 10 ms: r = %d, %t; want 2 (⌈6·1.002·0.01·30⌉)", r, ok)
	}
	if r, ok := x.GangRows(0.5, 0.001, 1.0/30, 100, 0.0055); !ok || r != 1 {
		t.Errorf("ζ = 5.5 ms: r = %d, %t; want 1", r, ok)
	}
	if _, ok := x.GangRows(0.5, 0.001, 1.0/30, 100, 0.025); ok {
		t.Error("75 % of a CPU guaranteed with 4 RT rows of 6")
	}
	if _, ok := x.GangRows(0.5, 0.001, 1.0/30, 10, 0.001); ok {
		t.Error("guaranteed with a buffer (0.33 s) shorter than the cycle (3 s)")
	}
}

func TestWaitQueue(t *testing.T) {
	w := WaitQueue{MaxWait: 15}
	w.Push(1, 0)
	w.Push(2, 10)
	w.Push(3, 12)
	if d, ok := w.Deadline(); !ok || d != 15 {
		t.Errorf("deadline %g %t", d, ok)
	}
	w.Retry(func(id int64) bool { return id == 2 })
	if got := w.Expire(15); len(got) != 0 {
		t.Errorf("expired at exactly w: %v", got)
	}
	if got := w.Expire(27.5); len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Errorf("expired %v, want [1 3]", got)
	}
	if w.Len() != 0 {
		t.Error("queue not empty")
	}
}

func TestLoadsAdmission(t *testing.T) {
	l := NewLoads(4, Ratio{2, 1})
	job := RTJob{Frame: 1.0 / 30, Buffer: 100, Work: []float64{0.01, 0.01, 0.01, 0.01}} // 30 % each
	for id := int64(1); id <= 2; id++ {
		if d := l.Place(id, job, Admission{On: true}); d.Verdict != Admitted {
			t.Fatalf("job %d: %+v", id, d)
		}
	}
	// 60 % per node; a third 30 % job exceeds s = 66.7 %.
	d := l.Place(3, job, Admission{On: true})
	if d.Verdict != NotNow || !strings.Contains(d.Reason, "share") {
		t.Fatalf("third job: %+v", d)
	}
	if l.RTJobs() != 2 || math.Abs(l.Sigma(0)-2) > 1e-9 {
		t.Errorf("a refused job changed the loads: %d jobs, Σ_0 = %g", l.RTJobs(), l.Sigma(0))
	}
	// Statistical: with P = 0.3 the bound is s/(1−P) = 95 %.
	if d := l.Place(3, job, Admission{On: true, MissRate: 0.3}); d.Verdict != Admitted {
		t.Errorf("statistical P=0.3 refused 90 %%: %+v", d)
	}
	l.Release(3)
	if d := l.Place(3, job, Admission{}); d.Verdict != Admitted {
		t.Errorf("admission off refused: %+v", d)
	}
	big := RTJob{Frame: 1.0 / 30, Buffer: 100, Work: []float64{0.03}}
	if d := l.Place(9, big, Admission{On: true}); d.Verdict != Never {
		t.Errorf("90 %% of one CPU at s = 2/3: %+v, want Never", d)
	}
	bad := RTJob{Frame: 0.01, Buffer: 100, Work: []float64{0.02}}
	if d := l.Place(10, bad, Admission{}); d.Verdict != Never || !strings.Contains(d.Reason, "at most a frame") {
		t.Errorf("work longer than a frame: %+v", d)
	}
	if d := l.Place(11, RTJob{Frame: 0, Buffer: 1, Work: []float64{1}}, Admission{}); d.Verdict != Never || !strings.Contains(d.Reason, "rt-frame") {
		t.Errorf("frame 0: %+v", d)
	}
	// Laxity allocation: the biggest process goes to the emptiest node.
	m := NewLoads(3, Ratio{1, 1})
	m.Place(1, RTJob{Frame: 1, Buffer: 1, Work: []float64{0.2}}, Admission{})
	m.Place(2, RTJob{Frame: 1, Buffer: 1, Work: []float64{0.1}}, Admission{})
	d = m.Place(3, RTJob{Frame: 1, Buffer: 1, Work: []float64{0.05, 0.3}}, Admission{})
	if d.Nodes[1] != 2 || d.Nodes[0] != 1 {
		t.Errorf("placement %v, want the 0.3 process on empty node 2 and the 0.05 on node 1", d.Nodes)
	}
	be := m.PlaceBE(7, 2)
	be2 := m.PlaceBE(8, 2)
	if be[0] != 0 || be[1] != 1 || be2[0] != 2 || be2[1] != 0 {
		t.Errorf("BE placements %v %v, want [0 1] [2 0]", be, be2)
	}
}

// Both classes idle, then both ready at once: an old lead of one class's
// virtual time is forgotten (found by the replay: BE ran alone for minutes).
func TestPSBothReadyAfterIdle(t *testing.T) {
	p := NewPS(Ratio{2, 1})
	for range 1000 { // RT alone runs long
		c, _ := p.Pick(true, false)
		p.Charge(c, 1)
	}
	p.Pick(false, false)
	var rt int
	for range 30 {
		c, _ := p.Pick(true, true)
		p.Charge(c, 1)
		if c == RT {
			rt++
		}
	}
	if rt < 19 || rt > 21 {
		t.Errorf("RT got %d of 30 slices after both became ready at once; want 20 at 2:1", rt)
	}
}

func TestWeightsAndTDMFreeze(t *testing.T) {
	for _, c := range []struct {
		r      Ratio
		rt, be int
	}{{Ratio{2, 1}, 1365, 683}, {Ratio{1, 1}, 1024, 1024}, {Ratio{1, 0}, 2048, 2}, {Ratio{0, 1}, 2, 2048}} {
		if rt, be := c.r.Weights(); rt != c.rt || be != c.be {
			t.Errorf("%s: weights %d:%d, want %d:%d", c.r, rt, be, c.rt, c.be)
		}
	}
	// systemd's cpu.weight scale (1..10000) for the slices of SSH nodes.
	for _, c := range []struct {
		r      Ratio
		rt, be int
	}{{Ratio{2, 1}, 6667, 3333}, {Ratio{1, 1}, 5000, 5000}, {Ratio{1, 0}, 10000, 1}, {Ratio{0, 3}, 1, 10000}} {
		if rt, be := c.r.SystemdWeights(); rt != c.rt || be != c.be {
			t.Errorf("%s: systemd weights %d:%d, want %d:%d", c.r, rt, be, c.rt, c.be)
		}
	}
	for _, owner := range []Class{RT, BE} {
		for _, rtHas := range []bool{false, true} {
			for _, beHas := range []bool{false, true} {
				f := TDMFreeze(owner, rtHas, beHas)
				if f[owner] {
					t.Errorf("owner %s frozen in its own division", owner)
				}
				has := [2]bool{rtHas, beHas}
				if want := has[owner] && has[owner.Other()]; f[owner.Other()] != want {
					t.Errorf("owner %s, rt %t be %t: freeze %v", owner, rtHas, beHas, f)
				}
			}
		}
	}
	if f := TDMFreeze(RT, false, true); f[BE] {
		t.Error("BE frozen while RT has nothing")
	}
}

// Gang on real nodes: jobs keep the columns the space-sharing scheduler
// gave them; each takes a row of its class's set where all its columns are
// free, in id order; the plan is the same whatever order the jobs come in;
// a job alone on its columns is replicated into every row, jobs sharing a
// column alternate, at most one job runs per column and row, and a job with
// no free row waits.
func TestGangPlan(t *testing.T) {
	jobs := []GangJob{
		{ID: 7, Class: BE, Cols: []int{2, 1}},
		{ID: 3, Class: RT, Cols: []int{1}},
		{ID: 5, Class: BE, Cols: []int{0}},
		{ID: 9, Class: BE, Cols: []int{1}}, // BE set (1 row) full on column 1
		{ID: 4, Class: RT, Cols: []int{3}},
	}
	x, waiting, err := GangPlan(4, 2, Ratio{1, 1}, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(waiting, []int64{9}) {
		t.Errorf("waiting %v, want [9]", waiting)
	}
	if !x.Runs(0, 1, 3) || !x.Runs(1, 1, 7) || !x.Runs(1, 2, 7) || x.Runs(0, 1, 7) {
		t.Errorf("jobs 3 (RT) and 7 (BE) on column 1 do not alternate:\n%v", x.slot)
	}
	if x.Rows(7) != 1 { // not into row 0: column 1 holds job 3 there
		t.Errorf("job 7 runs in %d rows, want 1", x.Rows(7))
	}
	for _, alone := range []struct {
		id  int64
		col int
	}{{5, 0}, {4, 3}} {
		if !x.Runs(0, alone.col, alone.id) || !x.Runs(1, alone.col, alone.id) {
			t.Errorf("job %d alone on column %d does not run in every row", alone.id, alone.col)
		}
	}
	for row := 0; row < x.M; row++ {
		for col := 0; col < x.P; col++ {
			n := 0
			for _, j := range jobs {
				if x.Runs(row, col, j.ID) {
					n++
				}
			}
			if n > 1 {
				t.Errorf("row %d column %d runs %d jobs", row, col, n)
			}
		}
	}
	// On nodes, job 9 takes an overflow row: a third quantum in the cycle.
	gs, err := NewGang(4, 2, Ratio{1, 1}, jobs)
	if err != nil || gs.Rows() != 3 || !gs.Runs(2, 1, 9) || gs.Runs(0, 1, 9) || gs.Runs(1, 1, 9) || !gs.Runs(0, 1, 3) {
		t.Errorf("overflow: %d rows %v (%v); want job 9 alone in row 2", gs.Rows(), gs.Overflow, err)
	}
	rev := slices.Clone(jobs)
	slices.Reverse(rev)
	y, _, _ := GangPlan(4, 2, Ratio{1, 1}, rev)
	if !slices.Equal(x.slot, y.slot) {
		t.Errorf("the plan depends on the order of the jobs:\n%v\n%v", x.slot, y.slot)
	}
	if x.PlaceOn(11, RT, []int{4}, 1) || x.PlaceOn(12, RT, nil, 1) {
		t.Error("PlaceOn accepted a column out of range or none")
	}
	for _, c := range []struct {
		now, q   float64
		m, row   int
		wantNext float64
	}{{0, 0.5, 6, 0, 0.5}, {3.2, 0.5, 6, 0, 3.5}, {2.75, 0.5, 6, 5, 3}, {1e9 + 0.1, 0.5, 4, 0, 1e9 + 0.5}} {
		row, next := GangRow(c.now, c.q, c.m)
		if row != c.row || math.Abs(next-c.wantNext) > 1e-6 {
			t.Errorf("GangRow(%g, %g, %d) = %d, %g; want %d, %g", c.now, c.q, c.m, row, next, c.row, c.wantNext)
		}
	}
}
