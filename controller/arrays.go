package controller

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"hora/api"
	"hora/sbatch"
	"hora/scheduler"
)

// Job arrays and dependencies, horad's side (docs/jobs.md). Each task of an
// array is a job of its own with consecutive ids; the array's id is its first
// task's id. The Engine holds the throttle and resolves dependencies
// (scheduler/gate.go); horad turns Slurm's spellings into the Engine's terms
// and back.

// arrayInfo is what horad keeps of one array: its tasks' job ids in task
// order and the SLURM_ARRAY_TASK_* values every task sees.
type arrayInfo struct {
	ids            []int64 // job ids, ascending (= task order)
	count          int
	min, max, step int64
	throttle       int

	// The array's own mail (mail.go): whether its begin message went out,
	// and its tasks' exits for the end message.
	beganMailed      bool
	ended            int
	minExit, maxExit int
	maxSignal        int
	anyFailed        bool
}

func newArrayInfo(tasks []int64, throttle int) *arrayInfo {
	a := &arrayInfo{count: len(tasks), step: sbatch.ArrayStep(tasks), throttle: throttle}
	if len(tasks) > 0 {
		a.min, a.max = tasks[0], tasks[len(tasks)-1]
	}
	return a
}

// noteArrayLocked records a task of an array in c.arrays (submit, recovery).
func (c *Controller) noteArrayLocked(j *job) {
	if j.ArrayJobID == 0 {
		return
	}
	a := c.arrays[j.ArrayJobID]
	if a == nil {
		// Recovery: the parsed --array gives the values every task sees.
		arr, _ := sbatch.ParseArray(j.Spec.Array, 1<<31)
		a = newArrayInfo(arr.Tasks, arr.Throttle)
		c.arrays[j.ArrayJobID] = a
	}
	if i, found := slices.BinarySearch(a.ids, j.ID); !found {
		a.ids = slices.Insert(a.ids, i, j.ID)
		a.beganMailed = a.beganMailed || j.StartTime != 0
		if j.State.Finished() {
			a.noteEnd(j) // recovery
		}
	}
	if !j.State.Finished() {
		// scontrol update ArrayTaskThrottle= rewrote the live tasks' --array.
		a.throttle = throttleOf(j.Spec.Array)
	}
}

// throttleOf is the %N of an --array value (0 = none).
func throttleOf(array string) int {
	_, t, ok := strings.Cut(array, "%")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(t)
	return n
}

// withThrottle rewrites the %N of an --array value.
func withThrottle(array string, n int) string {
	list, _, _ := strings.Cut(array, "%")
	if n == 0 {
		return list
	}
	return list + "%" + strconv.Itoa(n)
}

// taskJobLocked finds the job of task `task` of array `array`, or nil.
func (c *Controller) taskJobLocked(array, task int64) *job {
	a := c.arrays[array]
	if a == nil {
		return nil
	}
	i, found := slices.BinarySearchFunc(a.ids, task, func(id, t int64) int {
		if j := c.jobs[id]; j != nil {
			return int(j.ArrayTaskID - t)
		}
		return -1
	})
	if !found {
		return nil
	}
	return c.jobs[a.ids[i]]
}

// expandIDs turns the ids and task selectors of a request into job ids: an
// id naming an array stands for its live tasks (all of them when none is
// live, so that the answer still says why), a selector for the tasks it
// names that exist. A selector that names none stands for no job: it gives
// noSuchTask(array) back, an id no job has, whose answer is "Invalid job id
// specified" — never the array's id, which is also the id of its first
// task's job (`scancel 7_99` must not cancel task 7_1).
func (c *Controller) expandIDs(ids []int64, sels []api.TaskSel) []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int64
	for _, id := range ids {
		a := c.arrays[id]
		if a == nil {
			out = append(out, id)
			continue
		}
		n := len(out)
		for _, t := range a.ids {
			if j := c.jobs[t]; j != nil && !j.State.Finished() {
				out = append(out, t)
			}
		}
		if len(out) == n {
			out = append(out, a.ids...)
		}
	}
	for _, s := range sels {
		n := len(out)
		for _, t := range s.Tasks {
			if j := c.taskJobLocked(s.Array, t); j != nil {
				out = append(out, j.ID)
			}
		}
		if len(out) == n {
			out = append(out, noSuchTask(s.Array))
		}
	}
	return out
}

// noSuchTask is the id a task selector that names no existing task of
// array stands for: negative, so no job has it, and the array's id can be
// read back from it (-noSuchTask(a) == a) to name it in a message.
func noSuchTask(array int64) int64 { return -array }

