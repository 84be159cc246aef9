package scheduler

import (
	"fmt"
	"math"
	"slices"
)

// Engine is the pure decision core: Handle takes an event and returns the
// actions it causes. It owns the node states (free, allocated to a job step,
// down) and the job table; each partition's Policy owns the order of its
// pending jobs. Not safe for concurrent use: the driver serialises events.
type Engine struct {
	nodes    []nodeRec
	byName   map[string]int
	parts    []*Partition
	partName map[string]*Partition
	def      *Partition
	// bookTick makes Partition.BookedVersion change when a Booker has
	// no version of its own.
	bookTick uint64
	jobs     map[JobID]*jobRec
	// blocked are pending jobs the Engine keeps from their policy because
	// they break a partition limit (Slurm's PartitionTimeLimit etc.), in
	// arrival order.
	blocked []JobID
	out     []Action
	// decided counts the Admit and Reject actions at the front of out: the
	// place of the next one, so that a batch's verdicts keep event order.
	decided int
	now     float64
	// susp are the suspended jobs, whose expected end moves with now.
	susp []JobID
	// gate holds dependencies and array throttles (gate.go).
	gate gateState
	// sigs are the --signal deliveries to come, by time.
	sigs []sigTimer
	// resTick counts changes of what nodes hold (starts, ends, expected
	// ends, nodes down or up): Partition.Reserve's cache key.
	resTick uint64
	// exclUserShares counts the shares of --exclusive=user jobs: while
	// there are none, placements skip the users check.
	exclUserShares int
	// rt admits periodic real-time jobs (periodic.go).
	rt rtAdmitter
}

type nodeRef struct {
	p *Partition
	i int
}

type nodeRec struct {
	spec   NodeSpec
	down   bool
	busy   bool
	job    JobID
	step   int
	expect float64
	parts  []nodeRef
	// res is the node's consumable state; a node with shares is busy
	// (held by n.job, its first share) until its last share ends
	// (expect is the latest), so whole-node arithmetic stays sound.
	res nodeRes
}

func (n *nodeRec) state() NodeState {
	switch {
	case n.down:
		return StateDown
	case n.busy:
		return StateAllocated
	}
	return StateIdle
}

type runStep struct {
	step   int
	nodes  []int // engine node indices
	expect float64
	remain float64 // time left of the limit when suspended
	shared bool    // holds shares of nodes (tres.go), not whole nodes
	// periodic: a periodic RT job's step, holding an RT CPU share of its
	// nodes (periodic.go), neither whole nodes nor consumable shares.
	periodic bool
}

type jobRec struct {
	job     Job
	part    *Partition
	steps   []runStep
	started bool   // a step has started: the job is RUNNING, not pending
	removed bool   // cancelled: the policy has forgotten it
	done    bool   // the policy has nothing more to run
	blocked string // reason when the Engine keeps it from its policy
	// suspended: stopped by scontrol suspend; its steps' expected ends
	// move with now (shared.go).
	suspended bool
	gate      gateRec
}

// Reasons the Engine itself gives (the policies give the others).
const (
	ReasonNone            = "None"
	ReasonPartTimeLimit   = "PartitionTimeLimit"
	ReasonPartNodeLimit   = "PartitionNodeLimit"
	ReasonPartitionConfig = "PartitionConfig"
	ReasonHeld            = "JobHeldUser"
	ReasonDeadline        = "DeadLine"
	JobStateDeadline      = "DEADLINE"
)

// Slurm's strerror texts that sbatch prints after "Batch job submission failed: ".
const (
	msgInvalidPartition = "Invalid partition name specified"
	msgNodeConfig       = "Requested node configuration is not available"
	msgTimeLimit        = "Requested time limit is invalid (missing or exceeds some limit)"
)

