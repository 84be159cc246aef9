package controller

import (
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"hora/api"
)

func ptr[T any](v T) *T { return &v }

// scontrol update JobId=: Slurm's owner and operator rules and texts; a
// refused update changes nothing; an accepted one is durable (it survives a
// restart) and reaches the Engine (a dependency added makes the job wait,
// a cycle is refused).
func TestUpdateJobRules(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	user := &Caller{UID: 65534, GID: 65534, User: "nobody"}
	held := f.spec("true")
	held.Hold = true
	held.TimeLimit = 600
	a, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: held})
	if err != nil {
		t.Fatal(err)
	}
	b := held
	b.Hold = false
	b.Dependency = "afterok:" + itoa(a.JobID)
	br, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: b})
	if err != nil {
		t.Fatal(err)
	}
	one := func(who *Caller, req api.JobUpdateRequest) string {
		t.Helper()
		r := c.updateJobs(t.Context(), who, req)
		if len(r.Results) != 1 {
			t.Fatalf("%d results", len(r.Results))
		}
		return r.Results[0].Error
	}
	ids := []int64{a.JobID}
	cases := []struct {
		who  *Caller
		req  api.JobUpdateRequest
		want string
	}{
		{user, api.JobUpdateRequest{IDs: ids, TimeLimit: ptr(int64(60))}, "Invalid user id"},
		{root, api.JobUpdateRequest{IDs: ids, Partition: ptr("nope")}, "Invalid partition name specified"},
		{root, api.JobUpdateRequest{IDs: ids, Dependency: ptr("afterok:abc")}, "Job dependency problem"},
		{root, api.JobUpdateRequest{IDs: ids, Dependency: ptr("afterok:" + itoa(a.JobID))}, "Job dependency problem"},
		{root, api.JobUpdateRequest{IDs: ids, Dependency: ptr("afterany:" + itoa(br.JobID))}, "Circular job dependency"},
		{root, api.JobUpdateRequest{IDs: ids, Features: ptr("gpu")}, "Invalid feature specification"},
		{root, api.JobUpdateRequest{IDs: []int64{99999}, Comment: ptr("x")}, "Invalid job id specified"},
	}
	for _, tc := range cases {
		if got := one(tc.who, tc.req); got != tc.want {
			t.Errorf("%+v by %s: %q, want %q", tc.req, tc.who.User, got, tc.want)
		}
	}
	evs, _ := f.st.Events(t.Context(), a.JobID)
	if len(evs) != 1 {
		t.Fatalf("refused updates wrote %d events", len(evs)-1)
	}

	if got := one(root, api.JobUpdateRequest{IDs: ids, TimeLimit: ptr(int64(120)), Name: ptr("renamed"),
		Comment: ptr("c"), Nice: ptr(5), Priority: ptr(int64(77))}); got != "" {
		t.Fatal(got)
	}
	// Job b loses its dependency: it no longer waits on a.
	if got := one(root, api.JobUpdateRequest{IDs: []int64{br.JobID}, Dependency: ptr("")}); got != "" {
		t.Fatal(got)
	}
	c.mu.Lock()
	reason := c.eng.Reason(schedID(br.JobID))
	c.mu.Unlock()
	if reason == "Dependency" {
		t.Fatal("cleared dependency still waits")
	}
	c2 := f.controller(t)
	c2.mu.Lock()
	defer c2.mu.Unlock()
	got := c2.jobs[a.JobID]
	if got.Spec.TimeLimit != 120 || got.Spec.Name != "renamed" || got.Spec.Comment != "c" || got.Spec.Nice != 5 || got.Priority != 77 {
		t.Fatalf("after restart: limit %d name %q comment %q nice %d priority %d", got.Spec.TimeLimit,
			got.Spec.Name, got.Spec.Comment, got.Spec.Nice, got.Priority)
	}
	if lim, _ := c2.eng.Job(schedID(a.JobID)); lim.TimeLimit != 120 {
		t.Fatalf("the Engine has limit %v", lim.TimeLimit)
	}
}

// scontrol requeuehold: the job comes back pending and held (durably: the
// hold travels in the requeue events), and runs again once released.
func TestRequeueHold(t *testing.T) {
	f := newFixture(t)
	f.cfg.KillWaitS = 1
	c := f.controller(t)
	id := runUntilLaunched(t, c, f.spec("sleep 60"))
	if r := c.requeueJobs(t.Context(), root, []int64{id}, true); r.Results[0].Error != "" {
		t.Fatal(r.Results[0].Error)
	}
	j := waitStore(t, f, c, id, "pending and held", func(j api.Job) bool {
		return j.State == api.StatePending && j.Restarts == 1
	})
	if j.Reason != "JobHeldAdmin" {
		t.Fatalf("requeued with reason %q, want JobHeldAdmin", j.Reason)
	}
	c.mu.Lock()
	reason := c.eng.Reason(schedID(id))
	c.mu.Unlock()
	if reason != "JobHeldUser" && reason != "JobHeldAdmin" {
		t.Fatalf("the Engine holds it with reason %q", reason)
	}
}

