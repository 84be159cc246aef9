package controller

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"hora/api"
	"hora/nodes"
	"hora/sbatch"
	"hora/scheduler"
	"hora/store"
)

// Job steps created by srun (docs/steps.md). horad decides and records a
// step: its nodes, its task layout and its CPUs among the other steps of
// the allocation. srun starts the tasks itself, as the calling user, on the
// allocation's nodes, which the local executor's nodes all are; it reports
// the tasks' process group (for scancel JOBID.STEP) and how they ended.
// horad holds a pidfd on srun so that a step whose srun dies without
// reporting still ends in the record.

// srunStep is what the live controller knows of a running srun step.
type srunStep struct {
	id        int
	nodes     []string
	cpus      []int // CPUs held on each node; 0 for an --overlap step
	srunPID   int32
	pgid      int
	pidfd     *os.File
	cancelled bool
	// Remote steps (SSH nodes): horad runs the tasks (runRemoteStep);
	// stopRun kills them, once they were asked for.
	remote  bool
	ran     bool
	stopRun context.CancelFunc
	inputs  map[int]*io.PipeWriter // stdin of the tasks that read it, by task id
	signals []chan nodes.Signum    // one per task, to RunTask
	// resizes carries the window sizes of the tasks on a pty, by task id.
	resizes map[int]chan nodes.Winsize
	// limit fires at the step's own time limit (srun -t); timedOut once
	// it has, so the step's end is recorded TIMEOUT.
	limit    *time.Timer
	timedOut bool
	// memMB is the step's own --mem (local nodes): its tasks are put in a
	// memory group of their own (StepCgrouper); memNodes are the nodes
	// where they were, whose groups are read and removed at the end.
	memMB    int64
	memNodes []string
	// recovered: granted before horad restarted (rearmSrunSteps). Its
	// tasks' process group is looked up in /proc when it must be
	// signalled, and the first srun of the job's user to report its end
	// is taken as its own.
	recovered bool
	job       int64
}

// allocHoldScript holds the nodes of an salloc/srun allocation: the
// shepherd supervises it like a batch script (time limit, re-attachment
// after a restart, node failure) until the allocation is released.
const allocHoldScript = "#!/bin/sh\nexec sleep infinity\n"

func (c *Controller) routeSteps(mux *http.ServeMux) {
	mux.HandleFunc("POST "+api.PathStepCreate, withBody(c, func(ctx context.Context, who *Caller, req api.StepRequest) (any, error) {
		return c.createStep(ctx, who, req)
	}))
	mux.HandleFunc("POST "+api.PathStepStarted, withBody(c, func(ctx context.Context, who *Caller, req api.StepStarted) (any, error) {
		return c.stepStarted(who, req)
	}))
	mux.HandleFunc("POST "+api.PathStepEnd, withBody(c, func(ctx context.Context, who *Caller, req api.StepEnd) (any, error) {
		return c.endStep(ctx, who, req)
	}))
	mux.HandleFunc("POST "+api.PathAllocDone, withBody(c, func(ctx context.Context, who *Caller, req api.AllocDone) (any, error) {
		return c.allocDone(ctx, who, req)
	}))
	mux.HandleFunc("GET "+api.PathAllocEnv, c.handle(func(ctx context.Context, who *Caller, r *http.Request) (any, error) {
		id, err := strconv.ParseInt(r.URL.Query().Get("id"), 10, 64)
		if err != nil {
			return nil, stepErr(api.CodeInvalidJobID, "Invalid job id specified")
		}
		return c.allocEnv(who, id)
	}))
}

func stepErr(code, msg string) *api.Error { return &api.Error{Message: msg, Code: code} }

// allocCPUs is the number of CPUs the job holds on node: those the Engine
// gave it there (per-CPU allocation, resources.go), else the whole node.
func (c *Controller) allocCPUs(j *job, node string) int {
	if a := allocOn(&j.Job, node); a != nil && len(a.CPUs) > 0 {
		return len(a.CPUs)
	}
	return c.nodeCPUs(node)
}