// New builds an Engine for cfg. Every error names the partition or node at
// fault. A PartitionSpec with Policy "" gets "batch"; MaxTime 0 means
// unlimited and DefaultTime 0 means MaxTime (Slurm's defaults); when no
// partition is Default the first one is.
func New(cfg Config) (*Engine, error) {
	e := &Engine{
		byName:   make(map[string]int, len(cfg.Nodes)),
		partName: make(map[string]*Partition, len(cfg.Partitions)),
		jobs:     make(map[JobID]*jobRec),
		rt:       rtAdmitter{ratio: cfg.Ratio, gang: cfg.Gang},
	}
	if len(cfg.Partitions) == 0 {
		return nil, fmt.Errorf("scheduler: no partitions configured")
	}
	for _, n := range cfg.Nodes {
		if n.Name == "" {
			return nil, fmt.Errorf("scheduler: node with an empty name")
		}
		if _, dup := e.byName[n.Name]; dup {
			return nil, fmt.Errorf("scheduler: node %q defined twice", n.Name)
		}
		if n.Rate < 0 || math.IsNaN(n.Rate) {
			return nil, fmt.Errorf("scheduler: node %q: rate %v is not a positive number", n.Name, n.Rate)
		}
		if n.CPUs < 0 || n.MemMB < 0 {
			return nil, fmt.Errorf("scheduler: node %q: negative CPUs or memory", n.Name)
		}
		for _, g := range n.Gres {
			if g.Name == "" || g.Count < 0 {
				return nil, fmt.Errorf("scheduler: node %q: bad gres %q count %d", n.Name, g.Name, g.Count)
			}
		}
		n.Gres = slices.Clone(n.Gres)
		n.Features = slices.Clone(n.Features)
		e.byName[n.Name] = len(e.nodes)
		e.nodes = append(e.nodes, nodeRec{spec: n, res: newNodeRes(&n)})
	}
	for pi, ps := range cfg.Partitions {
		if ps.Name == "" {
			return nil, fmt.Errorf("scheduler: partition %d has an empty name", pi+1)
		}
		if _, dup := e.partName[ps.Name]; dup {
			return nil, fmt.Errorf("scheduler: partition %q defined twice", ps.Name)
		}
		p := &Partition{eng: e, index: pi, spec: ps}
		p.spec.Nodes = slices.Clone(ps.Nodes)
		if p.spec.Policy == "" {
			p.spec.Policy = "batch"
		}
		if err := fixTimes(&p.spec); err != nil {
			return nil, err
		}
		o, err := ParseOverSubscribe(ps.OverSubscribe)
		if err != nil {
			return nil, fmt.Errorf("scheduler: partition %q: OverSubscribe: %w", ps.Name, err)
		}
		p.over = o
		if ps.MaxNodes < 0 {
			return nil, fmt.Errorf("scheduler: partition %q: MaxNodes %d is negative", ps.Name, ps.MaxNodes)
		}
		for _, name := range ps.Nodes {
			g, ok := e.byName[name]
			if !ok {
				return nil, fmt.Errorf("scheduler: partition %q: unknown node %q", ps.Name, name)
			}
			for _, ref := range e.nodes[g].parts {
				if ref.p == p {
					return nil, fmt.Errorf("scheduler: partition %q: node %q listed twice", ps.Name, name)
				}
			}
			e.nodes[g].parts = append(e.nodes[g].parts, nodeRef{p: p, i: len(p.nodes)})
			p.nodes = append(p.nodes, g)
		}
		p.free = make([]uint64, (len(p.nodes)+63)/64)
		for i := range p.nodes {
			p.setFree(i)
		}
		if ps.Default {
			if e.def != nil {
				return nil, fmt.Errorf("scheduler: partitions %q and %q are both Default", e.def.spec.Name, ps.Name)
			}
			e.def = p
		}
		e.parts = append(e.parts, p)
		e.partName[ps.Name] = p
	}
	if e.def == nil {
		e.def = e.parts[0]
		e.def.spec.Default = true
	}
	// Policies are built last so that a factory sees the whole Partition.
	for _, p := range e.parts {
		f, err := lookupPolicy(p.spec.Policy)
		if err != nil {
			return nil, fmt.Errorf("scheduler: partition %q: %w", p.spec.Name, err)
		}
		pol, err := f(p)
		if err != nil {
			return nil, fmt.Errorf("scheduler: partition %q: %w", p.spec.Name, err)
		}
		p.policy = pol
	}
	e.linkBookers()
	return e, nil
}

func fixTimes(ps *PartitionSpec) error {
	bad := func(v float64) bool { return v < 0 || math.IsNaN(v) }
	if bad(ps.MaxTime) {
		return fmt.Errorf("scheduler: partition %q: MaxTime %v is negative", ps.Name, ps.MaxTime)
	}
	if bad(ps.DefaultTime) {
		return fmt.Errorf("scheduler: partition %q: DefaultTime %v is negative", ps.Name, ps.DefaultTime)
	}
	if ps.MaxTime == 0 {
		ps.MaxTime = Inf
	}
	if ps.DefaultTime == 0 || ps.DefaultTime > ps.MaxTime {
		// Slurm: DefaultTime defaults to MaxTime and never exceeds it.
		ps.DefaultTime = ps.MaxTime
	}
	return nil
}

