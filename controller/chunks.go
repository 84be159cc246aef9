package controller

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"time"

	"hora/api"
	"hora/nodes"
	"hora/scheduler"
	"hora/store"
)

// Divisible real-time jobs run as chunks: the dlt policy starts steps 0, 1,
// 2, ... one node each, with a byte range of the load. Each chunk is a Slurm
// job step (sacct JOBID.N); the job ends when the Engine has forgotten it
// and no chunk still runs.

// startChunkLocked records and launches one chunk. Caller holds c.mu.
func (c *Controller) startChunkLocked(j *job, a scheduler.Start) {
	now := c.now().Unix()
	node := a.Nodes[0]
	var evs []store.Event
	if j.State != api.StateRunning {
		j.State, j.StartTime, j.Reason = api.StateRunning, now, "None"
		j.Nodes = []string{node}
		j.StdoutPath, j.StderrPath = outputPaths(&j.Job)
		evs = append(evs, store.Event{JobID: j.ID, Time: now, Kind: store.KindStart, Nodes: []string{node},
			StdoutPath: j.StdoutPath, StderrPath: j.StderrPath})
	} else if !slices.Contains(j.Nodes, node) {
		j.Nodes = append(j.Nodes, node)
	}
	step := api.Step{Index: a.Step, Node: node, State: api.StateRunning, Offset: a.Offset, Size: a.Size, StartTime: now}
	j.Steps = append(j.Steps, step)
	if j.chunks == nil {
		j.chunks = map[int]string{}
	}
	j.chunks[a.Step] = node
	c.log.Debug("chunk start", "job", j.ID, "step", a.Step, "node", node, "offset", a.Offset, "size", a.Size)
	evs = append(evs, store.Event{JobID: j.ID, Time: now, Kind: store.KindStepStart, Step: &step})

	spec := c.launchSpec(j, a.Step, node)
	// All chunks share the job's output files: the first one creates them,
	// the others append, so no chunk truncates another's lines, and every
	// chunk writes at the end: the first one, slower to write than the
	// second, overwrote its line (a make test run under a CPU hog).
	spec.Append = spec.Append || a.Step > 0
	spec.SharedOutput = true
	spec.Env = append(spec.Env,
		"HORA_CHUNK_INDEX="+strconv.Itoa(a.Step),
		"HORA_CHUNK_OFFSET="+strconv.FormatFloat(a.Offset, 'f', -1, 64),
		"HORA_CHUNK_SIZE="+strconv.FormatFloat(a.Size, 'f', -1, 64),
		"SLURM_STEP_ID="+strconv.Itoa(a.Step),
		"SLURM_STEPID="+strconv.Itoa(a.Step))
	if in := j.Spec.Input; in != "" && c.isDLT(j.Spec.Partition) {
		// The file's size was checked at submit; a file changed since then
		// fails its chunks when staging reads past its end.
		size := int64(math.Round(j.Spec.Load * c.unitBytes(j.Spec.Partition)))
		start, end := chunkRange(a.Offset, a.Size, j.Spec.Load, c.unitBytes(j.Spec.Partition), size)
		spec.Env = append(spec.Env,
			"HORA_CHUNK_FILE_OFFSET="+strconv.FormatInt(start, 10),
			"HORA_CHUNK_FILE_SIZE="+strconv.FormatInt(end-start, 10))
		c.stageQueue(j.Spec.Partition).push(func(ctx context.Context) { c.stageAndLaunch(ctx, spec, in, start, end, evs) })
		return
	}
	c.pushLaunch(spec, evs...)
}

// chunkEndLocked records a chunk's end, tells the Engine (which may start
// the next chunks), and ends the job after its last chunk. Caller holds c.mu.
func (c *Controller) chunkEndLocked(ctx context.Context, j *job, s nodes.Status) error {
	if j == nil {
		return nil
	}
	st, err := c.recordStepEndLocked(ctx, j, s)
	if err != nil {
		return err
	}
	c.log.Debug("chunk end", "job", j.ID, "step", s.Key.Step, "node", s.Node, "state", st, "err", s.Err)
	delete(j.chunks, s.Key.Step)
	fin := scheduler.Finished{Now: c.nowSec(), ID: scheduler.JobID(j.ID), Step: s.Key.Step,
		Failed: st != api.StateCompleted, NodeFail: st == api.StateNodeFail}
	// Measured times for the estimator (dlt-feedback §3.2): the staging
	// transfer is the chunk's Cms part, the process's run its Cps part.
	if t, ok := j.transfer[s.Key.Step]; ok && !fin.Failed && !s.Started.IsZero() && s.Ended.After(s.Started) {
		fin.Transfer, fin.Compute = t, s.Ended.Sub(s.Started).Seconds()
	}
	delete(j.transfer, s.Key.Step)
	acts := c.eng.Handle(fin)
	if _, known := c.eng.Job(scheduler.JobID(j.ID)); !known && len(j.chunks) == 0 && !j.State.Finished() {
		if err := c.endDivisibleLocked(ctx, j); err != nil {
			// The chunk's end is recorded and the Engine has let the job
			// go: returning the error would have the chunk's end decided
			// again and acts (starts on the nodes it freed) dropped.
			c.retryDivisibleEndLocked(ctx, j.ID, err)
		}
	}
	c.applyLocked(ctx, acts)
	return nil
}

