package scheduler

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// This file is hora's one place of resource arithmetic (Slurm's
// select/cons_tres): what a node offers (CPUs, memory, generic resources),
// what a request needs on a node for a number of its tasks, how tasks are
// laid out over nodes, and which CPU ids and gres indices a job gets. It is
// pure: the Engine and the policies call it, nothing here does I/O.
// Decisions are written down in docs/resources.md.

// GresDef is a generic resource of a node: Count units of Name, of Type
// when typed ("gpu:a100:2" is Name gpu, Type a100, Count 2).
type GresDef struct {
	Name, Type string
	Count      int
}

// GresReq asks for Count units of Name (of Type, or of any type when "")
// on each node.
type GresReq struct {
	Name, Type string
	Count      int
}

// Request is a job's consumable-resource request, with Slurm's defaults
// applied by the driver (NTasks ≥ 1, CPUsPerTask ≥ 1). A Job without a
// Request takes whole nodes.
type Request struct {
	NTasks       int
	CPUsPerTask  int
	TasksPerNode int  // --ntasks-per-node; 0 = as many as fit
	NodesMax     int  // -N min-max upper bound; 0 = Job.Nodes when NodesSet, else no bound
	NodesSet     bool // -N given
	MinCPUs      int  // --mincpus, per node
	MemPerNode   int64
	MemPerCPU    int64
	MemPerGPU    int64
	MemAll       bool // --mem=0
	// MemGiven is false when the job named no memory: the partition's
	// DefMemPerCPU then applies (Engine.resolve).
	MemGiven    bool
	Gres        []GresReq // per node (--gres, --gpus-per-node, --gpus spread)
	GPUsPerTask int
	GPUType     string
	GPUs        int // --gpus: the whole job's count, spread over its minimum node count
	CPUsPerGPU  int
	Exclusive   bool // the nodes are the job's alone (--exclusive, OverSubscribe=EXCLUSIVE)
	NodeList    []string
	Exclude     []string
	Features    []string
	AnyFeature  bool // Features joined by |, else &
	// NoMultithread: --hint=nomultithread, one task's CPU per core (a
	// task's CPUs count ThreadsPerCore times).
	NoMultithread bool
}

// GresUse is what a job holds of one gres entry of a node; IDs are the
// unit indices, numbered per Name across the node's entries (gpu 0, 1, ...
// as CUDA numbers devices), when the entry has at most 64 units.
type GresUse struct {
	Name, Type string
	Count      int
	IDs        []int
}

// NodeAlloc is what one step holds on one node.
type NodeAlloc struct {
	Node  string
	Tasks int
	CPUs  []int // CPU ids, ascending
	MemMB int64
	Gres  []GresUse
}

// GresText writes a NodeAlloc's gres as Slurm shows it: gpu:a100:2(IDX:0-1).
func (a *NodeAlloc) GresText() string {
	var b strings.Builder
	for k, g := range a.Gres {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(g.Name)
		if g.Type != "" {
			b.WriteString(":" + g.Type)
		}
		b.WriteString(":" + strconv.Itoa(g.Count))
		if len(g.IDs) > 0 {
			b.WriteString("(IDX:" + IDRanges(g.IDs) + ")")
		}
	}
	return b.String()
}

