package scheduler

import (
	"math"
	"slices"
)

// Gates keep a pending job from its partition's policy until it may be
// scheduled: its dependency holds (reason Dependency) and its array is under
// its throttle (reason JobArrayTaskLimit). Both are resolved by events — a
// job starting, a job leaving — through the index of who waits on whom, never
// by scanning the queue, so that 10,000 chains cost what their events cost
// (issue 12). The same code runs under horad and under `hora replay`.

// DepKind is a dependency type (sbatch --dependency).
type DepKind uint8

// Dependency kinds. aftercorr is resolved by the driver into afterok terms
// on the corresponding tasks; an array named whole is a term on every task.
const (
	DepAfter      DepKind = iota + 1 // the targets started (or ended without starting)
	DepAfterAny                      // the targets ended
	DepAfterOK                       // the targets completed successfully
	DepAfterNotOK                    // the targets ended in a failed state
	DepSingleton                     // no other job of the same user and name runs
)

// DepTerm is one condition of a dependency: Kind over all of Targets, Delay
// seconds after the event ("+time", for DepAfter).
type DepTerm struct {
	Kind    DepKind
	Targets []JobID
	Delay   float64
}

// Dependency is a job's condition: all Terms ("," in Slurm) or, with Any,
// one of them ("?").
type Dependency struct {
	Terms []DepTerm
	Any   bool
}

// DepState is the state of one term, or of a whole dependency.
type DepState uint8

// Term states.
const (
	DepPending   DepState = iota // not decided yet
	DepSatisfied                 // holds, for good
	DepFailed                    // can never hold
)

// Reasons of gated jobs.
const (
	ReasonDependency     = "Dependency"
	ReasonDepNever       = "DependencyNeverSatisfied"
	ReasonArrayTaskLimit = "JobArrayTaskLimit"
	JobStateCancelled    = "CANCELLED"
)

// Ended tells the Engine how a job it does not hold ended (horad after a
// restart: the finished jobs still in memory), so that dependencies on it
// resolve as they would have.
type Ended struct {
	Now            float64
	ID             JobID
	OK             bool    // completed successfully
	StartAt, EndAt float64 // StartAt 0 = never started
}

// Purge forgets the outcome of an ended job (horad, past MinJobAge). A later
// dependency on it is satisfied, as Slurm lifts one on a purged job.
type Purge struct {
	Now float64
	ID  JobID
}

// SetDependency replaces a pending job's dependency (scontrol update
// Dependency=; nil clears it). The driver checks for cycles first
// (DependencyCycle).
type SetDependency struct {
	Now  float64
	ID   JobID
	Dep  *Dependency
	Kill bool
}

// SetThrottle changes an array's throttle (scontrol update
// ArrayTaskThrottle=; 0 = none).
type SetThrottle struct {
	Now   float64
	Array JobID
	Limit int
}

func (e Ended) When() float64         { return e.Now }
func (e Purge) When() float64         { return e.Now }
func (e SetDependency) When() float64 { return e.Now }
func (e SetThrottle) When() float64   { return e.Now }

// outcome is what dependencies need of an ended job.
type outcome struct {
	ok             bool
	startAt, endAt float64
}

// arrayRec counts an array's tasks inside the policy (pending there or
// running) and queues the ones its throttle keeps back, in task order.
type arrayRec struct {
	limit   int
	active  int
	waiting []JobID
}

type groupKey struct {
	user uint32
	name string
}

// depTimer wakes a job whose term becomes true at a known time ("+time").
type depTimer struct {
	at float64
	id JobID
}

// gateState lives in the Engine beside its job table.
type gateState struct {
	ended   map[JobID]outcome
	arrays  map[JobID]*arrayRec
	waiters map[JobID][]JobID    // target → jobs with a pending term on it
	groups  map[groupKey][]JobID // live jobs by (user, name), submit order
	singles map[groupKey]int     // how many of a group wait on a singleton term
	timers  []depTimer
	// keep records every ended job's outcome (KeepOutcomes), not only those
	// of jobs something waited on when they ended.
	keep bool
}

func (g *gateState) init() {
	if g.ended == nil {
		g.ended = map[JobID]outcome{}
		g.arrays = map[JobID]*arrayRec{}
		g.waiters = map[JobID][]JobID{}
		g.groups = map[groupKey][]JobID{}
		g.singles = map[groupKey]int{}
	}
}

