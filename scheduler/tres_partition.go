package scheduler

import (
	"fmt"
	"math"
	"slices"
)

// The Engine's and the policies' side of consumable resources: per-node
// state kept in step with starts and ends, placements on a partition now
// (PlaceNow, StartPlan), the head's reservation (Reserve) and the refusal
// at submit (resolveRequest). The arithmetic itself is tres.go's.

// placeAt lays the request out on the nodes of p as view says they are.
// It returns the slots (partition indices and tasks), or nil. ok(i)
// filters nodes (bookings ahead); nil accepts all.
//
// future is set when view is a later instant (Reserve): a node is then
// usable by an --exclusive=user job only when nothing at all is held on
// it there, since which users' shares are left by then is not tracked.
func (p *Partition) placeAt(j *Job, q *Request, view func(i int) *avail, ok func(i int) bool, among []int, buf []layoutCand, dst []slot, future bool) ([]slot, []layoutCand) {
	e := p.eng
	users := q.ExclusiveUser || e.exclUserShares > 0
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
		if users && (future && q.ExclusiveUser && !a.idle || !e.usersMayShare(g, j.User, q.ExclusiveUser)) {
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

// nowAvail is what node i of p offers request q now: nothing when it is
// down or held whole, else its free resources (for a sharing request, the
// CPUs it may share too).
func (p *Partition) nowAvail(i int, a *avail, q *Request) *avail {
	n := &p.eng.nodes[p.nodes[i]]
	switch {
	case n.down, n.busy && len(n.res.shares) == 0:
		*a = avail{gres: a.gres[:0]}
	default:
		*a = avail{cpus: n.res.cpusFor(q), mem: n.res.fmem, gres: append(a.gres[:0], n.res.fgres...), idle: !n.busy}
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
		a := p.nowAvail(i, &tmp, q)
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
	slots, buf := p.placeAt(j, q, view, ok, among, p.tbuf, nil, false)
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
	r, err := p.startable(id)
	if err != nil {
		return err
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
		sh.user, sh.exclUser = r.job.User, pl.req.ExclusiveUser
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
	// The reservation counts only CPUs no job holds, also for a job that
	// may share (a later start than sharing would allow: conservative, so
	// what a backfilled job is let use never delays the head).
	own := &Request{}
	view := make([]avail, len(p.nodes))
	var evs []relEvent
	// Holders per CPU of nodes with shared CPUs, copied when a release
	// there is replayed: a CPU comes free with its last holder.
	var cnts map[int][]uint16
	for i, g := range p.nodes {
		n := &e.nodes[g]
		p.nowAvail(i, &view[i], own)
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
		slots, _ := p.placeAt(j, q, get, ok, nil, nil, nil, true)
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
			if q.Exclusive || q.ExclusiveUser {
				// --exclusive=user: other users' jobs may not backfill
				// there; the same user's are not told apart (conservative).
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
				if ev.sh.over && n.res.cnt != nil {
					c, ok := cnts[ev.i]
					if !ok {
						if cnts == nil {
							cnts = map[int][]uint16{}
						}
						c = slices.Clone(n.res.cnt)
						cnts[ev.i] = c
					}
					for _, id := range ev.sh.a.CPUs {
						if c[id] > 0 {
							if c[id]--; c[id] == 0 {
								a.cpus++
							}
						}
					}
				} else {
					a.cpus += len(ev.sh.a.CPUs)
				}
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

// ShareableCPUs is, for jobs that may share each CPU with up to lim-1
// others, what FreeCPUs is for the others: the CPUs they may take on up
// nodes not held whole (free ones and shared ones below lim), in the
// partition and on the best node.
func (p *Partition) ShareableCPUs(lim int) (total, most int) {
	for i := range p.nodes {
		n := p.NodeShareable(i, lim)
		total += n
		most = max(most, n)
	}
	return total, most
}

// NodeShareable is ShareableCPUs of node i alone.
func (p *Partition) NodeShareable(i, lim int) int {
	r := &p.eng.nodes[p.nodes[i]]
	if r.down || r.busy && len(r.res.shares) == 0 {
		return 0
	}
	return r.res.fcpu + r.res.shareable(lim)
}

// NodeFree is node i's free CPUs (0 when down or held whole).
func (p *Partition) NodeFree(i int) int {
	r := &p.eng.nodes[p.nodes[i]]
	if r.down || r.busy && len(r.res.shares) == 0 {
		return 0
	}
	return r.res.fcpu
}

// NodeIndices lists the partition indices of the plan's nodes.
func (pl *TresPlan) NodeIndices(dst []int) []int {
	dst = dst[:0]
	for _, s := range pl.slots {
		dst = append(dst, s.i)
	}
	return dst
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
	if sh.exclUser {
		e.exclUserShares++
	}
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
	if n.res.shares[k].exclUser {
		e.exclUserShares--
	}
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
	e.resTick++ // the share's end moves even when the node's latest does not
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
	if p.over.Mode == "EXCLUSIVE" {
		q.Exclusive = true
	}
	q.Share = 1
	if !q.Exclusive && !q.ExclusiveUser {
		q.Share = p.over.ShareLimit(q.Oversubscribe)
	}
	if q.OnlyShare && q.Share <= 1 {
		// -s alone where CPUs are not shared: whole nodes, as before.
		j.Req = nil
		return nil
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

// usersMayShare reports whether a job of user may take a share of node g
// as the users of its shares stand: not beside another user's job when it
// asks --exclusive=user (excl), nor beside another user's job that asked
// it.
func (e *Engine) usersMayShare(g int, user uint32, excl bool) bool {
	for k := range e.nodes[g].res.shares {
		sh := &e.nodes[g].res.shares[k]
		if sh.user != user && (excl || sh.exclUser) {
			return false
		}
	}
	return true
}
