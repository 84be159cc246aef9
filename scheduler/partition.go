package scheduler

import (
	"fmt"
	"math/bits"
	"slices"
)

// NodeState is what a node is doing, as the Engine sees it.
type NodeState uint8

const (
	StateIdle      NodeState = iota // up and idle
	StateAllocated                  // allocated to a job step
	StateDown                       // out of service (it may still hold a step)
)

func (s NodeState) String() string {
	switch s {
	case StateIdle:
		return "idle"
	case StateAllocated:
		return "allocated"
	case StateDown:
		return "down"
	}
	return fmt.Sprintf("NodeState(%d)", int(s))
}

// Busy is an up node of a partition that runs a step, and when the step is
// expected to end (its Start.Expect). Until may lie in the past for a job
// that overruns its limit (replay without kill) and is Inf when unlimited.
type Busy struct {
	Node  int // index in the partition
	Until float64
}

// Partition is a policy's handle on its partition: which of its nodes are
// free, busy until when, or down, and the only way to start or end work.
// Node indices are positions in PartitionSpec.Nodes. Start applies at once,
// so what a policy reads during a pass is always current.
type Partition struct {
	spec  PartitionSpec
	eng   *Engine
	index int   // position in Config.Partitions
	nodes []int // engine node index of each partition node
	free  []uint64
	nfree int
	// busy holds the up, allocated nodes sorted by (Until, Node): the
	// shadow time of a backfilling pass is a walk from its front.
	busy   []Busy
	policy Policy
	dirty  bool
	// bookers lists, per node, the other partitions of the node whose
	// policy books ahead (shared.go); nil when there are none.
	bookers [][]nodeRef
	gen     uint64 // counts changes of busy (Generation)

	// bookerParts are the distinct partitions in bookers.
	bookerParts []*Partition

	nshared int               // nodes holding shares (tres.go)
	tbuf    []layoutCand      // scratch of PlaceNow
	never   map[string]string // resolveRequest's verdicts by request shape
	rsv     reserveCache      // the last Reserve (tres.go)
	over    OverSubscribe     // spec.OverSubscribe, read
}

// OverSubscribe is the partition's OverSubscribe setting.
func (p *Partition) OverSubscribe() OverSubscribe { return p.over }

type reserveCache struct {
	valid bool
	id    JobID
	tick  uint64
	t     float64
	x     *TresExtra
}

// Spec is the partition's configuration, with defaults applied (Policy set,
// MaxTime and DefaultTime never 0).
func (p *Partition) Spec() *PartitionSpec { return &p.spec }

// Len is the number of nodes in the partition.
func (p *Partition) Len() int { return len(p.nodes) }

// Name is the name of node i.
func (p *Partition) Name(i int) string { return p.eng.nodes[p.nodes[i]].spec.Name }

// Rate is the relative speed of node i (1 when unset).
func (p *Partition) Rate(i int) float64 {
	if r := p.eng.nodes[p.nodes[i]].spec.Rate; r > 0 {
		return r
	}
	return 1
}

// State is what node i is doing.
func (p *Partition) State(i int) NodeState { return p.eng.nodes[p.nodes[i]].state() }

// FreeCount is the number of free nodes.
func (p *Partition) FreeCount() int { return p.nfree }

// Busy lists the busy up nodes by (Until, Node). The slice is the
// partition's own: read it, do not keep or change it.
func (p *Partition) Busy() []Busy { return p.busy }

// FreeAt is the earliest time ≥ now at which k nodes are expected to be free,
// counting the free ones and the busy ones by their expected end; Inf if down
// nodes or unlimited jobs make it never.
func (p *Partition) FreeAt(k int, now float64) float64 {
	if k <= p.nfree {
		return now
	}
	need := k - p.nfree
	if need > len(p.busy) {
		return Inf
	}
	return max(now, p.busy[need-1].Until)
}

// FreeBy is the number of nodes expected to be free at time t (free now, or
// busy with a step expected to end by t).
func (p *Partition) FreeBy(t float64) int {
	n, _ := slices.BinarySearchFunc(p.busy, t, func(b Busy, t float64) int {
		if b.Until <= t {
			return -1
		}
		return 1
	})
	return p.nfree + n
}

