package api

import (
	"context"
	"strings"
)

// PBSState is a job's PBS state letter (OP qstat.1B "Job states"): Q
// queued, H held, W waiting for its begin (-a) time, R running, S
// suspended, E exiting, and once finished F (OpenPBS) or C (Torque). qstat
// prints it; horad filters by it for qselect (JobFilter.PBSStates).
func PBSState(j *Job, torque bool, now int64) string {
	switch j.State {
	case StatePending:
		switch {
		case j.Reason == "JobHeldUser" || j.Reason == "JobHeldAdmin":
			return "H"
		case j.Spec.Begin > now || j.Reason == "BeginTime":
			return "W"
		}
		return "Q"
	case StateRunning:
		return "R"
	case StateSuspended:
		return "S"
	case StateCompleting:
		return "E"
	}
	if torque {
		return "C"
	}
	return "F"
}

// PBSArrayState is an array's own state letter, from its tasks (at least
// one). OpenPBS: F once every subjob has finished, B once one has begun
// (running, exiting or finished), else the first task's letter (Q, H, W);
// an array is never R or S (OP qselect.1B, "-s": "Job arrays are never in
// states R, S, T, or U"; qstat.1B "B Array job has at least one subjob
// running"). Torque: R while one runs, C when all are complete, else Q (TQ
// array_func.c update_array_statuses).
func PBSArrayState(tasks []*Job, torque bool, now int64) string {
	var queued, running, exiting, expired int
	for _, t := range tasks {
		switch t.State {
		case StatePending:
			queued++
		case StateRunning, StateSuspended:
			running++
		case StateCompleting:
			exiting++
		default:
			expired++
		}
	}
	switch {
	case torque && running+exiting > 0:
		return "R"
	case torque && queued == 0:
		return "C"
	case torque:
		return "Q"
	case queued+running+exiting == 0:
		return "F"
	case running+exiting+expired > 0:
		return "B"
	}
	return PBSState(tasks[0], false, now)
}

// PBSSubjobState is an OpenPBS subjob's letter: its job's, except that a
// finished subjob is X, "the eXited state. Subjobs only" (OP qselect.1B).
func PBSSubjobState(j *Job, now int64) string {
	if j.State.Finished() {
		return "X"
	}
	return PBSState(j, false, now)
}

// How qselect's ids-only listing (PathJobs ids_only) treats array tasks,
// its pbs_arrays parameter. OpenPBS's server looks at an array, never at
// its subjobs, unless qselect -T asks for subjobs, whose states it then
// tests one by one (OP src/server/req_select.c select_job and
// add_select_array_entries); Torque's subjobs are jobs of their own and
// its array templates are never selected (TQ svr_jobfunc.c svr_enquejob
// keeps them out of alljobs).
const (
	// PBSArraysAsJobs: every task by its own letter (Torque).
	PBSArraysAsJobs = ""
	// PBSArraysWhole: an array is selected by its own letter
	// (PBSArrayState) and answered once, by one of its tasks; its
	// finished tasks count while it has not finished (OpenPBS).
	PBSArraysWhole = "array"
	// PBSArraysSubjobs: each task by its subjob letter (PBSSubjobState),
	// the finished ones (X) too while their array has not finished
	// (OpenPBS qselect -T).
	PBSArraysSubjobs = "subjobs"
)

// PBSArraySel applies qselect's array rules (PBSArraysWhole,
// PBSArraysSubjobs) to a listing of jobs; nil (PBSArraysAsJobs) leaves
// every task a job of its own, and its methods then answer as for one.
type PBSArraySel struct {
	mode    string
	now     int64
	tasksOf func(array int64) []*Job // every task of an array still known
	states  map[int64]string         // array id → its letter, computed once a listing
	listed  map[int64]bool           // arrays already answered (PBSArraysWhole)
}

// NewPBSArraySel reads a pbs_arrays value; ok is false for an unknown one.
func NewPBSArraySel(mode string, now int64, tasksOf func(array int64) []*Job) (sel *PBSArraySel, ok bool) {
	switch mode {
	case PBSArraysAsJobs:
		return nil, true
	case PBSArraysWhole, PBSArraysSubjobs:
		return &PBSArraySel{mode: mode, now: now, tasksOf: tasksOf, states: map[int64]string{}, listed: map[int64]bool{}}, true
	}
	return nil, false
}