// MinRun is the shortest time the job must be given to finish, for deadline
// checks: its time limit, or one minute when unlimited (Slurm's implied
// --time-min for a job with --deadline but no --time).
func (j *Job) MinRun() float64 {
	if math.IsInf(j.TimeLimit, 1) {
		return 60
	}
	return j.TimeLimit
}

// Handle applies one event and returns the actions it causes, in order:
// Admit/Reject first, then what the scheduling passes decided, partition by
// partition in configuration order. Restore never returns actions: send a
// Tick after the last Restore to run the first pass.
func (e *Engine) Handle(ev Event) []Action {
	now := ev.When()
	e.now = now
	if e.apply(now, ev) {
		e.pass(now)
	}
	return e.flush()
}

// HandleBatch applies several events of the same instant and then runs one
// scheduling pass, where Handle would run one after each event. It is how a
// simulator reproduces one whose scheduler sees all the terminations of an
// instant before it decides (pyss, Gaussier et al. SC'15): after each
// termination alone, a pass may start a backfilled job on nodes that the
// next termination of the same second would have given to the queue's head.
//
// The tie rule: events are applied in the order given, so the caller
// chooses it (the replay simulator gives all ends at t, lower job id first,
// then submissions at t); only the pass is deferred. Admit and Reject come
// first in the result, in event order, then the pass's actions. Every event
// must be at now and none may be a Restore (Restore never runs a pass): a
// batch that breaks this is refused whole, before any change, with an error
// naming the event.
func (e *Engine) HandleBatch(now float64, evs []Event) ([]Action, error) {
	for k, ev := range evs {
		if _, ok := ev.(Restore); ok {
			return nil, fmt.Errorf("scheduler: HandleBatch: event %d is a Restore, which takes Handle", k+1)
		}
		if t := ev.When(); t != now {
			return nil, fmt.Errorf("scheduler: HandleBatch at %v: event %d (%T) is at %v", now, k+1, ev, t)
		}
	}
	e.now = now
	for _, ev := range evs {
		e.apply(now, ev)
	}
	e.pass(now)
	return e.flush(), nil
}

// apply changes the state for one event; it reports whether a scheduling
// pass should follow.
func (e *Engine) apply(now float64, ev Event) bool {
	if len(e.susp) > 0 {
		// Suspended jobs' expected ends move with the clock (shared.go).
		e.moveSuspended(now)
	}
	switch ev := ev.(type) {
	case Submit:
		e.submit(now, ev.Job)
	case Cancel:
		e.cancel(now, ev.ID)
	case Hold:
		e.hold(now, ev.ID, true)
	case Release:
		e.hold(now, ev.ID, false)
	case Finished:
		e.finished(now, ev)
	case NodeDown:
		e.nodeState(ev.Node, true)
		e.tellNode(now, ev.Node, true)
	case NodeUp:
		e.nodeState(ev.Node, false)
		e.tellNode(now, ev.Node, false)
	case Tick:
		for _, p := range e.parts {
			p.dirty = true
		}
	case Restore:
		e.restore(now, ev)
		return false
	case Suspend:
		e.suspend(now, ev.ID, true)
	case Resume:
		e.suspend(now, ev.ID, false)
	case Ended:
		e.gate.init()
		if e.jobs[ev.ID] == nil {
			e.gate.ended[ev.ID] = outcome{ok: ev.OK, startAt: ev.StartAt, endAt: ev.EndAt}
		}
		return false
	case Purge:
		delete(e.gate.ended, ev.ID)
		return false
	case SetDependency:
		e.setDependency(now, ev)
	case SetThrottle:
		e.setThrottle(now, ev)
	case Update:
		e.gate.init()
		e.update(now, ev.Job)
	}
	return true
}

// pass runs the scheduling pass of every partition whose state changed.
func (e *Engine) pass(now float64) {
	e.runTimers(now)
	e.runSignals(now)
	e.expireBlocked(now)
	e.startRestoredPeriodic(now)
	for _, p := range e.parts {
		if p.dirty {
			p.dirty = false
			p.policy.Schedule(now)
		}
	}
}