// arrayEnv is the SLURM_ARRAY_* environment of a task (none for a job).
func (c *Controller) arrayEnv(j *job, set func(k, v string)) {
	a := c.arrays[j.ArrayJobID]
	if j.ArrayJobID == 0 || a == nil {
		return
	}
	set("SLURM_ARRAY_JOB_ID", strconv.FormatInt(j.ArrayJobID, 10))
	set("SLURM_ARRAY_TASK_ID", strconv.FormatInt(j.ArrayTaskID, 10))
	set("SLURM_ARRAY_TASK_COUNT", strconv.Itoa(a.count))
	set("SLURM_ARRAY_TASK_MAX", strconv.FormatInt(a.max, 10))
	set("SLURM_ARRAY_TASK_MIN", strconv.FormatInt(a.min, 10))
	set("SLURM_ARRAY_TASK_STEP", strconv.FormatInt(a.step, 10))
}

// killOnInvalidDep resolves --kill-on-invalid-dep against the config default.
func (c *Controller) killOnInvalidDep(s *api.JobSpec) bool {
	switch strings.ToLower(s.KillOnInvalidDep) {
	case "yes", "kill":
		return true
	case "no", "nokill":
		return false
	}
	return c.cfg.KillOnInvalidDep
}

// resolveDepLocked turns a parsed --dependency into the Engine's terms for
// the job (task index `task` of its array, -1 for a plain job). Terms on
// jobs horad no longer remembers (finished longer than MinJobAge ago) are
// dropped: the dependency on them is lifted, as Slurm lifts one on a purged
// job. An id horad never allocated is an error (docs/jobs.md: Slurm would
// accept it and lift it; hora refuses what is surely a mistake). The shown
// terms are aligned with the Engine's.
func (c *Controller) resolveDepLocked(d sbatch.Dependency, task int64) (*scheduler.Dependency, []sbatch.DepTerm, bool) {
	if d.Empty() {
		return nil, nil, true
	}
	out := &scheduler.Dependency{Any: d.Any}
	var shown []sbatch.DepTerm
	for _, t := range d.Terms {
		if t.Kind == sbatch.DepSingleton {
			out.Terms = append(out.Terms, scheduler.DepTerm{Kind: scheduler.DepSingleton})
			shown = append(shown, t)
			continue
		}
		if t.JobID >= c.nextID {
			return nil, nil, false
		}
		kind := map[string]scheduler.DepKind{
			sbatch.DepAfter: scheduler.DepAfter, sbatch.DepAfterAny: scheduler.DepAfterAny,
			sbatch.DepAfterOK: scheduler.DepAfterOK, sbatch.DepAfterNotOK: scheduler.DepAfterNotOK,
			sbatch.DepAfterCorr: scheduler.DepAfterOK,
		}[t.Kind]
		var targets []scheduler.JobID
		a := c.arrays[t.JobID]
		switch {
		case t.Kind == sbatch.DepAfterCorr && a != nil && task >= 0:
			// The task of the same index in the other array.
			if tj := c.taskJobLocked(t.JobID, task); tj != nil {
				targets = append(targets, scheduler.JobID(tj.ID))
			}
			t.Task = sbatch.AllTasks
		case t.Task >= 0:
			if tj := c.taskJobLocked(t.JobID, t.Task); tj != nil {
				targets = append(targets, scheduler.JobID(tj.ID))
			}
		case a != nil:
			for _, id := range a.ids {
				targets = append(targets, scheduler.JobID(id))
			}
			t.Task = sbatch.AllTasks
		default:
			if _, known := c.jobs[t.JobID]; known {
				targets = append(targets, scheduler.JobID(t.JobID))
			}
		}
		if len(targets) == 0 {
			continue // lifted
		}
		out.Terms = append(out.Terms, scheduler.DepTerm{Kind: kind, Targets: targets, Delay: float64(t.Minutes) * 60})
		shown = append(shown, t)
	}
	if len(out.Terms) == 0 {
		return nil, nil, true
	}
	return out, shown, true
}

// dependencyText is what is left of a pending job's dependency, as squeue
// %E and scontrol show it: unfulfilled and failed terms, "" for none.
func (c *Controller) dependencyText(j *job) string {
	if j.State != api.StatePending || len(j.depShown) == 0 {
		return ""
	}
	states := c.eng.DependencyStates(schedID(j.ID))
	if len(states) != len(j.depShown) {
		return ""
	}
	var b strings.Builder
	for k, t := range j.depShown {
		var tag string
		switch states[k] {
		case scheduler.DepSatisfied:
			continue
		case scheduler.DepFailed:
			tag = "(failed)"
		default:
			tag = "(unfulfilled)"
		}
		if b.Len() > 0 {
			b.WriteString(j.depSep)
		}
		b.WriteString(t.TermText())
		b.WriteString(tag)
	}
	return b.String()
}