// arrayState is the letter of an array (F when none of its tasks is known).
func (s *PBSArraySel) arrayState(array int64) string {
	if st, ok := s.states[array]; ok {
		return st
	}
	st := "F"
	if tasks := s.tasksOf(array); len(tasks) > 0 {
		st = PBSArrayState(tasks, false, s.now)
	}
	s.states[array] = st
	return st
}

// Live: j, finished, still counts, as a task of an array that has not.
func (s *PBSArraySel) Live(j *Job) bool {
	return s != nil && j.ArrayJobID != 0 && s.arrayState(j.ArrayJobID) != "F"
}

// State is the letter qselect -s tests for j: its own, its array's, or
// its subjob's.
func (s *PBSArraySel) State(j *Job, torque bool, now int64) string {
	switch {
	case s == nil || j.ArrayJobID == 0:
		return PBSState(j, torque, now)
	case s.mode == PBSArraysWhole:
		return s.arrayState(j.ArrayJobID)
	}
	return PBSSubjobState(j, s.now)
}

// First: j is to be answered; under PBSArraysWhole an array is answered
// once, by the first of its tasks selected.
func (s *PBSArraySel) First(j *Job) bool {
	if s == nil || s.mode != PBSArraysWhole || j.ArrayJobID == 0 {
		return true
	}
	if s.listed[j.ArrayJobID] {
		return false
	}
	s.listed[j.ArrayJobID] = true
	return true
}

// JobIDsResponse answers a job listing asked for ids only (qselect).
type JobIDsResponse struct {
	IDs []int64 `json:"ids"`
	// Tasks names the array and index of the ids that are tasks of a job
	// array (qselect prints <seq>[] or <seq>[i] for them).
	Tasks []ArrayTaskRef `json:"tasks,omitempty"`
}

// ArrayTaskRef is job ID as task Index of array Array.
type ArrayTaskRef struct {
	ID    int64 `json:"id"`
	Array int64 `json:"array"`
	Index int64 `json:"index"`
}

// AddTask notes j in Tasks when it is an array task.
func (r *JobIDsResponse) AddTask(j *Job) {
	if j.ArrayJobID != 0 {
		r.Tasks = append(r.Tasks, ArrayTaskRef{ID: j.ID, Array: j.ArrayJobID, Index: j.ArrayTaskID})
	}
}

// JobIDs lists the ids of the jobs the filter selects, ordered by id, and
// only those whose PBS state letter is in pbsStates ("" = any): qselect
// over 100,000 jobs needs nothing else.
func (c *Client) JobIDs(ctx context.Context, f JobFilter, pbsStates string, torque bool) ([]int64, error) {
	out, err := c.JobIDsTasks(ctx, f, pbsStates, torque)
	return out.IDs, err
}

// JobIDsTasks is JobIDs with the array tasks among the ids named.
func (c *Client) JobIDsTasks(ctx context.Context, f JobFilter, pbsStates string, torque bool) (*JobIDsResponse, error) {
	return c.JobIDsArrays(ctx, f, pbsStates, torque, PBSArraysAsJobs)
}

// JobIDsArrays is JobIDsTasks with array tasks selected as arrays says
// (PBSArraysWhole, PBSArraysSubjobs).
func (c *Client) JobIDsArrays(ctx context.Context, f JobFilter, pbsStates string, torque bool, arrays string) (*JobIDsResponse, error) {
	q := f.Query()
	if arrays != PBSArraysAsJobs {
		q.Set("pbs_arrays", arrays)
	}
	q.Set("ids_only", "1")
	if pbsStates != "" {
		q.Set("pbs_state", pbsStates)
	}
	if torque {
		q.Set("pbs_torque", "1")
	}
	out := &JobIDsResponse{}
	return out, c.do(ctx, "GET", PathJobs+"?"+q.Encode(), nil, out)
}

// validPBSStates checks a pbs_state parameter.
func ValidPBSStates(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("BEFHMQRSTUWXC", c) {
			return false
		}
	}
	return true
}