// retryDivisibleEndLocked records a divisible job's end again once a
// second while the store refuses it (a full disk). It counts among the
// unsettled ends meanwhile, so that no start on the nodes its last chunk
// freed is recorded before it (awaitEndsSettled). Caller holds c.mu.
func (c *Controller) retryDivisibleEndLocked(ctx context.Context, id int64, err error) {
	c.log.Error("recording job end; trying again in a second", "job", id, "err", err)
	c.endsUnsettled.add(1)
	go func() {
		defer c.endsUnsettled.add(-1)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			c.mu.Lock()
			var err error
			if j := c.jobs[id]; j != nil && !j.State.Finished() {
				err = c.endDivisibleLocked(ctx, j)
			}
			c.mu.Unlock()
			if err == nil || errors.Is(err, store.ErrClosed) || errors.Is(err, store.ErrInvalidEvent) {
				return
			}
		}
	}()
}

// recordStepEndLocked records how a chunk ended (step_end) and returns its
// state. Caller holds c.mu.
func (c *Controller) recordStepEndLocked(ctx context.Context, j *job, s nodes.Status) (api.JobState, error) {
	st := api.StateCompleted
	switch {
	case j.cancelRequested || j.CancelledBy >= 0:
		st = api.StateCancelled
	case s.TimedOut || j.overrun[s.Key.Step]:
		st = api.StateTimeout
	case s.State == nodes.StepLost, s.Signal != 0 && !c.admin[s.Node].inService() && c.admin[s.Node].Down:
		// Lost with its node, or stopped because an operator set the node
		// DOWN (nodeadmin.go terminates the steps there).
		st = api.StateNodeFail
	case s.Err != "" || s.Signal != 0 || s.ExitCode != 0:
		st = api.StateFailed
	}
	end := s.Ended.Unix()
	if s.Ended.IsZero() {
		end = c.now().Unix()
	}
	if i := slices.IndexFunc(j.Steps, func(x api.Step) bool { return x.Index == s.Key.Step }); i >= 0 && !j.State.Finished() {
		step := j.Steps[i]
		step.State, step.EndTime, step.ExitCode, step.Signal = st, end, s.ExitCode, s.Signal
		if err := c.st.Append(ctx, store.Event{JobID: j.ID, Time: end, Kind: store.KindStepEnd, Step: &step}); err != nil {
			return st, err
		}
		j.Steps[i] = step
	}
	return st, nil
}

// endDivisibleLocked records the end of a divisible job from its chunks:
// cancelled if asked; COMPLETED when completed chunks cover the whole load
// (a chunk lost with its node and sent again does not fail the job);
// otherwise TIMEOUT if a chunk was killed for overrunning, else the first
// failed chunk's state (FAILED with its exit, or NODE_FAIL), else DEADLINE
// (the policy gave up the rest of the load: its deadline could no longer
// be guaranteed).
func (c *Controller) endDivisibleLocked(ctx context.Context, j *job) error {
	st, reason, exit, sig := api.StateDeadline, "DeadLine", 0, 0
	failed := false
	for _, s := range j.Steps {
		switch {
		case s.State == api.StateTimeout && st != api.StateTimeout:
			// Killed for running past its planned end (or its time limit):
			// the job timed out, as Slurm says of a job past its time.
			st, reason, exit, sig, failed = api.StateTimeout, "TimeLimit", s.ExitCode, s.Signal, true
		case s.State == api.StateNodeFail && !failed:
			st, reason, exit, sig, failed = api.StateNodeFail, "NodeDown", s.ExitCode, s.Signal, true
		case s.State != api.StateCompleted && !failed:
			st, reason, exit, sig, failed = api.StateFailed, "NonZeroExitCode", s.ExitCode, s.Signal, true
		}
	}
	if coveredLoad(j.Steps) >= j.Spec.Load*(1-1e-9) {
		st, reason, exit, sig = api.StateCompleted, "None", 0, 0
	}
	if j.cancelRequested || j.CancelledBy >= 0 {
		st, reason = api.StateCancelled, "None"
	}
	now := c.now().Unix()
	if err := c.st.Append(ctx, store.Event{JobID: j.ID, Time: now, Kind: store.KindEnd, State: st,
		Reason: reason, ExitCode: exit, Signal: sig}); err != nil {
		return err
	}
	j.State, j.Reason, j.ExitCode, j.Signal, j.EndTime = st, reason, exit, sig, now
	return nil
}

