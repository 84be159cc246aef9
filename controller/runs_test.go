package controller

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"syscall"
	"testing"
	"time"

	"pgregory.net/rapid"

	"hora/api"
	"hora/nodes"
	"hora/store"
)

// A fake cluster and executor that run nothing and start no goroutine: the
// test decides when a step ends, when its end reaches the controller
// (handleExit) and when the controller's queued node work and Forgets run
// (runQueue), so every interleaving of a requeued job's old and new runs
// can be played deterministically.

// fakeStep is one node-side step directory.
type fakeStep struct {
	key       nodes.StepKey
	node      string
	launching bool // its directory exists, its shepherd does not hold it yet
	running   bool
	terminate bool // Terminate was asked
	stopped   bool // SIGSTOP was the last of STOP and CONT it got
	signals   []nodes.Signum
	status    nodes.Status
}

// fakeCluster is the node side; it outlives a horad restart (a new
// fakeExec over the same cluster).
type fakeCluster struct {
	steps    map[string]*fakeStep // "<node>/<step name>", as the node names its directories
	launches int
}

func newFakeCluster() *fakeCluster { return &fakeCluster{steps: map[string]*fakeStep{}} }

func stepID(node string, key nodes.StepKey) string { return node + "/" + key.Name() }

// end makes a running step end with st (Key and Node filled in) and
// returns the status the executor would report.
func (cl *fakeCluster) end(t *testing.T, s *fakeStep, st nodes.Status) nodes.Status {
	t.Helper()
	if !s.running {
		t.Fatalf("step %s is not running", stepID(s.node, s.key))
	}
	st.Key, st.Node, st.State = s.key, s.node, nodes.StepExited
	s.running, s.status = false, st
	return st
}

// running returns the running steps of job (-1: of every job), in name order.
func (cl *fakeCluster) running(job int64) []*fakeStep {
	var out []*fakeStep
	for _, id := range cl.ids() {
		if s := cl.steps[id]; s.running && (job < 0 || s.key.Job == job) {
			out = append(out, s)
		}
	}
	return out
}

