package controller

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"hora/api"
	"hora/nodes/local"
	"hora/store"
)

// While Recover runs (horad started by a client's connection under socket
// activation), job listings are answered from the store and every other
// request waits for the rebuilt state: a submission is held, then
// recorded with the next id once recovery is done.
func TestListingDuringRecovery(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	held := &api.Job{Spec: f.spec("true"), Reason: "JobHeldUser"}
	held.Spec.Hold = true
	started := &api.Job{Spec: f.spec("true")}
	old := &api.Job{Spec: f.spec("true")}
	for _, j := range []*api.Job{held, started, old} {
		if err := f.st.Submit(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	var tasks []*api.Job // an array of three tasks, held
	for i := range 3 {
		j := &api.Job{Spec: f.spec("true"), Reason: "JobHeldUser", ArrayTaskID: int64(i)}
		j.Spec.Hold, j.Spec.Array = true, "0-2"
		tasks = append(tasks, j)
	}
	if err := f.st.SubmitArray(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	array, last := tasks[0].ID, tasks[2].ID
	// Job 2's start was recorded and never launched (recovery requeues
	// it); job 3 ended long ago (history, for sacct only).
	if err := f.st.Append(ctx, store.Event{JobID: started.ID, Time: time.Now().Unix(), Kind: store.KindStart, Nodes: []string{"local1"}},
		store.Event{JobID: old.ID, Time: 1700000000, Kind: store.KindEnd, State: api.StateCompleted, Reason: "None"}); err != nil {
		t.Fatal(err)
	}
	exec, err := local.New(local.Config{StateDir: filepath.Join(f.dir, "nodes"), ShepherdArgv: []string{os.Args[0], local.ShepherdCommand}})
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Close()
	c, err := Open(ctx, Options{Config: f.cfg, Store: f.st, Executor: exec})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := c.Server()
	go srv.Serve(c.Limit(l))
	defer srv.Close()
	cl := api.NewClient(sock)

	jobs, err := cl.Jobs(ctx, api.JobFilter{Fold: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 3 || jobs[0].ID != held.ID || jobs[1].ID != started.ID || jobs[2].ID != array {
		t.Fatalf("listing during recovery: %d jobs %+v, want jobs %d, %d and the array %d", len(jobs), jobIDs(jobs), held.ID, started.ID, array)
	}
	if got := jobs[2].ArrayPending; len(got) != 3 || got[2] != 2 {
		t.Errorf("the array's folded row during recovery: tasks %v, want [0 1 2]", got)
	}
	// An array's id names its tasks.
	if jobs, err := cl.Jobs(ctx, api.JobFilter{IDs: []int64{array}}); err != nil || len(jobs) != 3 || jobs[2].ID != last {
		t.Fatalf("squeue -j %d during recovery: %v %v", array, jobIDs(jobs), err)
	}
	if j := jobs[0]; j.State != api.StatePending || j.Reason != "JobHeldUser" || j.Priority != 0 || j.Spec.Script != "" {
		t.Errorf("held job during recovery: %s %s priority %d script %q", j.State, j.Reason, j.Priority, j.Spec.Script)
	}
	if j := jobs[1]; j.State != api.StateRunning {
		t.Errorf("job 2 during recovery: %s, want RUNNING as stored until recovery requeues it", j.State)
	}
	if jobs, err := cl.Jobs(ctx, api.JobFilter{Users: []string{"nobody"}}); err != nil || len(jobs) != 0 {
		t.Fatalf("nobody's jobs during recovery: %v %v", jobIDs(jobs), err)
	}

	type answer struct {
		r   *api.SubmitResponse
		err error
	}
	done := make(chan answer, 1)
	s := f.spec("true")
	s.Hold = true
	go func() {
		r, err := cl.Submit(ctx, api.SubmitRequest{Spec: s})
		done <- answer{r, err}
	}()
	for deadline := time.Now().Add(30 * time.Second); c.heldForRecovery.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the submission never reached horad")
		}
	}
	select {
	case a := <-done:
		t.Fatalf("a submission was answered before recovery: %+v %v", a.r, a.err)
	default:
	}
	if n, _ := f.st.Jobs(ctx, store.Filter{}); len(n) != 6 {
		t.Fatalf("%d jobs stored before recovery, want 6", len(n))
	}

	if err := c.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	var a answer
	select {
	case a = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the held submission was not answered after recovery")
	}
	if a.err != nil || a.r.JobID != last+1 {
		t.Fatalf("submission after recovery: %+v %v, want id %d", a.r, a.err, last+1)
	}
	jobs, err = cl.Jobs(ctx, api.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	// Job 2 was requeued (and may have been started again by the first pass).
	if len(jobs) != 6 || jobs[1].Restarts != 1 || jobs[5].ID != a.r.JobID {
		t.Fatalf("listing after recovery: %+v", jobIDs(jobs))
	}
}

func jobIDs(jobs []api.Job) []int64 {
	var out []int64
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}
