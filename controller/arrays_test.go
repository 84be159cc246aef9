package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"hora/api"
	"hora/store"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// runFor runs c until cond holds (checked under c.mu) or fails after a
// generous bound.
func runFor(t *testing.T, c *Controller, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitJob(t, c, what, cond)
}

func (c *Controller) finishedLocked(ids ...int64) bool {
	for _, id := range ids {
		if j := c.jobs[id]; j == nil || !j.State.Finished() {
			return false
		}
	}
	return true
}

// An array submit creates every task at once (consecutive ids, one store
// call), throttles them in the Engine, gives each task Slurm's SLURM_ARRAY_*
// variables and %A/%a file names, and a job with afterok on the array runs
// only after every task completed.
func TestArrayThrottleEnvAndDependency(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	spec := f.spec(`echo "$SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_COUNT $SLURM_ARRAY_TASK_MIN $SLURM_ARRAY_TASK_MAX $SLURM_ARRAY_TASK_STEP"`)
	spec.Stdout = filepath.Join(f.dir, "out-%A_%a.txt")
	spec.Array = "1,3,5-9:2%2"
	resp, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	base := resp.JobID
	c.mu.Lock()
	var tasks []int64
	for _, id := range c.arrays[base].ids {
		tasks = append(tasks, c.jobs[id].ArrayTaskID)
	}
	throttled := c.eng.Reason(schedID(base + 4))
	c.mu.Unlock()
	if got := fmt.Sprint(tasks); got != "[1 3 5 7 9]" {
		t.Fatalf("tasks %s, want [1 3 5 7 9]", got)
	}
	if throttled != "JobArrayTaskLimit" {
		t.Fatalf("the fifth task's reason is %q, want JobArrayTaskLimit (throttle 2)", throttled)
	}
	stored, err := f.st.Jobs(t.Context(), store.Filter{})
	if err != nil || len(stored) != 5 {
		t.Fatalf("stored %d jobs (%v), want the 5 tasks", len(stored), err)
	}

	after := f.spec("true")
	after.Dependency = "afterok:" + itoa(base)
	dresp, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: after})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	text := c.dependencyText(c.jobs[dresp.JobID])
	c.mu.Unlock()
	if want := "afterok:" + itoa(base) + "_*(unfulfilled)"; text != want {
		t.Fatalf("dependency shown as %q, want %q", text, want)
	}
	all := []int64{base, base + 1, base + 2, base + 3, base + 4, dresp.JobID}
	runFor(t, c, "array and dependent finished", func() bool { return c.finishedLocked(all...) })
	c.mu.Lock()
	defer c.mu.Unlock()
	var lastEnd int64
	for k, id := range all[:5] {
		j := c.jobs[id]
		if j.State != api.StateCompleted {
			t.Fatalf("task %d: %s", id, j.State)
		}
		lastEnd = max(lastEnd, j.EndTime)
		want := []string{"1", "3", "5", "7", "9"}[k]
		b, err := os.ReadFile(filepath.Join(f.dir, "out-"+itoa(base)+"_"+want+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(b)); got != itoa(base)+" "+want+" 5 1 9 2" {
			t.Fatalf("task %s saw %q", want, got)
		}
	}
	d := c.jobs[dresp.JobID]
	if d.State != api.StateCompleted || d.StartTime < lastEnd {
		t.Fatalf("dependent %s started %d, before the last task ended %d", d.State, d.StartTime, lastEnd)
	}
}

// Bad array and dependency specifications get Slurm's texts and create
// nothing; a dependency on an id never allocated and a cycle are refused.
func TestArrayAndDependencyBadInput(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	held := f.spec("true")
	held.Hold = true
	a, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: held})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ array, dep, want string }{
		{"5-1", "", "Invalid job array specification"},
		{"0-1001", "", "Invalid job array specification"},
		{"", "afterok:abc", "Job dependency problem"},
		{"", "afterok:99999", "Job dependency problem"},
		{"0-3", "afterok:99999", "Job dependency problem"},
	}
	for _, tc := range cases {
		s := f.spec("true")
		s.Array, s.Dependency = tc.array, tc.dep
		_, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: s})
		if err == nil || err.Error() != tc.want {
			t.Errorf("--array=%q --dependency=%q: %v, want %q", tc.array, tc.dep, err, tc.want)
		}
	}
	all, _ := f.st.Jobs(t.Context(), store.Filter{})
	if len(all) != 1 {
		t.Fatalf("%d jobs stored after refused submissions, want only the first", len(all))
	}
	c.mu.Lock()
	next := c.nextID
	c.mu.Unlock()
	if next != a.JobID+1 {
		t.Fatalf("next id %d: a refused submission consumed ids", next)
	}
}

// Dependencies survive a restart of horad: the pending dependent comes back
// waiting (reason Dependency) and runs once its target completes.
func TestDependencySurvivesRestart(t *testing.T) {
	f := newFixture(t)
	c1 := f.controller(t)
	held := f.spec("true")
	held.Hold = true
	a, err := c1.submit(t.Context(), root, api.SubmitRequest{Spec: held})
	if err != nil {
		t.Fatal(err)
	}
	b := f.spec("true")
	b.Dependency = "afterok:" + itoa(a.JobID)
	br, err := c1.submit(t.Context(), root, api.SubmitRequest{Spec: b})
	if err != nil {
		t.Fatal(err)
	}
	c2 := f.controller(t) // the first is simply abandoned, as after kill -9
	c2.mu.Lock()
	reason := c2.eng.Reason(schedID(br.JobID))
	text := c2.dependencyText(c2.jobs[br.JobID])
	c2.mu.Unlock()
	if reason != "Dependency" || text != "afterok:"+itoa(a.JobID)+"(unfulfilled)" {
		t.Fatalf("after restart: reason %q dependency %q", reason, text)
	}
	if r := c2.hold(t.Context(), root, []int64{a.JobID}, false); r.Results[0].Error != "" {
		t.Fatal(r.Results[0].Error)
	}
	runFor(t, c2, "dependent completed", func() bool { return c2.finishedLocked(a.JobID, br.JobID) })
	c2.mu.Lock()
	defer c2.mu.Unlock()
	if st := c2.jobs[br.JobID].State; st != api.StateCompleted {
		t.Fatalf("dependent ended %s", st)
	}
}

// A task selector naming no task of the array acts on nothing and says
// "Invalid job id specified"; it must not fall back to the array's id,
// which is also the job id of its first task.
func TestMissingArrayTaskActsOnNothing(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	spec := f.spec("true")
	spec.Hold, spec.Array = true, "1-3"
	resp, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	sel := []api.TaskSel{{Array: resp.JobID, Tasks: []int64{99}}}
	r, err := c.cancel(t.Context(), root, api.CancelRequest{IDs: c.expandIDs(nil, sel)})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Results) != 1 || r.Results[0].Code != api.CodeInvalidJobID {
		t.Fatalf("cancel of task 99: %+v, want one Invalid job id", r.Results)
	}
	u := c.updateJobs(t.Context(), root, api.JobUpdateRequest{IDs: nil, Tasks: sel, Name: ptr("renamed")})
	if len(u.Results) != 1 || u.Results[0].Error == "" {
		t.Fatalf("update of task 99: %+v, want one error", u.Results)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range c.arrays[resp.JobID].ids {
		j := c.jobs[id]
		if j.State.Finished() || j.Spec.Name == "renamed" {
			t.Errorf("task %d of the array was acted on: %s %q", j.ArrayTaskID, j.State, j.Spec.Name)
		}
	}
}
