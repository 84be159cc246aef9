package mix

import (
	"fmt"
	"math"
	"slices"
)

// RTJob is a periodic real-time job as the admission tests see it
// (be-rt-mix-2001 §3.1): a frame is due every Frame seconds (d), a buffer of
// Buffer frames (b) gives the slack Γ = b·d (the period), and process j
// needs Work[j] seconds of CPU per frame (ζ_j).
type RTJob struct {
	Frame  float64
	Buffer int
	Work   []float64
}

// Period is Γ = b·d (§3.1).
func (j RTJob) Period() float64 { return float64(j.Buffer) * j.Frame }

// ZetaMax is the largest per-frame work of the job's processes (§4.4).
func (j RTJob) ZetaMax() float64 { return slices.Max(j.Work) }

// Validate refuses a job no scheme can run: no frame, no buffer, no
// process, or a process whose work per frame is not shorter than a frame.
func (j RTJob) Validate() error {
	switch {
	case !(j.Frame > 0) || math.IsInf(j.Frame, 0):
		return fmt.Errorf("rt-frame %g s: want a frame longer than 0", j.Frame)
	case j.Buffer < 1:
		return fmt.Errorf("rt-buffer %d: want at least 1 frame", j.Buffer)
	case len(j.Work) == 0:
		return fmt.Errorf("rt-work: want the work of at least one process")
	}
	for i, w := range j.Work {
		if !(w > 0) || w > j.Frame {
			return fmt.Errorf("rt-work %g s of process %d: want more than 0 and at most a frame (%g s)", w, i, j.Frame)
		}
	}
	return nil
}

// Admission is the RT admission rule of the DCS schemes.
type Admission struct {
	// On applies the test of §4.4; off admits every job (the paper's
	// Figure 5 runs).
	On bool
	// MissRate > 0 is the statistical test (beyond the paper, which leaves
	// it as future work, §5.2 and §6): admit while the predicted miss rate
	// of every node the job uses stays ≤ MissRate.
	MissRate float64
}

// Verdict says whether a job is admitted, may be later, or never can be.
type Verdict int

const (
	Admitted Verdict = iota
	NotNow           // would fit a less loaded cluster: wait (at most w)
	Never            // would not fit the empty cluster
)

// Decision is an admission answer with its reason.
type Decision struct {
	Verdict Verdict
	Reason  string
	Nodes   []int // node of each process, in the job's process order, when admitted
	Node    int   // NotNow: the node of most slack, which the job did not fit
}

// Loads is the RT and BE occupation of the nodes under 2DCS-TDM and
// 2DCS-PS: Σ_i the RT work per period of the processes placed on node i
// and Ω_i the shortest period among them (§4.2), plus the number of BE
// processes per node. Nodes are kept in a heap by laxity.
type Loads struct {
	share   float64
	sigma   []float64
	periods [][]float64 // ascending; Ω_i = periods[i][0]
	be      []int
	lax     []float64 // Laxity(i), cached for the heap
	heap    []int     // node indices, the most laxity first
	pos     []int
	jobs    map[int64][]placed
	bejobs  map[int64][]int
	// scratch for Place, reused to keep a decision allocation-free
	order []int
	undo  []placed
	prev  []float64 // Σ of undo[k]'s node before it
}

type placed struct {
	node         int
	work, period float64 // b·ζ and b·d of the process
}

// NewLoads is an empty cluster of n nodes whose RT class has share s.
func NewLoads(n int, r Ratio) *Loads {
	l := &Loads{share: r.Share(RT), sigma: make([]float64, n), periods: make([][]float64, n), be: make([]int, n),
		lax: make([]float64, n), heap: make([]int, n), pos: make([]int, n), jobs: map[int64][]placed{}, bejobs: map[int64][]int{}}
	for i := range n {
		l.heap[i], l.pos[i] = i, i
		l.lax[i] = math.Inf(1)
	}
	return l
}