// flush hands over the actions: a fresh slice per call, since the caller
// may keep what it gets.
func (e *Engine) flush() []Action {
	out := e.out
	e.out = nil
	e.decided = 0
	return out
}

// resolve applies the partition defaults to j. It returns the refusal of a
// job that can never run as asked, or the reason to keep a job pending
// outside its policy.
func (e *Engine) resolve(j *Job) (*Partition, *AdmissionError, string) {
	p := e.def
	if j.Partition != "" {
		p = e.partName[j.Partition]
		if p == nil {
			return nil, &AdmissionError{Verdict: Never, Code: "InvalidPartition", Message: msgInvalidPartition}, ""
		}
	}
	j.Partition = p.spec.Name
	if j.Nodes <= 0 {
		j.Nodes = 1
	}
	if j.Nodes > len(p.nodes) {
		return p, &AdmissionError{Verdict: Never, Code: "InvalidNodeCount", Message: msgNodeConfig}, ""
	}
	if rej := e.resolveRequest(p, j); rej != nil {
		return p, rej, ""
	}
	if j.TimeLimit < 0 || math.IsNaN(j.TimeLimit) {
		return p, &AdmissionError{Verdict: Never, Code: "InvalidTimeLimit", Message: msgTimeLimit}, ""
	}
	if j.TimeLimit == 0 {
		j.TimeLimit = p.spec.DefaultTime
	}
	switch {
	case j.TimeLimit > p.spec.MaxTime:
		return p, nil, ReasonPartTimeLimit
	case p.spec.MaxNodes > 0 && j.Nodes > p.spec.MaxNodes:
		return p, nil, ReasonPartNodeLimit
	}
	return p, nil, ""
}

func (e *Engine) submit(now float64, j Job) {
	if _, dup := e.jobs[j.ID]; dup {
		e.verdict(Reject{ID: j.ID, Err: &AdmissionError{Verdict: Never, Code: "InvalidJobID",
			Message: fmt.Sprintf("Duplicate job id %d", j.ID)}})
		return
	}
	p, rej, blocked := e.resolve(&j)
	if rej != nil {
		e.verdict(Reject{ID: j.ID, Err: rej})
		return
	}
	if j.Periodic != nil {
		if blocked != "" { // it would start now: a partition limit refuses it
			e.verdict(Reject{ID: j.ID, Err: &AdmissionError{Verdict: Never, Code: "InvalidTimeLimit", Message: msgTimeLimit}})
			return
		}
		e.submitPeriodic(now, j, p)
		return
	}
	r := &jobRec{job: j, part: p, blocked: blocked}
	e.gate.init()
	if needsGate(&j) {
		// Accepted now; its policy sees it once its gates open (gate.go).
		e.jobs[j.ID] = r
		e.verdict(Admit{ID: j.ID})
		e.enterGates(now, r, false)
		return
	}
	if blocked != "" {
		e.register(r)
		// Slurm's default (EnforcePartLimits=NO): accept, never start.
		e.jobs[j.ID] = r
		e.blocked = append(e.blocked, j.ID)
		e.verdict(Admit{ID: j.ID})
		return
	}
	// The record goes in first so that a policy may Start the job from
	// inside Admit (e.g. a booking that begins now).
	e.jobs[j.ID] = r
	if err := p.policy.Admit(now, &r.job); err != nil {
		delete(e.jobs, j.ID)
		ae, ok := err.(*AdmissionError)
		if !ok {
			ae = &AdmissionError{Verdict: Never, Code: "Internal", Message: err.Error()}
		}
		e.verdict(Reject{ID: j.ID, Err: ae})
		return
	}
	// Admit precedes any Start the pass (or the policy's Admit) emits.
	e.verdict(Admit{ID: j.ID})
	e.register(r)
	// A held job cannot start, so its arrival changes no decision: no pass
	// over the queue for it (a queue filled with `sbatch --hold` would
	// otherwise cost every submission a scan of all the held jobs).
	if !j.Held {
		p.dirty = true
	}
}

// verdict puts an Admit or Reject after the verdicts of the earlier events
// of the call and before every other action.
func (e *Engine) verdict(a Action) {
	e.out = slices.Insert(e.out, e.decided, a)
	e.decided++
}

