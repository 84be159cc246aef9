package mix

import (
	"fmt"
	"math"
	"slices"
)

// GangAdmit is the RT admission of 1GS (be-rt-mix-2001 §4.4, deterministic
// admission): the Ousterhout matrix of the admitted RT jobs over p nodes,
// each holding r = M·ζmax/d_A rows (GangRows, with the cycle M·(Q+δ)) of
// the RT set, with s_A free slots down the same columns (Matrix.Place). A
// job for which no such rows are free now is refused for now; one that no
// number of rows could guarantee (M·(Q+δ) > b·d, or r above the RT rows,
// or more processes than nodes) is refused for ever. It has the shape of
// Loads, the TDM/PS test, so that the Engine keeps either per partition.
// BE jobs are not in it: they take the BE rows and whatever RT rows are
// idle, which the nodes' rotation gives them (docs/mix.md).
type GangAdmit struct {
	x             *Matrix
	quantum, sync float64
	// over are jobs restored without the test that found no rows (a
	// reload shrank the matrix): they run, in overflow rows on the nodes.
	over map[int64][]int
}

// NewGangAdmit makes the account of p nodes with m rows split by r,
// quantum Q and row switch δ (seconds).
func NewGangAdmit(p, m int, r Ratio, quantum, sync float64) (*GangAdmit, error) {
	if !(quantum > 0) || !(sync >= 0) {
		return nil, fmt.Errorf("gang: quantum %g s and sync %g s: want quantum > 0, sync ≥ 0", quantum, sync)
	}
	x, err := NewMatrix(p, m, r)
	if err != nil {
		return nil, err
	}
	return &GangAdmit{x: x, quantum: quantum, sync: sync, over: map[int64][]int{}}, nil
}

// GangAdmitOn is the admission of §4.4 on a matrix the caller also uses
// for BE jobs and replicas (the replay's 1GS simulator).
func GangAdmitOn(x *Matrix, quantum, sync float64) *GangAdmit {
	return &GangAdmit{x: x, quantum: quantum, sync: sync, over: map[int64][]int{}}
}

// Matrix is the account's matrix (read only).
func (g *GangAdmit) Matrix() *Matrix { return g.x }

// rows is the number of RT rows job j needs (§4.4, GangRows).
func (g *GangAdmit) rows(j RTJob) (int, bool) {
	return g.x.GangRows(g.quantum, g.sync, j.Frame, j.Buffer, j.ZetaMax())
}

// Place admits job id (a.On) by the §4.4 rows test and places it, one
// process per node, or refuses it and changes nothing. Without a.On (a
// job admitted earlier, restored) it takes the rows it needs if they are
// free, else one row, else it is kept aside (it runs in an overflow row).
// Nodes of the decision are the node of each process.
func (g *GangAdmit) Place(id int64, j RTJob, a Admission) Decision {
	if err := j.Validate(); err != nil {
		return Decision{Verdict: Never, Reason: err.Error()}
	}
	if g.x.jobs[id] != nil || g.over[id] != nil {
		return Decision{Verdict: Never, Reason: fmt.Sprintf("job %d is already placed", id)}
	}
	s := len(j.Work)
	if s > g.x.P {
		return Decision{Verdict: Never, Reason: fmt.Sprintf(
			"1GS runs one process per node: %d processes, %d nodes", s, g.x.P)}
	}
	r, ok := g.rows(j)
	if a.On {
		if !ok {
			return Decision{Verdict: Never, Reason: g.neverReason(j, r)}
		}
		if !g.x.Place(id, RT, s, r) {
			return Decision{Verdict: NotNow, Reason: fmt.Sprintf(
				"1GS needs %d of the %d RT rows with %d free slots down the same columns (r = M·(Q+δ)·ζmax/(d·Q), §4.4); none are free now",
				r, g.x.RTRows, s)}
		}
		return Decision{Verdict: Admitted, Nodes: slices.Clone(g.x.Cols(id))}
	}
	for _, rr := range []int{min(max(r, 1), g.x.RTRows), 1} {
		if g.x.Place(id, RT, s, rr) {
			return Decision{Verdict: Admitted, Nodes: slices.Clone(g.x.Cols(id))}
		}
	}
	cols := make([]int, s)
	for k := range cols {
		cols[k] = k
	}
	g.over[id] = cols
	return Decision{Verdict: Admitted, Nodes: cols}
}

func (g *GangAdmit) neverReason(j RTJob, r int) string {
	cycle := float64(g.x.M) * (g.quantum + g.sync)
	if cycle > j.Period() {
		return fmt.Sprintf("the 1GS cycle M·(Q+δ) = %.4g s is longer than the buffer b·d = %.4g s: no number of rows guarantees the frames (§4.4)",
			cycle, j.Period())
	}
	return fmt.Sprintf("1GS would need %d rows (r = M·(Q+δ)·ζmax/(d·Q), §4.4), more than the %d RT rows", r, g.x.RTRows)
}

// PlaceOn puts back a job admitted earlier on the nodes it runs on (a
// restart): the rows it needs where free there, else one row, else aside.
func (g *GangAdmit) PlaceOn(id int64, j RTJob, nodes []int) {
	if g.x.jobs[id] != nil || g.over[id] != nil || len(nodes) == 0 {
		return
	}
	cols := slices.Clone(nodes)
	slices.Sort(cols)
	cols = slices.Compact(cols)
	r, _ := g.rows(j)
	for _, rr := range []int{min(max(r, 1), g.x.RTRows), 1} {
		if g.x.PlaceOn(id, RT, cols, rr) {
			return
		}
	}
	g.over[id] = cols
}

// Release takes job id out.
func (g *GangAdmit) Release(id int64) {
	g.x.Remove(id)
	delete(g.over, id)
}

// NodesOf is the node of each of job id's processes.
func (g *GangAdmit) NodesOf(id int64) []int {
	if c := g.over[id]; c != nil {
		return slices.Clone(c)
	}
	return slices.Clone(g.x.Cols(id))
}

// RowsOn is the number of RT rows taken on node i (read for display).
func (g *GangAdmit) RowsOn(i int) int {
	n := 0
	for row := 0; row < g.x.RTRows; row++ {
		if id, _ := g.x.Slot(row, i); id != 0 {
			n++
		}
	}
	return n
}

// WouldFit is the largest ζmax a job of s processes with frame d and
// buffer b could have and be admitted now: with the most rows r free on
// s common columns, ζmax ≤ r·Q·d/(M·(Q+δ)) (§4.4, GangRows solved for
// ζmax). 0 when nothing would fit.
func (g *GangAdmit) WouldFit(s int, frame float64, buffer int) float64 {
	cycle := float64(g.x.M) * (g.quantum + g.sync)
	if s > g.x.P || cycle > float64(buffer)*frame {
		return 0
	}
	const probe = math.MinInt64
	for r := g.x.RTRows; r >= 1; r-- {
		if g.x.Place(probe, RT, s, r) {
			g.x.Remove(probe)
			return math.Min(float64(r)*g.quantum*frame/cycle, frame)
		}
	}
	return 0
}
