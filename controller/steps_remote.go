package controller

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"syscall"

	"hora/api"
	"hora/nodes"
	"hora/sbatch"
	"hora/store"
)

// Remote steps: on SSH nodes srun (on the submit host) cannot fork the
// tasks on the step's nodes, so horad runs them over its pooled SSH
// connections and streams their output back on the request that asked
// (docs/steps.md, "SSH nodes"). The tasks run as the job's owner from the
// record, whatever the request says; only the owner (SO_PEERCRED) or
// root may ask, and only for a step of the job granted and not yet run.

// taskRunner is the executor's task launcher, nil when it has none.
func (c *Controller) taskRunner() nodes.TaskRunner {
	r, _ := c.exec.(nodes.TaskRunner)
	return r
}

func (c *Controller) routeRemoteSteps(mux *http.ServeMux) {
	mux.HandleFunc("POST "+api.PathStepRun, func(w http.ResponseWriter, r *http.Request) {
		fail := func(status int, e *api.Error) { writeJSON(w, status, e) }
		who, err := callerFrom(r.Context())
		if err != nil {
			fail(http.StatusUnauthorized, &api.Error{Message: "Access/permission denied: " + err.Error(), Code: api.CodeAccessDenied})
			return
		}
		var req api.StepRun
		if err := decode(r, &req); err != nil {
			fail(http.StatusBadRequest, &api.Error{Message: err.Error(), Code: api.CodeBadRequest})
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		specs, apiErr := c.claimRemoteStep(who, req, cancel)
		if apiErr != nil {
			status := http.StatusBadRequest
			if apiErr.Code == api.CodeAccessDenied {
				status = http.StatusForbidden
			}
			fail(status, apiErr)
			return
		}
		c.streamTasks(ctx, w, specs)
	})
	mux.HandleFunc("POST "+api.PathStepInput, withBody(c, func(ctx context.Context, who *Caller, req api.StepInput) (any, error) {
		return c.stepInput(who, req)
	}))
	mux.HandleFunc("POST "+api.PathStepSignal, withBody(c, func(ctx context.Context, who *Caller, req api.StepSignal) (any, error) {
		return c.signalStep(who, req)
	}))
}

// remoteStepOf finds a remote step whose tasks run, for the srun that was
// granted it (or root).
func (c *Controller) remoteStepOf(who *Caller, jobID int64, stepID int) (*srunStep, *api.Error) {
	_, s, err := c.runningStep(who, jobID, stepID)
	if err != nil {
		if ae, ok := err.(*api.Error); ok {
			return nil, ae
		}
		return nil, stepErr(api.CodeInternal, err.Error())
	}
	switch {
	case s == nil || !s.remote || !s.ran:
		return nil, stepErr(api.CodeInvalidJobID, "Invalid job id specified")
	case who.PID != s.srunPID && who.UID != 0:
		return nil, stepErr(api.CodeAccessDenied, "Access/permission denied")
	}
	return s, nil
}

// stepInput writes a piece of a remote task's stdin; it waits (outside
// the lock) until the task's session has taken it, so srun's pieces keep
// their order and a task that reads slowly slows srun down, as a pipe does.
func (c *Controller) stepInput(who *Caller, req api.StepInput) (*api.StepEndResponse, error) {
	c.mu.Lock()
	s, apiErr := c.remoteStepOf(who, req.JobID, req.StepID)
	var pw *io.PipeWriter
	var resize chan nodes.Winsize
	if apiErr == nil {
		pw, resize = s.inputs[req.Task], s.resizes[req.Task]
	}
	c.mu.Unlock()
	if apiErr != nil {
		return nil, apiErr
	}
	if req.Resize != nil {
		return resizePty(resize, req)
	}
	if pw == nil {
		return nil, stepErr(api.CodeBadRequest, "task "+strconv.Itoa(req.Task)+" reads no stdin")
	}
	if len(req.Data) > 0 {
		if _, err := pw.Write(req.Data); err != nil {
			// The task has ended: what it did not read is dropped, as a
			// closed pipe drops it.
			return &api.StepEndResponse{State: api.StateCompleted}, nil
		}
	}
	if req.EOF {
		_ = pw.Close()
	}
	return &api.StepEndResponse{State: api.StateRunning}, nil
}

// signalStep forwards a signal to every task of a remote step (srun's
// forwarding of TERM, USR1, ... and of ^C); KILL stops the tasks.
func (c *Controller) signalStep(who *Caller, req api.StepSignal) (*api.StepEndResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, apiErr := c.remoteStepOf(who, req.JobID, req.StepID)
	if apiErr != nil {
		return nil, apiErr
	}
	if req.Signal <= 0 || req.Signal > 64 {
		return nil, stepErr(api.CodeBadRequest, "Invalid signal "+strconv.Itoa(req.Signal))
	}
	if req.Signal == 9 {
		s.stopRun()
	} else {
		s.signalRemote(nodes.Signum(req.Signal))
	}
	return &api.StepEndResponse{State: api.StateRunning}, nil
}

// signalRemote hands a signal to each task's runner; a runner whose queue
// is full (a burst of signals) drops it, as a process may coalesce them.
func (s *srunStep) signalRemote(sig nodes.Signum) {
	for _, ch := range s.signals {
		select {
		case ch <- sig:
		default:
		}
	}
}

// claimRemoteStep checks the request against the live step and the job's
// record and turns it into task specs; the step's tasks are run once.
func (c *Controller) claimRemoteStep(who *Caller, req api.StepRun, stop context.CancelFunc) ([]nodes.TaskSpec, *api.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, s, err := c.runningStep(who, req.JobID, req.StepID)
	if err != nil {
		if ae, ok := err.(*api.Error); ok {
			return nil, ae
		}
		return nil, stepErr(api.CodeInternal, err.Error())
	}
	switch {
	case s == nil || !s.remote:
		return nil, stepErr(api.CodeInvalidJobID, "Invalid job id specified")
	case who.PID != s.srunPID && who.UID != 0:
		// The srun that was granted the step (its pid is watched).
		return nil, stepErr(api.CodeAccessDenied, "Access/permission denied")
	case s.ran:
		return nil, stepErr(api.CodeAlreadyDone, "Job/step already completing or completed")
	case len(req.Tasks) == 0:
		return nil, stepErr(api.CodeBadRequest, "no tasks")
	}
	var specs []nodes.TaskSpec
	seen := map[int]bool{}
	for _, t := range req.Tasks {
		if seen[t.ID] || t.ID < 0 {
			// Task ids name the tasks' scopes: one scope, one task.
			return nil, stepErr(api.CodeBadRequest, "task "+strconv.Itoa(t.ID)+" given twice or negative")
		}
		seen[t.ID] = true
		if !slices.Contains(s.nodes, t.Node) {
			return nil, stepErr(api.CodeInvalidNodeCount, "Requested node configuration is not available")
		}
		cpus, mem, gpus, nodeGPUs := []int(nil), int64(0), []int(nil), 0
		if a := allocOn(&j.Job, t.Node); a != nil {
			// A job holding part of the node: its GPUs there, the
			// others denied (a whole-node job has them all).
			cpus, mem, gpus, nodeGPUs = a.CPUs, a.MemMB, a.GPUs, c.nodeGPUs(t.Node)
		}
		sigs := make(chan nodes.Signum, 8)
		s.signals = append(s.signals, sigs)
		spec := nodes.TaskSpec{Node: t.Node, Key: stepKey(j, s.id),
			Task: t.ID, UID: j.UID, GID: j.GID, WorkDir: t.WorkDir, Env: t.Env, Argv: t.Argv, CPUs: cpus, MemMB: mem,
			StepMemMB: s.memMB, GPUs: gpus, NodeGPUs: nodeGPUs, Signals: sigs}
		if (s.memMB > 0 || len(gpus) < nodeGPUs || len(cpus) > 0) && !slices.Contains(s.memNodes, t.Node) {
			// Its memory, devices and cpuset groups there are read and
			// removed at the end.
			s.memNodes = append(s.memNodes, t.Node)
		}
		if t.Pty != nil {
			if apiErr := checkPty(t.Pty); apiErr != nil {
				return nil, apiErr
			}
			ch := make(chan nodes.Winsize, 1)
			if s.resizes == nil {
				s.resizes = map[int]chan nodes.Winsize{}
			}
			s.resizes[t.ID] = ch
			spec.Pty = &nodes.Pty{Term: t.Pty.Term, Rows: t.Pty.Rows, Cols: t.Pty.Cols, Resize: ch}
		}
		if t.Stdin {
			pr, pw := io.Pipe()
			if s.inputs == nil {
				s.inputs = map[int]*io.PipeWriter{}
			}
			s.inputs[t.ID], spec.Stdin = pw, pr
		}
		specs = append(specs, spec)
	}
	s.ran, s.stopRun = true, stop
	return specs, nil
}

// streamTasks runs every task at once and writes their output and ends as
// StepFrames, one JSON line each, flushed as they come.
func (c *Controller) streamTasks(ctx context.Context, w http.ResponseWriter, specs []nodes.TaskSpec) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	send := func(f api.StepFrame) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(f)
		if fl != nil {
			fl.Flush()
		}
	}
	// Task -1: the tasks are being started, their input is awaited.
	send(api.StepFrame{Task: -1})
	run := c.taskRunner()
	var wg sync.WaitGroup
	for _, sp := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ex, err := run.RunTask(ctx, sp, frameWriter{sp.Task, 1, send}, frameWriter{sp.Task, 2, send})
			if pr, ok := sp.Stdin.(*io.PipeReader); ok {
				// Input for a task that ended fails instead of waiting.
				pr.CloseWithError(io.ErrClosedPipe)
			}
			f := api.StepFrame{Task: sp.Task, End: true, Exit: ex.Code, Signal: int(ex.Signal)}
			if err != nil {
				f.Error = err.Error()
				c.log.Warn("remote step task", "node", sp.Node, "step", sp.Key.Name(), "task", sp.Task, "err", err)
			}
			send(f)
		}()
	}
	wg.Wait()
}