// createStep grants a step of a running job to its owner (or root), records
// it, and answers with its layout; a step that fits the allocation but not
// now is answered CodeStepBusy and srun asks again.
func (c *Controller) createStep(ctx context.Context, who *Caller, req api.StepRequest) (*api.StepGrant, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j := c.jobs[req.JobID]
	switch {
	case j == nil:
		return nil, stepErr(api.CodeInvalidJobID, "Invalid job id specified")
	case !who.mayUse(j):
		return nil, stepErr(api.CodeAccessDenied, "Access/permission denied")
	case j.State.Finished() || j.State == api.StateCompleting:
		return nil, stepErr(api.CodeAlreadyDone, "Job/step already completing or completed")
	case j.State == api.StatePending:
		return nil, stepErr(api.CodePending, "Job is pending execution")
	case !j.launched:
		// Started by the Engine, its start not yet recorded and its
		// nodes not yet set up: Slurm's ESLURM_PROLOG_RUNNING, which
		// srun waits out without a word.
		return nil, stepErr(api.CodeConfiguring, "Job's prolog is still running")
	case j.State == api.StateSuspended:
		// ESLURM_DISABLED: srun retries until the job is resumed.
		return nil, stepErr(api.CodeStepBusy, "Requested operation is presently disabled")
	case j.Spec.Load > 0 || (c.cfg.Executor != "local" && c.taskRunner() == nil):
		// Chunks of a divisible job are its steps already; tasks on
		// nodes srun cannot fork on need an executor that runs them
		// (docs/steps.md).
		return nil, stepErr(api.CodeDisabled, "Requested operation is presently disabled")
	case req.Nodes < 0 || req.NTasks < 0 || req.NTasksPerNode < 0 || req.CPUsPerTask < 0:
		return nil, stepErr(api.CodeBadRequest, "Invalid node count specified")
	}
	grant, apiErr := c.layoutStep(j, req)
	if apiErr != nil {
		return nil, apiErr
	}
	id := 0
	for _, s := range j.Steps {
		id = max(id, s.Index+1)
	}
	grant.StepID = id
	grant.JobID = j.ID
	grant.Partition = j.Spec.Partition
	grant.Env = c.allocEnvLocked(j)
	step := api.Step{Index: id, Node: sbatch.CompressHostlist(grant.Nodes), State: api.StateRunning,
		StartTime: c.now().Unix(), Name: req.Name, NTasks: len(grant.TaskNode), TimeLimit: max(req.TimeLimit, 0)}
	for _, n := range grant.CPUs {
		step.CPUs += n
	}
	if err := c.st.Append(ctx, store.Event{JobID: j.ID, Time: step.StartTime, Kind: store.KindStepStart, Step: &step}); err != nil {
		return nil, stepErr(api.CodeInternal, "Unable to record the step: "+err.Error())
	}
	j.Steps = append(j.Steps, step)
	ss := &srunStep{id: id, nodes: grant.Nodes, cpus: grant.CPUs, srunPID: who.PID}
	if c.cfg.Executor != "local" {
		grant.Remote, ss.remote = true, true
	}
	if req.Overlap {
		ss.cpus = make([]int, len(grant.Nodes))
	}
	if _, ok := c.exec.(nodes.StepCgrouper); ok && req.MemMB > 0 && !ss.remote {
		ss.memMB, grant.MemGate = req.MemMB, true
	}
	if ss.remote && req.MemMB > 0 {
		// horad starts the tasks itself, in the step's memory group
		// (TaskSpec.StepMemMB): no gate needed.
		ss.memMB = req.MemMB
	}
	if j.srun == nil {
		j.srun = map[int]*srunStep{}
	}
	j.srun[id] = ss
	if req.TimeLimit > 0 {
		jobID := j.ID
		ss.limit = time.AfterFunc(time.Duration(req.TimeLimit)*time.Second, func() { c.stepTimeLimit(jobID, ss) })
	}
	// srun is blocked on this answer, so its pid is still its own.
	if fd, err := unix.PidfdOpen(int(who.PID), unix.PIDFD_NONBLOCK); err == nil {
		ss.pidfd = os.NewFile(uintptr(fd), "pidfd:srun")
		go c.watchSrun(j.ID, ss)
	}
	return grant, nil
}