// prepareDepLocked parses and resolves the job's --dependency into j.dep.
func (c *Controller) prepareDepLocked(j *job) error {
	if j.Spec.Dependency == "" {
		j.dep, j.depShown = nil, nil
		return nil
	}
	d, ok := sbatch.ParseDependency(j.Spec.Dependency)
	if !ok {
		return &api.Error{Message: sbatch.MsgDependency, Code: api.CodeBadRequest}
	}
	task := int64(-1)
	if j.ArrayJobID != 0 {
		task = j.ArrayTaskID
	}
	dep, shown, ok := c.resolveDepLocked(d, task)
	if !ok {
		return &api.Error{Message: sbatch.MsgDependency, Code: api.CodeBadRequest}
	}
	j.dep, j.depShown, j.depSep = dep, shown, d.Separator()
	return nil
}

// submitArrayLocked creates every task of an array: the Engine admits them
// in one batch, the store records them in one transaction, and only then
// does the client hear of them. Nothing is kept when either refuses.
func (c *Controller) submitArrayLocked(ctx context.Context, proto *job, arr sbatch.Array) (*api.SubmitResponse, error) {
	base := c.nextID
	jobs := make([]*job, len(arr.Tasks))
	evs := make([]scheduler.Event, len(arr.Tasks))
	nowSec := c.nowSec()
	info := newArrayInfo(arr.Tasks, arr.Throttle)
	for k, task := range arr.Tasks {
		j := &job{Job: proto.Job}
		j.ID, j.ArrayJobID, j.ArrayTaskID = base+int64(k), base, task
		j.Priority = basePriority(j.ID)
		jobs[k] = j
	}
	info.ids = make([]int64, len(jobs))
	for k := range jobs {
		info.ids[k] = jobs[k].ID
	}
	// schedJob reads the throttle from c.arrays; the entry goes again if
	// the array is refused.
	c.arrays[base] = info
	kept := false
	defer func() {
		if !kept {
			delete(c.arrays, base)
		}
	}()
	for _, j := range jobs {
		if err := c.prepareDepLocked(j); err != nil {
			return nil, err
		}
		evs[j.ID-base] = scheduler.Submit{Now: nowSec, Job: c.schedJob(j)}
	}
	acts, err := c.eng.HandleBatch(nowSec, evs)
	if err != nil {
		return nil, &api.Error{Message: err.Error(), Code: api.CodeInternal}
	}
	var refusal error
	admitted := map[scheduler.JobID]bool{}
	for _, a := range acts {
		switch a := a.(type) {
		case scheduler.Reject:
			if refusal == nil {
				refusal = admissionError(a.Err)
			}
		case scheduler.Admit:
			admitted[a.ID] = true
		}
	}
	takeBack := func() { c.takeBackLocked(ctx, admitted, acts) }
	if refusal != nil {
		takeBack()
		return nil, refusal
	}
	recs := make([]*api.Job, len(jobs))
	for k, j := range jobs {
		recs[k] = &j.Job
	}
	if err := c.st.SubmitArray(ctx, recs); err != nil {
		takeBack()
		return nil, &api.Error{Message: "Unable to record the job: " + err.Error(), Code: api.CodeInternal}
	}
	c.nextID = base + int64(len(jobs))
	kept = true
	for _, j := range jobs {
		c.addJob(j)
	}
	c.applyLocked(ctx, acts)
	return &api.SubmitResponse{JobID: base, Partition: c.partitionOf(proto.Spec.Partition)}, nil
}

// endedEvent is the Engine's record of a finished job, for dependencies on
// it after a restart.
func endedEvent(now float64, j *job) scheduler.Ended {
	return scheduler.Ended{Now: now, ID: schedID(j.ID), OK: j.State == api.StateCompleted,
		StartAt: float64(j.StartTime), EndAt: float64(j.EndTime)}
}

// pendingRestoreOrder orders pending jobs so that each comes after the
// pending jobs its dependency names (scontrol update can point a job at a
// later one); the dependency graph has no cycle, which horad refuses.
func pendingRestoreOrder(pending []*job) []*job {
	index := map[int64]int{}
	for i, j := range pending {
		index[j.ID] = i
	}
	done := make([]bool, len(pending))
	out := make([]*job, 0, len(pending))
	var visit func(i int, depth int)
	visit = func(i int, depth int) {
		if done[i] || depth > len(pending) {
			return
		}
		done[i] = true
		if d := pending[i].dep; d != nil {
			for _, t := range d.Terms {
				for _, id := range t.Targets {
					if k, ok := index[int64(id)]; ok {
						visit(k, depth+1)
					}
				}
			}
		}
		out = append(out, pending[i])
	}
	for i := range pending {
		visit(i, 0)
	}
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
