package mix

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Matrix is the Ousterhout matrix of 1GS (be-rt-mix-2001 §4.1): M rows
// (time quanta) by p columns (nodes). Rows [0, RTRows) are the RT set, the
// rest the BE set, in the proportion x:y. A job holds the same columns in
// each of its rows (no migration). Its primary rows are where it was
// allocated; replicas are the optimisation's copies into idle rows, removed
// at every arrival or departure (ClearReplicas) before allocating again.
type Matrix struct {
	P, M   int
	RTRows int
	slot   []cell // row-major M×P
	jobs   map[int64]*gangJob
}

type cell struct {
	job     int64 // 0: free
	replica bool
}

type gangJob struct {
	class Class
	cols  []int
	rows  []int // primary rows, ascending
}

// NewMatrix makes an empty M×p matrix whose rows are split x:y, each class
// with a share keeping at least one row.
func NewMatrix(p, m int, r Ratio) (*Matrix, error) {
	if p < 1 || m < 1 {
		return nil, fmt.Errorf("gang: %d nodes and %d rows: want at least one of each", p, m)
	}
	rt := int(math.Round(float64(m) * r.Share(RT)))
	if r.X > 0 {
		rt = max(rt, 1)
	}
	if r.Y > 0 {
		rt = min(rt, m-1)
	}
	if r.X > 0 && r.Y > 0 && m < 2 {
		return nil, fmt.Errorf("gang: ratio %s needs at least 2 rows, got %d", r, m)
	}
	return &Matrix{P: p, M: m, RTRows: rt, slot: make([]cell, m*p), jobs: map[int64]*gangJob{}}, nil
}

// Set gives the rows of class c.
func (x *Matrix) Set(c Class) (lo, hi int) {
	if c == RT {
		return 0, x.RTRows
	}
	return x.RTRows, x.M
}

// Slot is what row runs on column col: a job id (0: nothing) and whether
// it is a replica.
func (x *Matrix) Slot(row, col int) (job int64, replica bool) {
	c := x.slot[row*x.P+col]
	return c.job, c.replica
}

// Cols are the columns job id holds (nil when it is not in the matrix).
func (x *Matrix) Cols(id int64) []int {
	if j := x.jobs[id]; j != nil {
		return j.cols
	}
	return nil
}

// Rows counts the rows job id runs in, replicas included.
func (x *Matrix) Rows(id int64) int {
	j := x.jobs[id]
	if j == nil {
		return 0
	}
	n := 0
	for r := 0; r < x.M; r++ {
		if x.slot[r*x.P+j.cols[0]].job == id {
			n++
		}
	}
	return n
}

// Place allocates job id of class c on size columns in r rows of its own
// set, the same columns in every row (§4.1 initial allocation; §4.4 for
// r > 1). Rows are taken first-fit, each one narrowing the columns free in
// all rows so far. It returns false and changes nothing when no such rows
// exist; the caller queues the job.
func (x *Matrix) Place(id int64, c Class, size, r int) bool {
	if id == 0 || x.jobs[id] != nil || size < 1 || size > x.P || r < 1 {
		return false
	}
	lo, hi := x.Set(c)
	if hi-lo < r {
		return false
	}
	var rows []int
	var cols []int // columns free in every row taken so far
	for row := lo; row < hi && len(rows) < r; row++ {
		var keep []int
		if rows == nil {
			for col := 0; col < x.P; col++ {
				if x.slot[row*x.P+col].job == 0 {
					keep = append(keep, col)
				}
			}
		} else {
			for _, col := range cols {
				if x.slot[row*x.P+col].job == 0 {
					keep = append(keep, col)
				}
			}
		}
		if len(keep) >= size {
			rows, cols = append(rows, row), keep
		}
	}
	if len(rows) < r {
		return false
	}
	cols = slices.Clone(cols[:size])
	for _, row := range rows {
		for _, col := range cols {
			x.slot[row*x.P+col] = cell{job: id}
		}
	}
	x.jobs[id] = &gangJob{class: c, cols: cols, rows: rows}
	return true
}

