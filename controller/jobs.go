package controller

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"hora/api"
	"hora/nodes"
	"hora/sbatch"
	"hora/scheduler"
	"hora/store"
)

// submit validates a spec, asks the Engine, records the job durably and only
// then answers. A refused job leaves no trace (the Engine keeps nothing of it
// and nothing is written).
func (c *Controller) submit(ctx context.Context, who *Caller, req api.SubmitRequest) (*api.SubmitResponse, error) {
	spec := req.Spec
	if err := c.checkSpec(who, &spec); err != nil {
		return nil, err
	}
	if spec.RTMisses != 0 {
		// what the running job reports (scontrol update RTMisses=), not a request
		return nil, &api.Error{Message: "rt_misses: a job reports its missed frames while it runs; it cannot be submitted with any", Code: api.CodeBadRequest}
	}
	// The defaults of a Slurm site with slurmdbd whose associations were
	// never changed: root's jobs go to account root (created with the
	// cluster), every job to QOS normal (SLURM_JOB_QOS says so too).
	// Other users have no default account (AccountingStorageEnforce=none).
	if spec.Account == "" && who.UID == 0 {
		spec.Account = "root"
	}
	if spec.QOS == "" {
		spec.QOS = "normal"
	}
	now := c.now()
	j := &job{Job: api.Job{
		Spec: spec, UID: who.UID, GID: who.GID, User: who.User, Group: groupName(who.GID),
		State: api.StatePending, Reason: "None", SubmitTime: now.Unix(), EligibleTime: now.Unix(),
		CancelledBy: -1,
	}}
	if spec.Begin > now.Unix() {
		j.EligibleTime = spec.Begin
	}
	if spec.Hold {
		j.Reason = "JobHeldUser"
	}
	var arr sbatch.Array
	if spec.Array != "" && !req.TestOnly {
		a, ok := sbatch.ParseArray(spec.Array, c.cfg.MaxArraySize)
		if !ok {
			return nil, &api.Error{Message: sbatch.MsgInvalidArray, Code: api.CodeBadRequest}
		}
		arr = a
	}
	if spec.Dependency != "" {
		if _, ok := sbatch.ParseDependency(spec.Dependency); !ok {
			return nil, &api.Error{Message: sbatch.MsgDependency, Code: api.CodeBadRequest}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	j.Priority = basePriority(c.nextID)
	if req.TestOnly {
		sj := c.schedJob(j)
		start, nodeList, err := c.eng.Test(c.nowSec(), sj)
		if err != nil {
			return nil, admissionError(err)
		}
		cpus := 0
		for _, n := range nodeList {
			cpus += c.nodeCPUs(n)
		}
		return &api.SubmitResponse{JobID: c.nextID, StartTime: int64(math.Ceil(start)), Nodes: nodeList,
			Partition: c.partitionOf(spec.Partition), CPUs: cpus}, nil
	}
	// An array counts as its tasks, as in Slurm (each task is a job).
	n := max(len(arr.Tasks), 1)
	if err := c.checkLimitsLocked(who, n); err != nil {
		return nil, err
	}
	if len(arr.Tasks) > 0 {
		return c.submitArrayLocked(ctx, j, arr)
	}
	j.ID = c.nextID
	if err := c.prepareDepLocked(j); err != nil {
		return nil, err
	}
	acts := c.eng.Handle(scheduler.Submit{Now: c.nowSec(), Job: c.schedJob(j)})
	for _, a := range acts {
		if r, ok := a.(scheduler.Reject); ok {
			return nil, admissionError(r.Err)
		}
	}
	if spec.Hold && spec.Deadline == 0 {
		return c.submitHeldLocked(ctx, j, acts)
	}
	if err := c.st.Submit(ctx, &j.Job); err != nil {
		// The Engine accepted a job we could not record: take it back so
		// that memory and the durable record agree.
		c.takeBackLocked(ctx, map[scheduler.JobID]bool{scheduler.JobID(j.ID): true}, acts)
		return nil, recordError(err)
	}
	c.nextID = j.ID + 1
	c.addJob(j)
	c.applyLocked(ctx, acts)
	return &api.SubmitResponse{JobID: j.ID, Partition: c.partitionOf(spec.Partition)}, nil
}

// Slurm's texts for a submission over a limit: sbatch prints the first
// when it sleeps and retries (MaxJobCount, errno EAGAIN), and the second
// after "Batch job submission failed: " (ESLURM_ACCOUNTING_POLICY).
const (
	msgTryAgain    = "Resource temporarily unavailable"
	msgSubmitLimit = "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
)

// checkLimitsLocked refuses a submission of adding jobs (an array's tasks)
// over [limits] (docs/limits.md):
// max_job_count counts every job in memory, as Slurm's MaxJobCount does
// (finished ones until min_job_age_s prunes them), and binds everyone,
// operators included, since it bounds horad's memory; the per-user limit
// counts the user's pending and running jobs, and operators are exempt.
func (c *Controller) checkLimitsLocked(who *Caller, adding int) error {
	lim := c.cfg.Limits
	if lim.MaxJobCount > 0 && len(c.jobs)+c.recording+adding > lim.MaxJobCount {
		return &api.Error{Message: msgTryAgain, Code: api.CodeTryAgain}
	}
	if lim.MaxSubmitJobsPerUser > 0 && !c.operators[who.UID] {
		// A scan, only when the limit is set: O(jobs in memory) under mu,
		// about 0.1 ms for 100,000 jobs, against one fsync per submission.
		n := c.recordingOf[who.UID]
		for _, j := range c.jobs {
			if j.UID == who.UID && !j.State.Finished() {
				n++
			}
		}
		if n+adding > lim.MaxSubmitJobsPerUser {
			return &api.Error{Message: msgSubmitLimit, Code: api.CodeSubmitLimit}
		}
	}
	return nil
}

// takeBackLocked undoes the Engine's admission of jobs that could not be
// recorded (a full disk): each is cancelled, and a start the Engine decided
// for it is finished at once, which frees its nodes and forgets it (a
// cancelled started job otherwise waits for an end that never comes,
// holding its nodes and its id: every later submission was refused
// "Duplicate job id N" until a restart — found by the fault harness). The
// other jobs' actions of the same pass are carried out.
func (c *Controller) takeBackLocked(ctx context.Context, ids map[scheduler.JobID]bool, acts []scheduler.Action) {
	now := c.nowSec()
	var rest []scheduler.Action
	for id := range ids {
		c.eng.Handle(scheduler.Cancel{Now: now, ID: id})
	}
	for _, a := range acts {
		switch a := a.(type) {
		case scheduler.Start:
			if ids[a.ID] {
				rest = append(rest, c.eng.Handle(scheduler.Finished{Now: now, ID: a.ID, Step: a.Step, Failed: true})...)
				continue
			}
		case scheduler.Admit:
			if ids[a.ID] {
				continue
			}
		case scheduler.Reject:
			if ids[a.ID] {
				continue
			}
		case scheduler.Signal:
			if ids[a.ID] {
				continue
			}
		case scheduler.End:
			if ids[a.ID] {
				continue
			}
		case scheduler.Requeue:
			if ids[a.ID] {
				continue
			}
		}
		rest = append(rest, a)
	}
	c.applyLocked(ctx, rest)
}

func recordError(err error) error {
	return &api.Error{Message: "Unable to record the job: " + err.Error(), Code: api.CodeInternal}
}

// submitHeldLocked records a held job the Engine has admitted, waiting for
// the commit without c.mu so that concurrent submissions share one commit
// (store group commit) instead of queueing on the lock, one fsync each.
// The write is queued under c.mu, so ids commit in the order handed out.
// A held job without a deadline draws no action of its own from the Engine
// until it is released, which needs it in c.jobs: until it is durable it is
// neither listed nor touched, and it enters c.jobs only once acknowledged.
// c.mu is held on entry and on return.
func (c *Controller) submitHeldLocked(ctx context.Context, j *job, acts []scheduler.Action) (*api.SubmitResponse, error) {
	wait, err := c.st.SubmitQueued(ctx, &j.Job)
	if err != nil {
		c.eng.Handle(scheduler.Cancel{Now: c.nowSec(), ID: scheduler.JobID(j.ID)})
		return nil, recordError(err)
	}
	c.nextID = j.ID + 1
	// The Engine's Admit alone needs nothing done, and a held job starts
	// nothing: no pass of the tick loop for it. That pass walked the
	// whole queue after every held submission, on the core the next
	// client process needed (10,000 held jobs: about 150 µs of horad's
	// CPU a submission; docs/benchmarks.md).
	if !onlyAdmit(acts) {
		c.applyLocked(ctx, acts) // whatever else the Engine decided
	}
	c.recording++ // counted by the limits while not yet in c.jobs
	c.recordingOf[j.UID]++
	eng := c.eng
	c.mu.Unlock()
	err = wait()
	c.mu.Lock()
	if c.eng != eng && err == nil {
		// A reload built a new Engine from c.jobs meanwhile, without this
		// job: it joins the new one as recovery restores a pending job.
		c.eng.Handle(scheduler.Restore{Now: c.nowSec(), Job: c.schedJob(j)})
	}
	c.recording--
	if c.recordingOf[j.UID]--; c.recordingOf[j.UID] == 0 {
		delete(c.recordingOf, j.UID)
	}
	if err != nil {
		c.eng.Handle(scheduler.Cancel{Now: c.nowSec(), ID: scheduler.JobID(j.ID)})
		return nil, recordError(err)
	}
	c.addJob(j)
	return &api.SubmitResponse{JobID: j.ID, Partition: c.partitionOf(j.Spec.Partition)}, nil
}

// onlyAdmit reports whether the Engine's answer to a submission is its
// admission and nothing else.
func onlyAdmit(acts []scheduler.Action) bool {
	for _, a := range acts {
		if _, ok := a.(scheduler.Admit); !ok {
			return false
		}
	}
	return true
}

// basePriority mimics Slurm's priority/basic plugin: a large number that
// falls by one with every job, so earlier jobs sort first under squeue's
// default "-p" order. Held jobs show 0 (see present).
func basePriority(id int64) int64 { return 4294901760 - id%4294901760 }

func admissionError(err error) error {
	if ae, ok := err.(*scheduler.AdmissionError); ok {
		e := &api.Error{Message: ae.Message, Code: ae.Code}
		if ae.EarliestDeadline > 0 {
			e.Earliest = int64(math.Ceil(ae.EarliestDeadline))
		}
		if ae.EarliestStart > 0 {
			e.EarliestStart = int64(math.Ceil(ae.EarliestStart))
		}
		return e
	}
	return &api.Error{Message: err.Error(), Code: api.CodeBadRequest}
}

// checkSpec enforces what the daemon, not the client, must decide.
func (c *Controller) checkSpec(who *Caller, s *api.JobSpec) error {
	bad := func(field, format string, a ...any) error {
		return &api.Error{Message: fmt.Sprintf("%s: %s", field, fmt.Sprintf(format, a...)), Code: api.CodeBadRequest}
	}
	switch {
	case s.Alloc && s.Script != "":
		return bad("script", "an allocation (salloc, srun) has no batch script")
	case s.Alloc && s.Load > 0:
		return &api.Error{Message: "Requested operation is presently disabled", Code: api.CodeDisabled}
	case !s.Alloc && s.Script == "":
		return bad("script", "empty batch script")
	case s.Alloc:
		// What runs in an allocation writes to its client's terminal.
		s.Stdout, s.Stderr, s.Stdin = "/dev/null", "", ""
	}
	if !filepath.IsAbs(s.WorkDir) {
		return bad("work_dir", "must be an absolute path, got %q", s.WorkDir)
	}
	if s.Nodes < 0 || s.NodesMax < 0 || s.NTasks < 0 || s.CPUsPerTask < 0 {
		return &api.Error{Message: "Node count specification invalid", Code: api.CodeInvalidNodeCount}
	}
	if _, err := requestOf(s); err != nil {
		return err
	}
	if s.TimeLimit < api.NoLimit {
		return &api.Error{Message: "Requested time limit is invalid (missing or exceeds some limit)", Code: api.CodeInvalidTimeLimit}
	}
	if err := c.jobReservation(s); err != nil {
		return err
	}
	if s.Partition == "" {
		s.Partition = c.defaultPartition()
	}
	if !c.hasPartition(s.Partition) {
		return &api.Error{Message: "Invalid partition name specified", Code: api.CodeInvalidPartition}
	}
	if s.TimeLimit == 0 {
		// As slurmctld does, a job without --time gets its partition's
		// default (or none) at submit, so every command shows the limit
		// that applies rather than NOT_SET.
		s.TimeLimit = api.NoLimit
		if d := c.partitionDefaultTime(s.Partition); d > 0 {
			s.TimeLimit = d
		}
	}
	if !s.Requeue && !s.NoRequeue {
		// Resolved at submit, as slurmctld does with JobRequeue, so that
		// scontrol shows the value that applies and a later config change
		// does not alter accepted jobs.
		s.Requeue = *c.cfg.JobRequeue == 1
		s.NoRequeue = !s.Requeue
	}
	if s.Deadline != 0 {
		start := max(c.now().Unix(), s.Begin)
		if s.Deadline < start || (s.TimeLimit > 0 && s.Deadline < start+s.TimeLimit) {
			return &api.Error{Message: "Requested time limit is invalid (missing or exceeds some limit)", Code: api.CodeInvalidTimeLimit}
		}
	}
	if c.euid != 0 && who.UID != c.euid {
		return &api.Error{Code: api.CodeAccessDenied, Message: fmt.Sprintf(
			"Access/permission denied: horad runs as uid %d and can run jobs only for that user; run horad as root to serve several users", c.euid)}
	}
	return c.checkInput(who, s)
}

func (c *Controller) defaultPartition() string {
	for _, p := range c.cfg.Partitions {
		if p.Default {
			return p.Name
		}
	}
	return c.cfg.Partitions[0].Name
}

func (c *Controller) hasPartition(name string) bool {
	for _, p := range c.cfg.Partitions {
		if p.Name == name {
			return true
		}
	}
	return false
}

func (c *Controller) partitionOf(name string) string {
	if name == "" {
		return c.defaultPartition()
	}
	return name
}

func (c *Controller) nodeCPUs(name string) int {
	for _, n := range c.nodes {
		if n.Name == name {
			return n.CPUs
		}
	}
	return 1
}

// nodeGPUs is how many GPUs node declares (gres "gpu", any type).
func (c *Controller) nodeGPUs(name string) int {
	for _, n := range c.nodes {
		if n.Name == name {
			gs, _ := sbatch.ParseGres(n.Gres)
			total := 0
			for _, g := range gs {
				if g.Name == "gpu" {
					total += g.Count
				}
			}
			return total
		}
	}
	return 0
}

// mayTouch is invariant 4: a user changes only their own jobs; root and the
// configured operators any.
func (c *Controller) mayTouch(who *Caller, j *job) bool {
	return who.UID == j.UID || c.operators[who.UID]
}

// cancel implements scancel: select, check permission, then cancel or signal.
func (c *Controller) cancel(ctx context.Context, who *Caller, req api.CancelRequest) (*api.CancelResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &api.CancelResponse{}
	for _, ref := range req.Steps {
		resp.Results = append(resp.Results, c.cancelStepLocked(ctx, who, ref, req.Signal))
	}
	if len(req.Steps) > 0 && len(req.IDs) == 0 {
		return resp, nil
	}
	var targets []*job
	if len(req.IDs) > 0 {
		for _, id := range req.IDs {
			j := c.jobs[id]
			if j == nil || j.State.Finished() {
				code, msg := api.CodeInvalidJobID, "Invalid job id specified"
				if j != nil && !req.Filtered {
					code, msg = api.CodeAlreadyDone, "Job/step already completing or completed"
				}
				resp.Results = append(resp.Results, api.JobResult{ID: id, Error: msg, Code: code})
				continue
			}
			if matches(j, req, c) {
				targets = append(targets, j)
			}
		}
	} else {
		for _, j := range c.order {
			if !j.State.Finished() && matches(j, req, c) {
				// Filters without ids act only on the caller's own jobs unless
				// the caller is an operator (as scancel -u someone-else would fail).
				if c.mayTouch(who, j) {
					targets = append(targets, j)
				}
			}
		}
	}
	// Pending jobs are cancelled in one transaction (scancel of a whole
	// array: 10,000 tasks, not 20,000 commits); the others one by one.
	var pending []*job
	if req.Signal == 0 {
		kept := targets[:0]
		for _, j := range targets {
			if j.State == api.StatePending && c.mayTouch(who, j) {
				pending = append(pending, j)
			} else {
				kept = append(kept, j)
			}
		}
		targets = kept
	}
	if len(pending) > 0 {
		now := c.now().Unix()
		evs := make([]store.Event, 0, 2*len(pending))
		for _, j := range pending {
			evs = append(evs, store.Event{JobID: j.ID, Time: now, Kind: store.KindCancel, By: int64(who.UID)},
				store.Event{JobID: j.ID, Time: now, Kind: store.KindEnd, State: api.StateCancelled, Reason: "None"})
		}
		if err := c.st.Append(ctx, evs...); err != nil {
			for _, j := range pending {
				resp.Results = append(resp.Results, api.JobResult{ID: j.ID, Error: err.Error(), Code: api.CodeInternal})
			}
		} else {
			evs := make([]scheduler.Event, 0, len(pending))
			t := c.nowSec()
			for _, j := range pending {
				j.CancelledBy, j.State, j.EndTime = int64(who.UID), api.StateCancelled, now
				evs = append(evs, scheduler.Cancel{Now: t, ID: schedID(j.ID)})
				resp.Results = append(resp.Results, api.JobResult{ID: j.ID})
			}
			acts, err := c.eng.HandleBatch(t, evs)
			if err != nil {
				c.log.Error("cancelling in the Engine", "err", err)
			}
			c.applyLocked(ctx, acts)
		}
	}
	for _, j := range targets {
		if !c.mayTouch(who, j) {
			resp.Results = append(resp.Results, api.JobResult{ID: j.ID, Error: "Access/permission denied", Code: api.CodeAccessDenied})
			continue
		}
		if err := c.cancelOneLocked(ctx, who, j, req.Signal); err != nil {
			resp.Results = append(resp.Results, api.JobResult{ID: j.ID, Error: err.Error(), Code: api.CodeInternal})
			continue
		}
		resp.Results = append(resp.Results, api.JobResult{ID: j.ID})
	}
	return resp, nil
}

func matches(j *job, req api.CancelRequest, c *Controller) bool {
	if len(req.Users) > 0 && !slices.ContainsFunc(req.Users, func(u string) bool {
		uid, ok := lookupUID(u)
		return ok && uid == j.UID
	}) {
		return false
	}
	if len(req.Names) > 0 && !slices.Contains(req.Names, j.Spec.Name) {
		return false
	}
	if len(req.States) > 0 && !slices.Contains(req.States, j.State) {
		return false
	}
	if len(req.Partitions) > 0 && !slices.Contains(req.Partitions, j.Spec.Partition) {
		return false
	}
	return true
}

func (c *Controller) cancelOneLocked(ctx context.Context, who *Caller, j *job, sig int) error {
	now := c.now().Unix()
	if sig != 0 {
		if j.State != api.StateRunning && j.State != api.StateSuspended {
			return fmt.Errorf("Job is pending execution")
		}
		if j.Spec.Load > 0 {
			// A divisible job's processes are its chunks' steps; it has
			// no batch step (a signal sent to one reached nothing).
			c.signalStepsLocked(j, nodes.Signum(sig), false)
			return nil
		}
		// Queued after the job's launch when that is still queued: the
		// dispatcher runs node operations in order.
		node, key := j.Nodes[0], stepKey(j, scheduler.BatchStep)
		c.work.push(func(ctx context.Context) {
			if err := c.exec.Signal(ctx, node, key, nodes.Signum(sig)); err != nil {
				c.log.Warn("signal", "job", key.Job, "err", err)
			}
		})
		return nil
	}
	if err := c.st.Append(ctx, store.Event{JobID: j.ID, Time: now, Kind: store.KindCancel, By: int64(who.UID)}); err != nil {
		return err
	}
	j.CancelledBy = int64(who.UID)
	if j.State == api.StatePending {
		if err := c.st.Append(ctx, store.Event{JobID: j.ID, Time: now, Kind: store.KindEnd, State: api.StateCancelled, Reason: "None"}); err != nil {
			return err
		}
		j.State, j.EndTime = api.StateCancelled, now
		c.applyLocked(ctx, c.eng.Handle(scheduler.Cancel{Now: c.nowSec(), ID: scheduler.JobID(j.ID)}))
		return nil
	}
	j.cancelRequested = true
	// The Engine starts nothing more for it (no further chunks); its nodes
	// are freed as its processes end.
	c.applyLocked(ctx, c.eng.Handle(scheduler.Cancel{Now: c.nowSec(), ID: scheduler.JobID(j.ID)}))
	if j.Spec.Load > 0 {
		for step, node := range j.chunks {
			key := stepKey(j, step)
			c.work.push(func(ctx context.Context) {
				if err := c.exec.Terminate(ctx, node, key, c.killWait()); err != nil {
					c.log.Warn("terminate", "job", key.Job, "step", key.Step, "err", err)
				}
			})
		}
		if len(j.chunks) == 0 {
			return c.endDivisibleLocked(ctx, j)
		}
		return nil
	}
	node, key := j.Nodes[0], stepKey(j, scheduler.BatchStep)
	if j.launched {
		c.work.push(func(ctx context.Context) {
			if err := c.exec.Terminate(ctx, node, key, c.killWait()); err != nil {
				c.log.Warn("terminate", "job", key.Job, "err", err)
			}
		})
	}
	return nil
}

// hold and release implement scontrol hold/release for pending jobs.
func (c *Controller) hold(ctx context.Context, who *Caller, ids []int64, hold bool) *api.CancelResponse {
	return c.holdAs(ctx, who, ids, hold, false)
}

// holdAs is hold with scontrol uhold's choice: userHold makes the hold a
// user hold (JobHeldUser) whoever asks.
func (c *Controller) holdAs(ctx context.Context, who *Caller, ids []int64, hold, userHold bool) *api.CancelResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &api.CancelResponse{}
	var changes []holdChange
	for _, id := range ids {
		j := c.jobs[id]
		switch {
		case j == nil:
			resp.Results = append(resp.Results, api.JobResult{ID: id, Error: "Invalid job id specified", Code: api.CodeInvalidJobID})
			continue
		case j.State.Finished():
			// As 22.05.8: a job still in memory (MinJobAge) has finished.
			resp.Results = append(resp.Results, api.JobResult{ID: id, Error: msgFinished, Code: api.CodeAlreadyDone})
			continue
		case !c.mayTouch(who, j):
			resp.Results = append(resp.Results, api.JobResult{ID: id, Error: "Access/permission denied", Code: api.CodeAccessDenied})
			continue
		case j.State != api.StatePending && hold && (j.State == api.StateRunning || j.State == api.StateSuspended):
			// As Slurm 22.05 (measured): holding a running job succeeds; it
			// takes effect if the job is requeued (it comes back held).
			// Kept in memory only, unlike requeuehold's durable hold.
			if j.requeueHold == "" {
				j.requeueHold = "JobHeldUser"
				if c.operators[who.UID] && !userHold {
					j.requeueHold = "JobHeldAdmin"
				}
			}
			resp.Results = append(resp.Results, api.JobResult{ID: id})
			continue
		case j.State != api.StatePending:
			resp.Results = append(resp.Results, api.JobResult{ID: id, Error: "Job is no longer pending execution", Code: api.CodeAlreadyDone})
			continue
		}
		// As Slurm 22.05 (measured): an operator's hold is an admin hold
		// (uhold: a user hold), which only an operator releases; a user's
		// hold leaves an admin hold as it is.
		op := c.operators[who.UID]
		kind, reason := store.KindRelease, "None"
		if hold {
			kind, reason = store.KindHold, "JobHeldUser"
			if op && !userHold {
				reason = "JobHeldAdmin"
			}
			if !op && j.Reason == "JobHeldAdmin" {
				resp.Results = append(resp.Results, api.JobResult{ID: id})
				continue
			}
		} else if j.Reason == "JobHeldAdmin" && !op {
			resp.Results = append(resp.Results, api.JobResult{ID: id, Error: "Access/permission denied", Code: api.CodeAccessDenied})
			continue
		}
		// Queued now, awaited below: the events of one command share a
		// commit (scontrol release of 1,000 jobs is one fsync, not 1,000),
		// each in its own request so that one refused fails alone.
		wait, err := c.st.AppendQueued(ctx, store.Event{JobID: id, Time: c.now().Unix(), Kind: kind, Reason: reason})
		if err != nil {
			resp.Results = append(resp.Results, api.JobResult{ID: id, Error: err.Error(), Code: api.CodeInternal})
			continue
		}
		changes = append(changes, holdChange{result: len(resp.Results), j: j, reason: reason, wait: wait})
		resp.Results = append(resp.Results, api.JobResult{ID: id})
	}
	// Memory and the Engine follow each durable event; the Engine hears
	// them all in one pass.
	t := c.nowSec()
	var evs []scheduler.Event
	for _, ch := range changes {
		if err := ch.wait(); err != nil {
			resp.Results[ch.result] = api.JobResult{ID: ch.j.ID, Error: err.Error(), Code: api.CodeInternal}
			continue
		}
		ch.j.Reason = ch.reason
		if hold {
			evs = append(evs, scheduler.Hold{Now: t, ID: schedID(ch.j.ID)})
		} else {
			evs = append(evs, scheduler.Release{Now: t, ID: schedID(ch.j.ID)})
		}
	}
	if len(evs) > 0 {
		acts, err := c.eng.HandleBatch(t, evs)
		if err != nil {
			c.log.Error("holding or releasing in the Engine", "err", err)
		}
		c.applyLocked(ctx, acts)
	}
	return resp
}

// holdChange is a hold or release of holdAs whose event is queued.
type holdChange struct {
	result int // its place in the response
	j      *job
	reason string
	wait   func() error
}

// timeLimitOf is the job's time limit in seconds, its partition's default
// when it asked for none (0: unlimited).
func (c *Controller) timeLimitOf(j *job) int64 {
	switch {
	case j.Spec.TimeLimit > 0:
		return j.Spec.TimeLimit
	case j.Spec.TimeLimit == 0:
		return max(c.partitionDefaultTime(j.Spec.Partition), 0)
	}
	return 0
}

// jobSocket is the HORA_SOCKET every job of this horad gets: its socket's
// absolute path ("" when it has none).
func (c *Controller) jobSocket() string {
	if c.cfg.Socket == "" {
		return ""
	}
	sock, err := filepath.Abs(c.cfg.Socket)
	if err != nil {
		return ""
	}
	return sock
}

// launchSpec builds what the node needs: the script, files, and the
// environment a Slurm batch job sees (COMPAT.md §2.1).
func (c *Controller) launchSpec(j *job, step int, node string) nodes.LaunchSpec {
	limit, kill := c.timeLimitOf(j), c.killWait()
	stdin := j.Spec.Stdin
	if stdin != "" {
		stdin = expand(&j.Job, stdin)
	}
	script := []byte(j.Spec.Script)
	switch {
	case j.Spec.Alloc: // also qsub -I: its shell runs as a step
		script = []byte(allocHoldScript)
	case j.Spec.PBS != nil:
		script = pbsScript(j)
	}
	ls := nodes.LaunchSpec{
		Key: stepKey(j, step), Node: node,
		Script: script, Args: j.Spec.Args, WorkDir: j.Spec.WorkDir,
		Stdout: j.StdoutPath, Stderr: errPathIfSeparate(&j.Job), Stdin: stdin, Append: j.Spec.OpenAppend,
		Env: c.jobEnv(j, node), UID: j.UID, GID: j.GID, User: j.User,
		TimeLimit: secondsDur(limit), KillWait: kill,
	}
	if j.Spec.Alloc {
		// The hold runs nothing of the user's: a working directory the
		// node lacks (a home of /nonexistent) must not end the
		// allocation. The shell, a step, says so and goes to /tmp.
		ls.WorkDir = "/"
	}
	if a := allocOn(&j.Job, node); a != nil {
		// What the Engine gave the job here, for the node to enforce.
		ls.CPUs, ls.MemMB = a.CPUs, a.MemMB
		if len(a.GPUs) > 0 || c.nodeGPUs(node) > 0 {
			ls.GPUs, ls.NodeGPUs = a.GPUs, c.nodeGPUs(node)
		}
	}
	if cb := c.callbackEnv(j, node); cb != nil {
		// The node's callback socket, not the submit host's HORA_SOCKET.
		ls.Env = slices.DeleteFunc(ls.Env, func(kv string) bool {
			return strings.HasPrefix(kv, "HORA_SOCKET=") || strings.HasPrefix(kv, "HORA_STEP_KEY=")
		})
		ls.Env = append(ls.Env, cb...)
	}
	return ls
}

func errPathIfSeparate(j *api.Job) string {
	if j.Spec.Stderr == "" {
		return ""
	}
	return j.StderrPath
}

func (c *Controller) partitionDefaultTime(name string) int64 {
	for _, p := range c.cfg.Partitions {
		if p.Name == name && p.DefaultTime != "" {
			v, err := sbatch.ParseSlurmDuration(p.DefaultTime)
			if err == nil && v > 0 {
				return v
			}
		}
	}
	return 0
}

func (c *Controller) jobEnv(j *job, node string) []string {
	env := make([]string, 0, len(j.Spec.Env)+40)
	for _, kv := range j.Spec.Env {
		// the job's own SLURM_* values are set below; stale ones from the
		// submit environment (a job submitted from inside a job) must not win
		if !strings.HasPrefix(kv, "SLURM_JOB") && !strings.HasPrefix(kv, "HORA_SOCKET=") &&
			!(j.Spec.OpenAppend && strings.HasPrefix(kv, "SLURM_OPEN_MODE=")) {
			env = append(env, kv)
		}
	}
	n := len(j.Nodes)
	cpus := c.nodeCPUs(node)
	id := strconv.FormatInt(j.ID, 10)
	nodelist := sbatch.CompressHostlist(j.Nodes)
	ntasks := j.Spec.NTasks
	set := func(k, v string) { env = append(env, k+"="+v) }
	set("SLURM_JOB_ID", id)
	set("SLURM_JOBID", id)
	set("SLURM_JOB_NAME", j.Spec.Name)
	set("SLURM_JOB_USER", j.User)
	set("SLURM_JOB_UID", strconv.Itoa(int(j.UID)))
	set("SLURM_JOB_GID", strconv.Itoa(int(j.GID)))
	set("SLURM_JOB_GROUP", j.Group)
	set("SLURM_JOB_PARTITION", j.Spec.Partition)
	if j.Spec.OpenAppend {
		// sbatch --open-mode=append propagates to the job's steps: srun
		// reads SLURM_OPEN_MODE (as Slurm's sbatch sets it, "a"), so a
		// step writing into the batch's own output file appends to it.
		set("SLURM_OPEN_MODE", "a")
	}
	if j.Spec.RTFrame > 0 {
		// A periodic real-time job learns its contract; the node
		// enforcement puts it in the RT class (docs/mix.md).
		set("HORA_RT_FRAME", strconv.FormatFloat(j.Spec.RTFrame, 'g', -1, 64))
		set("HORA_RT_BUFFER", strconv.Itoa(j.Spec.RTBuffer))
		set("HORA_RT_WORK", rtWorkText(j.Spec.RTWork))
	}
	set("SLURM_JOB_ACCOUNT", j.Spec.Account)
	set("SLURM_JOB_QOS", "normal")
	set("SLURM_SUBMIT_DIR", j.Spec.WorkDir)
	set("SLURM_SUBMIT_HOST", j.Spec.SubmitHost)
	set("SLURM_JOB_NODELIST", nodelist)
	set("SLURM_NODELIST", nodelist)
	set("SLURM_JOB_NUM_NODES", strconv.Itoa(n))
	set("SLURM_NNODES", strconv.Itoa(n))
	set("SLURM_CLUSTER_NAME", c.cfg.ClusterName)
	set("SLURMD_NODENAME", node)
	set("SLURM_CPUS_ON_NODE", strconv.Itoa(cpus))
	set("SLURM_JOB_CPUS_PER_NODE", repeatCount(strconv.Itoa(cpus), n))
	if ntasks > 0 {
		set("SLURM_NTASKS", strconv.Itoa(ntasks))
		set("SLURM_NPROCS", strconv.Itoa(ntasks))
	}
	set("SLURM_TASKS_PER_NODE", tasksPerNode(max(ntasks, n), n))
	if j.Spec.CPUsPerTask > 0 {
		set("SLURM_CPUS_PER_TASK", strconv.Itoa(j.Spec.CPUsPerTask))
	}
	if j.Spec.MemMB > 0 {
		set("SLURM_MEM_PER_NODE", strconv.FormatInt(j.Spec.MemMB, 10))
	}
	// A resource job's variables come from its allocation: they replace
	// the whole-node values above (a variable must appear once).
	resourceEnv(&j.Job, node, func(k, v string) {
		for i, kv := range env {
			if strings.HasPrefix(kv, k+"=") {
				env[i] = k + "=" + v
				return
			}
		}
		set(k, v)
	})
	set("SLURM_NODEID", "0")
	set("SLURM_PROCID", "0")
	set("SLURM_LOCALID", "0")
	set("SLURM_GTIDS", "0")
	set("SLURM_PRIO_PROCESS", "0")
	set("SLURM_RESTART_COUNT", strconv.Itoa(j.Restarts))
	set("SLURM_TOPOLOGY_ADDR", node)
	set("SLURM_TOPOLOGY_ADDR_PATTERN", "node")
	set("SLURM_JOB_START_TIME", strconv.FormatInt(j.StartTime, 10))
	if j.Spec.TimeLimit > 0 {
		set("SLURM_JOB_END_TIME", strconv.FormatInt(j.StartTime+j.Spec.TimeLimit, 10))
	}
	if j.Spec.Export != "" {
		set("SLURM_EXPORT_ENV", j.Spec.Export)
	}
	if j.Spec.Reservation != "" {
		set("SLURM_JOB_RESERVATION", j.Spec.Reservation)
	}
	c.arrayEnv(j, set)
	set("ENVIRONMENT", "BATCH")
	set("HORA_JOB_ID", id)
	// The job's commands (srun, scontrol) reach this horad, and
	// scontrol listpids tells its processes from another horad's.
	if sock := c.jobSocket(); sock != "" {
		set("HORA_SOCKET", sock)
	}
	if j.Spec.PBS != nil {
		env = c.pbsEnv(env, j)
	}
	return env
}

// tasksPerNode spreads t tasks over n nodes the way Slurm prints it: 2(x3),1.
func tasksPerNode(t, n int) string {
	if n <= 0 {
		return ""
	}
	base, extra := t/n, t%n
	var parts []string
	if extra > 0 {
		parts = append(parts, repeatCount(strconv.Itoa(base+1), extra))
	}
	if n-extra > 0 {
		parts = append(parts, repeatCount(strconv.Itoa(base), n-extra))
	}
	return strings.Join(parts, ",")
}

func repeatCount(v string, n int) string {
	if n == 1 {
		return v
	}
	return fmt.Sprintf("%s(x%d)", v, n)
}

func expandPattern(j *api.Job, pattern string) string {
	node := ""
	if len(j.Nodes) > 0 {
		node = j.Nodes[0]
	}
	arrayJob, task := j.ID, int64(-1)
	if j.ArrayJobID != 0 {
		arrayJob, task = j.ArrayJobID, j.ArrayTaskID
	}
	return sbatch.ExpandPattern(pattern, sbatch.PatternFields{
		JobID: j.ID, ArrayJobID: arrayJob, ArrayTaskID: task, User: j.User, JobName: j.Spec.Name,
		Node: node, StepID: "batch",
	})
}

func signum(name string) nodes.Signum {
	switch name {
	case "STOP":
		return nodes.Signum(syscall.SIGSTOP)
	case "CONT":
		return nodes.Signum(syscall.SIGCONT)
	case "KILL":
		return nodes.Signum(syscall.SIGKILL)
	}
	if n, err := strconv.Atoi(name); err == nil && n > 0 {
		return nodes.Signum(n) // --signal, resolved to its number
	}
	return nodes.Signum(syscall.SIGTERM)
}

func secondsDur(s int64) time.Duration { return time.Duration(s) * time.Second }

func schedID(id int64) scheduler.JobID { return scheduler.JobID(id) }

// rtWorkText is a periodic job's work per frame, comma-separated seconds.
func rtWorkText(work []float64) string {
	parts := make([]string, len(work))
	for k, w := range work {
		parts[k] = strconv.FormatFloat(w, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}
