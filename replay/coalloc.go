package replay

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"math"
	"slices"

	"hora/scheduler/reserve"
)

// CoallocOptions configure the chapter 5 replay (Castillo's thesis,
// papers/advance-reservations-thesis.txt, §5.5.1): online co-allocation of
// each logged request against the schedule as logged.
type CoallocOptions struct {
	// Procs is the machine size in processors, one per server (default:
	// the workload's).
	Procs int
	// DeltaT is Δt, the step by which a refused request's start s_r is
	// increased (§5.1, §5.4): 15 min in §5.5.
	DeltaT float64
	// Quantum is l_q, the width of a quantum (§5.3); default Δt.
	Quantum float64
	// Horizon is H, the scheduling horizon (§5.1, Table 5.2): the thesis
	// gives no value for its experiments; default one week.
	Horizon float64
	// Online books every request where it was co-allocated, for its
	// requested time, and gives the rest back when the job ends (the
	// thesis' own simulation, where no job keeps its logged start);
	// otherwise the background is the schedule as logged.
	Online bool
}

// Defaults of the chapter 5 replay: §5.5 sets Δt = 15 min; l_q and H are
// hora's choices (docs/reproductions/README.md, Decisions).
const (
	CoallocDeltaT  = 900.0
	CoallocHorizon = 7 * 86400.0
	// coallocLMin is the index's l_min: requests shorter are rounded up to
	// it; with M = Quantum/(2·l_min) a strip of the index is one quantum.
	coallocLMin = 30
)

// MaxRet is maxRet = Q/2 with Q = ⌈H/l_q⌉ (§5.5: "maxRet was set to Q/2,
// i.e., half the number of quanta"; Table 5.2: Q = ⌈H/l_q⌉).
func (o CoallocOptions) MaxRet() int {
	return int(math.Ceil(o.Horizon/o.Quantum)) / 2
}

func (o *CoallocOptions) fill(w *Workload) error {
	if o.Procs == 0 {
		o.Procs = w.Procs
	}
	if o.DeltaT == 0 {
		o.DeltaT = CoallocDeltaT
	}
	if o.Quantum == 0 {
		o.Quantum = o.DeltaT
	}
	if o.Horizon == 0 {
		o.Horizon = CoallocHorizon
	}
	whole := func(x float64) bool { return x == math.Trunc(x) && !math.IsInf(x, 0) }
	switch {
	case o.Procs < 1:
		return fmt.Errorf("co-allocation: machine of %d processors", o.Procs)
	case o.DeltaT < 1 || !whole(o.DeltaT):
		return fmt.Errorf("co-allocation: Δt %g s: want a whole number of seconds ≥ 1", o.DeltaT)
	case o.Quantum < 2*coallocLMin || !whole(o.Quantum) || int64(o.Quantum)%(2*coallocLMin) != 0:
		return fmt.Errorf("co-allocation: quantum %g s: want a multiple of %d s", o.Quantum, 2*coallocLMin)
	case o.Horizon < 2*o.Quantum || !whole(o.Horizon):
		return fmt.Errorf("co-allocation: horizon %g s: want whole seconds, at least two quanta (%g s)", o.Horizon, 2*o.Quantum)
	}
	return nil
}