// Omega is Ω_i, the shortest period of the RT processes on node i (+Inf
// when it has none).
func (l *Loads) Omega(i int) float64 {
	if len(l.periods[i]) == 0 {
		return math.Inf(1)
	}
	return l.periods[i][0]
}

// Sigma is Σ_i, the RT work per period placed on node i.
func (l *Loads) Sigma(i int) float64 { return l.sigma[i] }

// Laxity of node i is s·Ω_i − Σ_i (be-rt-mix-2001 §4.2); +Inf for a node
// without RT processes.
func (l *Loads) Laxity(i int) float64 { return l.share*l.Omega(i) - l.sigma[i] }

// Share is s, the RT class's share of a node.
func (l *Loads) Share() float64 { return l.share }

// RTJobs is the number of RT jobs placed.
func (l *Loads) RTJobs() int { return len(l.jobs) }

// Place allocates the processes of RT job id (§4.2): processes in
// descending order of work, each to the node of most laxity, which is then
// updated (several processes may share a node). With a.On every process must
// also pass the admission test of §4.4 on that node:
//
//	Σ_i + ζ_Aj ≤ min(Ω_i, b_A·d_A) · x/(x+y)
//
// and if it fails there it fails everywhere (that node had the most slack),
// so the job is refused and nothing changes. The paper's Σ and ζ are read as
// work per period (b·ζ, seconds of CPU in Γ): only then do both sides of
// the inequality measure the same thing; for jobs of equal period it is the
// utilisation test Σ ζ/d ≤ s. With a.MissRate = P the right-hand side is
// divided by 1−P: a node whose RT demand D exceeds its share s·Ω is predicted
// to miss the fraction 1 − s·Ω/D of its frames.
func (l *Loads) Place(id int64, j RTJob, a Admission) Decision {
	if err := j.Validate(); err != nil {
		return Decision{Verdict: Never, Reason: err.Error()}
	}
	if _, dup := l.jobs[id]; dup {
		return Decision{Verdict: Never, Reason: fmt.Sprintf("job %d is already placed", id)}
	}
	gamma := j.Period()
	factor := 1.0
	if a.MissRate > 0 {
		factor = 1 / (1 - min(a.MissRate, 0.999))
	}
	if a.On && j.Buffer > 0 {
		if w := float64(j.Buffer) * j.ZetaMax(); w > gamma*l.share*factor+1e-12 {
			return Decision{Verdict: Never, Reason: fmt.Sprintf(
				"a process needs %.4g s of CPU every %.4g s period, more than the RT share %.4g of any node (%.4g s)",
				w, gamma, l.share, gamma*l.share*factor)}
		}
	}
	l.order = l.order[:0]
	for k := range j.Work {
		l.order = append(l.order, k)
	}
	slices.SortStableFunc(l.order, func(a, b int) int {
		switch {
		case j.Work[a] > j.Work[b]:
			return -1
		case j.Work[a] < j.Work[b]:
			return 1
		}
		return 0
	})
	l.undo, l.prev = l.undo[:0], l.prev[:0]
	nodes := make([]int, len(j.Work))
	for _, k := range l.order {
		i := l.heap[0]
		work := float64(j.Buffer) * j.Work[k]
		if a.On {
			cap := min(l.Omega(i), gamma) * l.share * factor
			if l.sigma[i]+work > cap+1e-12 {
				for u := len(l.undo) - 1; u >= 0; u-- {
					// Restore the sums exactly (subtracting could leave a rounding).
					p := l.undo[u]
					l.take(p)
					l.sigma[p.node] = l.prev[u]
					l.fix(p.node)
				}
				return Decision{Verdict: NotNow, Node: i, Reason: fmt.Sprintf(
					"node %d, the one with the most slack, would carry %.4g s of RT work per %.4g s, more than its share %.4g s",
					i, l.sigma[i]+work, min(l.Omega(i), gamma), cap)}
			}
		}
		p := placed{node: i, work: work, period: gamma}
		l.prev = append(l.prev, l.sigma[i])
		l.put(p)
		l.undo = append(l.undo, p)
		nodes[k] = i
	}
	l.jobs[id] = slices.Clone(l.undo)
	return Decision{Verdict: Admitted, Nodes: nodes}
}

