package controller

import (
	"context"
	"net/http"

	"hora/api"
	"hora/scheduler"
	"hora/store"
)

// hAlter is qalter: a pending job's name, time limit or begin time change.
// The change is recorded (store event alter) before the answer; a new limit
// or begin time reaches the Engine as the job taken out and put back
// without admission, keeping its submit time and so its place. On dlt and
// reserve partitions a limit or begin change is refused: the job was
// admitted for its old values and would keep no guarantee.
func (c *Controller) hAlter(ctx context.Context, who *Caller, r *http.Request) (any, error) {
	var req api.AlterRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	return c.alter(ctx, who, req), nil
}

func (c *Controller) alter(ctx context.Context, who *Caller, req api.AlterRequest) *api.CancelResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := req.ID
	fail := func(msg, code string) *api.CancelResponse {
		return &api.CancelResponse{Results: []api.JobResult{{ID: id, Error: msg, Code: code}}}
	}
	j := c.jobs[id]
	switch {
	case j == nil || j.State.Finished():
		return fail("Invalid job id specified", api.CodeInvalidJobID)
	case !c.mayTouch(who, j):
		return fail("Access/permission denied", api.CodeAccessDenied)
	case j.State != api.StatePending:
		return fail("Job is no longer pending execution", api.CodeAlreadyDone)
	}
	spec := j.Spec
	schedule := false
	if req.Name != nil {
		spec.Name = *req.Name
	}
	if req.TimeLimit != nil {
		if *req.TimeLimit <= 0 && *req.TimeLimit != api.NoLimit {
			return fail("Requested time limit is invalid (missing or exceeds some limit)", api.CodeInvalidTimeLimit)
		}
		spec.TimeLimit, schedule = *req.TimeLimit, true
	}
	if req.Begin != nil {
		spec.Begin, schedule = *req.Begin, true
	}
	if schedule {
		for _, p := range c.cfg.Scheduler().Partitions {
			if p.Name != spec.Partition {
				continue
			}
			if p.Policy != "" && p.Policy != "batch" {
				return fail("Requested operation is presently disabled", api.CodeDisabled)
			}
			if max := limitSeconds(p.MaxTime); max != api.NoLimit && (spec.TimeLimit == api.NoLimit || spec.TimeLimit > max) {
				return fail("Requested time limit is invalid (missing or exceeds some limit)", api.CodeInvalidTimeLimit)
			}
		}
	}
	eligible := j.EligibleTime
	if req.Begin != nil {
		eligible = max(j.SubmitTime, spec.Begin)
	}
	ev := store.Event{JobID: id, Time: c.now().Unix(), Kind: store.KindAlter, Job: &api.Job{Spec: spec, EligibleTime: eligible}}
	if err := c.st.Append(ctx, ev); err != nil {
		return fail(err.Error(), api.CodeInternal)
	}
	j.Spec, j.EligibleTime = spec, eligible
	if schedule {
		now := c.nowSec()
		c.applyLocked(ctx, c.eng.Handle(scheduler.Cancel{Now: now, ID: scheduler.JobID(id)}))
		c.applyLocked(ctx, c.eng.Handle(scheduler.Restore{Now: now, Job: c.schedJob(j)}))
	}
	return &api.CancelResponse{Results: []api.JobResult{{ID: id}}}
}