// layoutStep chooses the step's nodes and places its tasks (block or
// cyclic), checking CPUs against the allocation (never fits: refused) and
// against the job's other running steps (not now: busy).
func (c *Controller) layoutStep(j *job, req api.StepRequest) (*api.StepGrant, *api.Error) {
	cand := slices.Clone(j.Nodes)
	if len(req.NodeList) > 0 {
		for _, n := range req.NodeList {
			if !slices.Contains(j.Nodes, n) {
				return nil, stepErr(api.CodeInvalidNodeCount, "Requested node configuration is not available")
			}
		}
		cand = slices.DeleteFunc(cand, func(n string) bool { return !slices.Contains(req.NodeList, n) })
	}
	cand = slices.DeleteFunc(cand, func(n string) bool { return slices.Contains(req.Exclude, n) })
	nNodes, ntasks := req.Nodes, req.NTasks
	if nNodes == 0 {
		switch {
		case len(req.NodeList) > 0:
			nNodes = len(cand)
		case ntasks > 0 && req.NTasksPerNode > 0:
			nNodes = (ntasks + req.NTasksPerNode - 1) / req.NTasksPerNode
		case ntasks > 0:
			nNodes = min(ntasks, len(cand))
		default:
			nNodes = len(cand)
		}
	}
	if nNodes < 1 || nNodes > len(cand) {
		return nil, stepErr(api.CodeInvalidNodeCount, "Requested node configuration is not available")
	}
	if ntasks == 0 {
		ntasks = nNodes * max(1, req.NTasksPerNode)
	}
	nNodes = min(nNodes, ntasks)
	if req.NTasksPerNode > 0 && ntasks > nNodes*req.NTasksPerNode {
		return nil, stepErr(api.CodeInvalidNodeCount, "Requested node configuration is not available")
	}
	cpt := max(1, req.CPUsPerTask)
	per := make([]int, nNodes) // tasks per chosen node
	for i := range ntasks {
		per[i%nNodes]++
	}
	// Never fits: the tasks of a node need more CPUs than it has in the
	// allocation (the largest nodes first, so the check is on the best case).
	byCPU := slices.Clone(cand)
	slices.SortStableFunc(byCPU, func(a, b string) int { return c.allocCPUs(j, b) - c.allocCPUs(j, a) })
	if !req.Overcommit {
		for k := range per {
			if per[k]*cpt > c.allocCPUs(j, byCPU[k]) {
				return nil, stepErr(api.CodeTooManyCPUs, "More processors requested than permitted")
			}
		}
	}
	used := map[string]int{}
	for _, s := range j.srun {
		for k, n := range s.nodes {
			used[n] += s.cpus[k]
		}
	}
	var chosen []string
	var cpus []int
	for _, n := range cand {
		if len(chosen) == nNodes {
			break
		}
		k := len(chosen)
		need := min(per[k]*cpt, c.allocCPUs(j, n))
		hold := need
		if !req.Exact {
			hold = c.allocCPUs(j, n) // Slurm 22.05: all CPUs of the node unless --exact
		}
		free := c.allocCPUs(j, n) - used[n]
		if req.Overlap {
			free = c.allocCPUs(j, n)
		}
		if need > free || (!req.Overlap && hold > free) {
			continue
		}
		chosen, cpus = append(chosen, n), append(cpus, hold)
	}
	if len(chosen) < nNodes {
		return nil, stepErr(api.CodeStepBusy, "Requested nodes are busy")
	}
	taskNode := make([]int, ntasks)
	if req.Cyclic {
		for i := range taskNode {
			taskNode[i] = i % nNodes
		}
	} else {
		t := 0
		for k, n := range per {
			for range n {
				taskNode[t] = k
				t++
			}
		}
	}
	return &api.StepGrant{Nodes: chosen, TaskNode: taskNode, CPUs: cpus}, nil
}

// runningStep finds a running srun step of the caller's job.
func (c *Controller) runningStep(who *Caller, jobID int64, stepID int) (*job, *srunStep, error) {
	j := c.jobs[jobID]
	if j == nil {
		return nil, nil, stepErr(api.CodeInvalidJobID, "Invalid job id specified")
	}
	if !who.mayUse(j) {
		return nil, nil, stepErr(api.CodeAccessDenied, "Access/permission denied")
	}
	s := j.srun[stepID]
	if s == nil {
		return j, nil, nil
	}
	return j, s, nil
}