func (e *Engine) cancel(now float64, id JobID) {
	r := e.jobs[id]
	switch {
	case r == nil:
	case r.gated():
		e.dropGated(now, r, false)
	case r.blocked != "":
		e.dropBlocked(id)
		delete(e.jobs, id)
		e.left(now, r, false)
	case !r.started:
		r.part.policy.Remove(now, id)
		delete(e.jobs, id)
		r.part.dirty = true
		e.left(now, r, false)
	case !r.removed:
		r.removed = true
		if !r.done {
			r.part.policy.Remove(now, id)
		}
		if len(r.steps) == 0 {
			delete(e.jobs, id)
			e.left(now, r, false)
		}
	}
}

func (e *Engine) hold(now float64, id JobID, held bool) {
	r := e.jobs[id]
	if r == nil || r.started || r.job.Held == held {
		return
	}
	r.job.Held = held
	if r.blocked != "" || r.gated() {
		return
	}
	if held {
		r.part.policy.Hold(now, id)
	} else {
		r.part.policy.Release(now, id)
	}
	r.part.dirty = true
}

func (e *Engine) finished(now float64, ev Finished) {
	r := e.jobs[ev.ID]
	if r == nil {
		return
	}
	k := slices.IndexFunc(r.steps, func(s runStep) bool { return s.step == ev.Step })
	if k < 0 {
		// A restored running job whose nodes were unknown has no step to
		// free; its end still ends it.
		if r.started && len(r.steps) == 0 {
			r.gate.requeue = ev.Requeue
			delete(e.jobs, ev.ID)
			e.left(now, r, !ev.Failed && !r.removed)
		}
		return
	}
	if r.steps[k].periodic {
		e.releasePeriodic(r)
	}
	// A chunk lost with its node is sent again (the job may still
	// complete); any other failed step fails the job for afterok.
	r.gate.failed = r.gate.failed || (ev.Failed && !(ev.Step >= 0 && ev.NodeFail))
	r.gate.requeue = ev.Requeue
	for _, g := range r.steps[k].nodes {
		if r.steps[k].periodic {
			continue
		}
		if r.steps[k].shared {
			e.removeShare(g, ev.ID, ev.Step)
		} else {
			e.release(g)
		}
	}
	r.steps = slices.Delete(r.steps, k, k+1)
	if !r.removed && !r.done {
		if m, ok := r.part.policy.(Measurer); ok && (ev.Transfer > 0 || ev.Compute > 0) {
			m.StepMeasured(now, ev.ID, ev.Step, ev.Transfer, ev.Compute)
		}
		if nf, ok := r.part.policy.(NodeFailer); ok && ev.Failed && ev.NodeFail {
			nf.StepNodeFailed(now, ev.ID, ev.Step)
		}
		r.done = r.part.policy.StepFinished(now, ev.ID, ev.Step, ev.Failed)
	}
	if (r.removed || r.done) && len(r.steps) == 0 {
		delete(e.jobs, ev.ID)
		e.left(now, r, !r.removed)
	}
	r.part.dirty = true
}

