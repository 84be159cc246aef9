package controller

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hora/api"
	"hora/nodes"
	"hora/scheduler"
	"hora/store"
	"hora/store/storetest"
)

// A submission the store cannot record (a full disk) is refused and leaves
// nothing behind in the Engine: before, a job the Engine had started in
// the same pass stayed there for ever, holding its node and its id, and
// every later submission was refused "Duplicate job id N" (found by the
// fault harness). Once space returns, a job needing all four nodes runs.
func TestUnrecordedSubmitIsTakenBack(t *testing.T) {
	d := onFullableDisk(t)
	if err := storetest.Fill(d.disk); err != nil {
		t.Fatal(err)
	}
	// One node each, so the Engine starts each in its submission's pass.
	spec := d.f.spec("sleep 1 # " + strings.Repeat("x", 32<<10))
	refused := false
	for k := 0; k < 50 && !refused; k++ {
		_, err := d.c.submit(d.ctx, root, api.SubmitRequest{Spec: spec})
		if err != nil {
			if !strings.Contains(err.Error(), "Unable to record the job") || !strings.Contains(err.Error(), "full") {
				t.Fatalf("submit on a full disk: %v, want Unable to record the job: ... full", err)
			}
			refused = true
		}
	}
	if !refused {
		t.Fatal("50 submissions fitted on a full 4 MiB disk")
	}
	if err := storetest.Empty(d.disk); err != nil {
		t.Fatal(err)
	}
	all := d.f.spec("true")
	all.Nodes = 4
	resp, err := d.c.submit(d.ctx, root, api.SubmitRequest{Spec: all})
	if err != nil {
		t.Fatalf("submit once space returned: %v", err)
	}
	var j api.Job
	d.waitFor("the four-node job finished", func() bool {
		j, err = d.st.Job(d.ctx, resp.JobID)
		return err == nil && j.State.Finished()
	})
	if j.State != api.StateCompleted {
		t.Fatalf("the four-node job after the refused submission: %s reason %s", j.State, j.Reason)
	}
}

// syncBuffer is a log sink the test reads while the controller writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A job that ends while the disk is full is recorded once space returns,
// while horad runs: before, its end was dropped until the next restart and
// the job stayed RUNNING (found by the fault harness).
func TestEndRecordedOnceSpaceReturns(t *testing.T) {
	d := onFullableDisk(t)
	gate := filepath.Join(d.f.dir, "gate")
	id := d.submitLaunched("while [ ! -e " + gate + " ]; do sleep 0.05; done")
	d.endOnFullDisk(gate)
	d.waitFor("the end recorded", func() bool {
		j, err := d.st.Job(d.ctx, id)
		return err == nil && j.State == api.StateCompleted
	})
}

// The end of a job that scontrol requeue stopped is its requeue. Refused
// by a full disk, nothing of it reaches memory: it is decided again once a
// second until the disk has room, and the job goes back to the queue
// (before, it stayed COMPLETING until horad restarted; the fault harness
// found it after the batched ends were merged).
func TestRequeueRecordedOnceSpaceReturns(t *testing.T) {
	d := onFullableDisk(t)
	gate := filepath.Join(d.f.dir, "gate")
	// TERM waits for the gate, so the end comes after the disk is full.
	// Both loops end with the test's directory: the requeued run is left
	// running when the test stops, and must not outlive it.
	alive := "[ -d " + d.f.dir + " ]"
	script := "trap 'while [ ! -e " + gate + " ] && " + alive + "; do sleep 0.05; done; exit 0' TERM\nwhile " + alive + "; do sleep 0.05; done"
	id := d.submitLaunched(script)
	if r := d.c.requeueJobs(d.ctx, root, []int64{id}, false); len(r.Results) > 0 && r.Results[0].Error != "" {
		t.Fatalf("requeue: %+v", r.Results)
	}
	d.endOnFullDisk(gate)
	d.waitFor("the requeue recorded", func() bool {
		j, err := d.st.Job(d.ctx, id)
		return err == nil && j.Restarts >= 1
	})
}

// fullableDisk is a running controller whose store is on a small tmpfs.
type fullableDisk struct {
	t    *testing.T
	f    *fixture
	c    *Controller
	st   *store.Store
	logs *syncBuffer
	disk string
	ctx  context.Context
}

func onFullableDisk(t *testing.T) *fullableDisk {
	return onFullableDiskWith(t, func(e nodes.Executor) nodes.Executor { return e })
}

