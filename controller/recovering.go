package controller

import (
	"context"
	"net/http"

	"hora/api"
	"hora/store"
)

// Listings during recovery (docs/recovery.md). Under socket activation the
// first client's connection starts horad; recovering 100,000 jobs into the
// Engine takes longer than that client should wait for a listing. Until
// Recover ends, the socket answers GET /jobs from the store, the durable
// record, and holds every other request (submissions, changes, steps,
// sacct, sinfo) until the state is rebuilt: nothing is scheduled or
// acknowledged on a half-restored state. READY=1 still follows recovery.

// untilRecovered holds every request but a job listing until Recover ends.
func (c *Controller) untilRecovered(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !c.isRecovered() && !listableDuringRecovery(r) {
			c.heldForRecovery.Add(1)
			defer c.heldForRecovery.Add(-1)
			select {
			case <-c.recovered:
			case <-r.Context().Done():
				return // the client left; horad stops, or is still recovering
			}
		}
		next.ServeHTTP(w, r)
	})
}

// listableDuringRecovery: a listing of active jobs (squeue, scontrol show
// job, qstat, qselect), which the store answers as well as memory. sacct's
// history merges memory into the store's rows and waits.
func listableDuringRecovery(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Path == api.PathJobs && r.URL.Query().Get("history") != "1"
}

// jobsDuringRecovery answers a listing from the store: the jobs recovery
// loads (active, or ended within min_job_age_s), selected by id and owner
// in SQL, then by the listing's own filter. What only the Engine knows is
// not there yet: a pending job shows its stored reason (None, as Slurm
// shows a job no scheduling pass has seen yet) and no planned start, and a
// job that ended while horad was down shows as the store last had it
// (RUNNING) until recovery records its end.
func (c *Controller) jobsDuringRecovery(ctx context.Context, who *Caller, r *http.Request, ids []int64, uids []uint32,
	keep func(*api.Job) bool, full, idsOnly bool) (any, error) {
	// The store's id filter names an array's tasks too.
	stored, err := c.st.Jobs(ctx, store.Filter{Since: c.now().Unix() - int64(c.cfg.MinJobAgeS), IDs: ids, UIDs: uids})
	if err != nil {
		return nil, err
	}
	if idsOnly {
		out := &api.JobIDsResponse{IDs: []int64{}}
		for i := range stored {
			if j := &stored[i]; keep(j) {
				out.IDs = append(out.IDs, j.ID)
				out.AddTask(j)
			}
		}
		return out, nil
	}
	show := func(j *api.Job) api.Job {
		c.presentStored(who, j, full)
		return *j
	}
	if r.URL.Query().Get("brief") == "1" {
		show = func(j *api.Job) api.Job { return api.BriefJob(j) }
	}
	var folded arrayFolder
	if r.URL.Query().Get("fold") == "1" {
		folded = arrayFolder{}
	}
	// Rows are written over the jobs already read (row k ≤ job i): no
	// second copy of 100,000 jobs.
	out := &api.JobsResponse{Jobs: stored[:0]}
	for i := range stored {
		j := &stored[i]
		if !keep(j) {
			continue
		}
		if folded != nil && j.ArrayJobID != 0 && j.State == api.StatePending {
			folded.add(&out.Jobs, j, j.Reason, show)
			continue
		}
		out.Jobs = append(out.Jobs, show(j))
	}
	return out, nil
}

// presentStored is the part of presentIn that needs neither the Engine nor
// the in-memory jobs: all of it for a job read from the store during
// recovery.
func (c *Controller) presentStored(who *Caller, j *api.Job, full bool) {
	switch {
	case j.State == api.StatePending && (j.Reason == "JobHeldUser" || j.Reason == "JobHeldAdmin"):
		j.Priority = 0
	case j.Priority == 0:
		j.Priority = basePriority(j.ID)
	}
	if !full || (who.UID != j.UID && !c.operators[who.UID]) {
		j.Spec.Script, j.Spec.Env = "", nil
	}
}