// LowestFree appends to dst the indices of the n lowest-numbered free nodes,
// or returns dst unchanged if fewer than n are free.
func (p *Partition) LowestFree(n int, dst []int) []int {
	if n > p.nfree {
		return dst
	}
	for w, word := range p.free {
		for word != 0 && n > 0 {
			b := bits.TrailingZeros64(word)
			dst = append(dst, w*64+b)
			word &^= 1 << b
			n--
		}
		if n == 0 {
			break
		}
	}
	return dst
}

// IsFree reports whether node i is free.
func (p *Partition) IsFree(i int) bool { return p.free[i>>6]&(1<<(i&63)) != 0 }

// Start runs step `step` of pending or running job id on the given nodes
// (indices in this partition), expected to end at expect (Inf: unlimited).
// The nodes are allocated at once and a Start action is emitted. It fails,
// changing nothing, if the job is not this partition's, was removed, or a
// node is not free (a policy bug).
func (p *Partition) Start(id JobID, step int, nodes []int, offset, size, expect float64) error {
	e := p.eng
	r, err := p.startable(id)
	switch {
	case err != nil:
		return err
	case len(nodes) == 0:
		return fmt.Errorf("scheduler: partition %q: start of job %d on no nodes", p.spec.Name, id)
	}
	for k, i := range nodes {
		if i < 0 || i >= len(p.nodes) || !p.IsFree(i) || slices.Contains(nodes[:k], i) {
			return fmt.Errorf("scheduler: partition %q: job %d: node index %d is not free", p.spec.Name, id, i)
		}
	}
	s := runStep{step: step, expect: expect, nodes: make([]int, len(nodes))}
	names := make([]string, len(nodes))
	for k, i := range nodes {
		g := p.nodes[i]
		s.nodes[k] = g
		names[k] = e.nodes[g].spec.Name
		e.allocate(g, id, step, expect)
	}
	r.steps = append(r.steps, s)
	first := !r.started
	r.started = true
	e.out = append(e.out, Start{ID: id, Step: step, Nodes: names, Offset: offset, Size: size, Expect: expect})
	if first {
		e.jobStarted(e.now, r)
		if step == BatchStep {
			e.armSignal(r, expect)
		}
	}
	return nil
}

// startable returns the record of a job of this partition that may start.
func (p *Partition) startable(id JobID) (*jobRec, error) {
	r := p.eng.jobs[id]
	switch {
	case r == nil || r.part != p:
		return nil, fmt.Errorf("scheduler: partition %q: start of unknown job %d", p.spec.Name, id)
	case r.removed || r.blocked != "" || r.gated():
		return nil, fmt.Errorf("scheduler: partition %q: start of job %d that may not run", p.spec.Name, id)
	}
	return r, nil
}

// End finishes a pending job of this partition that will not run (e.g. State
// "DEADLINE", Reason "DeadLine"). The policy must already have forgotten it.
func (p *Partition) End(id JobID, state, reason string) error {
	r := p.eng.jobs[id]
	if r == nil || r.part != p || r.started {
		return fmt.Errorf("scheduler: partition %q: end of job %d that is not pending here", p.spec.Name, id)
	}
	delete(p.eng.jobs, id)
	p.eng.out = append(p.eng.out, End{ID: id, State: state, Reason: reason})
	p.eng.left(p.eng.now, r, false)
	return nil
}

// Signal asks the driver to signal a running step of a job of this partition.
func (p *Partition) Signal(id JobID, step int, sig string) {
	p.eng.out = append(p.eng.out, Signal{ID: id, Step: step, Sig: sig})
}

func (p *Partition) setFree(i int) {
	p.free[i>>6] |= 1 << (i & 63)
	p.nfree++
}

func (p *Partition) clearFree(i int) {
	p.free[i>>6] &^= 1 << (i & 63)
	p.nfree--
}

func (p *Partition) busyCmp(a, b Busy) int {
	switch {
	case a.Until < b.Until:
		return -1
	case a.Until > b.Until:
		return 1
	}
	return a.Node - b.Node
}

func (p *Partition) addBusy(i int, until float64) {
	p.gen++
	b := Busy{Node: i, Until: until}
	k, _ := slices.BinarySearchFunc(p.busy, b, p.busyCmp)
	p.busy = slices.Insert(p.busy, k, b)
}

func (p *Partition) dropBusy(i int, until float64) {
	p.gen++
	if k, ok := slices.BinarySearchFunc(p.busy, Busy{Node: i, Until: until}, p.busyCmp); ok {
		p.busy = slices.Delete(p.busy, k, k+1)
	}
}
