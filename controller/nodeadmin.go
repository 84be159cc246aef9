package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"hora/api"
	"hora/config"
	"hora/nodes"
	"hora/scheduler"
	"hora/store"
)

// Node administration: drain, down and resume (`scontrol update NodeName=`),
// the health prober's verdicts, and ReturnToService.
//
// A node is in service unless it is drained or down. Both put the node out
// of the Engine's reach through its NodeDown event, which every policy
// already honours (no new work on the node; a step that runs there keeps
// its allocation until it ends). What differs is what happens to that step:
// a drained node lets it finish, a down node loses it (NODE_FAIL, or a
// requeue when the job allows it). The state is durable (store.node_admin),
// so a drained node stays drained across a restart of horad.

// nodeAdmin is one node's administrative state plus what only the live
// controller knows.
type nodeAdmin struct {
	store.NodeAdmin
	noResp bool // the health prober cannot reach the node now (Slurm's "*")
}

const (
	causeAdmin  = "admin"
	causeNoResp = "noresp"
)

// Slurm's texts (measured on 22.05.8, COMPAT.md §5).
const (
	msgInvalidUser      = "Invalid user id" // slurmctld's answer to a non-operator's node update
	msgInvalidNodeName  = "Invalid node name specified"
	msgInvalidNodeState = "Invalid node state specified"
	msgNeedReason       = "You must specify a reason when DOWNING or DRAINING a node. Request denied"
)

// adminLocked returns the node's record, creating an in-service one.
func (c *Controller) adminLocked(name string) *nodeAdmin {
	a := c.admin[name]
	if a == nil {
		a = &nodeAdmin{NodeAdmin: store.NodeAdmin{Name: name}}
		c.admin[name] = a
	}
	return a
}

// inService: no new work goes to a drained or down node.
func (a *nodeAdmin) inService() bool { return a == nil || (!a.Drain && !a.Down) }

// loadNodeAdmin restores the administrative states saved before a restart
// and tells the Engine, before any job is restored, so that the first
// scheduling pass already avoids drained and down nodes.
func (c *Controller) loadNodeAdmin(ctx context.Context) error {
	saved, err := c.st.NodeAdmins(ctx)
	if err != nil {
		return fmt.Errorf("node states: %w", err)
	}
	for _, n := range saved {
		if !c.knownNode(n.Name) {
			// The node left the configuration; its record is kept for when
			// it comes back, as slurmctld keeps state of nodes it knew.
			c.log.Warn("saved state of a node that is not configured", "node", n.Name)
			continue
		}
		c.admin[n.Name] = &nodeAdmin{NodeAdmin: n}
		c.eng.Handle(scheduler.NodeDown{Now: c.nowSec(), Node: n.Name})
		c.log.Info("node state restored", "node", n.Name, "drain", n.Drain, "down", n.Down, "reason", n.Reason)
	}
	return nil
}

func (c *Controller) knownNode(name string) bool {
	return slices.ContainsFunc(c.nodes, func(n config.Node) bool { return n.Name == name })
}

// syncNodeLocked tells the Engine whether the node may take new work; the
// Engine ignores a repeated state.
func (c *Controller) syncNodeLocked(ctx context.Context, name string) {
	if c.admin[name].inService() {
		c.applyLocked(ctx, c.eng.Handle(scheduler.NodeUp{Now: c.nowSec(), Node: name}))
	} else {
		c.applyLocked(ctx, c.eng.Handle(scheduler.NodeDown{Now: c.nowSec(), Node: name}))
	}
}

// saveNodeLocked writes the node's state, or takes back the in-memory change
// when it cannot be written, so memory never runs ahead of the store.
func (c *Controller) saveNodeLocked(ctx context.Context, a *nodeAdmin, before store.NodeAdmin) error {
	if err := c.st.PutNodeAdmin(ctx, a.NodeAdmin); err != nil {
		a.NodeAdmin = before
		return err
	}
	return nil
}

