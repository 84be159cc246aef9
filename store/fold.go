package store

import (
	"slices"

	"hora/api"
)

// Hold reasons. The controller (and Slurm) tell a held job by its reason, so
// the fold does too: a PENDING job whose reason is one of these is held.
const (
	ReasonHeldUser  = "JobHeldUser"
	ReasonHeldAdmin = "JobHeldAdmin"
	reasonNone      = "None"
)

// Held reports whether a job is held (scontrol hold, sbatch -H).
func Held(j *api.Job) bool {
	return j.State == api.StatePending && isHoldReason(j.Reason)
}

func isHoldReason(r string) bool { return r == ReasonHeldUser || r == ReasonHeldAdmin }

// Fold replays one job's events, oldest first, into the job they describe. It
// is pure, and it is the very function the store uses to maintain the jobs
// table, so Fold(Events(id)) equals Job(id) by construction; the property
// test checks that the SQL round trip keeps it so.
func Fold(events []Event) (api.Job, error) {
	var j api.Job
	for i := range events {
		ev := &events[i]
		if i > 0 && ev.JobID != j.ID {
			return api.Job{}, &EventError{JobID: ev.JobID, Kind: ev.Kind, State: j.State,
				Msg: "belongs to another job than the history it follows"}
		}
		if err := apply(&j, ev); err != nil {
			return api.Job{}, err
		}
	}
	if len(events) == 0 {
		return api.Job{}, ErrNotFound
	}
	canonical(&j)
	return j, nil
}

