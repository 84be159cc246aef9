package scheduler

import "slices"

// Update replaces what the Engine knows of a job (scontrol update): for a
// pending job everything (it leaves its policy, gate or partition-limit
// list and comes back as if submitted, keeping its place in its array and
// its dependency's progress when those did not change); for a running job
// only the time limit, which moves its steps' expected end. The driver has
// checked the request; Dep and the throttle change through SetDependency
// and SetThrottle.
type Update struct {
	Now float64
	Job Job
}

func (e Update) When() float64 { return e.Now }

func (e *Engine) update(now float64, j Job) {
	r := e.jobs[j.ID]
	if r == nil {
		return
	}
	if r.started {
		if j.TimeLimit > 0 && j.TimeLimit != r.job.TimeLimit && !r.suspended {
			r.job.TimeLimit = j.TimeLimit
			for k := range r.steps {
				if r.steps[k].step == BatchStep {
					e.setExpect(r, k, r.gate.startAt+j.TimeLimit)
					e.armSignal(r, r.gate.startAt+j.TimeLimit)
				}
			}
		}
		return
	}
	// Out of wherever it waits, without leaving the Engine: its dependents
	// and its array must not hear of an end.
	switch {
	case r.gate.arrayWait:
		if a := e.gate.arrays[r.job.Array]; a != nil {
			if k := slices.Index(a.waiting, r.job.ID); k >= 0 {
				a.waiting = slices.Delete(a.waiting, k, k+1)
			}
		}
	case r.gate.depWait:
	case r.blocked != "":
		e.dropBlocked(r.job.ID)
	default:
		r.part.policy.Remove(now, r.job.ID)
		r.part.dirty = true
	}
	if r.gate.depWait && !r.gate.depNever {
		e.unwatchSingleton(r)
	}
	e.unregister(r)
	if r.gate.inArray {
		if a := e.gate.arrays[r.job.Array]; a != nil {
			a.active--
		}
	}
	j.Held, j.Dep, j.KillOnInvalidDep = r.job.Held, r.job.Dep, r.job.KillOnInvalidDep
	j.Array, j.ArrayLimit = r.job.Array, r.job.ArrayLimit
	p, rej, blocked := e.resolve(&j)
	if rej != nil || p == nil {
		// Refused by the partition (the driver checks first): keep it back.
		if p == nil {
			p = r.part
		}
		blocked = ReasonPartitionConfig
	}
	r.job, r.part, r.blocked = j, p, blocked
	r.gate = gateRec{startAt: r.gate.startAt}
	if needsGate(&r.job) {
		e.enterGates(now, r, false)
	} else {
		e.register(r)
		e.toPolicy(now, r, false)
	}
	if a := e.gate.arrays[r.job.Array]; a != nil && r.job.Array != 0 {
		e.fillArray(now, a)
	}
}

// unregister takes a job out of its (user, name) group.
func (e *Engine) unregister(r *jobRec) {
	if r.job.Name == "" {
		return
	}
	k := groupKey{r.job.User, r.job.Name}
	g := e.gate.groups[k]
	if i := slices.Index(g, r.job.ID); i >= 0 {
		g = slices.Delete(g, i, i+1)
	}
	if len(g) == 0 {
		delete(e.gate.groups, k)
	} else {
		e.gate.groups[k] = g
	}
}