func (cl *fakeCluster) ids() []string {
	var ids []string
	for id := range cl.steps {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

type fakeExec struct {
	cl *fakeCluster
	// onLaunch runs while a step's directory exists but before its shepherd
	// holds it: what a concurrent goroutine could do during a real Launch.
	onLaunch func(nodes.LaunchSpec)
	exits    chan nodes.Status // never written: the test calls handleExit
}

var _ nodes.Executor = (*fakeExec)(nil)

func newFakeExec(cl *fakeCluster) *fakeExec { return &fakeExec{cl: cl, exits: make(chan nodes.Status)} }

func (f *fakeExec) Launch(ctx context.Context, spec nodes.LaunchSpec) error {
	id := stepID(spec.Node, spec.Key)
	if s := f.cl.steps[id]; s != nil && (s.running || s.launching) {
		return fmt.Errorf("step %s is already running", id)
	}
	s := &fakeStep{key: spec.Key, node: spec.Node, launching: true}
	f.cl.steps[id] = s // replaces an ended run's leftover, as the executors do
	if f.onLaunch != nil {
		f.onLaunch(spec)
	}
	if f.cl.steps[id] != s {
		return fmt.Errorf("step %s: its directory vanished during the launch", id)
	}
	s.launching, s.running = false, true
	f.cl.launches++
	return nil
}

func (f *fakeExec) Signal(ctx context.Context, node string, key nodes.StepKey, sig nodes.Signum) error {
	if s := f.cl.steps[stepID(node, key)]; s == nil || !s.running {
		return fmt.Errorf("step %s is not running", stepID(node, key))
	} else {
		s.signals = append(s.signals, sig)
		if sig == nodes.Signum(syscall.SIGSTOP) || sig == nodes.Signum(syscall.SIGCONT) {
			s.stopped = sig == nodes.Signum(syscall.SIGSTOP)
		}
	}
	return nil
}

func (f *fakeExec) Terminate(ctx context.Context, node string, key nodes.StepKey, grace time.Duration) error {
	s := f.cl.steps[stepID(node, key)]
	if s == nil {
		return fmt.Errorf("no step %s", stepID(node, key))
	}
	if s.running {
		s.terminate = true
	}
	return nil
}

func (f *fakeExec) Reattach(ctx context.Context, names []string) ([]nodes.Status, error) {
	var out []nodes.Status
	for _, id := range f.cl.ids() {
		s := f.cl.steps[id]
		if !slices.Contains(names, s.node) || s.launching {
			continue
		}
		st := s.status
		if s.running {
			st = nodes.Status{Key: s.key, Node: s.node, State: nodes.StepRunning, Pid: 100}
		}
		out = append(out, st)
	}
	return out, nil
}

func (f *fakeExec) Forget(ctx context.Context, node string, key nodes.StepKey) error {
	id := stepID(node, key)
	if s := f.cl.steps[id]; s != nil && s.running {
		return fmt.Errorf("step %s is still running", id)
	}
	delete(f.cl.steps, id) // also a directory mid-launch: it has no live shepherd yet
	return nil
}

func (f *fakeExec) Exits() <-chan nodes.Status { return f.exits }
func (f *fakeExec) Close() error               { return nil }

// runQueue runs what q holds, and what that queues in turn, in order.
func runQueue(ctx context.Context, q *workQueue) {
	for {
		q.mu.Lock()
		if len(q.items) == 0 {
			q.mu.Unlock()
			return
		}
		f := q.items[0]
		q.items = q.items[1:]
		q.mu.Unlock()
		f.run(ctx)
	}
}

// fakeController is a horad over the fake cluster; it is never Run.
func fakeController(t *testing.T, f *fixture, cl *fakeCluster) (*Controller, *fakeExec) {
	t.Helper()
	ex := newFakeExec(cl)
	c, err := New(t.Context(), Options{Config: f.cfg, Store: f.st, Executor: ex,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return c, ex
}

// submitRequeueable submits a job that may be requeued.
func submitRequeueable(t *testing.T, f *fixture, c *Controller) int64 {
	t.Helper()
	spec := f.spec("true")
	spec.Requeue, spec.NoRequeue = true, false
	resp, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	return resp.JobID
}

// submitRunning submits a requeueable job and launches its first run.
func submitRunning(t *testing.T, f *fixture, c *Controller, cl *fakeCluster) (int64, *fakeStep) {
	t.Helper()
	id := submitRequeueable(t, f, c)
	runQueue(t.Context(), c.work)
	run := cl.running(id)
	if len(run) != 1 {
		t.Fatalf("job %d: running steps %v after its launch", id, run)
	}
	return id, run[0]
}

// A point in the relaunch of a requeued job where the old run's late end
// or its Forget may arrive.
const (
	beforeRelaunch = iota // the relaunch is queued, not started
	duringRelaunch        // the new run's directory exists, its shepherd does not hold it yet
	afterRelaunch         // the new run runs
	afterNewEnd           // the new run ended on its node; its end has not reached horad
	nPoints
)

var pointNames = [nPoints]string{"before the relaunch", "during the relaunch", "after the relaunch", "after the new run ended"}

// requeueScenario brings a job to the point where its requeue is decided
// and its relaunch queued, and returns the controller that will relaunch
// it, that controller's executor and the old run's end as the node
// reports it (delivered again later, as a late or repeated report).
type requeueScenario func(t *testing.T, f *fixture, cl *fakeCluster) (*Controller, *fakeExec, int64, nodes.Status)

var requeueScenarios = []struct {
	name string
	run  requeueScenario
}{
	{"scontrol requeue", func(t *testing.T, f *fixture, cl *fakeCluster) (*Controller, *fakeExec, int64, nodes.Status) {
		c, ex := fakeController(t, f, cl)
		id, old := submitRunning(t, f, c, cl)
		if r := c.requeueJobs(t.Context(), root, []int64{id}, false); r.Results[0].Error != "" {
			t.Fatal(r.Results[0].Error)
		}
		runQueue(t.Context(), c.work) // the Terminate
		if !old.terminate {
			t.Fatal("the requeued run was not told to stop")
		}
		end := cl.end(t, old, nodes.Status{Signal: 15})
		c.handleExit(t.Context(), end)
		return c, ex, id, end
	}},
	{"lost node", func(t *testing.T, f *fixture, cl *fakeCluster) (*Controller, *fakeExec, int64, nodes.Status) {
		c, ex := fakeController(t, f, cl)
		id, old := submitRunning(t, f, c, cl)
		c.nodeEvent(t.Context(), nodes.NodeEvent{Node: old.node, Up: false})
		// The prober reports the unreachable node's step lost; the run
		// itself goes on there and ends later, failing (exit 3): taken for
		// the new run's end, it would end the job FAILED.
		c.handleExit(t.Context(), nodes.Status{Key: old.key, Node: old.node, State: nodes.StepLost, Err: "node unreachable"})
		return c, ex, id, cl.end(t, old, nodes.Status{ExitCode: 3})
	}},
	{"restart before the relaunch", func(t *testing.T, f *fixture, cl *fakeCluster) (*Controller, *fakeExec, int64, nodes.Status) {
		c1, _ := fakeController(t, f, cl)
		id, old := submitRunning(t, f, c1, cl)
		if r := c1.requeueJobs(t.Context(), root, []int64{id}, false); r.Results[0].Error != "" {
			t.Fatal(r.Results[0].Error)
		}
		runQueue(t.Context(), c1.work)
		end := cl.end(t, old, nodes.Status{Signal: 15})
		c1.handleExit(t.Context(), end)
		// horad dies with the relaunch and the old run's Forget queued; the
		// next one finds the old run ended and the job pending.
		c2, ex := fakeController(t, f, cl)
		return c2, ex, id, end
	}},
	{"restart with the run not yet stopped", func(t *testing.T, f *fixture, cl *fakeCluster) (*Controller, *fakeExec, int64, nodes.Status) {
		c1, _ := fakeController(t, f, cl)
		id, old := submitRunning(t, f, c1, cl)
		if r := c1.requeueJobs(t.Context(), root, []int64{id}, false); r.Results[0].Error != "" {
			t.Fatal(r.Results[0].Error)
		}
		// horad dies before its Terminate left; the next one re-attaches
		// the marked run and stops it.
		c2, ex := fakeController(t, f, cl)
		runQueue(t.Context(), c2.work)
		if !old.terminate {
			t.Fatal("the re-attached marked run was not told to stop")
		}
		end := cl.end(t, old, nodes.Status{Signal: 15})
		c2.handleExit(t.Context(), end)
		return c2, ex, id, end
	}},
}

// The old run's late end and its Forget arrive at every point of the
// relaunch, in both orders: the job's second run is untouched, and the job
// ends COMPLETED (the new run's end) with Restarts=1, once, and nothing of
// either run is left on the nodes.
func TestOldRunAfterRelaunch(t *testing.T) {
	for _, sc := range requeueScenarios {
		for endAt := range nPoints {
			for forgetAt := range nPoints {
				for _, endFirst := range []bool{true, false} {
					if endAt != forgetAt && !endFirst {
						continue // the order only matters at the same point
					}
					name := fmt.Sprintf("%s/end %s/forget %s/end first %v", sc.name, pointNames[endAt], pointNames[forgetAt], endFirst)
					t.Run(name, func(t *testing.T) {
						testOldRunAfterRelaunch(t, sc.run, endAt, forgetAt, endFirst)
					})
				}
			}
		}
	}
}

func testOldRunAfterRelaunch(t *testing.T, sc requeueScenario, endAt, forgetAt int, endFirst bool) {
	f := newFixture(t)
	cl := newFakeCluster()
	c, ex, id, oldEnd := sc(t, f, cl)
	ctx := t.Context()
	type late struct {
		at int
		do func()
	}
	evs := []late{
		{endAt, func() { c.handleExit(ctx, oldEnd) }},
		{forgetAt, func() { runQueue(ctx, c.forgets) }}, // the old run's Forget, queued when its end was seen
	}
	if !endFirst {
		evs[0], evs[1] = evs[1], evs[0]
	}
	at := func(p int) {
		for _, e := range evs {
			if e.at == p {
				e.do()
			}
		}
	}
	at(beforeRelaunch)
	ex.onLaunch = func(nodes.LaunchSpec) { at(duringRelaunch) }
	runQueue(ctx, c.work)
	ex.onLaunch = nil
	at(afterRelaunch)
	run := cl.running(id)
	if len(run) != 1 {
		j, _ := f.st.Job(ctx, id)
		t.Fatalf("after the relaunch: %d running steps; job %s reason %s restarts %d", len(run), j.State, j.Reason, j.Restarts)
	}
	newEnd := cl.end(t, run[0], nodes.Status{})
	at(afterNewEnd)
	c.handleExit(ctx, newEnd)
	runQueue(ctx, c.forgets)
	runQueue(ctx, c.work)

	j, err := f.st.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != api.StateCompleted || j.Restarts != 1 {
		t.Errorf("job %s reason %s restarts %d, want COMPLETED with Restarts=1", j.State, j.Reason, j.Restarts)
	}
	stored, _ := f.st.Events(ctx, id)
	var ends []string
	for _, e := range stored {
		if e.Kind == store.KindEnd {
			ends = append(ends, string(e.State))
		}
	}
	if len(ends) != 1 {
		t.Errorf("end events %v, want one", ends)
	}
	if left := cl.ids(); len(left) != 0 {
		t.Errorf("left on the nodes: %v", left)
	}
	if cl.launches != 2 {
		t.Errorf("%d launches, want 2", cl.launches)
	}
}

// Random histories of requeues, horad restarts, steps stopped (terminate)
// or ending on their own, ends delivered late or again, relaunches and
// Forgets, in any order: every job ends COMPLETED (its last run's end,
// recorded once) with one restart per requeue horad accepted, and nothing
// is left on the nodes.
func TestRequeueHistoriesProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := newFixture(t)
		defer f.st.Close()
		cl := newFakeCluster()
		c, _ := fakeController(t, f, cl)
		ctx := t.Context()
		var ids []int64
		for range rapid.IntRange(1, 3).Draw(rt, "jobs") {
			ids = append(ids, submitRequeueable(t, f, c))
		}
		want := map[int64]int{}           // restarts: one per accepted requeue
		var reported, seen []nodes.Status // ends the nodes reported, not yet / already delivered
		popOne := func(q *workQueue) {
			q.mu.Lock()
			if len(q.items) == 0 {
				q.mu.Unlock()
				return
			}
			fn := q.items[0]
			q.items = q.items[1:]
			q.mu.Unlock()
			fn.run(ctx)
		}
		ops := []string{"requeue", "restart", "terminate", "end", "deliver", "redeliver", "relaunch", "forget"}
		for range rapid.IntRange(0, 60).Draw(rt, "steps") {
			switch rapid.SampledFrom(ops).Draw(rt, "op") {
			case "requeue":
				id := rapid.SampledFrom(ids).Draw(rt, "job")
				c.mu.Lock()
				j := c.jobs[id]
				asked := j.requeueRequested
				c.mu.Unlock()
				r := c.requeueJobs(ctx, root, []int64{id}, false)
				if r.Results[0].Error == "" && !asked {
					want[id]++
				}
			case "restart":
				// Undelivered ends die with horad's executor; the next one
				// finds them with Reattach. Queued work and Forgets are lost.
				c, _ = fakeController(t, f, cl)
				reported = nil
			case "terminate": // a step told to stop ends by its TERM
				var run []*fakeStep
				for _, s := range cl.running(-1) {
					if s.terminate {
						run = append(run, s)
					}
				}
				if len(run) > 0 {
					reported = append(reported, cl.end(t, rapid.SampledFrom(run).Draw(rt, "step"), nodes.Status{Signal: 15}))
				}
			case "end": // a step ends on its own, told to stop or not
				if run := cl.running(-1); len(run) > 0 {
					reported = append(reported, cl.end(t, rapid.SampledFrom(run).Draw(rt, "step"), nodes.Status{}))
				}
			case "deliver":
				if len(reported) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(reported)-1).Draw(rt, "end")
				st := reported[i]
				reported = append(reported[:i], reported[i+1:]...)
				c.handleExit(ctx, st)
				seen = append(seen, st)
			case "redeliver":
				if len(seen) > 0 {
					c.handleExit(ctx, rapid.SampledFrom(seen).Draw(rt, "again"))
				}
			case "relaunch":
				popOne(c.work)
			case "forget":
				popOne(c.forgets)
			}
		}
		// Then everything runs to its end.
		for round := 0; ; round++ {
			if round > 100 {
				rt.Fatalf("no end after %d rounds: %v", round, cl.ids())
			}
			runQueue(ctx, c.work)
			runQueue(ctx, c.forgets)
			for _, s := range cl.running(-1) {
				st := nodes.Status{}
				if s.terminate {
					st.Signal = 15
				}
				reported = append(reported, cl.end(t, s, st))
			}
			for _, st := range reported {
				c.handleExit(ctx, st)
			}
			reported = nil
			runQueue(ctx, c.work)
			runQueue(ctx, c.forgets)
			c.mu.Lock()
			done := true
			for _, id := range ids {
				done = done && c.jobs[id].State.Finished()
			}
			c.mu.Unlock()
			if done && len(cl.running(-1)) == 0 {
				break
			}
		}
		for _, id := range ids {
			j, _ := f.st.Job(ctx, id)
			if j.State != api.StateCompleted || j.Restarts != want[id] {
				rt.Errorf("job %d: %s reason %s restarts %d, want COMPLETED with Restarts=%d", id, j.State, j.Reason, j.Restarts, want[id])
			}
			stored, _ := f.st.Events(ctx, id)
			ends := 0
			for _, e := range stored {
				if e.Kind == store.KindEnd {
					ends++
				}
			}
			if ends != 1 {
				rt.Errorf("job %d: %d end events, want 1", id, ends)
			}
		}
		if left := cl.ids(); len(left) != 0 {
			rt.Errorf("left on the nodes: %v", left)
		}
	})
}