// frameWriter turns a task's stream into StepFrames.
type frameWriter struct {
	task, stream int
	send         func(api.StepFrame)
}

func (f frameWriter) Write(p []byte) (int, error) {
	f.send(api.StepFrame{Task: f.task, Stream: f.stream, Data: p})
	return len(p), nil
}

// checkPty refuses a terminal that sshd could not be given: a type over
// 64 bytes or with other than printable ASCII, a size beyond 16 bits.
func checkPty(p *api.StepPty) *api.Error {
	for _, r := range p.Term {
		if r <= ' ' || r > '~' {
			return stepErr(api.CodeBadRequest, "invalid terminal type "+strconv.Quote(p.Term))
		}
	}
	if len(p.Term) > 64 || p.Rows < 0 || p.Cols < 0 || p.Rows > 0xffff || p.Cols > 0xffff {
		return stepErr(api.CodeBadRequest, "invalid terminal "+strconv.Quote(p.Term)+" "+
			strconv.Itoa(p.Rows)+"x"+strconv.Itoa(p.Cols))
	}
	return nil
}

// resizePty passes a task's new window size to its runner. Only the
// latest size matters: one not yet taken is replaced.
func resizePty(ch chan nodes.Winsize, req api.StepInput) (*api.StepEndResponse, error) {
	if ch == nil {
		return nil, stepErr(api.CodeBadRequest, "task "+strconv.Itoa(req.Task)+" has no pseudo-terminal")
	}
	if apiErr := checkPty(req.Resize); apiErr != nil {
		return nil, apiErr
	}
	ws := nodes.Winsize{Rows: req.Resize.Rows, Cols: req.Resize.Cols}
	for {
		select {
		case ch <- ws:
			return &api.StepEndResponse{State: api.StateRunning}, nil
		default:
			select {
			case <-ch:
			default:
			}
		}
	}
}

