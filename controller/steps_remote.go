package controller

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"hora/api"
	"hora/nodes"
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
		cpus, mem := []int(nil), int64(0)
		if a := allocOn(&j.Job, t.Node); a != nil {
			cpus, mem = a.CPUs, a.MemMB
		}
		specs = append(specs, nodes.TaskSpec{Node: t.Node, Key: stepKey(j, s.id),
			Task: t.ID, UID: j.UID, GID: j.GID, WorkDir: t.WorkDir, Env: t.Env, Argv: t.Argv, CPUs: cpus, MemMB: mem})
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
	run := c.taskRunner()
	var wg sync.WaitGroup
	for _, sp := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ex, err := run.RunTask(ctx, sp, frameWriter{sp.Task, 1, send}, frameWriter{sp.Task, 2, send})
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