// coveredLoad is how far from offset 0 the completed chunks cover the load
// without a gap.
func coveredLoad(steps []api.Step) float64 {
	var done []api.Step
	for _, s := range steps {
		if s.State == api.StateCompleted {
			done = append(done, s)
		}
	}
	slices.SortFunc(done, func(a, b api.Step) int { return cmp.Compare(a.Offset, b.Offset) })
	end := 0.0
	for _, s := range done {
		if s.Offset > end+1e-9*max(1, end) {
			break
		}
		end = max(end, s.Offset+s.Size)
	}
	return end
}

// recoverDivisible re-attaches a divisible job that was running when horad
// stopped, chunk by chunk from the node-side state: a chunk still running is
// watched again and holds its node; one that ended meanwhile is recorded
// with its real exit status; one whose start was recorded but which never
// reached its node is recorded NODE_FAIL and handed to the Engine as a lost
// chunk (its range is run again if the job can still be guaranteed). The
// Engine then gets the job with its running chunks and the load already
// handed out, and the dlt policy admits the rest anew (ChunkRestorer). What
// the Engine answers the restore is returned, for recovery to carry out once
// every job is restored (as for the other restores).
func (c *Controller) recoverDivisible(ctx context.Context, j *job, onNode map[nodes.StepKey]nodes.Status, now float64) ([]scheduler.Action, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addJob(j)
	j.launched = true
	j.chunks = map[int]string{}
	var running []scheduler.RestoredChunk
	done, next := 0.0, 0
	for _, st := range slices.Clone(j.Steps) {
		next = max(next, st.Index+1)
		done = max(done, st.Offset+st.Size)
		if st.State != api.StateRunning {
			continue
		}
		key := stepKey(j, st.Index)
		s, ok := onNode[key]
		switch {
		case ok && s.State == nodes.StepRunning:
			j.chunks[st.Index] = st.Node
			running = append(running, scheduler.RestoredChunk{Step: st.Index, Node: st.Node,
				Offset: st.Offset, Size: st.Size, Start: float64(st.StartTime)})
			c.log.Info("re-attached running chunk", "job", j.ID, "step", st.Index, "node", st.Node)
			continue
		case !ok || (s.State == nodes.StepLost && s.Pid == 0):
			// Nothing of it ran: like a batch step lost before its process
			// started (requeued), its range is run again if the job can
			// still be guaranteed; the step itself stays NODE_FAIL.
			s = nodes.Status{Key: key, Node: st.Node, State: nodes.StepLost, ExitCode: 1,
				Err: "the chunk never started (horad stopped while launching it)"}
			running = append(running, scheduler.RestoredChunk{Step: st.Index, Node: st.Node,
				Offset: st.Offset, Size: st.Size, Lost: true})
			c.log.Info("chunk never started before the restart: its range is planned again", "job", j.ID, "step", st.Index, "node", st.Node)
		}
		if _, err := c.recordStepEndLocked(ctx, j, s); err != nil {
			return nil, err
		}
		if ok {
			c.forgetStep(s.Node, key)
		}
	}
	live := len(j.chunks) // chunks still running; running also has the lost ones
	if live == 0 && (len(running) == 0 && done >= j.Spec.Load*(1-1e-9) || j.cancelRequested || j.CancelledBy >= 0) {
		return nil, c.endDivisibleLocked(ctx, j)
	}
	return c.eng.Handle(scheduler.Restore{Now: now, Job: c.schedJob(j), Running: true, Started: float64(j.StartTime),
		Chunks: running, Done: done, NextStep: next}), nil
}

// markOverrunLocked records that the dlt policy kills a chunk that runs past
// its planned end because its node is needed (dlt-feedback §3.2: an overrun
// may not break an admitted deadline nor block an admission). The chunk
// ends TIMEOUT and its job TIMEOUT with reason TimeLimit, so the user sees
// why. Caller holds c.mu.
func (c *Controller) markOverrunLocked(j *job, step int) {
	if j.overrun == nil {
		j.overrun = map[int]bool{}
	}
	j.overrun[step] = true
	c.log.Warn("killing an overrunning chunk: its node is needed for a guaranteed deadline", "job", j.ID, "step", step, "node", j.chunks[step])
}