// PlaceOn is Place for a job whose columns are already chosen (on real
// nodes the space-sharing scheduler chose them): r rows of class c's set,
// first-fit, where all of cols are free. cols must be distinct columns in
// [0, P). It returns false and changes nothing when no such rows exist.
func (x *Matrix) PlaceOn(id int64, c Class, cols []int, r int) bool {
	if id == 0 || x.jobs[id] != nil || len(cols) == 0 || r < 1 {
		return false
	}
	for _, col := range cols {
		if col < 0 || col >= x.P {
			return false
		}
	}
	lo, hi := x.Set(c)
	var rows []int
	for row := lo; row < hi && len(rows) < r; row++ {
		free := true
		for _, col := range cols {
			free = free && x.slot[row*x.P+col].job == 0
		}
		if free {
			rows = append(rows, row)
		}
	}
	if len(rows) < r {
		return false
	}
	cols = slices.Clone(cols)
	slices.Sort(cols)
	for _, row := range rows {
		for _, col := range cols {
			x.slot[row*x.P+col] = cell{job: id}
		}
	}
	x.jobs[id] = &gangJob{class: c, cols: cols, rows: rows}
	return true
}

// GangJob is a job running on real nodes in gang mode: its class and the
// columns (nodes) its processes run on.
type GangJob struct {
	ID    int64
	Class Class
	Cols  []int
}

// GangPlan is the Ousterhout matrix of 1GS (be-rt-mix-2001 §4.1) for the
// jobs running on p nodes: each job, in id order, takes one row of its
// class's set on its own columns (PlaceOn), then the optimisation
// replicates jobs into idle rows (Optimize; every RT job counts as short of
// throughput, as a node does not see frames). Jobs for which no row is free
// are returned as waiting: they stay stopped until a row frees (§4.1's
// queue). The plan depends only on the set of jobs, so drivers may rebuild
// it at every arrival or departure and every node computes the same one.
func GangPlan(p, m int, r Ratio, jobs []GangJob) (x *Matrix, waiting []int64, err error) {
	if x, err = NewMatrix(p, m, r); err != nil {
		return nil, nil, err
	}
	jobs = slices.Clone(jobs)
	slices.SortFunc(jobs, func(a, b GangJob) int { return cmp.Compare(a.ID, b.ID) })
	for _, j := range jobs {
		if !x.PlaceOn(j.ID, j.Class, j.Cols, 1) {
			waiting = append(waiting, j.ID)
		}
	}
	x.Optimize(func(int64) bool { return true })
	return x, waiting, nil
}

// Gang is the rotation a driver of real nodes applies: the matrix of
// GangPlan, then one overflow row after another for the jobs it left
// waiting. On real nodes a job has started before it reaches the matrix
// (horad's Engine started it), so it cannot wait in a queue as §4.1's
// jobs do: kept stopped, it could not even be cancelled (a frozen process
// does not die). It takes an overflow row instead, first-fit in id order,
// which lengthens the cycle beyond M quanta while it lasts.
type Gang struct {
	X        *Matrix
	Overflow [][]int64 // rows after the M of X: the job on each column (0: none)
}

// NewGang is GangPlan with the waiting jobs in overflow rows.
func NewGang(p, m int, r Ratio, jobs []GangJob) (Gang, error) {
	x, waiting, err := GangPlan(p, m, r, jobs)
	if err != nil {
		return Gang{}, err
	}
	g := Gang{X: x}
	cols := map[int64][]int{}
	for _, j := range jobs {
		cols[j.ID] = j.Cols
	}
	for _, id := range waiting {
		placed := false
		for _, row := range g.Overflow {
			free := true
			for _, c := range cols[id] {
				free = free && row[c] == 0
			}
			if free {
				for _, c := range cols[id] {
					row[c] = id
				}
				placed = true
				break
			}
		}
		if !placed {
			row := make([]int64, p)
			for _, c := range cols[id] {
				row[c] = id
			}
			g.Overflow = append(g.Overflow, row)
		}
	}
	return g, nil
}

// Rows is the length of the cycle in quanta: M plus the overflow rows.
func (g Gang) Rows() int { return g.X.M + len(g.Overflow) }

// Runs says whether job id runs in row (of Rows) on column col.
func (g Gang) Runs(row, col int, id int64) bool {
	if row < g.X.M {
		return g.X.Runs(row, col, id)
	}
	row -= g.X.M
	return row < len(g.Overflow) && col >= 0 && col < len(g.Overflow[row]) && g.Overflow[row][col] == id
}