// Coallocate replays w as chapter 5 does: every job's request (q_r = s_r =
// its submission, l_r its requested time, or its run time when the log
// gives none, n_r its processors, one per server) is co-allocated at its
// submission against the servers booked by the jobs submitted before it,
// at their logged start and for their logged run time. The request's own
// logged run is then booked, so the rest of the schedule stays as logged:
// each job is asked "when would online co-allocation have started you?".
//
// A request is tried at s_r, s_r + Δt, … up to maxRet = Q/2 retries
// (§5.4); after maxRet it is put on hold and tried again from q_r + H,
// q_r + 2H, … (§5.1), each round adding maxRet to its retries. The wait is
// W_r = s'_r − s_r (§5.5). Jobs larger than the machine are rejected;
// jobs whose logged start is unknown, or that overflow the machine as
// logged, are co-allocated but booked nowhere (Outcome.Unbooked counts them).
func Coallocate(ctx context.Context, w *Workload, opt CoallocOptions) (*Outcome, error) {
	if err := opt.fill(w); err != nil {
		return nil, err
	}
	n := opt.Procs
	label := "coalloc/logged"
	if opt.Online {
		label = "coalloc/online"
	}
	out := &Outcome{Workload: w, Opts: Options{Procs: n, CoresPerNode: 1, Policy: "coalloc", Engine: "scheduler/reserve"},
		Label: label, Nodes: n, Cores: 1, Results: make([]Result, len(w.Jobs)), Retries: true}
	if len(w.Jobs) == 0 {
		return out, nil
	}
	for i := 1; i < len(w.Jobs); i++ {
		if w.Jobs[i].Submit < w.Jobs[i-1].Submit {
			return nil, fmt.Errorf("co-allocation: job %d submitted at %.0f, before job %d (%.0f): the workload is not in submission order",
				w.Jobs[i].ID, w.Jobs[i].Submit, w.Jobs[i-1].ID, w.Jobs[i-1].Submit)
		}
	}
	var nodes [][]int
	if !opt.Online {
		nodes, out.Unbooked = loggedNodes(w, n)
	}
	rates := make([]float64, n)
	for i := range rates {
		rates[i] = 1
	}
	t0 := int64(math.Floor(w.Jobs[0].Submit))
	ix, err := reserve.New(reserve.Config{Rates: rates, LMin: coallocLMin, M: int(opt.Quantum) / (2 * coallocLMin),
		Strategy: reserve.FirstFit, Start: t0, DeltaT: int64(opt.DeltaT), MaxRet: opt.MaxRet()})
	if err != nil {
		return nil, err
	}
	H := int64(opt.Horizon)
	ends := &endHeap{} // Online: early ends of bookings, applied as time passes
	for i := range w.Jobs {
		if i&0xfff == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		j, r := &w.Jobs[i], &out.Results[i]
		q := int64(j.Submit)
		for ends.Len() > 0 && ends.items[0].at <= q {
			e := heap.Pop(ends).(bookEnd)
			ix.Advance(e.at)
			if err := ix.Finish(e.id, e.at); err != nil {
				return nil, fmt.Errorf("co-allocation: end of booking %d: %w", e.id, err)
			}
		}
		ix.Advance(q)
		l := j.Limit
		if opt.Online {
			l = j.Run
		}
		if !finite(l) || l <= 0 {
			l = j.Run
		}
		work := max(int64(math.Ceil(l)), 1)
		r.Admitted = true
		for round := int64(0); ; round++ {
			s, k, err := ix.CoPlan(q+round*H, work, j.Procs)
			r.Retries += k
			if err == nil {
				r.Started, r.Start = true, float64(s)
				run := j.Run
				if opt.Online && run > float64(work) {
					// A reservation ends at its booked end.
					run, r.Killed = float64(work), true
				}
				r.End, r.Nodes, r.Busy = r.Start+run, j.Procs, float64(j.Procs)*run
				break
			}
			if ref, ok := err.(*reserve.Refusal); !ok || ref.Never {
				r.Admitted, r.Rejected, r.Reason, r.End = false, true, err.Error(), j.Submit
				break
			}
			if round > 1e6 {
				return nil, fmt.Errorf("co-allocation: job %d not placed after %d holds", j.ID, round)
			}
		}
		switch {
		case opt.Online && r.Started:
			// The deadline s + l_r pins the booking to the start found.
			s := int64(r.Start)
			b, err := ix.Reserve(reserve.Request{Release: s, Work: work, Deadline: s + max(work, coallocLMin), Nodes: j.Procs})
			if err != nil || b.Start != s {
				return nil, fmt.Errorf("co-allocation: job %d: booking at %d: %v (start %d)", j.ID, s, err, b.Start)
			}
			if end := int64(r.End); end < b.End() {
				heap.Push(ends, bookEnd{at: end, id: b.ID})
			}
		case !opt.Online && nodes[i] != nil:
			start := int64(j.Submit + j.RecordedWait)
			if _, err := ix.Occupy(nodes[i], start, start+int64(j.Run)); err != nil {
				return nil, fmt.Errorf("co-allocation: job %d as logged: %w", j.ID, err)
			}
		}
	}
	return out, nil
}

type bookEnd struct{ at, id int64 }

type endHeap struct{ items []bookEnd }

func (h *endHeap) Len() int { return len(h.items) }
func (h *endHeap) Less(a, b int) bool {
	x, y := h.items[a], h.items[b]
	if x.at != y.at {
		return x.at < y.at
	}
	return x.id < y.id
}
func (h *endHeap) Swap(a, b int) { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *endHeap) Push(x any)    { h.items = append(h.items, x.(bookEnd)) }
func (h *endHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

// loggedNodes gives each job with a known logged start and a positive run
// the servers it held as logged: the schedule records counts only, so the
// servers are assigned in order of logged start, each job taking those
// free longest (lowest number on a tie). A job that finds fewer free
// servers than it asks (a log that overflows the machine) gets none.
func loggedNodes(w *Workload, n int) (nodes [][]int, unbooked int) {
	nodes = make([][]int, len(w.Jobs))
	var order []int
	for i := range w.Jobs {
		j := &w.Jobs[i]
		if j.RecordedWait >= 0 && j.Run > 0 && j.Procs <= n {
			order = append(order, i)
		} else if j.Procs <= n {
			unbooked++
		}
	}
	start := func(i int) float64 { return w.Jobs[i].Submit + w.Jobs[i].RecordedWait }
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(start(a), start(b)) })
	free := &nodeHeap{}
	for i := range n {
		free.items = append(free.items, nodeFree{at: math.Inf(-1), node: i})
	}
	heap.Init(free)
	var took []nodeFree
	for _, i := range order {
		j := &w.Jobs[i]
		s := start(i)
		took = took[:0]
		for len(took) < j.Procs && free.Len() > 0 && free.items[0].at <= s {
			took = append(took, heap.Pop(free).(nodeFree))
		}
		if len(took) < j.Procs {
			for _, f := range took {
				heap.Push(free, f)
			}
			unbooked++
			continue
		}
		ns := make([]int, len(took))
		for k, f := range took {
			ns[k] = f.node
			heap.Push(free, nodeFree{at: s + j.Run, node: f.node})
		}
		nodes[i] = ns
	}
	return nodes, unbooked
}

type nodeFree struct {
	at   float64
	node int
}

type nodeHeap struct{ items []nodeFree }

func (h *nodeHeap) Len() int { return len(h.items) }
func (h *nodeHeap) Less(a, b int) bool {
	x, y := h.items[a], h.items[b]
	if x.at != y.at {
		return x.at < y.at
	}
	return x.node < y.node
}
func (h *nodeHeap) Swap(a, b int) { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *nodeHeap) Push(x any)    { h.items = append(h.items, x.(nodeFree)) }
func (h *nodeHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}
