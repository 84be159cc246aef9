package scheduler

import (
	"fmt"
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

// OverSubscribe is a partition's Slurm OverSubscribe setting: Mode NO,
// YES, FORCE or EXCLUSIVE, and for YES and FORCE how many jobs may hold
// one CPU at once (Jobs, Slurm's default 4). Memory and gres are never
// shared (slurm.conf(5): "all resources (except GRES)", and memory is a
// consumable resource of every job here).
type OverSubscribe struct {
	Mode string
	Jobs int
}

// MaxShareJobs is the largest count Slurm accepts after YES: or FORCE:
// (its max_share keeps the count in 15 bits).
const MaxShareJobs = 0x7fff

// ParseOverSubscribe reads NO, EXCLUSIVE, YES[:N] or FORCE[:N] (any case;
// "" is NO).
func ParseOverSubscribe(s string) (OverSubscribe, error) {
	mode, count, hasCount := strings.Cut(strings.ToUpper(strings.TrimSpace(s)), ":")
	o := OverSubscribe{Mode: mode, Jobs: 1}
	switch mode {
	case "", "NO":
		o.Mode = "NO"
	case "EXCLUSIVE":
		o.Jobs = 0
	case "YES", "FORCE":
		o.Jobs = 4
		if hasCount {
			n, err := strconv.Atoi(count)
			if err != nil || n < 1 || n > MaxShareJobs {
				return OverSubscribe{}, fmt.Errorf("invalid job count %q after %s: (1 to %d)", count, mode, MaxShareJobs)
			}
			o.Jobs = n
		}
		return o, nil
	default:
		return OverSubscribe{}, fmt.Errorf("must be NO, YES[:N], FORCE[:N] or EXCLUSIVE, got %q", s)
	}
	if hasCount {
		return OverSubscribe{}, fmt.Errorf("%s takes no job count, got %q", o.Mode, s)
	}
	return o, nil
}

// String is the setting as `scontrol show partition` prints it: NO,
// EXCLUSIVE, YES:N or FORCE:N (YES:1 is NO, as Slurm prints it).
func (o OverSubscribe) String() string {
	switch {
	case o.Mode == "EXCLUSIVE":
		return "EXCLUSIVE"
	case o.Mode == "FORCE":
		return "FORCE:" + strconv.Itoa(o.Jobs)
	case o.Mode == "YES" && o.Jobs > 1:
		return "YES:" + strconv.Itoa(o.Jobs)
	}
	return "NO"
}

// ShareLimit is how many jobs may hold one CPU of a job in this partition:
// FORCE:N every job, YES:N a job that asked -s (asked), otherwise 1.
func (o OverSubscribe) ShareLimit(asked bool) int {
	if o.Mode == "FORCE" || o.Mode == "YES" && asked {
		return o.Jobs
	}
	return 1
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
	// Oversubscribe is -s/--oversubscribe: the job lets its CPUs be shared
	// where the partition says YES. OnlyShare marks a request made of -s
	// alone: where the partition shares no CPUs the job takes whole nodes,
	// as a job that names no resource does.
	Oversubscribe, OnlyShare bool
	// Share is how many jobs (this one included) may hold each of its CPUs
	// at once, from the partition's OverSubscribe (Engine.resolveRequest);
	// ≤ 1: its CPUs are its own.
	Share int
	// ExclusiveUser (--exclusive=user): the job shares its nodes only with
	// jobs of the same user (Job.User), and it takes only what it asks.
	ExclusiveUser bool
	NodeList      []string
	Exclude       []string
	Features      []string
	AnyFeature    bool // Features joined by |, else &
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
	// Oversubscribed CPUs (OverSubscribe=YES/FORCE): shx marks the CPUs
	// held by sharing jobs only, cnt how many jobs hold each CPU (made at
	// the node's first sharing job). A CPU held by a job that does not
	// share is in cpuset and not in shx: nobody else may take it.
	shx []uint64
	cnt []uint16
}

type share struct {
	job    JobID
	step   int
	expect float64
	a      NodeAlloc
	// The job's user, and whether it shares its nodes with that user's
	// jobs only (--exclusive=user).
	user     uint32
	exclUser bool
	// over: the share's CPUs may be held by other sharing jobs too
	// (counted in nodeRes.cnt).
	over bool
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

// cpusFor is how many CPUs of the node request q may take now: the free
// ones, and for a sharing job also those held only by sharing jobs, fewer
// than q.Share of them each.
func (r *nodeRes) cpusFor(q *Request) int {
	if q.Share <= 1 || q.Exclusive {
		return r.fcpu
	}
	return r.fcpu + r.shareable(q.Share)
}

// shareable counts the held CPUs a sharing job of limit lim may join.
func (r *nodeRes) shareable(lim int) int {
	n := 0
	for w, word := range r.shx {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			if int(r.cnt[w*64+b]) < lim {
				n++
			}
			word &^= 1 << b
		}
	}
	return n
}

// sharedCPUs appends to dst k held CPUs a sharing job of limit lim may
// join, the least shared first (then the lowest id), as Slurm fills the
// first row of a partition with room before the next.
func (r *nodeRes) sharedCPUs(lim, k int, dst []int) []int {
	start := len(dst)
	for w, word := range r.shx {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			if id := w*64 + b; int(r.cnt[id]) < lim {
				dst = append(dst, id)
			}
			word &^= 1 << b
		}
	}
	c := dst[start:]
	slices.SortStableFunc(c, func(a, b int) int { return int(r.cnt[a]) - int(r.cnt[b]) })
	return dst[:start+min(k, len(c))]
}

