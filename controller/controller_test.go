package controller

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"hora/api"
	"hora/config"
	"hora/nodes/local"
	_ "hora/scheduler/batch"
	"hora/store"
)

// The shepherd is this test binary re-executed, as horad re-executes itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == local.ShepherdCommand {
		os.Exit(local.ShepherdMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

type fixture struct {
	dir string
	st  *store.Store
	cfg *config.Config
}

func newFixture(t testing.TB) *fixture {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	st, err := store.Open(t.Context(), filepath.Join(dir, "hora.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := config.Default()
	cfg.StateDir = dir
	return &fixture{dir: dir, st: st, cfg: cfg}
}

func (f *fixture) controller(t testing.TB) *Controller {
	exec, err := local.New(local.Config{StateDir: filepath.Join(f.dir, "nodes"),
		ShepherdArgv: []string{os.Args[0], local.ShepherdCommand}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Close() })
	c, err := New(t.Context(), Options{Config: f.cfg, Store: f.st, Executor: exec})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var root = &Caller{UID: 0, GID: 0, User: "root"}

func (f *fixture) spec(script string) api.JobSpec {
	return api.JobSpec{Name: "t", Script: "#!/bin/sh\n" + script + "\n", WorkDir: f.dir, Stdout: "/dev/null"}
}

// A start recorded durably whose launch never happened (horad died between
// the two) is requeued on recovery, not lost and not reported as run.
func TestRecoveryRequeuesNeverLaunched(t *testing.T) {
	f := newFixture(t)
	j := &api.Job{ID: 1, Spec: f.spec("sleep 30"), State: api.StatePending}
	j.Spec.Hold = false
	if err := f.st.Submit(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	if err := f.st.Append(t.Context(), store.Event{JobID: 1, Kind: store.KindStart, Nodes: []string{"local1"}}); err != nil {
		t.Fatal(err)
	}
	c := f.controller(t)
	evs, _ := f.st.Events(t.Context(), 1)
	var kinds []store.Kind
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	if len(kinds) < 3 || kinds[2] != store.KindRequeue {
		t.Fatalf("events after recovery: %v, want submit, start, requeue, ...", kinds)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if got := c.jobs[1]; got == nil || got.Restarts != 1 {
		t.Fatalf("job after recovery: %+v", got)
	}
	if c.nextID != 2 {
		t.Fatalf("next id %d", c.nextID)
	}
}

// A job cancelled after its start was recorded but before any launch ends
// CANCELLED on recovery instead of running again.
func TestRecoveryCancelledBeforeLaunch(t *testing.T) {
	f := newFixture(t)
	if err := f.st.Submit(t.Context(), &api.Job{ID: 1, Spec: f.spec("true")}); err != nil {
		t.Fatal(err)
	}
	if err := f.st.Append(t.Context(),
		store.Event{JobID: 1, Kind: store.KindStart, Nodes: []string{"local1"}},
		store.Event{JobID: 1, Kind: store.KindCancel, By: 0}); err != nil {
		t.Fatal(err)
	}
	f.controller(t)
	j, err := f.st.Job(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != api.StateCancelled || j.CancelledBy != 0 {
		t.Fatalf("job after recovery: state %s cancelled by %d", j.State, j.CancelledBy)
	}
}

// A refused submission consumes no id and writes nothing.
func TestRefusedSubmissionLeavesNoTrace(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	s := f.spec("true")
	s.Partition = "nosuch"
	_, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: s})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Message != "Invalid partition name specified" {
		t.Fatalf("bad partition: %v", err)
	}
	s = f.spec("true")
	s.WorkDir = "relative/dir"
	if _, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: s}); err == nil {
		t.Fatal("relative work dir accepted")
	}
	jobs, _ := f.st.Jobs(t.Context(), store.Filter{})
	if len(jobs) != 0 || c.nextID != 1 {
		t.Fatalf("refusals left %d jobs, next id %d", len(jobs), c.nextID)
	}
	resp, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: f.spec("true")})
	if err != nil || resp.JobID != 1 {
		t.Fatalf("first accepted job: %+v %v", resp, err)
	}
}

// Invariant 4: a user touches only their own jobs; root and operators any.
func TestOnlyOwnersAndOperatorsTouchJobs(t *testing.T) {
	f := newFixture(t)
	f.cfg.Operators = []string{"daemon"} // uid 1 on Debian
	c := f.controller(t)
	s := f.spec("true")
	s.Hold = true
	resp, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	other := &Caller{UID: 65534, GID: 65534, User: "nobody"}
	r, _ := c.cancel(t.Context(), other, api.CancelRequest{IDs: []int64{resp.JobID}})
	if len(r.Results) != 1 || r.Results[0].Code != api.CodeAccessDenied {
		t.Fatalf("nobody cancelling root's job: %+v", r.Results)
	}
	if h := c.hold(t.Context(), other, []int64{resp.JobID}, false); h.Results[0].Code != api.CodeAccessDenied {
		t.Fatalf("nobody releasing root's job: %+v", h.Results)
	}
	// filters without ids silently skip other users' jobs
	r, _ = c.cancel(t.Context(), other, api.CancelRequest{Filtered: true, Partitions: []string{"batch"}})
	if len(r.Results) != 0 {
		t.Fatalf("nobody's filtered cancel touched %+v", r.Results)
	}
	op := &Caller{UID: 1, GID: 1, User: "daemon"}
	r, _ = c.cancel(t.Context(), op, api.CancelRequest{IDs: []int64{resp.JobID}})
	if len(r.Results) != 1 || r.Results[0].Error != "" {
		t.Fatalf("operator cancel: %+v", r.Results)
	}
	j, _ := f.st.Job(t.Context(), resp.JobID)
	if j.State != api.StateCancelled || j.CancelledBy != 1 {
		t.Fatalf("after operator cancel: %s by %d", j.State, j.CancelledBy)
	}
}

// A held job does not start; released, it runs and completes, and the
// store's row equals the in-memory job.
func TestHoldReleaseRun(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	s := f.spec("exit 4")
	s.Hold = true
	resp, err := c.submit(ctx, root, api.SubmitRequest{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if j, _ := f.st.Job(ctx, resp.JobID); j.State != api.StatePending || j.Reason != "JobHeldUser" {
		t.Fatalf("held job: %s %s", j.State, j.Reason)
	}
	if r := c.hold(ctx, root, []int64{resp.JobID}, false); r.Results[0].Error != "" {
		t.Fatal(r.Results[0].Error)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		j, _ := f.st.Job(ctx, resp.JobID)
		if j.State.Finished() {
			if j.State != api.StateFailed || j.ExitCode != 4 || j.Reason != "NonZeroExitCode" {
				t.Fatalf("finished job: %s exit %d reason %s", j.State, j.ExitCode, j.Reason)
			}
			c.mu.Lock()
			mem := c.jobs[resp.JobID].Job
			c.mu.Unlock()
			if mem.State != j.State || mem.StartTime != j.StartTime || mem.EndTime != j.EndTime || mem.ExitCode != j.ExitCode {
				t.Fatalf("memory %+v differs from store %+v", mem, j)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job still %s", j.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTasksPerNode(t *testing.T) {
	for _, c := range []struct {
		t, n int
		want string
	}{{1, 1, "1"}, {4, 2, "2(x2)"}, {7, 3, "3,2(x2)"}, {11, 4, "3(x3),2"}} {
		if got := tasksPerNode(c.t, c.n); got != c.want {
			t.Errorf("tasksPerNode(%d,%d) = %q, want %q", c.t, c.n, got, c.want)
		}
	}
}

// The scheduling loop runs when woken or when its timer fires, not again and
// again by waking itself: an idle horad used a whole core, taking the lock
// from every request. A submit still wakes it.
func TestIdleLoopDoesNotSpin(t *testing.T) {
	f := newFixture(t)
	exec, err := local.New(local.Config{StateDir: filepath.Join(f.dir, "nodes"),
		ShepherdArgv: []string{os.Args[0], local.ShepherdCommand}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Close() })
	var mu sync.Mutex
	passes := 0
	count := func() int { mu.Lock(); defer mu.Unlock(); return passes }
	c, err := New(t.Context(), Options{Config: f.cfg, Store: f.st, Executor: exec,
		Heartbeat: func() { mu.Lock(); passes++; mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	s := f.spec("true")
	s.Hold = true
	time.Sleep(100 * time.Millisecond)
	before := count()
	if _, err := c.submit(ctx, root, api.SubmitRequest{Spec: s}); err != nil {
		t.Fatal(err)
	}
	// The wake-up of the submit is served...
	for deadline := time.Now().Add(10 * time.Second); count() == before; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the submit did not wake the scheduling loop")
		}
	}
	// ...and then the loop waits for its one-second timer: over 0.3 s it
	// makes at most a pass or two, where the spinning loop made ~300,000.
	from := count()
	time.Sleep(300 * time.Millisecond)
	if n := count() - from; n > 2 {
		t.Fatalf("%d scheduling passes in 0.3 s of an idle controller, want at most 2", n)
	}
}

// A job's script and environment are listed (full=1) only to its owner and
// to operators: another user sees the job without them.
func TestFullListingOnlyForOwnerAndOperators(t *testing.T) {
	f := newFixture(t)
	f.cfg.Operators = []string{"daemon"} // uid 1 on Debian
	c := f.controller(t)
	s := f.spec("echo secret-script")
	s.Hold = true
	s.Env = []string{"TOKEN=secret-env"}
	if _, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: s}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		who  *Caller
		sees bool
	}{
		{root, true},
		{&Caller{UID: 1, GID: 1, User: "daemon"}, true},
		{&Caller{UID: 65534, GID: 65534, User: "nobody"}, false},
	} {
		for _, q := range []string{"full=1", "full=1&history=1"} {
			r, _ := http.NewRequest("GET", "http://horad"+api.PathJobs+"?"+q, nil)
			v, err := c.hJobs(t.Context(), tc.who, r)
			if err != nil {
				t.Fatal(err)
			}
			jobs := v.(*api.JobsResponse).Jobs
			if len(jobs) != 1 {
				t.Fatalf("%s %s: %d jobs, want 1", tc.who.User, q, len(jobs))
			}
			got := strings.Contains(jobs[0].Spec.Script, "secret-script") && slices.Contains(jobs[0].Spec.Env, "TOKEN=secret-env")
			gotAny := jobs[0].Spec.Script != "" || len(jobs[0].Spec.Env) > 0
			if tc.sees != got || (!tc.sees && gotAny) {
				t.Errorf("%s %s: script %q env %q, want shown=%v", tc.who.User, q, jobs[0].Spec.Script, jobs[0].Spec.Env, tc.sees)
			}
		}
	}
}
