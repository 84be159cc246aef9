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
	q := f.Query()
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