// gateRec is a job's part of the gates.
type gateRec struct {
	depWait   bool       // kept back by its dependency
	depNever  bool       // its dependency can never hold (kept, not killed)
	arrayWait bool       // kept back by its array's throttle
	inArray   bool       // counted in its array's active tasks
	terms     []DepState // per term of job.Dep
	startAt   float64    // when it started (for "after" terms of others)
	failed    bool       // a step failed (for afterok/afternotok of others)
	restoring bool       // being restored: its policy takes it without admission
	requeue   bool       // leaving to come back pending (Finished.Requeue)
	signalled bool       // its --signal has been sent (signal.go)
}

// enterGates enters a new or restored pending job that has a dependency or
// is an array task: it waits at its gates or goes on to its policy.
func (e *Engine) enterGates(now float64, r *jobRec, restoring bool) {
	e.gate.init()
	j := &r.job
	if j.Name != "" {
		k := groupKey{j.User, j.Name}
		e.gate.groups[k] = append(e.gate.groups[k], j.ID)
	}
	if j.Dep != nil && len(j.Dep.Terms) > 0 {
		r.gate.terms = make([]DepState, len(j.Dep.Terms))
		r.gate.depWait = true
		e.watchDeps(r)
		r.gate.restoring = restoring
		// checkDeps lets it through the array gate once the dependency holds.
		e.checkDeps(now, r)
		r.gate.restoring = false
		return
	}
	e.passArrayGate(now, r, restoring)
}

// watchDeps indexes r under every target of its pending terms.
func (e *Engine) watchDeps(r *jobRec) {
	for k, t := range r.job.Dep.Terms {
		if r.gate.terms[k] != DepPending {
			continue
		}
		if t.Kind == DepSingleton {
			e.gate.singles[groupKey{r.job.User, r.job.Name}]++
			continue
		}
		for _, id := range t.Targets {
			if _, live := e.jobs[id]; live && !slices.Contains(e.gate.waiters[id], r.job.ID) {
				e.gate.waiters[id] = append(e.gate.waiters[id], r.job.ID)
			}
		}
	}
}

func (e *Engine) unwatchSingleton(r *jobRec) {
	for k, t := range r.job.Dep.Terms {
		if t.Kind == DepSingleton && r.gate.terms[k] == DepPending {
			g := groupKey{r.job.User, r.job.Name}
			if e.gate.singles[g]--; e.gate.singles[g] <= 0 {
				delete(e.gate.singles, g)
			}
		}
	}
}

// checkDeps re-evaluates r's pending terms; when the whole dependency is
// decided it releases r (satisfied) or marks or ends it (failed). It
// reports whether r left the Engine.
func (e *Engine) checkDeps(now float64, r *jobRec) bool {
	if !r.gate.depWait || r.gate.depNever {
		return false
	}
	d := r.job.Dep
	for k := range d.Terms {
		if r.gate.terms[k] == DepPending {
			st := e.termState(now, r, &d.Terms[k])
			if st != DepPending && d.Terms[k].Kind == DepSingleton {
				g := groupKey{r.job.User, r.job.Name}
				if e.gate.singles[g]--; e.gate.singles[g] <= 0 {
					delete(e.gate.singles, g)
				}
			}
			r.gate.terms[k] = st
		}
	}
	switch depState(d, r.gate.terms) {
	case DepSatisfied:
		r.gate.depWait = false
		e.unwatchSingleton(r)
		e.passArrayGate(now, r, r.gate.restoring)
	case DepFailed:
		e.unwatchSingleton(r)
		if r.job.KillOnInvalidDep {
			e.dropGated(now, r, false)
			e.out = append(e.out, End{ID: r.job.ID, State: JobStateCancelled, Reason: ReasonDepNever})
			return true
		}
		r.gate.depNever = true
	}
	return false
}

func depState(d *Dependency, terms []DepState) DepState {
	sat, failed := 0, 0
	for _, s := range terms {
		switch s {
		case DepSatisfied:
			sat++
		case DepFailed:
			failed++
		}
	}
	switch {
	case d.Any && sat > 0, !d.Any && sat == len(terms):
		return DepSatisfied
	case d.Any && failed == len(terms), !d.Any && failed > 0:
		return DepFailed
	}
	return DepPending
}