func (c *Controller) stepStarted(who *Caller, req api.StepStarted) (*api.StepEndResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, s, err := c.runningStep(who, req.JobID, req.StepID)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return &api.StepEndResponse{State: api.StateCancelled}, nil
	}
	if who.PID != s.srunPID || req.Pgid <= 1 {
		return nil, stepErr(api.CodeAccessDenied, "Access/permission denied")
	}
	s.pgid = req.Pgid
	if s.memMB > 0 && len(s.memNodes) == 0 {
		if err := c.enterStepMemory(j, s, req); err != nil {
			return nil, stepErr(api.CodeInternal, "Unable to enforce the step's memory: "+err.Error())
		}
	}
	switch {
	case s.cancelled:
		// scancel came between the grant and the launch.
		c.killStepTasks(s, j.UID, syscall.SIGKILL)
	case s.timedOut:
		// So did the step's time limit.
		c.killStepTasks(s, j.UID, syscall.SIGTERM)
	}
	return &api.StepEndResponse{State: api.StateRunning}, nil
}

// endStep records how a step ended, as srun reports it.
func (c *Controller) endStep(ctx context.Context, who *Caller, req api.StepEnd) (*api.StepEndResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, s, err := c.runningStep(who, req.JobID, req.StepID)
	if err != nil {
		return nil, err
	}
	if s == nil {
		i := slices.IndexFunc(j.Steps, func(x api.Step) bool { return x.Index == req.StepID })
		if i < 0 {
			return nil, stepErr(api.CodeInvalidJobID, "Invalid job id specified")
		}
		if j.Steps[i].State != api.StateRunning || j.State.Finished() {
			return &api.StepEndResponse{State: j.Steps[i].State}, nil
		}
		// A step granted before horad restarted: its srun reports to
		// the new horad, which knows it only from the record.
		s = &srunStep{id: req.StepID, srunPID: who.PID}
	}
	if s.recovered && s.srunPID == 0 {
		s.srunPID = who.PID // the job's user (runningStep checked)
	}
	if who.PID != s.srunPID && who.UID != 0 {
		return nil, stepErr(api.CodeAccessDenied, "Access/permission denied")
	}
	ooms := c.endStepMemory(j, s)
	st := api.StateCompleted
	switch {
	case ooms > 0:
		st = api.StateOOM
	case s.timedOut:
		st = api.StateTimeout
	case s.cancelled:
		st = api.StateCancelled
	case req.Signal != 0 || req.ExitCode != 0:
		st = api.StateFailed
	}
	if err := c.recordSrunEndLocked(ctx, j, s, st, req.ExitCode, req.Signal); err != nil {
		return nil, stepErr(api.CodeInternal, err.Error())
	}
	return &api.StepEndResponse{State: st, OOMKills: ooms}, nil
}