// updateNodes implements `scontrol update NodeName=... State=... Reason=...`
// for operators. Every node is checked before any is changed: bad input
// changes nothing.
func (c *Controller) updateNodes(ctx context.Context, who *Caller, req api.NodeUpdateRequest) (*api.NodeUpdateResponse, error) {
	if !c.operators[who.UID] {
		return nil, &api.Error{Message: msgInvalidUser, Code: api.CodeAccessDenied}
	}
	if len(req.Nodes) == 0 {
		return nil, &api.Error{Message: msgInvalidNodeName, Code: api.CodeInvalidNodeName}
	}
	switch req.State {
	case api.NodeDrain, api.NodeDown:
		if req.Reason == "" {
			return nil, &api.Error{Message: msgNeedReason, Code: api.CodeBadRequest}
		}
	case api.NodeResume, api.NodeUndrain:
	case "":
		if req.Reason == "" {
			return nil, &api.Error{Message: "No changes specified", Code: api.CodeBadRequest}
		}
	default:
		return nil, &api.Error{Message: msgInvalidNodeState + ": " + req.State, Code: api.CodeInvalidNodeState}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range req.Nodes {
		if !c.knownNode(name) {
			return nil, &api.Error{Message: msgInvalidNodeName, Code: api.CodeInvalidNodeName}
		}
		a := c.admin[name]
		switch req.State {
		case api.NodeResume:
			if a.inService() {
				return nil, &api.Error{Message: msgInvalidNodeState, Code: api.CodeInvalidNodeState}
			}
		case api.NodeUndrain:
			if a == nil || !a.Drain {
				return nil, &api.Error{Message: msgInvalidNodeState, Code: api.CodeInvalidNodeState}
			}
		}
	}
	now := c.now().Unix()
	for _, name := range req.Nodes {
		a := c.adminLocked(name)
		before := a.NodeAdmin
		setReason := func() { a.Reason, a.UID, a.User, a.Time = req.Reason, who.UID, who.User, now }
		failJobs := false
		switch req.State {
		case api.NodeDrain:
			a.Drain = true
			setReason()
		case api.NodeDown:
			failJobs = !a.Down
			a.Down, a.DownCause = true, causeAdmin
			setReason()
		case api.NodeResume:
			a.Drain, a.Down, a.DownCause = false, false, ""
			if a.noResp {
				// Still unreachable: it stays down for that until it answers
				// (as slurmctld would mark it again after SlurmdTimeout).
				a.Down, a.DownCause = true, causeNoResp
			}
		case api.NodeUndrain:
			a.Drain = false
		case "":
			setReason()
		}
		if a.inService() {
			a.Reason, a.UID, a.User, a.Time = "", 0, "", 0
		}
		if err := c.saveNodeLocked(ctx, a, before); err != nil {
			return nil, &api.Error{Message: "Unable to record the node state: " + err.Error(), Code: api.CodeInternal}
		}
		c.log.Info("node updated", "node", name, "state", req.State, "reason", req.Reason, "uid", who.UID)
		c.syncNodeLocked(ctx, name)
		if failJobs {
			c.failJobsOnNodeLocked(ctx, name)
		}
	}
	return &api.NodeUpdateResponse{Nodes: req.Nodes}, nil
}

// nodeHealthLocked applies a health prober event: a node that stops
// answering goes down (its steps are lost), and one that answers again
// returns to service as ReturnToService says:
//
//	0: never by itself (scontrol update State=RESUME)
//	1: only if it was down for not responding
//	2: whatever made it down
func (c *Controller) nodeHealthLocked(ctx context.Context, ev nodes.NodeEvent) {
	a := c.adminLocked(ev.Node)
	before := a.NodeAdmin
	if !ev.Up {
		if a.noResp {
			return
		}
		a.noResp = true
		if a.Down {
			return
		}
		reason := "Not responding"
		if ev.Err != nil {
			reason = ev.Err.Error()
		}
		a.Down, a.DownCause = true, causeNoResp
		if !a.Drain {
			// An operator's drain reason says more than the prober's error.
			a.Reason, a.UID, a.User, a.Time = reason, c.euid, userName(c.euid), c.now().Unix()
		}
		if err := c.saveNodeLocked(ctx, a, before); err != nil {
			// Memory stays right for this run (the node is unreachable
			// whatever the disk says); the next start re-probes anyway.
			a.Down, a.DownCause = true, causeNoResp
			c.log.Error("recording node down", "node", ev.Node, "err", err)
		}
		c.log.Warn("node down", "node", ev.Node, "reason", reason)
		c.syncNodeLocked(ctx, ev.Node)
		c.failJobsOnNodeLocked(ctx, ev.Node)
		return
	}
	if !a.noResp && !a.Down {
		return
	}
	if a.noResp {
		c.work.push(func(ctx context.Context) { c.cleanReturnedNode(ctx, ev.Node) })
	}
	a.noResp = false
	back := false
	if a.Down {
		switch *c.cfg.ReturnToService {
		case 1:
			back = a.DownCause == causeNoResp
		case 2:
			back = true
		}
	}
	if !back {
		if a.Down {
			c.log.Info("node answers again but stays down (return_to_service)", "node", ev.Node,
				"return_to_service", *c.cfg.ReturnToService, "cause", a.DownCause)
		}
		return
	}
	a.Down, a.DownCause = false, ""
	if !a.Drain {
		a.Reason, a.UID, a.User, a.Time = "", 0, "", 0
	}
	if err := c.saveNodeLocked(ctx, a, before); err != nil {
		// The prober says "up" once: a refused record (a full disk) would
		// leave the node DOWN until horad restarts. The event is taken
		// again in a second, unless the node has been reported down since.
		c.log.Error("recording node up; trying again in a second", "node", ev.Node, "err", err)
		if !errors.Is(err, store.ErrClosed) {
			c.inASecond(ctx, func() {
				if a := c.admin[ev.Node]; a != nil && !a.noResp {
					c.nodeHealthLocked(ctx, ev)
				}
			})
		}
		return
	}
	c.log.Info("node up", "node", ev.Node)
	c.syncNodeLocked(ctx, ev.Node)
}

// failJobsOnNodeLocked ends what runs on a node that went down. A step whose
// script runs on the node is reported lost by the executor itself; a job
// that merely holds the node (a multi-node job whose script runs elsewhere)
// or a node an operator set DOWN while it still answers has its step
// stopped here, and the step's end is then taken as a node failure.
func (c *Controller) failJobsOnNodeLocked(ctx context.Context, node string) {
	a := c.admin[node]
	var hit []*job
	var marks []store.Event
	for _, j := range c.order {
		if (j.State != api.StateRunning && j.State != api.StateSuspended) || !slices.Contains(j.Nodes, node) {
			continue
		}
		hit = append(hit, j)
		if !j.nodeFailed {
			marks = append(marks, store.Event{JobID: j.ID, Time: c.now().Unix(), Kind: store.KindNodeFail,
				Nodes: []string{node}})
		}
	}
	// The marks are written before the steps are stopped, so that a crash
	// after the stop still ends the runs as node failures (DESIGN §5.3).
	// Should the write fail, memory is right for this run and recovery
	// takes a job on a DOWN node as failed anyway (recoverRunMarks).
	if err := c.st.Append(ctx, marks...); err != nil {
		c.log.Error("recording node failure of jobs", "node", node, "err", err)
	}
	for _, j := range hit {
		j.nodeFailed = true
		c.log.Warn("job lost a node", "job", j.ID, "node", node)
		if j.Spec.Load > 0 {
			for step, n := range j.chunks {
				if n != node || a.noResp {
					continue
				}
				key := stepKey(j, step)
				c.work.push(func(ctx context.Context) { _ = c.exec.Terminate(ctx, n, key, 0) })
			}
			continue
		}
		head := j.Nodes[0]
		if !j.launched || (head == node && a.noResp) {
			continue // the executor reports the step lost
		}
		key := stepKey(j, scheduler.BatchStep)
		suspended := j.State == api.StateSuspended
		c.work.push(func(ctx context.Context) {
			if suspended {
				// A stopped process cannot act on TERM; let it see it.
				_ = c.exec.Signal(ctx, head, key, signum("CONT"))
			}
			if err := c.exec.Terminate(ctx, head, key, 0); err != nil {
				c.log.Warn("terminate after node loss", "job", key.Job, "node", head, "err", err)
			}
		})
	}
}

// recoverRunMarks gives a run read back from the store the marks that only
// memory kept before: a requeue asked for (scontrol requeue) and a node lost
// under it. A run on a node that is DOWN counts as having lost it even
// without its mark: horad may have died between recording the node and the
// mark.
func (c *Controller) recoverRunMarks(ctx context.Context, j *job) error {
	evs, err := c.st.Events(ctx, j.ID)
	if err != nil {
		return fmt.Errorf("job %d: events: %w", j.ID, err)
	}
	j.requeueRequested, j.nodeFailed, j.requeueHold = store.RunMarksHold(evs)
	for _, n := range j.Nodes {
		if a := c.admin[n]; a != nil && a.Down {
			j.nodeFailed = true
		}
	}
	return nil
}

// restopMarked stops again the batch step of a re-attached run that was
// marked: the Terminate sent before the crash may never have left horad,
// and a repeated one on a step that is ending does no harm.
func (c *Controller) restopMarked(j *job) {
	if !j.launched || len(j.Nodes) == 0 || (!j.requeueRequested && !j.nodeFailed) {
		return
	}
	node, key, suspended := j.Nodes[0], stepKey(j, scheduler.BatchStep), j.State == api.StateSuspended
	wait := c.killWait()
	if j.nodeFailed {
		wait = 0 // as failJobsOnNodeLocked stops it
	}
	c.log.Warn("stopping a re-attached run marked before the restart", "job", j.ID,
		"requeue", j.requeueRequested, "node_failed", j.nodeFailed)
	c.work.push(func(ctx context.Context) {
		if suspended {
			_ = c.exec.Signal(ctx, node, key, signum("CONT"))
		}
		if err := c.exec.Terminate(ctx, node, key, wait); err != nil {
			c.log.Warn("terminate after restart", "job", key.Job, "err", err)
		}
	})
}

// requeueable says whether a job that lost a node goes back to the queue:
// a rigid batch job, unless it (or, when it said nothing, the cluster's
// job_requeue) forbids it. Slurm does the same for batch jobs whose node
// fails (JobRequeue, sbatch --requeue/--no-requeue).
func (c *Controller) requeueable(j *job) bool {
	if j.Spec.Load > 0 || j.cancelRequested || j.CancelledBy >= 0 {
		return false
	}
	switch {
	case j.Spec.NoRequeue:
		return false
	case j.Spec.Requeue:
		return true
	}
	return *c.cfg.JobRequeue == 1
}

// requeueLocked puts a job whose run ended back to PENDING: the event is
// recorded first, then memory and the Engine follow (the Engine forgets the
// run with Finished and takes the job back as a pending one with Restore).
func (c *Controller) requeueLocked(ctx context.Context, j *job, why string) error {
	now := c.now().Unix()
	// A requeuehold comes back held: the requeue event carries the hold
	// reason, so the fold makes the job pending and held at once.
	hold := j.requeueHold // requeuehold, or scontrol hold while it ran
	if err := c.st.Append(ctx, store.Event{JobID: j.ID, Time: now, Kind: store.KindRequeue, Reason: hold}); err != nil {
		return err
	}
	c.log.Warn("job requeued", "job", j.ID, "why", why, "restarts", j.Restarts+1)
	c.mailLocked(j, mailRequeue)
	// The run that ended is forgotten by whoever saw its end (watchExits,
	// recovery): the next run has its own step (runOf), so that Forget may
	// come at any time, before or after the relaunch.
	// The last run's srun steps go with it (their tasks are killed).
	c.endSrunStepsLocked(j)
	// As the store's fold does: the last run's description goes, the
	// output paths stay.
	j.State, j.Reason, j.Nodes, j.Steps, j.Alloc = api.StatePending, orDefault(hold, "None"), nil, nil, nil
	j.MaxRSSKB, j.TotalCPUMs = 0, 0
	j.StartTime, j.EndTime, j.ExitCode, j.Signal, j.CancelledBy = 0, 0, 0, 0, -1
	j.Restarts++
	j.launched, j.launching, j.startRecorded, j.nodeFailed, j.requeueRequested, j.chunks, j.legacyRun, j.requeueHold = false, false, false, false, false, nil, false, ""
	j.SuspendTime, j.SuspendedSecs = 0, 0
	if c.recovering {
		// The Engine does not know the job yet; recovery's first pass
		// comes after every job is back.
		c.eng.Handle(scheduler.Restore{Now: c.nowSec(), Job: c.schedJob(j)})
		return nil
	}
	c.applyLocked(ctx, c.eng.Handle(scheduler.Finished{Now: c.nowSec(), ID: schedID(j.ID),
		Step: scheduler.BatchStep, Failed: true, Requeue: true}))
	c.eng.Handle(scheduler.Restore{Now: c.nowSec(), Job: c.schedJob(j)})
	c.applyLocked(ctx, c.eng.Handle(scheduler.Tick{Now: c.nowSec()}))
	return nil
}

// nodeView is what hNodes shows of a node's administrative state.
func (c *Controller) nodeView(n *api.Node, busy bool) {
	a := c.admin[n.Name]
	switch {
	case a != nil && a.Down:
		n.State = "down"
	case a != nil && a.Drain && busy:
		n.State = "draining"
	case a != nil && a.Drain:
		n.State = "drained"
	case busy:
		n.State = "allocated"
	default:
		n.State = "idle"
	}
	if a == nil {
		return
	}
	n.Drain, n.NotResponding = a.Drain, a.noResp
	n.Reason, n.ReasonTime = a.Reason, a.Time
	if a.Reason != "" {
		n.ReasonUser = a.User
		if n.ReasonUser == "" {
			n.ReasonUser = fmt.Sprint(a.UID)
		}
	}
}

// routeNodeOps adds the operator paths of node administration and job
// suspension to the socket server.
func (c *Controller) routeNodeOps(mux *http.ServeMux) {
	mux.HandleFunc("POST "+api.PathNodeUpdate, withBody(c, func(ctx context.Context, who *Caller, req api.NodeUpdateRequest) (any, error) {
		return c.updateNodes(ctx, who, req)
	}))
	for path, stop := range map[string]bool{api.PathSuspend: true, api.PathResume: false} {
		mux.HandleFunc("POST "+path, withBody(c, func(ctx context.Context, who *Caller, req api.ControlRequest) (any, error) {
			return c.suspend(ctx, who, c.expandIDs(req.IDs, req.Tasks), stop), nil
		}))
	}
	mux.HandleFunc("POST "+api.PathRequeue, withBody(c, func(ctx context.Context, who *Caller, req api.ControlRequest) (any, error) {
		return c.requeueJobs(ctx, who, c.expandIDs(req.IDs, req.Tasks), req.Hold), nil
	}))
}

// Slurm's texts for suspend/resume refusals (measured on 22.05.8).
const (
	msgPending      = "Job is pending execution"
	msgNotSuspended = "Job is not suspended"
	msgAlreadyDone  = "Job/step already completing or completed"
	msgDenied       = "Access/permission denied"
	msgInvalidJobID = "Invalid job id specified"
)

// suspend implements scontrol suspend (stop) and resume (!stop) for
// operators: SIGSTOP or SIGCONT to every step of the job on its nodes. A
// suspended job keeps its nodes; its suspended time does not count toward
// its time limit (see resumeLimit).
func (c *Controller) suspend(ctx context.Context, who *Caller, ids []int64, stop bool) *api.CancelResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &api.CancelResponse{}
	fail := func(id int64, msg, code string) {
		resp.Results = append(resp.Results, api.JobResult{ID: id, Error: msg, Code: code})
	}
	for _, id := range ids {
		j := c.jobs[id]
		switch {
		case j == nil:
			fail(id, msgInvalidJobID, api.CodeInvalidJobID)
			continue
		case !c.operators[who.UID]:
			// Slurm lets only operators suspend, even their own jobs.
			fail(id, msgDenied, api.CodeAccessDenied)
			continue
		case j.State.Finished():
			fail(id, msgAlreadyDone, api.CodeAlreadyDone)
			continue
		case j.State == api.StatePending:
			fail(id, msgPending, api.CodeDisabled)
			continue
		case stop && j.State == api.StateSuspended:
			resp.Results = append(resp.Results, api.JobResult{ID: id}) // as Slurm: nothing to do, no error
			continue
		case !stop && j.State != api.StateSuspended:
			fail(id, msgNotSuspended, api.CodeDisabled)
			continue
		case stop && j.Spec.Load > 0:
			// A divisible job's chunks are the dlt policy's: it would start
			// the next one (and count stopped ones as overruns) behind the
			// suspension's back. As requeue, refused.
			fail(id, "Requested operation is presently disabled", api.CodeDisabled)
			continue
		case stop && !j.startRecorded && j.Spec.Load == 0:
			// Its start is not in the store yet (the store would refuse the
			// suspension), and nothing of it runs before it is.
			fail(id, "Job is not running yet", api.CodeDisabled)
			continue
		}
		// A job whose start is recorded but whose launch is still under way
		// is RUNNING (squeue shows R, its script may already write): the
		// suspension is recorded now and launchRecorded stops the step once
		// the executor has it, as Slurm's node daemon waits for a launch in
		// progress before it suspends.
		now := c.now().Unix()
		ev := store.Event{JobID: id, Time: now, Kind: store.KindSuspend}
		if !stop {
			ev.Kind = store.KindResume
		}
		if err := c.st.Append(ctx, ev); err != nil {
			fail(id, err.Error(), api.CodeInternal)
			continue
		}
		sig := signum("STOP")
		if stop {
			j.State, j.SuspendTime = api.StateSuspended, now
		} else {
			j.SuspendedSecs += max(0, now-j.SuspendTime)
			j.State, j.SuspendTime = api.StateRunning, now
			sig = signum("CONT")
		}
		c.log.Info("job "+map[bool]string{true: "suspended", false: "resumed"}[stop], "job", id, "uid", who.UID)
		c.signalStepsLocked(j, sig, !stop)
		// The Engine moves the job's expected end while it is stopped, so
		// that backfilling and bookings see when it will really end.
		var sev scheduler.Event = scheduler.Suspend{Now: c.nowSec(), ID: scheduler.JobID(id)}
		if !stop {
			sev = scheduler.Resume{Now: c.nowSec(), ID: scheduler.JobID(id)}
		}
		c.applyLocked(ctx, c.eng.Handle(sev))
		resp.Results = append(resp.Results, api.JobResult{ID: id})
	}
	return resp
}