// termState decides one term now. A target the Engine no longer knows at
// all (purged, or never told) satisfies it: Slurm lifts such a dependency.
func (e *Engine) termState(now float64, self *jobRec, t *DepTerm) DepState {
	if t.Kind == DepSingleton {
		return e.singletonState(self)
	}
	state := DepSatisfied
	for _, id := range t.Targets {
		var started, ended, ok bool
		var at float64
		if r := e.jobs[id]; r != nil {
			started, at = r.started, r.gate.startAt
		} else if o, known := e.gate.ended[id]; known {
			ended, ok, started = true, o.ok, o.startAt > 0
			at = o.startAt
			if !started {
				at = o.endAt
			}
		} else {
			continue
		}
		var s DepState
		switch t.Kind {
		case DepAfter:
			s = DepPending
			if started || ended {
				s = DepSatisfied
				if due := at + t.Delay; t.Delay > 0 && due > now {
					s = DepPending
					if tm := (depTimer{at: due, id: self.job.ID}); !slices.Contains(e.gate.timers, tm) {
						e.gate.timers = append(e.gate.timers, tm)
					}
				}
			}
		case DepAfterAny:
			s = DepPending
			if ended {
				s = DepSatisfied
			}
		case DepAfterOK, DepAfterNotOK:
			s = DepPending
			if ended {
				s = DepFailed
				if ok == (t.Kind == DepAfterOK) {
					s = DepSatisfied
				}
			}
		}
		if s == DepSatisfied && t.Kind != DepAfter && t.Delay > 0 {
			// "+time" after an end (hora applies Slurm's after+time to every
			// kind; replay's SWF think time is afterany+think).
			o := e.gate.ended[id]
			if due := o.endAt + t.Delay; due > now {
				s = DepPending
				if tm := (depTimer{at: due, id: self.job.ID}); !slices.Contains(e.gate.timers, tm) {
					e.gate.timers = append(e.gate.timers, tm)
				}
			}
		}
		switch {
		case s == DepFailed:
			return DepFailed
		case s == DepPending:
			state = DepPending
		}
	}
	return state
}

// singletonState: another job of the same user and name that runs, or that
// waits on its own singleton term and came first, keeps self waiting, so
// that only one of them runs at a time and they run in submit order.
func (e *Engine) singletonState(self *jobRec) DepState {
	for _, id := range e.gate.groups[groupKey{self.job.User, self.job.Name}] {
		if id == self.job.ID {
			continue
		}
		o := e.jobs[id]
		if o == nil {
			continue
		}
		if o.started {
			return DepPending
		}
		if o.job.Submit < self.job.Submit || (o.job.Submit == self.job.Submit && id < self.job.ID) {
			if o.gate.depWait && !o.gate.depNever && hasPendingSingleton(o) {
				return DepPending
			}
			if !o.gate.depWait && o.job.Dep != nil && hasSingleton(o.job.Dep) {
				// released but not started yet: it goes first
				return DepPending
			}
		}
	}
	return DepSatisfied
}

func hasSingleton(d *Dependency) bool {
	return slices.ContainsFunc(d.Terms, func(t DepTerm) bool { return t.Kind == DepSingleton })
}

func hasPendingSingleton(r *jobRec) bool {
	for k, t := range r.job.Dep.Terms {
		if t.Kind == DepSingleton && r.gate.terms[k] == DepPending {
			return true
		}
	}
	return false
}

// passArrayGate lets r into its policy unless its array's throttle is full.
func (e *Engine) passArrayGate(now float64, r *jobRec, restoring bool) {
	if r.job.Array != 0 {
		a := e.gate.arrays[r.job.Array]
		if a == nil {
			a = &arrayRec{limit: r.job.ArrayLimit}
			e.gate.arrays[r.job.Array] = a
		}
		if a.limit > 0 && a.active >= a.limit {
			r.gate.arrayWait = true
			a.waiting = append(a.waiting, r.job.ID)
			return
		}
		a.active++
		r.gate.inArray = true
	}
	e.toPolicy(now, r, restoring)
}

// toPolicy hands a job that passed its gates to its partition: kept back by
// a partition limit, restored without admission, or admitted. A refusal
// then (a deadline that can no longer be guaranteed after the wait) ends it.
func (e *Engine) toPolicy(now float64, r *jobRec, restoring bool) {
	p := r.part
	switch {
	case r.blocked != "":
		e.blocked = append(e.blocked, r.job.ID)
	case restoring:
		p.policy.Restore(now, &r.job, false)
		p.dirty = true
	default:
		if err := p.policy.Admit(now, &r.job); err != nil {
			e.dropGated(now, r, false)
			e.out = append(e.out, End{ID: r.job.ID, State: JobStateDeadline, Reason: ReasonDeadline})
			return
		}
		p.dirty = true
	}
}