// apply advances j by one event, or returns an *EventError and leaves j as it
// was: every check comes before the first assignment. A zero j (ID 0) is a
// job that does not exist yet, which only a submit event may follow. apply
// copies what it keeps from ev, so later changes to ev cannot reach j.
func apply(j *api.Job, ev *Event) error {
	bad := func(msg string) error {
		return &EventError{JobID: ev.JobID, Kind: ev.Kind, State: j.State, Msg: msg}
	}
	if ev.Kind == KindSubmit {
		return applySubmit(j, ev, bad)
	}
	if j.ID == 0 {
		return bad("the job has no submit event")
	}
	switch ev.Kind {
	case KindHold:
		r := ev.Reason
		if r == "" {
			r = ReasonHeldUser
		}
		switch {
		case j.State != api.StatePending:
			return bad("only a pending job can be held")
		case !isHoldReason(r):
			return bad("reason " + r + " is not a hold reason")
		}
		j.Reason = r

	case KindRelease:
		r := ev.Reason
		if r == "" {
			r = reasonNone
		}
		switch {
		case j.State != api.StatePending:
			return bad("only a pending job can be released")
		case isHoldReason(r):
			return bad("a release cannot set a hold reason")
		}
		j.Reason = r

	case KindAlter:
		switch {
		case j.State != api.StatePending:
			return bad("only a pending job can be altered")
		case ev.Job == nil:
			return bad("no job")
		case ev.Job.Spec.Partition != j.Spec.Partition:
			return bad("an alter cannot move a job to another partition")
		}
		j.Spec = cloneJob(ev.Job).Spec
		j.EligibleTime = ev.Job.EligibleTime

	case KindReason:
		switch {
		case j.State.Finished():
			return bad("the job has finished")
		case Held(j):
			return bad("the job is held; release it instead")
		case ev.Reason == "":
			return bad("empty reason")
		case isHoldReason(ev.Reason):
			return bad("use a hold event to hold a job")
		}
		j.Reason = ev.Reason

	case KindStart:
		switch {
		case j.State != api.StatePending:
			return bad("only a pending job can start")
		case Held(j):
			return bad("the job is held")
		case len(ev.Nodes) == 0:
			return bad("no nodes")
		}
		j.State, j.Reason = api.StateRunning, reasonNone
		j.Nodes = slices.Clone(ev.Nodes)
		j.Alloc = cloneAlloc(ev.Alloc)
		j.StartTime, j.EndTime = ev.Time, 0
		j.StdoutPath, j.StderrPath = ev.StdoutPath, ev.StderrPath

	case KindStepStart:
		if ev.Step == nil {
			return bad("no step")
		}
		i, found := findStep(j.Steps, ev.Step.Index)
		switch {
		case j.State != api.StateRunning:
			return bad("steps run only in a running job")
		case ev.Step.Index < 0:
			return bad("negative step index")
		case found:
			return bad("step already exists")
		case ev.Step.Size < 0 || ev.Step.Offset < 0:
			return bad("negative offset or size")
		}
		st := api.Step{Index: ev.Step.Index, Node: ev.Step.Node, State: api.StateRunning,
			Offset: ev.Step.Offset, Size: ev.Step.Size, StartTime: ev.Time,
			Name: ev.Step.Name, NTasks: ev.Step.NTasks, CPUs: ev.Step.CPUs, TimeLimit: ev.Step.TimeLimit}
		j.Steps = slices.Insert(j.Steps, i, st)

	case KindStepEnd:
		if ev.Step == nil {
			return bad("no step")
		}
		i, found := findStep(j.Steps, ev.Step.Index)
		state := ev.Step.State
		if state == "" {
			state = api.StateCompleted
			if ev.Step.ExitCode != 0 || ev.Step.Signal != 0 {
				state = api.StateFailed
			}
		}
		switch {
		case !found:
			return bad("no such step")
		case j.Steps[i].State != api.StateRunning:
			return bad("the step has already ended")
		case !state.Finished():
			return bad("state " + string(state) + " is not final")
		}
		s := &j.Steps[i]
		s.State, s.EndTime, s.ExitCode, s.Signal = state, ev.Time, ev.Step.ExitCode, ev.Step.Signal

	case KindCancel:
		switch {
		case j.State.Finished():
			return bad("the job has finished")
		case ev.By < 0:
			return bad("negative uid")
		}
		j.CancelledBy = ev.By

	case KindEnd:
		r := ev.Reason
		if r == "" {
			r = reasonNone
		}
		switch {
		case j.State.Finished():
			return bad("the job has already finished")
		case !ev.State.Finished():
			return bad("state " + string(ev.State) + " is not final")
		}
		j.State, j.Reason, j.EndTime = ev.State, r, ev.Time
		j.ExitCode, j.Signal = ev.ExitCode, ev.Signal
		j.MaxRSSKB, j.TotalCPUMs = ev.MaxRSSKB, ev.TotalCPUMs
		// Chunks still running when the job ends end with it; a job that
		// completed cannot have completed them, so they count as cancelled.
		stepState := ev.State
		if stepState == api.StateCompleted {
			stepState = api.StateCancelled
		}
		for k := range j.Steps {
			if s := &j.Steps[k]; s.State == api.StateRunning {
				s.State, s.EndTime = stepState, ev.Time
			}
		}

	case KindSuspend:
		if j.State != api.StateRunning {
			return bad("only a running job can be suspended")
		}
		j.State, j.SuspendTime = api.StateSuspended, ev.Time

	case KindResume:
		if j.State != api.StateSuspended {
			return bad("only a suspended job can be resumed")
		}
		j.SuspendedSecs += max(0, ev.Time-j.SuspendTime)
		j.State, j.SuspendTime = api.StateRunning, ev.Time

	case KindRequeue:
		r := ev.Reason
		if r == "" {
			r = reasonNone
		}
		if j.State == api.StatePending {
			return bad("the job is already pending")
		}
		// A requeued job starts a new run: what described the last run goes
		// (its events keep it); stdout/stderr paths stay, as in Slurm.
		j.State, j.Reason = api.StatePending, r
		j.Nodes, j.Steps, j.Alloc = nil, nil, nil
		j.MaxRSSKB, j.TotalCPUMs = 0, 0
		j.StartTime, j.EndTime, j.ExitCode, j.Signal = 0, 0, 0, 0
		j.CancelledBy = -1
		j.SuspendTime, j.SuspendedSecs = 0, 0
		j.Restarts++

	case KindUpdate:
		switch {
		case ev.Job == nil:
			return bad("no job")
		case j.State.Finished():
			return bad("the job has finished")
		}
		// The whole spec: an array task gets one of its own here.
		spec := ev.Job.Spec
		spec.Args = slices.Clone(spec.Args)
		spec.Env = slices.Clone(spec.Env)
		j.Spec, j.Priority = spec, ev.Job.Priority

	case KindRequeueRequest, KindNodeFail:
		// Only marks on the running run: the row stays as it is, and
		// RunMarks reads them back for recovery.
		switch {
		case j.State != api.StateRunning && j.State != api.StateSuspended:
			return bad("only a running or suspended job has a run to mark")
		case ev.Kind == KindRequeueRequest && ev.By < 0:
			return bad("negative uid")
		case ev.Kind == KindNodeFail && len(ev.Nodes) != 1:
			return bad("a node failure names exactly one node")
		}

	default:
		return bad("unknown event kind")
	}
	return nil
}