// remoteTaskKiller kills the tasks of a remote step whose sessions went
// with a horad that was killed (nodes/ssh).
type remoteTaskKiller interface {
	KillStepTasks(ctx context.Context, node string, key nodes.StepKey) (int, error)
}

// endOrphanedRemoteSteps ends the remote steps of a re-attached job that
// were running when horad stopped. Their tasks' output and input went
// through the old horad's SSH sessions, which died with it, and srun's
// stream with them: the step cannot go on (srun has already reported its
// tasks killed). Each is recorded FAILED, killed (sacct 0:9, what srun
// reports), before any request is served, so srun's own end report finds
// it ended; its tasks, which would otherwise run on until their next
// write, are killed on its nodes and its memory and devices groups
// removed once horad runs (a node that does not answer keeps them;
// logged). docs/resources.md, "Remote steps and horad restarts".
func (c *Controller) endOrphanedRemoteSteps(ctx context.Context, j *job) error {
	killer, ok := c.exec.(remoteTaskKiller)
	if !ok {
		return nil
	}
	for i, st := range j.Steps {
		if st.State != api.StateRunning || st.NTasks == 0 {
			continue // not an srun step (a divisible job's chunk), or ended
		}
		step := st
		step.State, step.EndTime, step.ExitCode, step.Signal = api.StateFailed, c.now().Unix(), 0, int(syscall.SIGKILL)
		if err := c.st.Append(ctx, store.Event{JobID: j.ID, Time: step.EndTime, Kind: store.KindStepEnd, Step: &step}); err != nil {
			return err
		}
		j.Steps[i] = step
		c.log.Warn("remote step ended: its tasks' sessions went with the previous horad", "job", j.ID, "step", st.Index, "nodes", st.Node)
		names, err := sbatch.ExpandHostlist(st.Node)
		if err != nil {
			c.log.Warn("remote step's nodes unreadable: its tasks are left to run out", "job", j.ID, "step", st.Index, "nodes", st.Node, "err", err)
			continue
		}
		key := stepKey(j, st.Index)
		c.forgets.push(func(ctx context.Context) {
			for _, node := range names {
				if _, err := killer.KillStepTasks(ctx, node, key); err != nil && ctx.Err() == nil {
					c.log.Warn("killing the tasks of a remote step", "job", key.Job, "step", key.Step, "node", node, "err", err)
				}
				if me, ok := c.exec.(stepMemoryEnder); ok {
					me.EndStepMemory(node, key)
				}
			}
		})
	}
	return nil
}