// gated reports whether r waits at a gate (not in its policy).
func (r *jobRec) gated() bool { return r.gate.depWait || r.gate.arrayWait }

// gateReason is the reason of a gated job.
func (r *jobRec) gateReason() string {
	switch {
	case r.gate.depNever:
		return ReasonDepNever
	case r.gate.depWait:
		return ReasonDependency
	case r.gate.arrayWait:
		return ReasonArrayTaskLimit
	}
	return ""
}

// dropGated removes a job that never reached its policy (or was refused by
// it) from the Engine.
func (e *Engine) dropGated(now float64, r *jobRec, ok bool) {
	if r.gate.arrayWait {
		if a := e.gate.arrays[r.job.Array]; a != nil {
			if k := slices.Index(a.waiting, r.job.ID); k >= 0 {
				a.waiting = slices.Delete(a.waiting, k, k+1)
			}
		}
	}
	if r.gate.depWait && !r.gate.depNever {
		e.unwatchSingleton(r)
	}
	delete(e.jobs, r.job.ID)
	e.left(now, r, ok)
}

// started is called when a job's first step starts.
func (e *Engine) jobStarted(now float64, r *jobRec) {
	r.gate.startAt = now
	if e.gate.waiters == nil {
		return
	}
	for _, w := range e.gate.waiters[r.job.ID] {
		if wr := e.jobs[w]; wr != nil {
			e.checkDeps(now, wr)
		}
	}
	e.checkGroup(now, r)
}

// left is called once a job has left the Engine's table for good: it records
// the outcome, frees its array slot and wakes whoever waited on it.
func (e *Engine) left(now float64, r *jobRec, ok bool) {
	if e.gate.ended == nil {
		return
	}
	id := r.job.ID
	if !r.gate.requeue && (e.gate.keep || len(e.gate.waiters[id]) > 0) {
		e.gate.ended[id] = outcome{ok: ok && !r.gate.failed, startAt: r.gate.startAt, endAt: now}
	}
	if r.gate.inArray {
		r.gate.inArray = false
		if a := e.gate.arrays[r.job.Array]; a != nil {
			a.active--
			e.fillArray(now, a)
			if a.active == 0 && len(a.waiting) == 0 {
				delete(e.gate.arrays, r.job.Array)
			}
		}
	}
	if r.job.Name != "" {
		k := groupKey{r.job.User, r.job.Name}
		if g := e.gate.groups[k]; g != nil {
			if i := slices.Index(g, id); i >= 0 {
				g = slices.Delete(g, i, i+1)
			}
			if len(g) == 0 {
				delete(e.gate.groups, k)
			} else {
				e.gate.groups[k] = g
			}
		}
	}
	if r.gate.requeue {
		// Its dependents wait for the next run, which Restore brings.
		e.checkGroup(now, r)
		return
	}
	ws := e.gate.waiters[id]
	delete(e.gate.waiters, id)
	for _, w := range ws {
		if wr := e.jobs[w]; wr != nil {
			e.checkDeps(now, wr)
		}
	}
	e.checkGroup(now, r)
}

// checkGroup re-checks the singleton waiters of r's (user, name) group.
func (e *Engine) checkGroup(now float64, r *jobRec) {
	k := groupKey{r.job.User, r.job.Name}
	if r.job.Name == "" || e.gate.singles[k] == 0 {
		return
	}
	for _, id := range slices.Clone(e.gate.groups[k]) {
		if o := e.jobs[id]; o != nil && o.gate.depWait && !o.gate.depNever && o.job.Dep != nil && hasPendingSingleton(o) {
			e.checkDeps(now, o)
		}
	}
}

func (e *Engine) fillArray(now float64, a *arrayRec) {
	for len(a.waiting) > 0 && (a.limit == 0 || a.active < a.limit) {
		id := a.waiting[0]
		a.waiting = a.waiting[1:]
		r := e.jobs[id]
		if r == nil {
			continue
		}
		r.gate.arrayWait = false
		r.gate.inArray = true
		a.active++
		e.toPolicy(now, r, false)
	}
}