// RunMarks tells, from a job's events oldest first, whether its current run
// (the one after the last start) was asked to requeue or lost a node.
func RunMarks(events []Event) (requeue, nodeFail bool) {
	requeue, nodeFail, _ = RunMarksHold(events)
	return requeue, nodeFail
}

// RunMarksHold is RunMarks with the hold reason a requeue request asked the
// job to come back with (scontrol requeuehold; "" = none).
func RunMarksHold(events []Event) (requeue, nodeFail bool, hold string) {
	for i := range events {
		switch events[i].Kind {
		case KindStart, KindRequeue, KindEnd:
			requeue, nodeFail, hold = false, false, ""
		case KindRequeueRequest:
			requeue, hold = true, events[i].Reason
		case KindNodeFail:
			nodeFail = true
		}
	}
	return requeue, nodeFail, hold
}

func applySubmit(j *api.Job, ev *Event, bad func(string) error) error {
	sj := ev.Job
	switch {
	case j.ID != 0:
		return bad("the job already exists")
	case sj == nil:
		return bad("no job")
	case ev.JobID <= 0 || sj.ID != ev.JobID:
		return bad("job id mismatch")
	case sj.State != api.StatePending:
		return bad("a new job must be PENDING, not " + string(sj.State))
	case sj.StartTime != 0 || sj.EndTime != 0 || len(sj.Nodes) != 0 || len(sj.Steps) != 0 || len(sj.Alloc) != 0:
		return bad("a new job cannot have run")
	case sj.Restarts != 0:
		return bad("a new job cannot have restarts")
	}
	*j = cloneJob(sj)
	return nil
}

// findStep returns where index is, or where it would go, in steps sorted by index.
func findStep(steps []api.Step, index int) (int, bool) {
	return slices.BinarySearchFunc(steps, index, func(s api.Step, i int) int { return s.Index - i })
}

func cloneJob(sj *api.Job) api.Job {
	j := *sj
	j.Nodes = slices.Clone(sj.Nodes)
	j.Steps = slices.Clone(sj.Steps)
	j.Alloc = cloneAlloc(sj.Alloc)
	j.Spec.Args = slices.Clone(sj.Spec.Args)
	j.Spec.Env = slices.Clone(sj.Spec.Env)
	return j
}

// canonical gives empty slices one representation (nil), the one a JSON or
// SQL round trip produces, so that jobs compare equal whichever way they were
// built.
func canonical(j *api.Job) {
	if len(j.Nodes) == 0 {
		j.Nodes = nil
	}
	if len(j.Steps) == 0 {
		j.Steps = nil
	}
	if len(j.Alloc) == 0 {
		j.Alloc = nil
	}
	if len(j.Spec.Args) == 0 {
		j.Spec.Args = nil
	}
	if len(j.Spec.Env) == 0 {
		j.Spec.Env = nil
	}
}

func cloneAlloc(a []api.NodeAlloc) []api.NodeAlloc {
	if len(a) == 0 {
		return nil
	}
	out := make([]api.NodeAlloc, len(a))
	for i, x := range a {
		out[i] = x
		out[i].CPUs = slices.Clone(x.CPUs)
		out[i].GPUs = slices.Clone(x.GPUs)
	}
	return out
}