// Release removes RT job id.
func (l *Loads) Release(id int64) {
	for _, p := range l.jobs[id] {
		l.take(p)
	}
	delete(l.jobs, id)
}

func (l *Loads) put(p placed) {
	i := p.node
	l.sigma[i] += p.work
	k, _ := slices.BinarySearch(l.periods[i], p.period)
	l.periods[i] = slices.Insert(l.periods[i], k, p.period)
	l.fix(i)
}

func (l *Loads) take(p placed) {
	i := p.node
	l.sigma[i] -= p.work
	if k, ok := slices.BinarySearch(l.periods[i], p.period); ok {
		l.periods[i] = slices.Delete(l.periods[i], k, k+1)
	}
	if len(l.periods[i]) == 0 {
		l.sigma[i] = 0 // no drift left over from float sums
	}
	l.fix(i)
}

// PlaceBE puts the size processes of a BE job on the nodes with the fewest
// BE processes, ties to the lowest index (§4.2: BE jobs say nothing but
// their size). Processes go to distinct nodes while size ≤ nodes.
func (l *Loads) PlaceBE(id int64, size int) []int {
	n := len(l.be)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	var nodes []int
	for len(nodes) < size {
		slices.SortStableFunc(idx, func(a, b int) int { return l.be[a] - l.be[b] })
		take := min(size-len(nodes), n)
		for _, i := range idx[:take] {
			l.be[i]++
			nodes = append(nodes, i)
		}
	}
	l.bejobs[id] = nodes
	return nodes
}

// ReleaseBE removes BE job id.
func (l *Loads) ReleaseBE(id int64) {
	for _, i := range l.bejobs[id] {
		l.be[i]--
	}
	delete(l.bejobs, id)
}

// BE is the number of BE processes on node i.
func (l *Loads) BE(i int) int { return l.be[i] }

// The heap keeps the node of most laxity on top, ties to the lowest index.
func (l *Loads) less(a, b int) bool {
	la, lb := l.lax[a], l.lax[b]
	if la != lb {
		return la > lb
	}
	return a < b
}

func (l *Loads) fix(i int) {
	l.lax[i] = l.Laxity(i)
	k := l.pos[i]
	for k > 0 { // up
		p := (k - 1) / 2
		if !l.less(l.heap[k], l.heap[p]) {
			break
		}
		l.swap(k, p)
		k = p
	}
	for { // down
		c := 2*k + 1
		if c >= len(l.heap) {
			break
		}
		if c+1 < len(l.heap) && l.less(l.heap[c+1], l.heap[c]) {
			c++
		}
		if !l.less(l.heap[c], l.heap[k]) {
			break
		}
		l.swap(k, c)
		k = c
	}
}

func (l *Loads) swap(a, b int) {
	l.heap[a], l.heap[b] = l.heap[b], l.heap[a]
	l.pos[l.heap[a]], l.pos[l.heap[b]] = a, b
}

// NodesOf is the sorted distinct nodes RT job id's processes are placed on.
func (l *Loads) NodesOf(id int64) []int {
	var out []int
	for _, p := range l.jobs[id] {
		if !slices.Contains(out, p.node) {
			out = append(out, p.node)
		}
	}
	slices.Sort(out)
	return out
}

// PlaceOn puts RT job id back on known nodes without the test (a job
// admitted before a restart): process k goes to nodes[k mod len(nodes)].
func (l *Loads) PlaceOn(id int64, j RTJob, nodes []int) {
	if len(nodes) == 0 || l.jobs[id] != nil {
		return
	}
	var ps []placed
	for k, w := range j.Work {
		p := placed{node: nodes[k%len(nodes)], work: float64(j.Buffer) * w, period: j.Period()}
		l.put(p)
		ps = append(ps, p)
	}
	l.jobs[id] = ps
}