func (e *Engine) restore(now float64, ev Restore) {
	if _, dup := e.jobs[ev.Job.ID]; dup {
		return
	}
	j := ev.Job
	p, rej, blocked := e.resolve(&j)
	if p == nil {
		// The partition left the configuration while horad was down: a
		// running job still holds its nodes, so account for it in the
		// default partition; a pending one waits for a config fix.
		p = e.def
		j.Partition = p.spec.Name
		if !ev.Running {
			blocked = ReasonPartitionConfig
		}
	} else if rej != nil && !ev.Running {
		blocked = ReasonPartitionConfig
	}
	r := &jobRec{job: j, part: p}
	e.jobs[j.ID] = r
	if j.Periodic != nil {
		// Periodic jobs pass no gates (admitted at submit, docs/mix.md).
		e.restorePeriodic(now, r, ev)
		return
	}
	e.gate.init()
	if ev.Running {
		e.register(r)
		r.gate.startAt = ev.Started
		if j.Array != 0 {
			a := e.gate.arrays[j.Array]
			if a == nil {
				a = &arrayRec{limit: j.ArrayLimit}
				e.gate.arrays[j.Array] = a
			}
			a.active++
			r.gate.inArray = true
		}
	} else if needsGate(&j) {
		r.blocked = blocked
		e.enterGates(now, r, true)
		return
	} else {
		e.register(r)
	}
	if cr, ok := p.policy.(ChunkRestorer); ok && ev.Running && j.Load > 0 {
		// Chunks are planned to end by the deadline: a sound bound for the
		// other policies sharing these nodes until the chunk reports.
		expect := max(j.Deadline, now)
		for _, c := range ev.Chunks {
			if g, ok := e.byName[c.Node]; ok && !c.Lost && !e.nodes[g].busy {
				e.allocate(g, j.ID, c.Step, expect)
				r.steps = append(r.steps, runStep{step: c.Step, nodes: []int{g}, expect: expect})
			}
		}
		// Without a running chunk the job is pending again for the Engine
		// (the policy may still end it with Partition.End).
		r.started = len(r.steps) > 0
		cr.RestoreChunks(now, &r.job, ev.Chunks, ev.Done, ev.NextStep)
		p.dirty = true
		return
	}
	if ev.Running && len(ev.Alloc) > 0 && j.Req != nil {
		r.started = true
		expect := ev.Started + j.TimeLimit
		s := runStep{step: BatchStep, expect: expect, shared: true}
		for _, a := range ev.Alloc {
			g, ok := e.byName[a.Node]
			n := &e.nodes[g]
			if !ok || n.busy && len(n.res.shares) == 0 || slices.Contains(s.nodes, g) {
				continue
			}
			sh := n.res.restoreShare(&n.spec, a, j.Req.Share > 1 && !j.Req.Exclusive)
			sh.job, sh.step, sh.expect = j.ID, BatchStep, expect
			sh.user, sh.exclUser = j.User, j.Req.ExclusiveUser
			e.addShare(g, sh)
			s.nodes = append(s.nodes, g)
		}
		if len(s.nodes) > 0 {
			r.steps = append(r.steps, s)
		}
		p.policy.Restore(now, &r.job, true)
		return
	}
	if ev.Running {
		r.started = true
		expect := ev.Started + j.TimeLimit
		s := runStep{step: BatchStep, expect: expect}
		for _, name := range ev.Nodes {
			g, ok := e.byName[name]
			if !ok || e.nodes[g].busy || slices.Contains(s.nodes, g) {
				continue
			}
			s.nodes = append(s.nodes, g)
			e.allocate(g, j.ID, BatchStep, expect)
		}
		if len(s.nodes) > 0 {
			r.steps = append(r.steps, s)
		}
		e.armSignal(r, expect)
		p.policy.Restore(now, &r.job, true)
		return
	}
	if blocked != "" {
		r.blocked = blocked
		e.blocked = append(e.blocked, j.ID)
		return
	}
	p.policy.Restore(now, &r.job, false)
	p.dirty = true
}

// expireBlocked ends blocked jobs whose deadline has come: they cannot
// start, so the last instant they could have started is already too late.
func (e *Engine) expireBlocked(now float64) {
	for k := 0; k < len(e.blocked); {
		id := e.blocked[k]
		j := &e.jobs[id].job
		if j.Deadline > 0 && now+j.MinRun() >= j.Deadline {
			e.blocked = slices.Delete(e.blocked, k, k+1)
			r := e.jobs[id]
			delete(e.jobs, id)
			e.left(now, r, false)
			e.out = append(e.out, End{ID: id, State: JobStateDeadline, Reason: ReasonDeadline})
			continue
		}
		k++
	}
}

func (e *Engine) dropBlocked(id JobID) {
	if k := slices.Index(e.blocked, id); k >= 0 {
		e.blocked = slices.Delete(e.blocked, k, k+1)
	}
}

func (e *Engine) allocate(g int, id JobID, step int, expect float64) {
	e.resTick++
	n := &e.nodes[g]
	n.busy, n.job, n.step, n.expect = true, id, step, expect
	if n.down {
		return
	}
	for _, ref := range n.parts {
		ref.p.clearFree(ref.i)
		ref.p.addBusy(ref.i, expect)
	}
}

func (e *Engine) release(g int) {
	e.resTick++
	n := &e.nodes[g]
	if !n.busy {
		return
	}
	n.busy = false
	if n.down {
		return
	}
	for _, ref := range n.parts {
		ref.p.dropBusy(ref.i, n.expect)
		ref.p.setFree(ref.i)
		ref.p.dirty = true
	}
}

func (e *Engine) nodeState(name string, down bool) {
	g, ok := e.byName[name]
	if !ok || e.nodes[g].down == down {
		return
	}
	n := &e.nodes[g]
	n.down = down
	e.resTick++
	for _, ref := range n.parts {
		switch {
		case down && n.busy:
			ref.p.dropBusy(ref.i, n.expect)
		case down:
			ref.p.clearFree(ref.i)
		case n.busy:
			ref.p.addBusy(ref.i, n.expect)
		default:
			ref.p.setFree(ref.i)
		}
		ref.p.dirty = true
	}
}

