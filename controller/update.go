package controller

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"time"

	"hora/api"
	"hora/nodes"
	"hora/sbatch"
	"hora/scheduler"
	"hora/store"
)

// Slurm's texts for scontrol update refusals (measured on 22.05.8).
const (
	msgNotPending      = "Job is no longer pending execution"
	msgFinished        = "Job has already finished"
	msgUserID          = "Invalid user id" // ESLURM_USER_ID_MISSING: a job of someone else
	msgTimeLimitBad    = "Requested time limit is invalid (missing or exceeds some limit)"
	msgPartition       = "Invalid partition name specified"
	msgCircular        = "Circular job dependency"
	msgFeature         = "Invalid feature specification"
	msgHeldPriority    = "Job is in held state, pending scheduler release"
	msgInvalidNodeCnt  = "Node count specification invalid"
	msgInvalidJobIDTxt = "Invalid job id specified"
	msgNotSupported    = "Requested operation not supported on this system"
)

func (c *Controller) hUpdate(ctx context.Context, who *Caller, r *http.Request) (any, error) {
	var req api.JobUpdateRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.Top {
		return c.topJobs(ctx, who, req.IDs), nil
	}
	return c.updateJobs(ctx, who, req), nil
}

// updateJobs implements scontrol update JobId=… with Slurm's rules: the
// owner or an operator; Priority, a negative Nice, Deadline and a longer
// limit for a running job need an operator; fields that only make sense
// before the start are refused for a running job. Every check of a job
// comes before its one durable update event, so a refused request changes
// nothing of that job.
func (c *Controller) updateJobs(ctx context.Context, who *Caller, req api.JobUpdateRequest) *api.CancelResponse {
	ids := c.expandIDs(req.IDs, req.Tasks)
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.ByName != "" {
		for _, j := range c.order {
			if j.Spec.Name == req.ByName && !j.State.Finished() && (j.UID == who.UID || c.operators[who.UID]) {
				ids = append(ids, j.ID)
			}
		}
	}
	resp := &api.CancelResponse{}
	for _, id := range ids {
		res := api.JobResult{ID: id}
		if msg := c.updateOneLocked(ctx, who, id, &req); msg != "" {
			res.Error, res.Code = msg, updateCode(msg)
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}

func (c *Controller) updateOneLocked(ctx context.Context, who *Caller, id int64, req *api.JobUpdateRequest) string {
	j := c.jobs[id]
	switch {
	case j == nil:
		return msgInvalidJobIDTxt
	case j.State.Finished():
		return msgFinished
	case !c.mayTouch(who, j):
		return msgUserID
	}
	op := c.operators[who.UID]
	running := j.State != api.StatePending
	ns, prio := j.Spec, j.Priority
	if prio == 0 {
		prio = basePriority(j.ID)
	}
	changed := func(old, new string) bool { return old != new }
	if v := req.TimeLimit; v != nil {
		longer := (*v == api.NoLimit && j.Spec.TimeLimit != api.NoLimit) || (j.Spec.TimeLimit != api.NoLimit && *v > j.Spec.TimeLimit)
		if !op && running && longer {
			return msgDenied
		}
		if max := c.partitionMaxTime(ns.Partition); !op && max > 0 && (*v == api.NoLimit || *v > max) {
			return msgTimeLimitBad
		}
		if *v == 0 || *v < api.NoLimit {
			return msgTimeLimitBad
		}
		ns.TimeLimit = *v
	}
	if v := req.Name; v != nil {
		ns.Name = *v
	}
	if v := req.Partition; v != nil && changed(ns.Partition, *v) {
		if running {
			return msgNotPending
		}
		if !c.hasPartition(*v) {
			return msgPartition
		}
		ns.Partition = *v
	}
	if v := req.Nodes; v != nil && *v != max(ns.Nodes, 1) {
		if running {
			// Slurm 22.05 may shrink a running job and answers this to
			// a growth (measured); hora resizes no running job.
			return msgNotSupported
		}
		if *v < 1 {
			return msgInvalidNodeCnt
		}
		ns.Nodes = *v
	}
	var newDep *scheduler.Dependency
	var newShown []sbatch.DepTerm
	var newSep string
	if v := req.Dependency; v != nil {
		if running {
			return msgNotPending
		}
		d, ok := sbatch.ParseDependency(*v)
		if !ok {
			return sbatch.MsgDependency
		}
		for _, t := range d.Terms {
			if t.JobID == id || (j.ArrayJobID != 0 && t.JobID == j.ArrayJobID) {
				return sbatch.MsgDependency // on itself
			}
		}
		task := int64(-1)
		if j.ArrayJobID != 0 {
			task = j.ArrayTaskID
		}
		newDep, newShown, ok = c.resolveDepLocked(d, task)
		if !ok {
			return sbatch.MsgDependency
		}
		if c.eng.DependencyCycle(schedID(id), newDep) {
			return msgCircular
		}
		newSep = d.Separator()
		ns.Dependency = *v
	}
	if v := req.Begin; v != nil {
		if running {
			return msgNotPending
		}
		ns.Begin = *v
	}
	if v := req.Deadline; v != nil {
		if !op {
			return msgDenied
		}
		ns.Deadline = *v
	}
	if v := req.Comment; v != nil {
		ns.Comment = *v
	}
	if v := req.Nice; v != nil {
		if *v < 0 && !op {
			return msgDenied
		}
		// Nice lowers the priority by its value, as with priority/basic.
		prio += int64(ns.Nice - *v)
		ns.Nice = *v
	}
	adminHold := false
	if v := req.Priority; v != nil {
		switch {
		case !op && store.Held(&j.Job):
			return msgHeldPriority
		case !op:
			return msgDenied
		}
		prio = *v
		// As Slurm 22.05 (measured): Priority=0 holds a pending job
		// (JobHeldAdmin); scontrol release gives it a priority again.
		adminHold = prio == 0 && !running
		if adminHold {
			prio = basePriority(j.ID) - int64(ns.Nice)
		}
	}
	if v := req.Exclude; v != nil && *v != ns.Exclude {
		if running {
			return msgNotPending
		}
		// Slurm stores any text and names unknown nodes nowhere; hora
		// keeps unknown names too (excluding them changes nothing) but
		// refuses a list it cannot read.
		if _, err := sbatch.ExpandHostlist(*v); err != nil && *v != "" {
			return msgInvalidNodeName
		}
		ns.Exclude = *v
	}
	if v := req.Features; v != nil && *v != "" {
		if running {
			return msgNotPending
		}
		return msgFeature // hora's nodes declare no features
	}
	if v := req.RTMisses; v != nil {
		switch {
		case ns.RTFrame <= 0:
			return msgRTMissesNotPeriodic
		case j.State != api.StateRunning && j.State != api.StateSuspended:
			return msgRTMissesNotRunning
		case *v < 0:
			return msgRTMissesBad
		}
		ns.RTMisses = *v
	}
	throttle := -1
	if v := req.ArrayThrottle; v != nil && j.ArrayJobID != 0 {
		if *v < 0 {
			return sbatch.MsgInvalidArray
		}
		throttle = *v
		ns.Array = withThrottle(ns.Array, throttle) // durable with the update
	}

	upd := j.Job
	upd.Spec, upd.Priority = ns, prio
	if err := c.st.Append(ctx, store.Event{JobID: id, Time: c.now().Unix(), Kind: store.KindUpdate, Job: &upd}); err != nil {
		return "Unable to record the update: " + err.Error()
	}
	oldLimit := j.Spec.TimeLimit
	j.Spec, j.Priority = ns, prio
	if ns.Begin > c.now().Unix() {
		j.EligibleTime = ns.Begin
	}
	now := c.nowSec()
	if req.Dependency != nil {
		j.dep, j.depShown, j.depSep = newDep, newShown, newSep
	}
	if throttle >= 0 {
		if a := c.arrays[j.ArrayJobID]; a != nil {
			a.throttle = throttle
		}
	}
	c.applyLocked(ctx, c.eng.Handle(scheduler.Update{Now: now, Job: c.schedJob(j)}))
	if req.Dependency != nil && !running {
		c.applyLocked(ctx, c.eng.Handle(scheduler.SetDependency{Now: now, ID: schedID(id), Dep: j.dep,
			Kill: c.killOnInvalidDep(&j.Spec)}))
	}
	if throttle >= 0 {
		c.applyLocked(ctx, c.eng.Handle(scheduler.SetThrottle{Now: now, Array: scheduler.JobID(j.ArrayJobID), Limit: throttle}))
	}
	if adminHold && j.Reason != "JobHeldAdmin" {
		if err := c.st.Append(ctx, store.Event{JobID: id, Time: c.now().Unix(), Kind: store.KindHold, Reason: "JobHeldAdmin"}); err != nil {
			return "Unable to record the hold: " + err.Error()
		}
		j.Reason = "JobHeldAdmin"
		c.applyLocked(ctx, c.eng.Handle(scheduler.Hold{Now: now, ID: schedID(id)}))
	}
	if running && ns.TimeLimit != oldLimit && len(j.Nodes) > 0 && j.Spec.Load == 0 {
		// The shepherd enforces the limit on the node: move it there too.
		limit := c.resumeLimit(j)
		if ns.TimeLimit == api.NoLimit {
			limit = 100 * 365 * 24 * time.Hour
		}
		node, key := j.Nodes[0], stepKey(j, scheduler.BatchStep)
		c.work.push(func(ctx context.Context) {
			if ls, ok := c.exec.(nodes.LimitSetter); ok && limit > 0 {
				if err := ls.SetTimeLimit(ctx, node, key, limit); err != nil {
					c.log.Warn("moving the time limit", "job", key.Job, "node", node, "err", err)
				}
			}
		})
	}
	return ""
}

// updateCode is the stable code beside an update refusal's text, which
// qalter turns into PBS error numbers.
func updateCode(msg string) string {
	switch msg {
	case msgInvalidJobIDTxt:
		return api.CodeInvalidJobID
	case msgFinished:
		return api.CodeAlreadyDone
	case msgUserID, msgDenied:
		return api.CodeAccessDenied
	case msgTimeLimitBad:
		return api.CodeInvalidTimeLimit
	case msgPartition:
		return api.CodeInvalidPartition
	case msgInvalidNodeCnt:
		return api.CodeInvalidNodeCount
	case msgNotPending, msgHeldPriority:
		return "" // the job's state: PBS's "Request invalid for state of job"
	}
	return api.CodeBadRequest
}

func (c *Controller) partitionMaxTime(name string) int64 {
	for _, p := range c.cfg.Partitions {
		if p.Name == name && p.MaxTime != "" {
			if v, err := sbatch.ParseSlurmDuration(p.MaxTime); err == nil && v > 0 {
				return v
			}
		}
	}
	return 0
}

// The answers to RTMisses= (a periodic job's count of missed frames, which
// the job reports itself, docs/mix.md).
const (
	msgRTMissesNotPeriodic = "RTMisses applies to periodic real-time jobs (sbatch --rt-frame) only"
	msgRTMissesNotRunning  = "RTMisses is reported by a running job"
	msgRTMissesBad         = "Invalid RTMisses value: want a whole number of frames ≥ 0"
)

// topJobs is scontrol top (Slurm 22.05's rules, measured): an operator's
// request; the jobs named (those of the first one's owner and partition),
// pending and not held, take in the order given
// the highest priorities of the pool made of them and of their owner's
// other pending jobs in their partition that rank above the lowest of
// them; those others keep their order below. Each change is a change of
// Nice (priority/basic: priority = base − nice), so the owner's total is
// unchanged, and is recorded like scontrol update Nice=.
func (c *Controller) topJobs(ctx context.Context, who *Caller, ids []int64) *api.CancelResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	fail := func(id int64, msg string) *api.CancelResponse {
		return &api.CancelResponse{Results: []api.JobResult{{ID: id, Error: msg}}}
	}
	if len(ids) == 0 {
		return fail(0, msgInvalidJobIDTxt)
	}
	prioOf := func(j *job) int64 {
		if j.Priority == 0 {
			return basePriority(j.ID) - int64(j.Spec.Nice)
		}
		return j.Priority
	}
	var tops []*job
	low := int64(-1)
	for _, id := range ids {
		j := c.jobs[id]
		switch {
		case j == nil:
			return fail(id, msgInvalidJobIDTxt)
		case !c.operators[who.UID]:
			return fail(id, msgDenied)
		case j.State.Finished():
			return fail(id, msgFinished)
		case j.State != api.StatePending:
			return fail(id, msgNotPending)
		case store.Held(&j.Job):
			return fail(id, msgHeldPriority)
		case len(tops) > 0 && (j.UID != tops[0].UID || j.Spec.Partition != tops[0].Spec.Partition):
			// As 22.05.8 (measured) and its man page: a job of another
			// user or partition than the first is left alone, silently.
			continue
		}
		if slices.Contains(tops, j) {
			continue
		}
		tops = append(tops, j)
		if p := prioOf(j); low < 0 || p < low {
			low = p
		}
	}
	var others []*job
	for _, j := range c.order {
		if j.State != api.StatePending || store.Held(&j.Job) || slices.Contains(tops, j) ||
			j.UID != tops[0].UID || j.Spec.Partition != tops[0].Spec.Partition || prioOf(j) <= low {
			continue
		}
		others = append(others, j)
	}
	slices.SortStableFunc(others, func(a, b *job) int { return cmp.Compare(prioOf(b), prioOf(a)) })
	pool := make([]int64, 0, len(tops)+len(others))
	for _, j := range append(slices.Clone(tops), others...) {
		pool = append(pool, prioOf(j))
	}
	slices.SortFunc(pool, func(a, b int64) int { return cmp.Compare(b, a) })
	now := c.nowSec()
	for k, j := range append(tops, others...) {
		old := prioOf(j)
		if pool[k] == old {
			continue
		}
		upd := j.Job
		upd.Priority = pool[k]
		upd.Spec.Nice += int(old - pool[k])
		if err := c.st.Append(ctx, store.Event{JobID: j.ID, Time: c.now().Unix(), Kind: store.KindUpdate, Job: &upd}); err != nil {
			return fail(j.ID, "Unable to record the update: "+err.Error())
		}
		j.Priority, j.Spec.Nice = upd.Priority, upd.Spec.Nice
		c.applyLocked(ctx, c.eng.Handle(scheduler.Update{Now: now, Job: c.schedJob(j)}))
	}
	return &api.CancelResponse{}
}