// runTimers re-checks the jobs whose "+time" term has come due.
func (e *Engine) runTimers(now float64) {
	if len(e.gate.timers) == 0 {
		return
	}
	var due []JobID
	keep := e.gate.timers[:0]
	for _, t := range e.gate.timers {
		if t.at <= now {
			due = append(due, t.id)
		} else {
			keep = append(keep, t)
		}
	}
	e.gate.timers = keep
	for _, id := range due {
		if r := e.jobs[id]; r != nil {
			e.checkDeps(now, r)
		}
	}
}

func (e *Engine) nextTimer() float64 {
	t := math.Inf(1)
	for _, d := range e.gate.timers {
		t = min(t, d.at)
	}
	return t
}

// setDependency replaces the dependency of a pending job.
func (e *Engine) setDependency(now float64, ev SetDependency) {
	e.gate.init()
	r := e.jobs[ev.ID]
	if r == nil || r.started {
		return
	}
	if r.gate.depWait && !r.gate.depNever {
		e.unwatchSingleton(r)
	}
	wasWaiting := r.gated()
	r.job.Dep, r.job.KillOnInvalidDep = ev.Dep, ev.Kill
	r.gate.depWait, r.gate.depNever, r.gate.terms = false, false, nil
	if ev.Dep == nil || len(ev.Dep.Terms) == 0 {
		if wasWaiting && !r.gate.arrayWait {
			e.passArrayGate(now, r, false)
		}
		return
	}
	if !wasWaiting {
		// Back from the policy (or the partition limit list) to the gate.
		if r.blocked != "" {
			e.dropBlocked(r.job.ID)
		} else {
			r.part.policy.Remove(now, r.job.ID)
			r.part.dirty = true
		}
		if r.gate.inArray {
			r.gate.inArray = false
			if a := e.gate.arrays[r.job.Array]; a != nil {
				a.active--
				e.fillArray(now, a)
			}
		}
	} else if r.gate.arrayWait {
		// It waits for its dependency first; the throttle comes after.
		if a := e.gate.arrays[r.job.Array]; a != nil {
			if k := slices.Index(a.waiting, r.job.ID); k >= 0 {
				a.waiting = slices.Delete(a.waiting, k, k+1)
			}
		}
		r.gate.arrayWait = false
	}
	r.gate.terms = make([]DepState, len(ev.Dep.Terms))
	r.gate.depWait = true
	e.watchDeps(r)
	e.checkDeps(now, r)
}

func (e *Engine) setThrottle(now float64, ev SetThrottle) {
	e.gate.init()
	a := e.gate.arrays[ev.Array]
	if a == nil {
		return
	}
	a.limit = max(ev.Limit, 0)
	e.fillArray(now, a)
}

// DependencyCycle reports whether giving job id the dependency d would make
// it wait, directly or through other pending jobs, on itself.
func (e *Engine) DependencyCycle(id JobID, d *Dependency) bool {
	if d == nil {
		return false
	}
	seen := map[JobID]bool{}
	var stack []JobID
	for _, t := range d.Terms {
		stack = append(stack, t.Targets...)
	}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if x == id {
			return true
		}
		if seen[x] {
			continue
		}
		seen[x] = true
		r := e.jobs[x]
		if r == nil || r.job.Dep == nil || !r.gate.depWait {
			continue
		}
		for k, t := range r.job.Dep.Terms {
			if r.gate.terms[k] == DepPending {
				stack = append(stack, t.Targets...)
			}
		}
	}
	return false
}

// DependencyStates returns the state of each term of a job's dependency
// (aligned with Job.Dep.Terms), or nil when it has none or is unknown.
func (e *Engine) DependencyStates(id JobID) []DepState {
	r := e.jobs[id]
	if r == nil || r.job.Dep == nil {
		return nil
	}
	if r.gate.terms == nil {
		out := make([]DepState, len(r.job.Dep.Terms))
		for k := range out {
			out[k] = DepSatisfied
		}
		return out
	}
	return slices.Clone(r.gate.terms)
}

// KeepOutcomes makes the Engine remember how every job ended, until Purge,
// so that a dependency submitted after its target ended resolves as the
// target ended (horad; replay with SWF dependencies). Without it only the
// jobs something waited on are remembered, which keeps a long replay small.
func (e *Engine) KeepOutcomes() {
	e.gate.init()
	e.gate.keep = true
}