// GangRow is the row of an M-row matrix in force at time now when rows
// rotate every quantum Q on a time axis all nodes share (§4.1: row k mod M
// runs in quantum k), and when the next quantum begins.
func GangRow(now, quantum float64, m int) (row int, next float64) {
	k := math.Floor(now / quantum)
	row = int(math.Mod(k, float64(m)))
	if row < 0 {
		row += m
	}
	return row, (k + 1) * quantum
}

// Runs says whether job id runs in row on column col.
func (x *Matrix) Runs(row, col int, id int64) bool {
	return row >= 0 && row < x.M && col >= 0 && col < x.P && x.slot[row*x.P+col].job == id
}

// Remove takes job id and its replicas out of the matrix.
func (x *Matrix) Remove(id int64) {
	j := x.jobs[id]
	if j == nil {
		return
	}
	for r := 0; r < x.M; r++ {
		for _, col := range j.cols {
			if x.slot[r*x.P+col].job == id {
				x.slot[r*x.P+col] = cell{}
			}
		}
	}
	delete(x.jobs, id)
}

// ClearReplicas removes every replica, leaving jobs in their initial
// slots (§4.1: done at each arrival or departure, for fairness to newcomers).
func (x *Matrix) ClearReplicas() {
	for i, c := range x.slot {
		if c.replica {
			x.slot[i] = cell{}
		}
	}
}

// replicateOne copies job id into the first row of [lo, hi) where all its
// columns are free; false when there is none.
func (x *Matrix) replicateOne(id int64, lo, hi int) bool {
	j := x.jobs[id]
	for row := lo; row < hi; row++ {
		free := true
		for _, col := range j.cols {
			if x.slot[row*x.P+col].job != 0 {
				free = false
				break
			}
		}
		if free {
			for _, col := range j.cols {
				x.slot[row*x.P+col] = cell{job: id, replica: true}
			}
			return true
		}
	}
	return false
}

// spread replicates the jobs of ids into rows [lo, hi) one row per job per
// round, so that the first job does not take every idle row; a job leaves
// the rounds when want says it has enough or no row is left for it.
func (x *Matrix) spread(ids []int64, lo, hi int, want func(int64) bool) {
	for len(ids) > 0 {
		keep := ids[:0]
		for _, id := range ids {
			if want(id) && x.replicateOne(id, lo, hi) {
				keep = append(keep, id)
			}
		}
		ids = keep
	}
}

// Optimize is the four-step optimisation of §4.1: replicate, down the same
// columns, (1) RT jobs that still need throughput within the RT set, (2) all
// BE jobs within the BE set, (3) needy RT jobs into idle BE slots, (4) BE
// jobs into idle RT slots. Within a step the candidates take one row each in
// turn, in id order (the paper does not say how idle rows are shared out),
// so the result is deterministic. needs reports whether an RT job is still
// short of its throughput (n < b) with the rows it has now.
func (x *Matrix) Optimize(needs func(id int64) bool) {
	var rt, be []int64
	for id, j := range x.jobs {
		if j.class == RT {
			rt = append(rt, id)
		} else {
			be = append(be, id)
		}
	}
	slices.Sort(rt)
	slices.Sort(be)
	always := func(int64) bool { return true }
	rlo, rhi := x.Set(RT)
	blo, bhi := x.Set(BE)
	x.spread(slices.Clone(rt), rlo, rhi, needs)
	x.spread(slices.Clone(be), blo, bhi, always)
	x.spread(slices.Clone(rt), blo, bhi, needs)
	x.spread(slices.Clone(be), rlo, rhi, always)
}

// GangRows is the number of RT rows a job needs to be guaranteed its
// frames under 1GS (be-rt-mix-2001 §4.4): r = (Υ/d_A)·ζmax / Q, with the
// cycle Υ = M·(Q+δ) including the switch between rows (§4.4, last
// paragraph). A job holding r rows gets r·Q in every window of Υ, so a frame
// that arrives at a ready job leaves within Υ; the buffer of b frames covers
// that only if Υ ≤ b·d. ok is false when no number of rows can guarantee the
// job (Υ > b·d, or more rows than the RT set holds).
func (x *Matrix) GangRows(quantum, sync, frame float64, buffer int, zetaMax float64) (r int, ok bool) {
	cycle := float64(x.M) * (quantum + sync)
	if !(frame > 0) || !(quantum > 0) || cycle > float64(buffer)*frame {
		return 0, false
	}
	need := cycle / frame * zetaMax / quantum
	r = int(math.Ceil(need - 1e-9))
	r = max(r, 1)
	return r, r <= x.RTRows
}