// tellNode passes a node's change to the policies that watch capacity.
func (e *Engine) tellNode(now float64, name string, down bool) {
	g, ok := e.byName[name]
	if !ok {
		return
	}
	for _, ref := range e.nodes[g].parts {
		if w, ok := ref.p.policy.(NodeWatcher); ok {
			w.NodeChanged(now, ref.i, down)
		}
	}
}

// Reason is the Slurm reason code of a job: "None" when it runs, the
// policy's code when it is pending ("Priority", "Resources", "BeginTime",
// "JobHeldUser", ...), a partition limit when the Engine keeps it, and ""
// for a job the Engine does not know.
func (e *Engine) Reason(id JobID) string {
	r := e.jobs[id]
	switch {
	case r == nil:
		return ""
	case r.started:
		if rr, ok := r.part.policy.(RunningReasoner); ok {
			if s := rr.RunningReason(id); s != "" {
				return s
			}
		}
		return ReasonNone
	case r.job.Held:
		return ReasonHeld
	case r.gated():
		return r.gateReason()
	case r.blocked != "":
		return r.blocked
	}
	return r.part.policy.Reason(id)
}

// NextWakeup is the earliest time at which a Tick could change anything
// (a begin time passes, a pending job's deadline expires); Inf if none.
// Job ends are not included: the driver reports them as Finished.
func (e *Engine) NextWakeup() float64 {
	t := min(e.nextTimer(), e.nextSignal())
	for _, p := range e.parts {
		t = min(t, p.policy.NextWakeup())
	}
	for _, id := range e.blocked {
		if j := &e.jobs[id].job; j.Deadline > 0 {
			t = min(t, max(e.now, j.Deadline-j.MinRun()))
		}
	}
	return t
}

// Test says when and on which nodes j would start if submitted now, from
// the running jobs' limits and the queue ahead of it, changing nothing
// (sbatch --test-only). A job that can never run as asked gets the same
// *AdmissionError a Submit would; one that breaks a partition limit gets
// the time-limit or node-configuration refusal, since it would never start.
func (e *Engine) Test(now float64, j Job) (start float64, nodes []string, err error) {
	p, rej, blocked := e.resolve(&j)
	switch {
	case rej != nil:
		return 0, nil, rej
	case blocked == ReasonPartTimeLimit:
		return 0, nil, &AdmissionError{Verdict: Never, Code: "InvalidTimeLimit", Message: msgTimeLimit}
	case blocked != "":
		return 0, nil, &AdmissionError{Verdict: Never, Code: "InvalidNodeCount", Message: msgNodeConfig}
	}
	if j.Periodic != nil {
		return e.testPeriodic(now, j, p)
	}
	return p.policy.Test(now, &j)
}

// Allocation is a running step and its nodes.
type Allocation struct {
	ID     JobID
	Step   int
	Nodes  []string
	Expect float64
}

// Running lists the running steps, ordered by their first node in
// configuration order.
func (e *Engine) Running() []Allocation {
	type key struct {
		id   JobID
		step int
	}
	seen := map[key]bool{}
	var out []Allocation
	add := func(id JobID, step int, expect float64) {
		if seen[key{id, step}] {
			return
		}
		seen[key{id, step}] = true
		r := e.jobs[id]
		k := slices.IndexFunc(r.steps, func(s runStep) bool { return s.step == step })
		a := Allocation{ID: id, Step: step, Expect: expect}
		if k >= 0 {
			for _, g2 := range r.steps[k].nodes {
				a.Nodes = append(a.Nodes, e.nodes[g2].spec.Name)
			}
		}
		out = append(out, a)
	}
	for g := range e.nodes {
		n := &e.nodes[g]
		switch {
		case !n.busy:
		case len(n.res.shares) == 0:
			add(n.job, n.step, n.expect)
		default:
			for _, sh := range n.res.shares {
				add(sh.job, sh.step, sh.expect)
			}
		}
	}
	// Periodic jobs hold an RT share, not the node records (periodic.go).
	var per []JobID
	for id, r := range e.jobs {
		if len(r.steps) > 0 && r.steps[0].periodic {
			per = append(per, id)
		}
	}
	slices.Sort(per)
	for _, id := range per {
		add(id, BatchStep, e.jobs[id].steps[0].expect)
	}
	return out
}

