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
}

// JobIDs lists the ids of the jobs the filter selects, ordered by id, and
// only those whose PBS state letter is in pbsStates ("" = any): qselect
// over 100,000 jobs needs nothing else.
func (c *Client) JobIDs(ctx context.Context, f JobFilter, pbsStates string, torque bool) ([]int64, error) {
	q := f.Query()
	q.Set("ids_only", "1")
	if pbsStates != "" {
		q.Set("pbs_state", pbsStates)
	}
	if torque {
		q.Set("pbs_torque", "1")
	}
	out := &JobIDsResponse{}
	err := c.do(ctx, "GET", PathJobs+"?"+q.Encode(), nil, out)
	return out.IDs, err
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