// IDRanges writes ascending ids as Slurm's ranges: 0-3,6.
func IDRanges(ids []int) string {
	var b strings.Builder
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(ids[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(ids[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Slurm's strerror texts for a request no node could ever satisfy.
const (
	msgTaskMemory  = "Memory required by task is not available"
	msgInvalidGres = "Invalid generic resource (gres) specification"
)

// avail is what a node offers a request at some instant: free CPUs,
// memory and gres units per entry, and whether nothing at all is held
// (Idle: an exclusive or whole-node job needs that).
type avail struct {
	cpus int
	mem  int64
	gres []int
	idle bool
}

// threads is the node's threads per core (1 when unset).
func (s *NodeSpec) threads() int { return max(s.Threads, 1) }

// nodeUse is what t tasks of a request need on one node.
type nodeUse struct {
	cpus int // CPUs held (all of the node when exclusive)
	need int // CPUs the tasks need, ≤ cpus
	mem  int64
	gpus int // per-task GPUs (q.GPUsPerTask × t), of q.GPUType
}

// use computes what t tasks need on node s. memory follows Slurm's order:
// --mem=0 (all), --mem, --mem-per-cpu, --mem-per-gpu.
func (q *Request) use(s *NodeSpec, t int) nodeUse {
	tf := 1
	if q.NoMultithread {
		tf = s.threads()
	}
	u := nodeUse{cpus: t * q.CPUsPerTask * tf, gpus: t * q.GPUsPerTask}
	gpus := u.gpus
	for _, g := range q.Gres {
		if g.Name == "gpu" {
			gpus += g.Count
		}
	}
	if q.CPUsPerGPU > 0 {
		u.cpus = max(u.cpus, gpus*q.CPUsPerGPU)
	}
	u.cpus = max(u.cpus, q.MinCPUs)
	u.need = u.cpus
	if q.Exclusive {
		u.cpus = s.CPUs
	}
	switch {
	case q.MemAll || q.Exclusive && q.MemPerNode == 0 && q.MemPerCPU == 0 && q.MemPerGPU == 0:
		u.mem = s.MemMB
	case q.MemPerNode > 0:
		u.mem = q.MemPerNode
	case q.MemPerCPU > 0:
		u.mem = q.MemPerCPU * int64(u.cpus)
	case q.MemPerGPU > 0:
		u.mem = q.MemPerGPU * int64(gpus)
	}
	return u
}

// gresFree sums the free units of node s's entries that match name/type.
func gresFree(s *NodeSpec, free []int, name, typ string) int {
	n := 0
	for e, d := range s.Gres {
		if d.Name == name && (typ == "" || d.Type == typ) {
			n += free[e]
		}
	}
	return n
}

// fits reports whether t tasks fit in what node s offers.
func (q *Request) fits(s *NodeSpec, a *avail, t int) bool {
	if q.Exclusive && !a.idle {
		return false
	}
	u := q.use(s, t)
	if u.cpus > a.cpus || u.need > s.CPUs || u.mem > a.mem {
		return false
	}
	if u.gpus > 0 && len(q.Gres) == 0 {
		return gresFree(s, a.gres, "gpu", q.GPUType) >= u.gpus
	}
	for k, g := range q.Gres {
		need := g.Count
		if g.Name == "gpu" && u.gpus > 0 && (k == q.gpuEntry()) {
			need += u.gpus
		}
		if gresFree(s, a.gres, g.Name, g.Type) < need {
			return false
		}
	}
	if u.gpus > 0 && q.gpuEntry() < 0 {
		return gresFree(s, a.gres, "gpu", q.GPUType) >= u.gpus
	}
	return true
}

// gpuEntry is the index of the request's per-node gpu entry that per-task
// GPUs add to (same type), or -1.
func (q *Request) gpuEntry() int {
	for k, g := range q.Gres {
		if g.Name == "gpu" && g.Type == q.GPUType {
			return k
		}
	}
	return -1
}

// maxTasks is the largest t ≤ want whose tasks fit on the node, 0 if none.
// Needs grow with t, so a binary search finds it.
func (q *Request) maxTasks(s *NodeSpec, a *avail, want int) int {
	if q.TasksPerNode > 0 {
		want = min(want, q.TasksPerNode)
	}
	if want < 1 || !q.fits(s, a, 1) {
		return 0
	}
	lo, hi := 1, want
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if q.fits(s, a, mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// nodeRange is the request's node count range [lo, hi] for a job of
// minimum node count n.
func (q *Request) nodeRange(n int) (int, int) {
	lo := max(n, 1)
	if q.TasksPerNode > 0 && !q.NodesSet {
		lo = max(lo, (q.NTasks+q.TasksPerNode-1)/q.TasksPerNode)
	}
	hi := q.NTasks
	switch {
	case q.NodesMax > 0:
		hi = q.NodesMax
	case q.NodesSet:
		hi = lo
	}
	return lo, max(hi, lo)
}

// slot is a node chosen by layout and the tasks it runs.
type slot struct {
	i     int // index in the caller's node numbering
	tasks int
}

// layoutCand is a candidate node: its index, how many of the request's
// tasks it could take, and its free CPUs (best fit packs the fullest
// nodes first, so that wide jobs find whole nodes).
type layoutCand struct {
	i, cap, free int
	required     bool
}

// layout chooses lo..hi nodes among cands (each able to take cap tasks)
// and spreads NTasks over them in block order, at least one task per node.
// Nodes that must be used (required) come first. It returns nil when no
// choice fits. cands is reordered.
func layout(tasks, lo, hi int, cands []layoutCand, dst []slot) []slot {
	dst = dst[:0]
	req := 0
	for _, c := range cands {
		if c.required {
			if c.cap < 1 {
				return nil
			}
			req++
		}
	}
	slices.SortFunc(cands, func(a, b layoutCand) int {
		switch {
		case a.required != b.required:
			if a.required {
				return -1
			}
			return 1
		case a.free != b.free:
			return a.free - b.free
		}
		return a.i - b.i
	})
	// Usable candidates only.
	n := 0
	for _, c := range cands {
		if c.cap > 0 {
			cands[n] = c
			n++
		}
	}
	cands = cands[:n]
	lo = max(lo, req)
	if lo > len(cands) || lo > tasks || req > hi {
		return nil
	}
	// Largest caps, to bound what k nodes can hold.
	var top []int
	for k := lo; k <= min(hi, len(cands), tasks); k++ {
		if top == nil {
			top = make([]int, 0, len(cands)-req)
			for _, c := range cands[req:] {
				top = append(top, c.cap)
			}
			slices.SortFunc(top, func(a, b int) int { return b - a })
		}
		sum := 0
		for _, c := range cands[:req] {
			sum += c.cap
		}
		for _, c := range top[:k-req] {
			sum += c
		}
		if sum < tasks {
			continue
		}
		if out, ok := pick(tasks, k, req, cands, dst); ok {
			return out
		}
	}
	return nil
}

// pick fills k slots: the required nodes, then, for each slot, the best-fit
// node able to hold an even share of what is left, else the largest.
func pick(tasks, k, req int, cands []layoutCand, dst []slot) ([]slot, bool) {
	dst = dst[:0]
	used := make([]bool, len(cands))
	left := tasks
	give := func(c int, slotsAfter int) {
		t := min(cands[c].cap, left-slotsAfter)
		dst = append(dst, slot{i: cands[c].i, tasks: t})
		left -= t
		used[c] = true
	}
	for c := 0; c < req; c++ {
		give(c, k-c-1)
	}
	for s := req; s < k; s++ {
		slotsLeft := k - s
		share := (left + slotsLeft - 1) / slotsLeft
		best, big := -1, -1
		for c := req; c < len(cands); c++ {
			if used[c] {
				continue
			}
			if cands[c].cap >= share {
				best = c
				break
			}
			if big < 0 || cands[c].cap > cands[big].cap {
				big = c
			}
		}
		if best < 0 {
			best = big
		}
		if best < 0 {
			return dst, false
		}
		give(best, slotsLeft-1)
	}
	return dst, left == 0
}

// nodeRes is the consumable state of one node: what is free and which
// CPU ids and gres indices are held, and the shares (steps of jobs that
// asked for resources) running on it.
type nodeRes struct {
	fcpu   int
	fmem   int64
	fgres  []int
	cpuset []uint64 // held CPU ids
	gmask  []uint64 // per gres entry, held unit indices (entries of ≤ 64 units)
	shares []share
}

type share struct {
	job    JobID
	step   int
	expect float64
	a      NodeAlloc
	// gres amounts per node entry, to give back exactly what was taken
	ent []int
}

func newNodeRes(s *NodeSpec) nodeRes {
	r := nodeRes{fcpu: s.CPUs, fmem: s.MemMB, fgres: make([]int, len(s.Gres)),
		cpuset: make([]uint64, (s.CPUs+63)/64), gmask: make([]uint64, len(s.Gres))}
	for e, g := range s.Gres {
		r.fgres[e] = g.Count
	}
	return r
}

// gresBase is the first index of entry e among the node's units of its name.
func gresBase(s *NodeSpec, e int) int {
	b := 0
	for k := 0; k < e; k++ {
		if s.Gres[k].Name == s.Gres[e].Name {
			b += s.Gres[k].Count
		}
	}
	return b
}

// take builds the allocation of t tasks on node s from r's free CPU ids
// and gres units (lowest first) and charges them to r. It fails, changing
// nothing, when r does not hold enough.
func (q *Request) take(s *NodeSpec, r *nodeRes, t int) (share, bool) {
	u := q.use(s, t)
	if u.cpus > r.fcpu || u.mem > r.fmem {
		return share{}, false
	}
	sh := share{a: NodeAlloc{Node: s.Name, Tasks: t, MemMB: u.mem}, ent: make([]int, len(s.Gres))}
	// gres: what each request entry needs, taken from matching entries.
	free := slices.Clone(r.fgres)
	takeGres := func(name, typ string, n int) bool {
		for e, d := range s.Gres {
			if n == 0 {
				break
			}
			if d.Name != name || typ != "" && d.Type != typ {
				continue
			}
			k := min(n, free[e])
			free[e] -= k
			sh.ent[e] += k
			n -= k
		}
		return n == 0
	}
	for k, g := range q.Gres {
		n := g.Count
		if k == q.gpuEntry() {
			n += u.gpus
		}
		if !takeGres(g.Name, g.Type, n) {
			return share{}, false
		}
	}
	if u.gpus > 0 && q.gpuEntry() < 0 && !takeGres("gpu", q.GPUType, u.gpus) {
		return share{}, false
	}
	if q.Exclusive {
		for e := range free {
			sh.ent[e] += free[e]
			free[e] = 0
		}
	}
	// CPU ids: lowest free first, so small jobs pack core by core.
	cpus := make([]int, 0, u.cpus)
	for w := 0; w < len(r.cpuset) && len(cpus) < u.cpus; w++ {
		word := ^r.cpuset[w]
		for word != 0 && len(cpus) < u.cpus {
			b := bits.TrailingZeros64(word)
			id := w*64 + b
			if id >= s.CPUs {
				break
			}
			cpus = append(cpus, id)
			word &^= 1 << b
		}
	}
	if len(cpus) < u.cpus {
		return share{}, false
	}
	for _, id := range cpus {
		r.cpuset[id>>6] |= 1 << (id & 63)
	}
	sh.a.CPUs = cpus
	r.fcpu -= u.cpus
	r.fmem -= u.mem
	for e, n := range sh.ent {
		if n == 0 {
			continue
		}
		r.fgres[e] -= n
		use := GresUse{Name: s.Gres[e].Name, Type: s.Gres[e].Type, Count: n}
		if s.Gres[e].Count <= 64 {
			base := gresBase(s, e)
			for b := 0; b < s.Gres[e].Count && len(use.IDs) < n; b++ {
				if r.gmask[e]&(1<<b) == 0 {
					r.gmask[e] |= 1 << b
					use.IDs = append(use.IDs, base+b)
				}
			}
		}
		sh.a.Gres = append(sh.a.Gres, use)
	}
	return sh, true
}

// give returns a share's resources to the node.
func (r *nodeRes) give(s *NodeSpec, sh *share) {
	for _, id := range sh.a.CPUs {
		if id>>6 < len(r.cpuset) {
			r.cpuset[id>>6] &^= 1 << (id & 63)
		}
	}
	r.fcpu += len(sh.a.CPUs)
	r.fmem += sh.a.MemMB
	for e, n := range sh.ent {
		if e < len(r.fgres) {
			r.fgres[e] += n
		}
	}
	for _, g := range sh.a.Gres {
		for e, d := range s.Gres {
			if d.Name != g.Name || d.Type != g.Type || d.Count > 64 {
				continue
			}
			base := gresBase(s, e)
			for _, id := range g.IDs {
				if b := id - base; b >= 0 && b < d.Count {
					r.gmask[e] &^= 1 << b
				}
			}
		}
	}
}

// restoreShare charges an allocation read back from the store (after a
// restart) to the node, as take would have. CPU ids outside the node or
// already held are dropped (the node's configuration changed).
func (r *nodeRes) restoreShare(s *NodeSpec, a NodeAlloc) share {
	sh := share{a: a, ent: make([]int, len(s.Gres))}
	var cpus []int
	for _, id := range a.CPUs {
		if id >= 0 && id < s.CPUs && r.cpuset[id>>6]&(1<<(id&63)) == 0 {
			r.cpuset[id>>6] |= 1 << (id & 63)
			cpus = append(cpus, id)
		}
	}
	sh.a.CPUs = cpus
	r.fcpu -= len(cpus)
	sh.a.MemMB = min(a.MemMB, max(r.fmem, 0))
	r.fmem -= sh.a.MemMB
	for _, g := range a.Gres {
		for e, d := range s.Gres {
			if d.Name == g.Name && d.Type == g.Type {
				k := min(g.Count, r.fgres[e])
				r.fgres[e] -= k
				sh.ent[e] += k
				if d.Count <= 64 {
					base := gresBase(s, e)
					for _, id := range g.IDs {
						if b := id - base; b >= 0 && b < d.Count {
							r.gmask[e] |= 1 << b
						}
					}
				}
				break
			}
		}
	}
	return sh
}

// matches reports whether node s may serve the request at all (-w, -x, -C).
func (q *Request) matches(s *NodeSpec) bool {
	if slices.Contains(q.Exclude, s.Name) {
		return false
	}
	if len(q.Features) > 0 {
		hit := 0
		for _, f := range q.Features {
			if slices.Contains(s.Features, f) {
				hit++
			}
		}
		if q.AnyFeature && hit == 0 || !q.AnyFeature && hit < len(q.Features) {
			return false
		}
	}
	return true
}

// capacity is what an empty node offers: everything.
func capacity(s *NodeSpec) avail {
	a := avail{cpus: s.CPUs, mem: s.MemMB, gres: make([]int, len(s.Gres)), idle: true}
	for e, g := range s.Gres {
		a.gres[e] = g.Count
	}
	return a
}

// never explains why a request could never run on nodes: the Slurm
// strerror of the first need no node can meet, or "" when some layout fits
// the nodes empty. maxMem (MiB, 0 = none) is the partition's MaxMemPerNode.
func (q *Request) never(nodes []*NodeSpec, minNodes int, maxMem int64) string {
	for _, name := range q.NodeList {
		if !slices.ContainsFunc(nodes, func(s *NodeSpec) bool { return s.Name == name }) {
			return msgNodeConfig
		}
	}
	// Gres by name must exist somewhere.
	for _, g := range q.Gres {
		if !slices.ContainsFunc(nodes, func(s *NodeSpec) bool {
			return gresFree(s, capacity(s).gres, g.Name, g.Type) >= g.Count
		}) {
			return msgInvalidGres
		}
	}
	if q.GPUsPerTask > 0 && !slices.ContainsFunc(nodes, func(s *NodeSpec) bool {
		return gresFree(s, capacity(s).gres, "gpu", q.GPUType) >= q.GPUsPerTask
	}) {
		return msgInvalidGres
	}
	try := func(q *Request) bool {
		lo, hi := q.nodeRange(minNodes)
		cands := make([]layoutCand, 0, len(nodes))
		for i, s := range nodes {
			if !q.matches(s) {
				continue
			}
			a := capacity(s)
			c := layoutCand{i: i, cap: q.maxTasks(s, &a, q.NTasks), free: s.CPUs, required: slices.Contains(q.NodeList, s.Name)}
			if maxMem > 0 && c.cap > 0 && q.use(s, c.cap).mem > maxMem {
				// Fewer tasks may still fit under the limit.
				for c.cap > 0 && q.use(s, c.cap).mem > maxMem {
					c.cap--
				}
			}
			cands = append(cands, c)
		}
		if q.TasksPerNode > 0 && !slices.ContainsFunc(cands, func(c layoutCand) bool { return c.cap >= min(q.TasksPerNode, q.NTasks) }) {
			// --ntasks-per-node above what any node can hold (Slurm
			// refuses it rather than spreading the tasks thinner).
			return false
		}
		return layout(q.NTasks, lo, hi, cands, nil) != nil
	}
	if try(q) {
		return ""
	}
	noMem := *q
	noMem.MemAll, noMem.MemPerNode, noMem.MemPerCPU, noMem.MemPerGPU = false, 0, 0, 0
	if try(&noMem) {
		return msgTaskMemory
	}
	noGres := noMem
	noGres.Gres, noGres.GPUsPerTask, noGres.CPUsPerGPU = nil, 0, 0
	if try(&noGres) && (len(q.Gres) > 0 || q.GPUsPerTask > 0) {
		return msgInvalidGres
	}
	return msgNodeConfig
}

// wholeRequest is the request a whole-node job makes when it shares a
// pass with resource jobs: n nodes, each empty, each held whole.
func wholeRequest(n int) *Request {
	return &Request{NTasks: n, CPUsPerTask: 1, TasksPerNode: 1, NodesSet: true, Exclusive: true}
}

// placeAt lays the request out on the nodes of p as view says they are.
// It returns the slots (partition indices and tasks), or nil. ok(i)
// filters nodes (bookings ahead); nil accepts all.
func (p *Partition) placeAt(j *Job, q *Request, view func(i int) *avail, ok func(i int) bool, among []int, buf []layoutCand, dst []slot) ([]slot, []layoutCand) {
	e := p.eng
	lo, hi := q.nodeRange(j.Nodes)
	buf = buf[:0]
	// The fewest CPUs one task needs anywhere: nodes with fewer free are
	// skipped before any arithmetic (most nodes of a busy cluster).
	least := max(q.CPUsPerTask, q.MinCPUs, 1)
	plain := len(q.Exclude) == 0 && len(q.Features) == 0
	n := len(p.nodes)
	if among != nil {
		n = len(among)
	}
	for k := 0; k < n; k++ {
		i := k
		if among != nil {
			i = among[k]
		}
		g := p.nodes[i]
		a := view(i)
		if a.cpus < least && !q.Exclusive {
			continue
		}
		s := &e.nodes[g].spec
		if !plain && !q.matches(s) || ok != nil && !ok(i) {
			continue
		}
		c := q.maxTasks(s, a, q.NTasks)
		if c == 0 {
			continue
		}
		buf = append(buf, layoutCand{i: i, cap: c, free: a.cpus, required: len(q.NodeList) > 0 && slices.Contains(q.NodeList, s.Name)})
	}
	if len(q.NodeList) > 0 {
		have := 0
		for _, c := range buf {
			if c.required {
				have++
			}
		}
		if have < len(q.NodeList) {
			return nil, buf
		}
	}
	return layout(q.NTasks, lo, hi, buf, dst), buf
}

// nowAvail is what node i of p offers now: nothing when it is down or held
// whole, else its free resources.
func (p *Partition) nowAvail(i int, a *avail) *avail {
	n := &p.eng.nodes[p.nodes[i]]
	switch {
	case n.down, n.busy && len(n.res.shares) == 0:
		*a = avail{gres: a.gres[:0]}
	default:
		*a = avail{cpus: n.res.fcpu, mem: n.res.fmem, gres: append(a.gres[:0], n.res.fgres...), idle: !n.busy}
	}
	return a
}

// TresPlan is a placement of a job on a partition's nodes, for a policy to
// start (StartPlan) or to reserve resources against (Extra).
type TresPlan struct {
	slots []slot
	req   *Request
	whole bool
}

// Nodes is how many nodes the plan uses.
func (pl *TresPlan) Nodes() int { return len(pl.slots) }

// request is the job's Request, or the whole-node request it stands for.
func request(j *Job) (*Request, bool) {
	if j.Req != nil {
		return j.Req, false
	}
	return wholeRequest(max(j.Nodes, 1)), true
}

// TresExtra is, per node of a partition, what stays free at a future
// instant once a reserved job has taken its part: EASY backfilling lets a
// job that runs past that instant use only this (Lifka 1995).
type TresExtra struct {
	at    []avail
	t     float64
	nodes []int // the reserved job's nodes, ascending
}

// PlaceNow lays j out on what is free now (and, when extra is not nil,
// also within extra); ok filters nodes (nil = all). The plan is nil when j
// does not fit.
//
// among, when not nil, lists the only nodes worth a look (partition
// indices): a policy that knows the others have too little free passes it
// to skip them (ByFree).
func (p *Partition) PlaceNow(j *Job, extra *TresExtra, ok func(i int) bool, among []int) *TresPlan {
	q, whole := request(j)
	var tmp avail
	view := func(i int) *avail {
		a := p.nowAvail(i, &tmp)
		if extra != nil {
			x := &extra.at[i]
			a.cpus = min(a.cpus, x.cpus)
			a.mem = min(a.mem, x.mem)
			for k := range a.gres {
				a.gres[k] = min(a.gres[k], x.gres[k])
			}
			a.idle = a.idle && x.idle
		}
		return a
	}
	slots, buf := p.placeAt(j, q, view, ok, among, p.tbuf, nil)
	p.tbuf = buf
	if slots == nil {
		return nil
	}
	return &TresPlan{slots: slots, req: q, whole: whole}
}

// StartPlan starts step step of job id on its plan, expected to end at
// expect. A whole-node plan starts as Start does (the nodes held whole).
func (p *Partition) StartPlan(id JobID, step int, pl *TresPlan, expect float64, extra *TresExtra) error {
	if pl.whole {
		nodes := make([]int, len(pl.slots))
		for k, s := range pl.slots {
			nodes[k] = s.i
		}
		slices.Sort(nodes)
		if err := p.Start(id, step, nodes, 0, 0, expect); err != nil {
			return err
		}
		if extra != nil && expect > extra.t {
			for _, i := range nodes {
				extra.at[i] = avail{gres: extra.at[i].gres[:0]}
			}
		}
		return nil
	}
	e := p.eng
	r := e.jobs[id]
	switch {
	case r == nil || r.part != p:
		return fmt.Errorf("scheduler: partition %q: start of unknown job %d", p.spec.Name, id)
	case r.removed || r.blocked != "":
		return fmt.Errorf("scheduler: partition %q: start of job %d that may not run", p.spec.Name, id)
	}
	shares := make([]share, 0, len(pl.slots))
	for _, s := range pl.slots {
		g := p.nodes[s.i]
		n := &e.nodes[g]
		if n.down || n.busy && len(n.res.shares) == 0 {
			p.undo(shares)
			return fmt.Errorf("scheduler: partition %q: job %d: node %s is not available", p.spec.Name, id, n.spec.Name)
		}
		sh, ok := pl.req.take(&n.spec, &n.res, s.tasks)
		if !ok {
			p.undo(shares)
			return fmt.Errorf("scheduler: partition %q: job %d: node %s has not enough free", p.spec.Name, id, n.spec.Name)
		}
		sh.job, sh.step, sh.expect = id, step, expect
		shares = append(shares, sh)
	}
	st := runStep{step: step, expect: expect}
	names := make([]string, len(shares))
	allocs := make([]NodeAlloc, len(shares))
	for k, sh := range shares {
		g := p.nodes[pl.slots[k].i]
		st.nodes = append(st.nodes, g)
		names[k] = sh.a.Node
		allocs[k] = sh.a
		e.addShare(g, sh)
		if extra != nil && expect > extra.t {
			x := &extra.at[pl.slots[k].i]
			x.cpus -= len(sh.a.CPUs)
			x.mem -= sh.a.MemMB
			for en, c := range sh.ent {
				x.gres[en] -= c
			}
			x.idle = false
		}
	}
	st.shared = true
	r.steps = append(r.steps, st)
	r.started = true
	e.out = append(e.out, Start{ID: id, Step: step, Nodes: names, Expect: expect, Alloc: allocs})
	return nil
}

// undo gives back shares taken by a StartPlan that failed half-way.
func (p *Partition) undo(shares []share) {
	for k := range shares {
		g := p.eng.byName[shares[k].a.Node]
		n := &p.eng.nodes[g]
		n.res.give(&n.spec, &shares[k])
	}
}

// relEvent is resources a running step gives back to node i at t.
type relEvent struct {
	t     float64
	i     int
	whole bool
	sh    *share
}

// Reserve finds the earliest time ≥ now at which j fits, from the running
// steps' expected ends, and what would stay free then once j has its part
// (the EASY reservation of the queue's head, computed on resources). It
// returns Inf and nil when j never fits (down nodes, unlimited jobs).
func (p *Partition) Reserve(j *Job, now float64, ok func(i int) bool) (float64, *TresExtra) {
	e := p.eng
	// Nothing a node holds changed since the last answer for this job:
	// the same answer (a pass that backfills against it changes what
	// nodes hold, so it is never reused after being drawn on).
	c := &p.rsv
	if ok == nil && c.valid && c.id == j.ID && c.tick == e.resTick {
		return max(c.t, now), c.x
	}
	t, x := p.reserve(j, now, ok)
	if ok == nil {
		*c = reserveCache{valid: true, id: j.ID, tick: e.resTick, t: t, x: x}
	}
	return t, x
}

func (p *Partition) reserve(j *Job, now float64, ok func(i int) bool) (float64, *TresExtra) {
	e := p.eng
	q, _ := request(j)
	view := make([]avail, len(p.nodes))
	var evs []relEvent
	for i, g := range p.nodes {
		n := &e.nodes[g]
		p.nowAvail(i, &view[i])
		view[i].gres = slices.Clone(view[i].gres)
		if len(view[i].gres) < len(n.spec.Gres) {
			view[i].gres = make([]int, len(n.spec.Gres))
		}
		if n.down {
			continue
		}
		switch {
		case n.busy && len(n.res.shares) == 0:
			evs = append(evs, relEvent{t: n.expect, i: i, whole: true})
		default:
			for k := range n.res.shares {
				evs = append(evs, relEvent{t: n.res.shares[k].expect, i: i, sh: &n.res.shares[k]})
			}
		}
	}
	// The head usually fits after a few of the ends: a heap hands them out
	// in time order without sorting them all (a busy cluster runs tens of
	// thousands of steps).
	h := relHeap(evs)
	h.init()
	get := func(i int) *avail { return &view[i] }
	try := func(t float64) (float64, *TresExtra) {
		slots, _ := p.placeAt(j, q, get, ok, nil, nil, nil)
		if slots == nil {
			return Inf, nil
		}
		x := &TresExtra{at: view, t: t}
		for _, s := range slots {
			x.nodes = append(x.nodes, s.i)
			spec := &e.nodes[p.nodes[s.i]].spec
			u := q.use(spec, s.tasks)
			a := &x.at[s.i]
			a.cpus -= u.cpus
			a.mem -= u.mem
			a.idle = false
			// gres: charge matching entries as take would.
			for k, g := range q.Gres {
				n := g.Count
				if k == q.gpuEntry() {
					n += u.gpus
				}
				chargeGres(spec, a.gres, g.Name, g.Type, n)
			}
			if u.gpus > 0 && q.gpuEntry() < 0 {
				chargeGres(spec, a.gres, "gpu", q.GPUType, u.gpus)
			}
			if q.Exclusive {
				*a = avail{gres: make([]int, len(spec.Gres))}
			}
		}
		slices.Sort(x.nodes)
		return max(t, now), x
	}
	if t, x := try(now); x != nil {
		return t, x
	}
	for len(h) > 0 {
		t := h[0].t
		if math.IsInf(t, 1) {
			break
		}
		hit := false
		for len(h) > 0 && h[0].t == t {
			ev := h.pop()
			n := &e.nodes[p.nodes[ev.i]]
			a := &view[ev.i]
			if ev.whole {
				c := capacity(&n.spec)
				*a = c
			} else {
				a.cpus += len(ev.sh.a.CPUs)
				a.mem += ev.sh.a.MemMB
				for en, c := range ev.sh.ent {
					a.gres[en] += c
				}
				// Idle again once its last share is gone.
				a.idle = a.cpus == n.spec.CPUs && a.mem == n.spec.MemMB && gresFull(&n.spec, a.gres)
			}
			if !hit && q.matches(&n.spec) && q.maxTasks(&n.spec, a, q.NTasks) > 0 {
				hit = true
			}
		}
		if !hit {
			continue
		}
		if t2, x := try(t); x != nil {
			return t2, x
		}
	}
	return Inf, nil
}

// relHeap is a min-heap of releases by time.
type relHeap []relEvent

func (h relHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h relHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].t < h[l].t {
			m = r
		}
		if h[i].t <= h[m].t {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h *relHeap) pop() relEvent {
	old := *h
	x := old[0]
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	h.down(0)
	return x
}

func gresFull(s *NodeSpec, free []int) bool {
	for e, g := range s.Gres {
		if free[e] != g.Count {
			return false
		}
	}
	return true
}

func chargeGres(s *NodeSpec, free []int, name, typ string, n int) {
	for e, d := range s.Gres {
		if n == 0 {
			return
		}
		if d.Name == name && (typ == "" || d.Type == typ) {
			k := min(n, free[e])
			free[e] -= k
			n -= k
		}
	}
}

// SharedNodes is how many nodes of the partition hold shares (steps of
// resource jobs); with none and no resource job queued, a policy may keep
// its whole-node arithmetic.
func (p *Partition) SharedNodes() int { return p.nshared }

// FreeCPUs is the partition's free CPUs on up nodes not held whole, and
// the most any one node has free: a job whose task needs more fits nowhere.
func (p *Partition) FreeCPUs() (total, most int) {
	for _, g := range p.nodes {
		r := &p.eng.nodes[g]
		if !r.down && !(r.busy && len(r.res.shares) == 0) {
			total += r.res.fcpu
			most = max(most, r.res.fcpu)
		}
	}
	return total, most
}

// ByFree lists the up nodes not held whole by their free CPUs, most first
// (indices into idx, counts into free, both reused). Free CPUs only fall
// during a pass, so the nodes that may fit a task of c CPUs stay among
// the first Among(free, c).
func (p *Partition) ByFree(idx, free []int) ([]int, []int) {
	idx, free = idx[:0], free[:0]
	for i, g := range p.nodes {
		r := &p.eng.nodes[g]
		if !r.down && !(r.busy && len(r.res.shares) == 0) && r.res.fcpu > 0 {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(a, b int) int {
		fa, fb := p.eng.nodes[p.nodes[a]].res.fcpu, p.eng.nodes[p.nodes[b]].res.fcpu
		if fa != fb {
			return fb - fa
		}
		return a - b
	})
	for _, i := range idx {
		free = append(free, p.eng.nodes[p.nodes[i]].res.fcpu)
	}
	return idx, free
}

// Among is how many of ByFree's nodes had at least c CPUs free.
func Among(free []int, c int) int {
	k, _ := slices.BinarySearchFunc(free, c, func(f, c int) int {
		if f >= c {
			return -1
		}
		return 1
	})
	return k
}

// TaskCPUs is the fewest CPUs one task of j needs on a node (a whole-node
// job: 1), a bound for skipping it when no node has as many free.
func TaskCPUs(j *Job) int {
	if j.Req == nil || j.Req.Exclusive {
		return 1
	}
	return max(j.Req.CPUsPerTask, j.Req.MinCPUs, 1)
}

// addShare puts a share (already charged to the node's res) on node g. The
// node becomes busy with it, or, if busy with others, stays busy until the
// latest of their expected ends.
func (e *Engine) addShare(g int, sh share) {
	e.resTick++
	n := &e.nodes[g]
	n.res.shares = append(n.res.shares, sh)
	if !n.busy {
		n.busy, n.job, n.step, n.expect = true, sh.job, sh.step, sh.expect
		for _, ref := range n.parts {
			ref.p.nshared++
			if !n.down {
				ref.p.clearFree(ref.i)
				ref.p.addBusy(ref.i, sh.expect)
			}
		}
		return
	}
	if sh.expect > n.expect {
		e.moveNodeExpect(g, sh.expect)
	}
}

// removeShare gives back the share of step (id, step) on node g.
func (e *Engine) removeShare(g int, id JobID, step int) {
	e.resTick++
	n := &e.nodes[g]
	k := slices.IndexFunc(n.res.shares, func(sh share) bool { return sh.job == id && sh.step == step })
	if k < 0 {
		return
	}
	n.res.give(&n.spec, &n.res.shares[k])
	n.res.shares = slices.Delete(n.res.shares, k, k+1)
	for _, ref := range n.parts {
		ref.p.dirty = true
	}
	if len(n.res.shares) == 0 {
		for _, ref := range n.parts {
			ref.p.nshared--
		}
		e.release(g)
		return
	}
	n.job, n.step = n.res.shares[0].job, n.res.shares[0].step
	e.moveNodeExpect(g, latest(n.res.shares))
}

// moveShare changes the expected end of a share (suspend/resume).
func (e *Engine) moveShare(g int, id JobID, step int, expect float64) {
	n := &e.nodes[g]
	for k := range n.res.shares {
		if sh := &n.res.shares[k]; sh.job == id && sh.step == step {
			sh.expect = expect
		}
	}
	e.moveNodeExpect(g, latest(n.res.shares))
}

func latest(shares []share) float64 {
	t := math.Inf(-1)
	for _, sh := range shares {
		t = max(t, sh.expect)
	}
	return t
}

// moveNodeExpect moves a busy node's expected end, keeping the busy lists
// sorted.
func (e *Engine) moveNodeExpect(g int, t float64) {
	e.resTick++
	n := &e.nodes[g]
	if n.expect == t {
		return
	}
	if !n.down {
		for _, ref := range n.parts {
			ref.p.dropBusy(ref.i, n.expect)
			ref.p.addBusy(ref.i, t)
			ref.p.dirty = true
		}
	}
	n.expect = t
}

// resolveRequest applies the partition's memory default and
// OverSubscribe=EXCLUSIVE to j's request, and refuses, with Slurm's text,
// a request no node of the partition could ever satisfy. Policies that
// book whole nodes (dlt, reserve) get the node count the request needs
// and no request.
func (e *Engine) resolveRequest(p *Partition, j *Job) *AdmissionError {
	q := j.Req
	if q == nil {
		return nil
	}
	c := *q
	q = &c
	q.NTasks = max(q.NTasks, 1)
	q.CPUsPerTask = max(q.CPUsPerTask, 1)
	if !q.MemGiven && p.spec.DefMemPerCPU > 0 {
		q.MemPerCPU = p.spec.DefMemPerCPU
	}
	if strings.EqualFold(p.spec.OverSubscribe, "EXCLUSIVE") {
		q.Exclusive = true
	}
	if q.GPUs > 0 {
		lo, _ := q.nodeRange(j.Nodes)
		per := (q.GPUs + lo - 1) / lo
		q.Gres = append(slices.Clone(q.Gres), GresReq{Name: "gpu", Type: q.GPUType, Count: per})
		q.GPUs = 0
	}
	j.Req = q
	specs := make([]*NodeSpec, len(p.nodes))
	for i, g := range p.nodes {
		specs[i] = &e.nodes[g].spec
	}
	// Nodes never change: one verdict per request shape (a queue holds
	// few shapes, and the check walks every node of the partition).
	key := fmt.Sprintf("%d %+v", j.Nodes, *q)
	msg, seen := p.never[key]
	if !seen {
		msg = q.never(specs, j.Nodes, p.spec.MaxMemPerNode)
		if len(p.never) < 4096 {
			if p.never == nil {
				p.never = map[string]string{}
			}
			p.never[key] = msg
		}
	}
	if msg != "" {
		code := "InvalidNodeCount"
		switch msg {
		case msgTaskMemory:
			code = "InvalidTaskMemory"
		case msgInvalidGres:
			code = "InvalidGres"
		}
		return &AdmissionError{Verdict: Never, Code: code, Message: msg}
	}
	if ns, ok := p.policy.(NodeSharer); !ok || !ns.SharesNodes() {
		// Whole nodes: as many as the request needs on empty nodes.
		lo, hi := q.nodeRange(j.Nodes)
		cands := make([]layoutCand, 0, len(specs))
		for i, s := range specs {
			if q.matches(s) {
				a := capacity(s)
				cands = append(cands, layoutCand{i: i, cap: q.maxTasks(s, &a, q.NTasks), free: s.CPUs})
			}
		}
		if slots := layout(q.NTasks, lo, hi, cands, nil); slots != nil {
			j.Nodes = max(j.Nodes, len(slots))
		}
		j.Req = nil
	}
	return nil
}

// CPUs is what the plan holds in CPUs, for a pass's running count.
func (pl *TresPlan) CPUs() int {
	n := 0
	for _, s := range pl.slots {
		n += s.tasks * pl.req.CPUsPerTask
	}
	return n
}

// Nodes lists the partition indices of the reserved job's nodes.
func (x *TresExtra) Nodes() []int { return x.nodes }