// signalStepsLocked sends sig to every step of a job: the batch step on the
// job's first node, or each running chunk on its node. On resume the
// step's node-side limit moves by the time spent suspended.
func (c *Controller) signalStepsLocked(j *job, sig nodes.Signum, resumed bool) {
	type target struct {
		node string
		key  nodes.StepKey
	}
	var ts []target
	if j.Spec.Load > 0 {
		for step, n := range j.chunks {
			ts = append(ts, target{n, stepKey(j, step)})
		}
	} else if len(j.Nodes) > 0 && j.launched {
		// Not launched yet: launchRecorded sends STOP if the job is
		// still suspended when its step is there.
		ts = append(ts, target{j.Nodes[0], stepKey(j, scheduler.BatchStep)})
	}
	limit := c.resumeLimit(j)
	for _, t := range ts {
		c.work.push(func(ctx context.Context) {
			if ls, ok := c.exec.(nodes.LimitSetter); ok && resumed && limit > 0 {
				// Before CONT, so the step never runs under the old limit.
				if err := ls.SetTimeLimit(ctx, t.node, t.key, limit); err != nil {
					c.log.Warn("moving the time limit after a suspension", "job", t.key.Job, "node", t.node, "err", err)
				}
			}
			if err := c.exec.Signal(ctx, t.node, t.key, sig); err != nil {
				c.log.Warn("signal", "job", t.key.Job, "step", t.key.Step, "node", t.node, "err", err)
			}
		})
	}
}