// take builds the allocation of t tasks on node s from r's free CPU ids
// and gres units (lowest first) and charges them to r. It fails, changing
// nothing, when r does not hold enough.
func (q *Request) take(s *NodeSpec, r *nodeRes, t int) (share, bool) {
	u := q.use(s, t)
	over := q.Share > 1 && !q.Exclusive
	if u.cpus > r.cpusFor(q) || u.mem > r.fmem {
		return share{}, false
	}
	sh := share{a: NodeAlloc{Node: s.Name, Tasks: t, MemMB: u.mem}, ent: make([]int, len(s.Gres)), over: over}
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
	// CPU ids: lowest free first, so small jobs pack core by core; a
	// sharing job then takes the least shared CPUs.
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
	fresh := len(cpus)
	if over && len(cpus) < u.cpus {
		cpus = r.sharedCPUs(q.Share, u.cpus-len(cpus), cpus)
	}
	if len(cpus) < u.cpus {
		return share{}, false
	}
	if over && r.cnt == nil {
		r.cnt = make([]uint16, s.CPUs)
		r.shx = make([]uint64, len(r.cpuset))
	}
	for _, id := range cpus {
		r.cpuset[id>>6] |= 1 << (id & 63)
		if over {
			r.shx[id>>6] |= 1 << (id & 63)
			r.cnt[id]++
		}
	}
	slices.Sort(cpus)
	sh.a.CPUs = cpus
	r.fcpu -= fresh
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
		if id>>6 >= len(r.cpuset) {
			continue
		}
		if sh.over && r.cnt != nil && r.cnt[id] > 0 {
			if r.cnt[id]--; r.cnt[id] > 0 {
				continue // still held by another sharing job
			}
			r.shx[id>>6] &^= 1 << (id & 63)
		}
		r.cpuset[id>>6] &^= 1 << (id & 63)
		r.fcpu++
	}
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
//
// over restores a sharing job's share: its CPUs may also be held by other
// sharing jobs (not by one that does not share), whatever the count: the
// jobs already run.
func (r *nodeRes) restoreShare(s *NodeSpec, a NodeAlloc, over bool) share {
	sh := share{a: a, ent: make([]int, len(s.Gres)), over: over}
	if over && r.cnt == nil {
		r.cnt = make([]uint16, s.CPUs)
		r.shx = make([]uint64, len(r.cpuset))
	}
	var cpus []int
	for _, id := range a.CPUs {
		if id < 0 || id >= s.CPUs {
			continue
		}
		bit := uint64(1) << (id & 63)
		held := r.cpuset[id>>6]&bit != 0
		switch {
		case !held:
			r.cpuset[id>>6] |= bit
			r.fcpu--
		case !over || r.shx[id>>6]&bit == 0 || r.cnt[id] == MaxShareJobs:
			continue
		}
		if over {
			r.shx[id>>6] |= bit
			r.cnt[id]++
		}
		cpus = append(cpus, id)
	}
	sh.a.CPUs = cpus
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