// recordSrunEndLocked writes step_end and forgets the live step.
func (c *Controller) recordSrunEndLocked(ctx context.Context, j *job, s *srunStep, st api.JobState, code, sig int) error {
	i := slices.IndexFunc(j.Steps, func(x api.Step) bool { return x.Index == s.id })
	if i >= 0 && !j.State.Finished() && j.Steps[i].State == api.StateRunning {
		step := j.Steps[i]
		step.State, step.EndTime, step.ExitCode, step.Signal = st, c.now().Unix(), code, sig
		if err := c.st.Append(ctx, store.Event{JobID: j.ID, Time: step.EndTime, Kind: store.KindStepEnd, Step: &step}); err != nil {
			return err
		}
		j.Steps[i] = step
	}
	delete(j.srun, s.id)
	c.endStepMemory(j, s)
	if s.limit != nil {
		s.limit.Stop()
	}
	if s.stopRun != nil {
		s.stopRun() // a remote step's tasks end with it
	}
	if s.pidfd != nil {
		_ = s.pidfd.Close() // wakes watchSrun, which then finds the step gone
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

// watchSrun ends a step whose srun exited without reporting (killed).
func (c *Controller) watchSrun(jobID int64, s *srunStep) {
	rc, err := s.pidfd.SyscallConn()
	if err != nil {
		return
	}
	// The runtime's poller parks this goroutine until srun exits (the
	// pidfd turns readable) or the step ends and the file is closed.
	err = rc.Read(func(fd uintptr) bool {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, _ := unix.Poll(pfd, 0)
		return n > 0
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	j := c.jobs[jobID]
	if j == nil || j.srun[s.id] != s {
		return // reported (the file was closed then), or the job is gone
	}
	if err != nil {
		c.log.Warn("watching srun", "job", jobID, "step", s.id, "err", err)
		return
	}
	if s.pgid > 0 {
		c.killStepTasks(s, j.UID, syscall.SIGKILL)
	}
	st := api.StateCancelled
	switch {
	case s.timedOut:
		st = api.StateTimeout
	case !s.cancelled:
		st = api.StateFailed
	}
	if err := c.recordSrunEndLocked(context.Background(), j, s, st, 0, int(syscall.SIGKILL)); err != nil {
		c.log.Error("recording step end", "job", jobID, "step", s.id, "err", err)
	}
}

// killStepTasks signals the process group of a step's tasks, after
// checking in /proc that a process of that group still runs as the job's
// user, so a stale group id never aims root at someone else's processes.
// Every process is looked at (a group's leader may have exited).
func (c *Controller) killStepTasks(s *srunStep, uid uint32, sig syscall.Signal) {
	if s.stopRun != nil {
		// A remote step: KILL stops its tasks' scopes on their nodes,
		// other signals go to every task's process.
		if sig == syscall.SIGKILL {
			s.stopRun()
		} else {
			s.signalRemote(nodes.Signum(sig))
		}
		return
	}
	if s.pgid <= 1 && s.recovered {
		s.pgid = stepGroup(s.job, s.id, uid, c.jobSocket())
	}
	if s.pgid <= 1 {
		return
	}
	var st unix.Stat_t
	ok := false
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pg, err := unix.Getpgid(pid); err != nil || pg != s.pgid {
			continue
		}
		if err := unix.Stat("/proc/"+e.Name(), &st); err == nil && st.Uid == uid {
			ok = true
			break
		}
	}
	if ok {
		_ = syscall.Kill(-s.pgid, sig)
	}
}

// cancelStepsLocked is scancel JOBID.STEP: signal 0 ends the step
// (CANCELLED, its tasks killed), another signal is only delivered.
func (c *Controller) cancelStepLocked(ctx context.Context, who *Caller, ref api.StepRef, sig int) api.JobResult {
	res := api.JobResult{ID: ref.Job}
	j := c.jobs[ref.Job]
	if j == nil || j.State.Finished() {
		res.Error, res.Code = "Invalid job id specified", api.CodeInvalidJobID
		return res
	}
	if !c.mayTouch(who, j) {
		res.Error, res.Code = "Access/permission denied", api.CodeAccessDenied
		return res
	}
	s := j.srun[ref.Step]
	if s == nil {
		res.Error, res.Code = "Job/step already completing or completed", api.CodeAlreadyDone
		if !slices.ContainsFunc(j.Steps, func(x api.Step) bool { return x.Index == ref.Step }) {
			res.Error, res.Code = "Invalid job id specified", api.CodeInvalidJobID
		}
		return res
	}
	if sig != 0 {
		c.killStepTasks(s, j.UID, syscall.Signal(sig))
		return res
	}
	s.cancelled = true
	c.killStepTasks(s, j.UID, syscall.SIGKILL)
	return res
}

// endSrunStepsLocked ends the live srun steps of a job that has ended
// (the store's end event already ended them in the record) and kills
// their tasks, which run outside the batch step's process group when srun
// was started by salloc.
func (c *Controller) endSrunStepsLocked(j *job) {
	st := j.State
	if st == api.StateCompleted {
		st = api.StateCancelled
	}
	for id, s := range j.srun {
		if s.limit != nil {
			s.limit.Stop()
		}
		c.endStepMemory(j, s)
		c.killStepTasks(s, j.UID, syscall.SIGKILL)
		if s.pidfd != nil {
			_ = s.pidfd.Close()
		}
		delete(j.srun, id)
	}
	// As the store's fold does with the end event, also for steps granted
	// before a restart, which only the record knows.
	if j.State.Finished() {
		for k := range j.Steps {
			if j.Steps[k].State == api.StateRunning {
				j.Steps[k].State, j.Steps[k].EndTime = st, j.EndTime
			}
		}
	}
}

// allocDone releases an salloc/srun allocation: a pending one is
// cancelled; a running one ends with the client's exit code once its
// holder process is stopped.
func (c *Controller) allocDone(ctx context.Context, who *Caller, req api.AllocDone) (*api.CancelResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j := c.jobs[req.JobID]
	switch {
	case j == nil:
		return nil, stepErr(api.CodeInvalidJobID, "Invalid job id specified")
	case !c.mayTouch(who, j):
		return nil, stepErr(api.CodeAccessDenied, "Access/permission denied")
	case j.State.Finished():
		return nil, stepErr(api.CodeAlreadyDone, "Job/step already completing or completed")
	case !j.Spec.Alloc:
		return nil, stepErr(api.CodeBadRequest, fmt.Sprintf("job %d is a batch job, not an allocation", j.ID))
	}
	if j.State == api.StatePending {
		if err := c.cancelOneLocked(ctx, who, j, 0); err != nil {
			return nil, stepErr(api.CodeInternal, err.Error())
		}
		return &api.CancelResponse{Results: []api.JobResult{{ID: j.ID}}}, nil
	}
	done := req
	j.allocDone = &done
	node, key := j.Nodes[0], stepKey(j, scheduler.BatchStep)
	if j.launched {
		// Not launched yet: launch stops it once started (allocDone set).
		c.work.push(func(ctx context.Context) {
			if err := c.exec.Terminate(ctx, node, key, c.killWait()); err != nil {
				c.log.Warn("terminate", "job", key.Job, "err", err)
			}
		})
	}
	return &api.CancelResponse{Results: []api.JobResult{{ID: j.ID}}}, nil
}

// allocEnv is the job's environment as salloc sets it: the job's SLURM_*
// variables without those of a task on a node.
func (c *Controller) allocEnv(who *Caller, id int64) (*api.AllocEnv, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j := c.jobs[id]
	switch {
	case j == nil:
		return nil, stepErr(api.CodeInvalidJobID, "Invalid job id specified")
	case !who.mayUse(j):
		return nil, stepErr(api.CodeAccessDenied, "Access/permission denied")
	case j.State != api.StateRunning && j.State != api.StateSuspended:
		return nil, stepErr(api.CodePending, "Job is pending execution")
	}
	return &api.AllocEnv{Env: c.allocEnvLocked(j)}, nil
}

// allocEnvLocked is the job's SLURM_* environment without the variables
// of a task on a node. Caller holds c.mu.
func (c *Controller) allocEnvLocked(j *job) []string {
	cp := *j
	cp.Spec.Env = nil
	var out []string
	for _, kv := range c.jobEnv(&cp, j.Nodes[0]) {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "SLURMD_NODENAME", "SLURM_NODEID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_GTIDS",
			"SLURM_TOPOLOGY_ADDR", "SLURM_TOPOLOGY_ADDR_PATTERN", "ENVIRONMENT", "SLURM_PRIO_PROCESS",
			"SLURM_CPUS_ON_NODE", "SLURM_RESTART_COUNT", "SLURM_EXPORT_ENV":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// stepTimeLimit ends a step at its own time limit (srun -t), as
// slurmstepd does: TERM to its tasks, KILL after KillWait; srun reports
// the tasks' end, recorded TIMEOUT, and prints Slurm's lines.
func (c *Controller) stepTimeLimit(jobID int64, s *srunStep) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j := c.jobs[jobID]
	if j == nil || j.srun[s.id] != s {
		return // ended meanwhile
	}
	s.timedOut = true
	c.log.Info("step time limit", "job", jobID, "step", s.id)
	c.killStepTasks(s, j.UID, syscall.SIGTERM)
	time.AfterFunc(max(c.killWait(), time.Second), func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if j := c.jobs[jobID]; j != nil && j.srun[s.id] == s {
			c.killStepTasks(s, j.UID, syscall.SIGKILL)
		}
	})
}

// enterStepMemory puts the tasks of a step with its own --mem in the
// step's memory group on each node, after checking in /proc that each pid
// runs as the job's user in the step's process group (srun reports them;
// root acts on them only when they are what srun says).
func (c *Controller) enterStepMemory(j *job, s *srunStep, req api.StepStarted) error {
	sc := c.exec.(nodes.StepCgrouper)
	nodeNames := make([]string, 0, len(req.NodePids))
	for n := range req.NodePids {
		nodeNames = append(nodeNames, n)
	}
	slices.Sort(nodeNames)
	for _, n := range nodeNames {
		if !slices.Contains(s.nodes, n) {
			return fmt.Errorf("node %s is not the step's", n)
		}
		for _, pid := range req.NodePids[n] {
			if pg, err := unix.Getpgid(pid); err != nil || pg != req.Pgid {
				return fmt.Errorf("task pid %d is not in the step's process group", pid)
			}
			var st unix.Stat_t
			if err := unix.Stat("/proc/"+strconv.Itoa(pid), &st); err != nil || st.Uid != j.UID {
				return fmt.Errorf("task pid %d does not run as the job's user", pid)
			}
		}
		s.memNodes = append(s.memNodes, n)
		if err := sc.EnterStepMemory(n, stepKey(j, s.id), s.memMB, req.NodePids[n]); err != nil {
			return err
		}
	}
	return nil
}

// stepMemoryEnder reads and removes a step's own memory group on a node:
// nodes/local for srun's tasks, nodes/ssh for the tasks it ran itself.
type stepMemoryEnder interface {
	EndStepMemory(node string, key nodes.StepKey) int
}

// endStepMemory reads and removes the memory groups of a step with its own
// --mem, once: the number of tasks the kernel killed for it.
func (c *Controller) endStepMemory(j *job, s *srunStep) int {
	sc, ok := c.exec.(stepMemoryEnder)
	if !ok || len(s.memNodes) == 0 {
		return 0
	}
	n := 0
	for _, node := range s.memNodes {
		n += sc.EndStepMemory(node, stepKey(j, s.id))
	}
	s.memNodes = nil
	return n
}

// rearmSrunSteps gives the running srun steps of a re-attached job (local
// nodes, where their tasks outlive horad) back their live state: their own
// time limit (srun -t, recorded with the step) fires at start + limit, at
// once if that passed while horad was away, and scancel JOBID.STEP reaches
// them again. Called while recovering, before any request is served.
func (c *Controller) rearmSrunSteps(j *job) {
	if c.cfg.Executor != "local" {
		return // remote steps' tasks went with the old horad's sessions: endOrphanedRemoteSteps ends them
	}
	now := c.now()
	for _, st := range j.Steps {
		if st.State != api.StateRunning || st.NTasks == 0 || j.srun[st.Index] != nil {
			continue // not an srun step (a divisible job's chunk), or known
		}
		names, err := sbatch.ExpandHostlist(st.Node)
		if err != nil {
			continue
		}
		ss := &srunStep{id: st.Index, nodes: names, cpus: make([]int, len(names)), recovered: true, job: j.ID}
		if j.srun == nil {
			j.srun = map[int]*srunStep{}
		}
		j.srun[st.Index] = ss
		if st.TimeLimit > 0 {
			left := time.Unix(st.StartTime+st.TimeLimit, 0).Sub(now)
			jobID := j.ID
			ss.limit = time.AfterFunc(max(left, 0), func() { c.stepTimeLimit(jobID, ss) })
			c.log.Info("step time limit re-armed", "job", j.ID, "step", st.Index, "left", max(left, 0).Round(time.Second))
		}
	}
}

// stepGroup finds the process group of the tasks of step (job, step) of
// user uid after a restart, when srun's report of it is gone: a process
// of that user whose environment names the job and the step (srun sets
// SLURM_JOB_ID and SLURM_STEP_ID in every task's) and this horad (the
// HORA_SOCKET every job gets, sock; a task of a salloc shell may have
// none, and then talks to a default socket path, so none is accepted only
// when sock is one of those). Job ids are a horad's own: another horad on
// the machine (a test cluster beside another, or slurmctld) has its own
// job 1, step 0. 0 when none runs.
func stepGroup(job int64, step int, uid uint32, sock string) int {
	wantJob := []byte("SLURM_JOB_ID=" + strconv.FormatInt(job, 10))
	wantStep := []byte("SLURM_STEP_ID=" + strconv.Itoa(step))
	wantSock := []byte("HORA_SOCKET=" + sock)
	noneOK := slices.Contains(api.DefaultSocketPaths, sock)
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name(), &st) != nil || st.Uid != uid {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		hasJob, hasStep, sockOK := false, false, noneOK
		for _, kv := range bytes.Split(env, []byte{0}) {
			hasJob = hasJob || bytes.Equal(kv, wantJob)
			hasStep = hasStep || bytes.Equal(kv, wantStep)
			if bytes.HasPrefix(kv, []byte("HORA_SOCKET=")) {
				sockOK = bytes.Equal(kv, wantSock)
			}
		}
		if hasJob && hasStep && sockOK {
			if pg, err := unix.Getpgid(pid); err == nil && pg > 1 {
				return pg
			}
		}
	}
	return 0
}