// onFullableDiskWith is onFullableDisk with the controller's executor
// wrapped (a fault a test injects).
func onFullableDiskWith(t *testing.T, wrap func(nodes.Executor) nodes.Executor) *fullableDisk {
	f := newFixture(t)
	disk := filepath.Join(f.dir, "disk")
	if err := os.Mkdir(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	storetest.MountTmpfs(t, disk, "4m")
	st, err := store.Open(t.Context(), filepath.Join(disk, "hora.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f.st = st
	c := f.controller(t)
	c.exec = wrap(c.exec)
	logs := &syncBuffer{}
	c.log = slog.New(slog.NewTextHandler(logs, nil))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &fullableDisk{t: t, f: f, c: c, st: st, logs: logs, disk: disk, ctx: ctx}
}

// submitLaunched submits a job running script and waits until it runs.
func (d *fullableDisk) submitLaunched(script string) int64 {
	d.t.Helper()
	resp, err := d.c.submit(d.ctx, root, api.SubmitRequest{Spec: d.f.spec(script)})
	if err != nil {
		d.t.Fatal(err)
	}
	d.waitFor("the job launched", func() bool {
		d.c.mu.Lock()
		defer d.c.mu.Unlock()
		return d.c.jobs[resp.JobID].launched
	})
	return resp.JobID
}

func (d *fullableDisk) waitFor(what string, cond func() bool) {
	d.t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			d.t.Fatalf("timed out waiting for %s; log:\n%s", what, d.logs)
		}
	}
}

// endOnFullDisk fills the disk until a write is refused (the WAL may hold
// a few), opens the gate the job waits on, waits for its end to be
// refused, and empties the disk.
func (d *fullableDisk) endOnFullDisk(gate string) {
	d.t.Helper()
	if err := storetest.Fill(d.disk); err != nil {
		d.t.Fatal(err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		d.t.Fatal(err)
	}
	d.waitFor("the end refused by the full disk", func() bool { return strings.Contains(d.logs.String(), "recording job end") })
	if err := storetest.Empty(d.disk); err != nil {
		d.t.Fatal(err)
	}
}

// An end the Engine decided (here a cancel's) that the full disk refuses
// counts among the unsettled ends until it is recorded: no start on what
// it freed may be recorded before it (the fault harness's two-hour local
// run found a CPU given while such an end was still being retried).
func TestRefusedEngineEndHoldsStarts(t *testing.T) {
	d := onFullableDisk(t)
	s := d.f.spec("true")
	s.Hold = true
	resp, err := d.c.submit(d.ctx, root, api.SubmitRequest{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	if err := storetest.Fill(d.disk); err != nil {
		t.Fatal(err)
	}
	d.c.mu.Lock()
	d.c.applyLocked(d.ctx, []scheduler.Action{scheduler.End{ID: scheduler.JobID(resp.JobID), State: "CANCELLED", Reason: "None"}})
	d.c.mu.Unlock()
	d.refusedEndHoldsStarts("recording end; trying again", resp.JobID, api.StateCancelled)
}

// refusedEndHoldsStarts checks that job id's end was refused by the full
// disk (logged) and holds starts back, then empties the disk and waits for
// the end (state, or any end if empty) and for starts to pass again.
func (d *fullableDisk) refusedEndHoldsStarts(logged string, id int64, state api.JobState) {
	d.t.Helper()
	if !strings.Contains(d.logs.String(), logged) {
		d.t.Fatalf("the end was not refused by the full disk; log:\n%s", d.logs)
	}
	if d.c.awaitEndsSettled(d.ctx) {
		d.t.Fatal("starts were let through while the end was refused")
	}
	if err := storetest.Empty(d.disk); err != nil {
		d.t.Fatal(err)
	}
	d.waitFor("the end recorded", func() bool {
		j, err := d.st.Job(d.ctx, id)
		return err == nil && j.State.Finished() && (state == "" || j.State == state)
	})
	d.waitFor("starts let through again", func() bool { return d.c.awaitEndsSettled(d.ctx) })
}

// A launch that fails while the disk is full (the fault harness's node and
// store share a disk) is requeued once space returns: before, its refused
// requeue was dropped and the job stayed RUNNING for ever with nothing
// running (the harness's local cluster, seed 1795821167213556793).
func TestFailedLaunchRecordedOnceSpaceReturns(t *testing.T) {
	launching := make(chan struct{})
	fail := make(chan struct{})
	d := onFullableDiskWith(t, func(e nodes.Executor) nodes.Executor {
		return &failingLaunch{Executor: e, launching: launching, fail: fail}
	})
	resp, err := d.c.submit(d.ctx, root, api.SubmitRequest{Spec: d.f.spec("true")})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-launching:
	case <-time.After(60 * time.Second):
		t.Fatalf("no launch; log:\n%s", d.logs)
	}
	if err := storetest.Fill(d.disk); err != nil {
		t.Fatal(err)
	}
	close(fail)
	d.waitFor("the requeue refused by the full disk", func() bool {
		return strings.Contains(d.logs.String(), "recording a step's end; trying again")
	})
	if err := storetest.Empty(d.disk); err != nil {
		t.Fatal(err)
	}
	var j api.Job
	d.waitFor("the failed launch recorded", func() bool {
		j, err = d.st.Job(d.ctx, resp.JobID)
		return err == nil && j.Restarts >= 1
	})
	if j.State != api.StatePending || j.Reason != "JobHeldUser" {
		t.Fatalf("job after its failed launch was recorded: %s reason %s, want PENDING JobHeldUser", j.State, j.Reason)
	}
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	if m := d.c.jobs[resp.JobID]; m.State != api.StatePending {
		t.Fatalf("job in memory after its failed launch was recorded: %s", m.State)
	}
}

// failingLaunch is an executor whose launches wait for fail to close and
// then fail as a node's full disk does.
type failingLaunch struct {
	nodes.Executor
	launching chan struct{}
	fail      chan struct{}
	once      sync.Once
}

func (f *failingLaunch) Launch(ctx context.Context, spec nodes.LaunchSpec) error {
	f.once.Do(func() { close(f.launching) })
	<-f.fail
	return errors.New("write shepherd.tmp: no space left on device")
}

// The end of a divisible job, decided at its last chunk's end, that the
// full disk refuses is recorded again each second and holds starts back
// meanwhile: before, the error had the chunk's end decided again and the
// Engine's starts on the freed nodes dropped.
func TestRefusedDivisibleEndIsRetried(t *testing.T) {
	d := onFullableDisk(t)
	const id = 900
	now := time.Now().Unix()
	s := d.f.spec("true")
	s.Load, s.Deadline = 10, now+600
	if err := d.st.Submit(d.ctx, &api.Job{ID: id, Spec: s, State: api.StatePending, SubmitTime: now}); err != nil {
		t.Fatal(err)
	}
	if err := d.st.Append(d.ctx, store.Event{JobID: id, Time: now, Kind: store.KindStart, Nodes: []string{"local1"}}); err != nil {
		t.Fatal(err)
	}
	d.c.mu.Lock()
	// Running in memory with one chunk whose step end is recorded already
	// (so only the job's end is written); unknown to the Engine, as after
	// the policy let it go.
	d.c.addJob(&job{Job: api.Job{ID: id, State: api.StateRunning, Nodes: []string{"local1"}, Spec: s, StartTime: now},
		launched: true, chunks: map[int]string{0: "local1"}})
	d.c.mu.Unlock()
	if err := storetest.Fill(d.disk); err != nil {
		t.Fatal(err)
	}
	d.c.mu.Lock()
	err := d.c.chunkEndLocked(d.ctx, d.c.jobs[id], nodes.Status{Key: nodes.StepKey{Job: id, Step: 0}, Node: "local1", State: nodes.StepExited})
	d.c.mu.Unlock()
	if err != nil {
		t.Fatalf("chunk end with the job's end refused: %v (the chunk's end is recorded: nothing to decide again)", err)
	}
	d.refusedEndHoldsStarts("recording job end; trying again", id, "")
}

// A node that answers again while the disk is full comes back once space
// returns: the prober says "up" once, and a refused record left the node
// DOWN until horad restarted.
func TestNodeUpRecordedOnceSpaceReturns(t *testing.T) {
	d := onFullableDisk(t)
	d.c.nodeEvent(d.ctx, nodes.NodeEvent{Node: "local2", Up: false, Err: errors.New("probe: timed out")})
	down := func() bool {
		d.c.mu.Lock()
		defer d.c.mu.Unlock()
		a := d.c.admin["local2"]
		return a != nil && a.Down
	}
	if !down() {
		t.Fatal("local2 is not DOWN after a down event")
	}
	if err := storetest.Fill(d.disk); err != nil {
		t.Fatal(err)
	}
	d.c.nodeEvent(d.ctx, nodes.NodeEvent{Node: "local2", Up: true})
	if !strings.Contains(d.logs.String(), "recording node up") {
		t.Fatalf("the node's return was not refused by the full disk; log:\n%s", d.logs)
	}
	if !down() {
		t.Fatal("local2 is up in memory while its return is not recorded")
	}
	if err := storetest.Empty(d.disk); err != nil {
		t.Fatal(err)
	}
	d.waitFor("local2 back in service", func() bool { return !down() })
	nas, err := d.st.NodeAdmins(d.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, na := range nas {
		if na.Name == "local2" && na.Down {
			t.Fatalf("local2 is up in memory but recorded DOWN: %+v", na)
		}
	}
}