// Upgrade: a step left by a horad without run numbers (its name has no
// run) is the current run of its running job: it is re-attached, a requeue
// stops it through its own name, and the next run is numbered.
func TestUnnumberedStepIsTheCurrentRun(t *testing.T) {
	f := newFixture(t)
	cl := newFakeCluster()
	c1, _ := fakeController(t, f, cl)
	id, s := submitRunning(t, f, c1, cl)
	// What the older horad left: the same step under its unnumbered name.
	delete(cl.steps, stepID(s.node, s.key))
	s.key.Run = nodes.LegacyRun
	cl.steps[stepID(s.node, s.key)] = s

	c2, _ := fakeController(t, f, cl)
	c2.mu.Lock()
	j := c2.jobs[id]
	attached := j.State == api.StateRunning && j.legacyRun && j.launched
	c2.mu.Unlock()
	if !attached {
		t.Fatalf("the unnumbered step was not taken as the running job's run: %+v", j.Job)
	}
	if r := c2.requeueJobs(t.Context(), root, []int64{id}, false); r.Results[0].Error != "" {
		t.Fatal(r.Results[0].Error)
	}
	runQueue(t.Context(), c2.work)
	if !s.terminate {
		t.Fatal("the requeue did not reach the unnumbered step")
	}
	c2.handleExit(t.Context(), cl.end(t, s, nodes.Status{Signal: 15}))
	runQueue(t.Context(), c2.work)
	runQueue(t.Context(), c2.forgets)
	run := cl.running(id)
	if len(run) != 1 || run[0].key != (nodes.StepKey{Job: id, Step: -1, Run: 1}) {
		t.Fatalf("after the requeue: running %v, want run 1 numbered", cl.ids())
	}
	c2.handleExit(t.Context(), cl.end(t, run[0], nodes.Status{}))
	runQueue(t.Context(), c2.forgets)
	if got, _ := f.st.Job(t.Context(), id); got.State != api.StateCompleted || got.Restarts != 1 {
		t.Errorf("job %s restarts %d, want COMPLETED with Restarts=1", got.State, got.Restarts)
	}
	if left := cl.ids(); len(left) != 0 {
		t.Errorf("left on the nodes: %v", left)
	}
}