// NodeInfo is one node's state; Job and Step are set when it is allocated
// (a down node may still hold a step).
type NodeInfo struct {
	Name  string
	State NodeState
	Busy  bool
	Job   JobID
	Step  int
	// Mixed: some but not all of the node's CPUs are held (Slurm's MIXED);
	// AllocCPUs and AllocMemMB what jobs hold (everything when whole);
	// Jobs every job with a share, in start order.
	Mixed      bool
	AllocCPUs  int
	AllocMemMB int64
	AllocGres  []GresDef
	Jobs       []JobID
}

// Nodes lists every node in configuration order.
func (e *Engine) Nodes() []NodeInfo {
	out := make([]NodeInfo, len(e.nodes))
	for g := range e.nodes {
		n := &e.nodes[g]
		out[g] = NodeInfo{Name: n.spec.Name, State: n.state(), Busy: n.busy}
		if n.busy {
			out[g].Job, out[g].Step = n.job, n.step
			out[g].AllocCPUs, out[g].AllocMemMB = n.spec.CPUs, n.spec.MemMB
			out[g].AllocGres = n.spec.Gres
		}
		if len(n.res.shares) > 0 {
			out[g].AllocCPUs = n.spec.CPUs - n.res.fcpu
			out[g].AllocMemMB = n.spec.MemMB - n.res.fmem
			out[g].AllocGres = nil
			for k, d := range n.spec.Gres {
				if used := d.Count - n.res.fgres[k]; used > 0 {
					out[g].AllocGres = append(out[g].AllocGres, GresDef{Name: d.Name, Type: d.Type, Count: used})
				}
			}
			out[g].Mixed = n.res.fcpu > 0
			for _, sh := range n.res.shares {
				if !slices.Contains(out[g].Jobs, sh.job) {
					out[g].Jobs = append(out[g].Jobs, sh.job)
				}
			}
		}
	}
	return out
}

// Pending lists the pending jobs of a partition ("" = all, partitions in
// configuration order) in the order their policy would serve them, followed
// by the jobs kept back by a partition limit.
func (e *Engine) Pending(partition string) []JobID {
	var out []JobID
	for _, p := range e.parts {
		if partition != "" && p.spec.Name != partition {
			continue
		}
		out = p.policy.Pending(out)
		for _, id := range e.blocked {
			if e.jobs[id].part == p {
				out = append(out, id)
			}
		}
	}
	return out
}

// Job returns the Engine's copy of a pending or running job, with the
// partition and time limit resolved.
func (e *Engine) Job(id JobID) (Job, bool) {
	if r := e.jobs[id]; r != nil {
		return r.job, true
	}
	return Job{}, false
}

// PartitionSpec returns a partition's configuration with defaults applied.
func (e *Engine) PartitionSpec(name string) (PartitionSpec, bool) {
	if p := e.partName[name]; p != nil {
		return p.spec, true
	}
	return PartitionSpec{}, false
}

// Plans reports whether the named partition's policy books pending jobs
// ahead (Planner), or whether the name is unknown: a listing of 100,000
// jobs in partitions that never book (FCFS/EASY) then looks none of them up
// for a planned start, a random access each into a map of 100,000 jobs.
func (e *Engine) Plans(partition string) bool {
	p := e.partName[partition]
	if p == nil {
		return true
	}
	_, ok := p.policy.(Planner)
	return ok
}

// PlannedStart is when a pending job is booked to start, if its partition's
// policy books ahead (Planner); ok is false otherwise.
func (e *Engine) PlannedStart(id JobID) (float64, bool) {
	r := e.jobs[id]
	if r == nil || r.started {
		return 0, false
	}
	if pl, ok := r.part.policy.(Planner); ok {
		return pl.PlannedStart(id)
	}
	return 0, false
}

// needsGate reports whether a job goes through the gates (gate.go) rather
// than straight to its policy.
func needsGate(j *Job) bool {
	return j.Array != 0 || (j.Dep != nil && len(j.Dep.Terms) > 0)
}

// register enters a job that went straight to its policy into the index of
// (user, name) groups that singleton dependencies read.
func (e *Engine) register(r *jobRec) {
	if r.job.Name != "" {
		k := groupKey{r.job.User, r.job.Name}
		e.gate.groups[k] = append(e.gate.groups[k], r.job.ID)
	}
}