// sbatch --signal=B:USR1@50 on a 60 s job: the job's script gets SIGUSR1
// about 10 s after it starts, before its limit, and can end cleanly.
func TestSignalBeforeTimeLimit(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	got := filepath.Join(f.dir, "got-usr1")
	spec := f.spec("trap 'touch " + got + "; exit 0' USR1\nwhile :; do sleep 0.1; done")
	spec.TimeLimit, spec.Signal = 60, "B:USR1@50"
	resp, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	runFor(t, c, "the job ended", func() bool { return c.finishedLocked(resp.JobID) })
	c.mu.Lock()
	j := c.jobs[resp.JobID]
	c.mu.Unlock()
	if _, err := os.Stat(got); err != nil || j.State != api.StateCompleted {
		t.Fatalf("job %s, trap file: %v", j.State, err)
	}
}

// A cancelled job whose processes ignore TERM shows COMPLETING in the
// listings until KillWait's KILL ends it, then CANCELLED.
func TestCompletingWhileKilled(t *testing.T) {
	f := newFixture(t)
	f.cfg.KillWaitS = 3
	c := f.controller(t)
	spec := f.spec("trap '' TERM\nwhile :; do sleep 0.1; done")
	id := runUntilLaunched(t, c, spec)
	listed := func() api.JobState {
		r := httptest.NewRequest("GET", api.PathJobs+"?all=1&id="+itoa(id), nil)
		out, err := c.hJobs(t.Context(), root, r)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*api.JobsResponse).Jobs[0].State
	}
	if st := listed(); st != api.StateRunning {
		t.Fatalf("before the cancel: %s", st)
	}
	c.cancel(t.Context(), root, api.CancelRequest{IDs: []int64{id}})
	if st := listed(); st != api.StateCompleting {
		t.Fatalf("while its processes are being killed: %s, want COMPLETING", st)
	}
	nr, err := c.hNodes(t.Context(), root, httptest.NewRequest("GET", api.PathNodes, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nr.(*api.NodesResponse).Nodes {
		if slices.Contains(n.Jobs, id) && n.State != "completing" {
			t.Fatalf("node %s of the completing job is %q, want completing (sinfo comp)", n.Name, n.State)
		}
	}
	runFor(t, c, "the job ended", func() bool { return c.finishedLocked(id) })
	if st := listed(); st != api.StateCancelled {
		t.Fatalf("after: %s", st)
	}
}

// scontrol update ArrayTaskThrottle= takes effect at once and survives a
// restart (it is written into the tasks' --array).
func TestArrayThrottleUpdateDurable(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	spec := f.spec("true")
	spec.Hold, spec.Array = true, "0-5%1"
	resp, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	r := c.updateJobs(t.Context(), root, api.JobUpdateRequest{IDs: []int64{resp.JobID}, ArrayThrottle: ptr(3)})
	if len(r.Results) != 6 {
		t.Fatalf("%d results, want one per task", len(r.Results))
	}
	for _, res := range r.Results {
		if res.Error != "" {
			t.Fatal(res.Error)
		}
	}
	c2 := f.controller(t)
	c2.mu.Lock()
	defer c2.mu.Unlock()
	if a := c2.arrays[resp.JobID]; a == nil || a.throttle != 3 {
		t.Fatalf("after restart the throttle is %+v, want 3", a)
	}
}

// scontrol top with Slurm 22.05's pool rule: the jobs named take, in
// order, the highest priorities among them and their owner's pending jobs
// of the partition that rank above the lowest of them; a job of another
// user is left alone; a non-operator is refused and nothing changes.
func TestTopJobs(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	user := &Caller{UID: 65534, GID: 65534, User: "nobody"}
	later := f.spec("true")
	later.Begin = time.Now().Add(time.Hour).Unix() // pending, not held
	var ids []int64
	for i := 0; i < 4; i++ {
		r, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: later})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.JobID)
	}
	other, err := c.submit(t.Context(), user, api.SubmitRequest{Spec: later})
	if err != nil {
		t.Fatal(err)
	}
	state := func() map[int64][2]int64 {
		c.mu.Lock()
		defer c.mu.Unlock()
		out := map[int64][2]int64{}
		for _, id := range append(slices.Clone(ids), other.JobID) {
			j := c.jobs[id]
			out[id] = [2]int64{j.Priority, int64(j.Spec.Nice)}
		}
		return out
	}
	before := state()
	if r := c.topJobs(t.Context(), user, []int64{other.JobID}); len(r.Results) != 1 || r.Results[0].Error != "Access/permission denied" {
		t.Fatalf("top by a user: %+v", r.Results)
	}
	if got := state(); !maps.Equal(got, before) {
		t.Fatalf("a refused top changed priorities: %v, was %v", got, before)
	}
	// top ids[2], then ids[1] (and the other user's job, left alone).
	if r := c.topJobs(t.Context(), root, []int64{ids[2], ids[1], other.JobID}); len(r.Results) != 0 {
		t.Fatalf("top: %+v", r.Results)
	}
	after := state()
	p := func(id int64) int64 { return before[id][0] }
	want := map[int64][2]int64{
		ids[2]:      {p(ids[0]), p(ids[2]) - p(ids[0])}, // first: the highest of the pool, nice −2
		ids[1]:      {p(ids[1]), 0},                     // second: its own place
		ids[0]:      {p(ids[2]), p(ids[0]) - p(ids[2])}, // moved below both, nice +2
		ids[3]:      before[ids[3]],                     // below the lowest named: untouched
		other.JobID: before[other.JobID],
	}
	if !maps.Equal(after, want) {
		t.Fatalf("after top: %v, want %v", after, want)
	}
}