// Recovery forgets every ended step horad does not wait for: an active
// divisible job's chunk that ended while horad was away (recorded) or
// whose end was recorded before the crash, and a step of an unknown job;
// a running step stays.
func TestRecoveryForgetsEndedSteps(t *testing.T) {
	f := crashedChunkFixture(t) // job 1: chunk 0 recorded running on local1
	cl := newFakeCluster()
	add := func(node string, key nodes.StepKey, running bool) {
		s := &fakeStep{key: key, node: node, running: running}
		if !running {
			s.status = nodes.Status{Key: key, Node: node, State: nodes.StepExited, Pid: 100}
		}
		cl.steps[stepID(node, key)] = s
	}
	add("local1", nodes.StepKey{Job: 1, Step: 0}, false)  // ended while away
	add("local2", nodes.StepKey{Job: 1, Step: 7}, false)  // its end recorded before the crash
	add("local2", nodes.StepKey{Job: 5, Step: -1}, false) // no such job
	add("local2", nodes.StepKey{Job: 6, Step: -1}, true)  // runs on, unknown: left to end
	c, _ := fakeController(t, f, cl)
	runQueue(t.Context(), c.forgets)
	if left := cl.ids(); !slices.Equal(left, []string{"local2/6.batch.r0"}) {
		t.Errorf("left on the nodes: %v, want only the running step", left)
	}
	c.mu.Lock()
	st := c.jobs[1].Steps[0].State
	c.mu.Unlock()
	if st != api.StateCompleted {
		t.Errorf("the chunk that ended while horad was away: %s, want COMPLETED", st)
	}
}