// resumeLimit is the node-side limit of a resumed job's step, counted from
// the step's start: the job's limit plus every second it spent suspended,
// so that suspended time does not count (Slurm does the same). 0 = none.
func (c *Controller) resumeLimit(j *job) time.Duration {
	spec := c.launchSpec(j, scheduler.BatchStep, "")
	if spec.TimeLimit <= 0 || j.Spec.Load > 0 {
		return 0 // chunks of divisible jobs keep the limit their plan gave them
	}
	return spec.TimeLimit + time.Duration(j.SuspendedSecs)*time.Second
}

// requeueJobs implements scontrol requeue: a running batch job is stopped
// and goes back to PENDING (Restarts+1) once its processes have ended. The
// owner or an operator may; a job submitted with --no-requeue refuses.
func (c *Controller) requeueJobs(ctx context.Context, who *Caller, ids []int64, hold bool) *api.CancelResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &api.CancelResponse{}
	fail := func(id int64, msg, code string) {
		resp.Results = append(resp.Results, api.JobResult{ID: id, Error: msg, Code: code})
	}
	for _, id := range ids {
		j := c.jobs[id]
		switch {
		case j == nil:
			fail(id, msgInvalidJobID, api.CodeInvalidJobID)
		case !c.mayTouch(who, j):
			fail(id, msgDenied, api.CodeAccessDenied)
		case j.State.Finished() || j.cancelRequested:
			fail(id, msgAlreadyDone, api.CodeAlreadyDone)
		case j.State == api.StatePending:
			fail(id, msgPending, api.CodeDisabled)
		case j.Spec.Load > 0 || j.Spec.NoRequeue:
			fail(id, "Requested operation is presently disabled", api.CodeDisabled)
		case j.requeueRequested:
			resp.Results = append(resp.Results, api.JobResult{ID: id})
		default:
			// Durable before the answer (DESIGN §5.3): after a crash the
			// run's end must still be taken as this requeue.
			holdReason := ""
			if hold {
				holdReason = store.ReasonHeldUser
				if c.operators[who.UID] {
					holdReason = store.ReasonHeldAdmin
				}
			}
			if err := c.st.Append(ctx, store.Event{JobID: id, Time: c.now().Unix(), Kind: store.KindRequeueRequest,
				By: int64(who.UID), Reason: holdReason}); err != nil {
				c.log.Error("recording requeue request", "job", id, "err", err)
				fail(id, "Unable to record the requeue request: "+err.Error(), api.CodeInternal)
				continue
			}
			j.requeueRequested, j.requeueHold = true, holdReason
			c.log.Info("requeue requested", "job", id, "uid", who.UID, "hold", hold)
			if j.launched {
				node, key, suspended := j.Nodes[0], stepKey(j, scheduler.BatchStep), j.State == api.StateSuspended
				c.work.push(func(ctx context.Context) {
					if suspended {
						_ = c.exec.Signal(ctx, node, key, signum("CONT"))
					}
					if err := c.exec.Terminate(ctx, node, key, c.killWait()); err != nil {
						c.log.Warn("terminate for requeue", "job", key.Job, "err", err)
					}
				})
			}
			resp.Results = append(resp.Results, api.JobResult{ID: id})
		}
	}
	return resp
}

// cleanReturnedNode runs on the dispatcher when a lost node answers again:
// steps of runs that were given up when it was lost (the job was requeued,
// or ended NODE_FAIL) are stopped if they still run — a partition, not a
// crash — and their node-side state is removed, as slurmd kills jobs it no
// longer owns when it registers again.
func (c *Controller) cleanReturnedNode(ctx context.Context, node string) {
	sts, err := c.exec.Reattach(ctx, []string{node})
	if err != nil {
		c.log.Warn("listing the steps of a returned node", "node", node, "err", err)
	}
	for _, s := range sts {
		if s.Key.Step >= 0 {
			continue // chunks are the dlt policy's
		}
		c.mu.Lock()
		j := c.jobs[s.Key.Job]
		current := j != nil && c.currentRunLocked(j, s) && len(j.Nodes) > 0 && j.Nodes[0] == node
		c.mu.Unlock()
		if current {
			continue
		}
		if s.State == nodes.StepRunning {
			c.log.Warn("stopping a step of a run given up while its node was lost", "job", s.Key.Job, "node", node)
			_ = c.exec.Terminate(ctx, node, s.Key, 0)
			continue // its end comes through Exits and is ignored there
		}
		c.forgetStep(node, s.Key)
	}
}
