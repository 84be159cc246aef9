package controller

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"hora/api"
	"hora/nodes/local"
)

// clockController starts a controller on f's store whose clock reads *now.
func (f *fixture) clockController(t *testing.T, now *atomic.Int64) *Controller {
	t.Helper()
	exec, err := local.New(local.Config{StateDir: filepath.Join(f.dir, "nodes"),
		ShepherdArgv: []string{os.Args[0], local.ShepherdCommand}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Close() })
	c, err := New(t.Context(), Options{Config: f.cfg, Store: f.st, Executor: exec,
		Now: func() time.Time { return time.Unix(now.Load(), 0) }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func nodeStates(t *testing.T, c *Controller) map[string]api.Node {
	t.Helper()
	resp, err := c.hNodes(t.Context(), root, httptest.NewRequest("GET", api.PathNodes, nil))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]api.Node{}
	for _, n := range resp.(*api.NodesResponse).Nodes {
		out[n.Name] = n
	}
	return out
}

func resvState(t *testing.T, c *Controller, name string) (api.Reservation, int64, bool) {
	t.Helper()
	resp, err := c.hReservations(t.Context(), root, httptest.NewRequest("GET", api.PathReservations+"?name="+name, nil))
	if err != nil {
		t.Fatal(err)
	}
	rr := resp.(*api.ReservationsResponse)
	if len(rr.Reservations) == 0 {
		return api.Reservation{}, rr.Now, false
	}
	return rr.Reservations[0], rr.Now, true
}

// An idle node inside an active reservation shows "reserved" with the
// Reserved flag; before the window and at its end it is idle again; a
// drained node stays drained (flag kept, for scontrol's RESERVED+DRAIN).
// A restart of horad at the start instant, inside the window and at the
// end instant gives the same answers: the reservation comes back with its
// window, is active from Start, and is gone at End.
func TestReservedNodeStateAcrossRestart(t *testing.T) {
	f := resvFixture(t, "")
	var now atomic.Int64
	t0 := time.Now().Unix()
	now.Store(t0)
	c := f.clockController(t, &now)
	req := api.ReservationRequest{Name: "w", StartTime: t0 + 100, Duration: 600,
		Nodes: []string{"local1", "local2"}, Users: []string{"root"}}
	if _, err := c.createReservation(t.Context(), root, req); err != nil {
		t.Fatal(err)
	}
	check := func(when string, c *Controller, wantActive bool) {
		t.Helper()
		ns := nodeStates(t, c)
		for _, name := range []string{"local1", "local2"} {
			n := ns[name]
			if wantActive && (n.State != "reserved" || !n.Reserved) {
				t.Errorf("%s: %s is %q reserved=%v, want reserved", when, name, n.State, n.Reserved)
			}
			if !wantActive && (n.State != "idle" || n.Reserved) {
				t.Errorf("%s: %s is %q reserved=%v, want idle", when, name, n.State, n.Reserved)
			}
		}
		if n := ns["local3"]; n.State != "idle" || n.Reserved {
			t.Errorf("%s: local3 (not reserved) is %q reserved=%v", when, n.State, n.Reserved)
		}
	}
	check("before the window", c, false)
	now.Store(t0 + 99)
	check("one second before the start", c, false)

	// Restart exactly at the start instant.
	now.Store(t0 + 100)
	c = f.clockController(t, &now)
	r, at, ok := resvState(t, c, "w")
	if !ok || r.StartTime != t0+100 || r.EndTime != t0+700 || at != t0+100 {
		t.Fatalf("after restart at the start: %+v (now %d) found=%v", r, at, ok)
	}
	check("restart at the start instant", c, true)

	// Inside the window, a drained node stays drained but keeps the flag.
	now.Store(t0 + 400)
	c = f.clockController(t, &now)
	check("restart inside the window", c, true)
	if _, err := c.updateNodes(t.Context(), root, api.NodeUpdateRequest{Nodes: []string{"local2"}, State: api.NodeDrain, Reason: "fan"}); err != nil {
		t.Fatal(err)
	}
	if n := nodeStates(t, c)["local2"]; n.State != "drained" || !n.Reserved || !n.Drain {
		t.Errorf("drained reserved node: %+v", n)
	}
	if _, err := c.updateNodes(t.Context(), root, api.NodeUpdateRequest{Nodes: []string{"local2"}, State: api.NodeResume}); err != nil {
		t.Fatal(err)
	}

	now.Store(t0 + 699)
	check("last second of the window", c, true)

	// A MAINT reservation: its idle nodes are "maint", flagged Maint.
	if _, err := c.createReservation(t.Context(), root, api.ReservationRequest{Name: "m", StartTime: t0 + 699, Duration: 1,
		Nodes: []string{"local4"}, Users: []string{"root"}, Flags: []string{"MAINT"}}); err != nil {
		t.Fatal(err)
	}
	if n := nodeStates(t, c)["local4"]; n.State != "maint" || !n.Maint || !n.Reserved {
		t.Errorf("node of an active MAINT reservation: %+v", n)
	}
	if n := nodeStates(t, c)["local1"]; n.Maint {
		t.Errorf("node of a reservation without MAINT flagged Maint: %+v", n)
	}

	// Restart exactly at the end instant: the window is over, the
	// reservation is purged and its nodes are idle.
	now.Store(t0 + 700)
	c = f.clockController(t, &now)
	if r, _, ok := resvState(t, c, "w"); ok {
		t.Errorf("restart at the end instant: reservation still there: %+v", r)
	}
	check("restart at the end instant", c, false)
	if stored, err := f.st.Reservations(t.Context()); err != nil || len(stored) != 0 {
		t.Errorf("store after the end: %v %v", stored, err)
	}
}

// A job of a reservation pends with reason Reservation up to the start and
// runs from the start instant, also when horad restarts right at either
// side of it: the reservation is booked again before the job is restored.
func TestReservationJobAcrossRestartAtStart(t *testing.T) {
	f := resvFixture(t, "")
	var now atomic.Int64
	t0 := time.Now().Unix()
	now.Store(t0)
	c := f.clockController(t, &now)
	if _, err := c.createReservation(t.Context(), root, api.ReservationRequest{Name: "w", StartTime: t0 + 100, Duration: 600,
		Nodes: []string{"local1"}, Users: []string{"root"}}); err != nil {
		t.Fatal(err)
	}
	s := f.spec("true")
	s.Reservation, s.TimeLimit = "w", 60
	resp, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	// The job as squeue sees it: the reason of a pending job is the
	// scheduler's (server.go).
	job := func(c *Controller) api.Job {
		c.mu.Lock()
		defer c.mu.Unlock()
		j := c.jobs[resp.JobID].Job
		if r := c.eng.Reason(schedID(j.ID)); r != "" && j.State == api.StatePending {
			j.Reason = r
		}
		return j
	}
	if j := job(c); j.State != api.StatePending || j.Reason != "Reservation" {
		t.Fatalf("before the window: %s %s", j.State, j.Reason)
	}
	now.Store(t0 + 99)
	c = f.clockController(t, &now)
	if j := job(c); j.State != api.StatePending || j.Reason != "Reservation" {
		t.Fatalf("restart one second before the start: %s %s", j.State, j.Reason)
	}
	if r, _, ok := resvState(t, c, "w"); !ok || r.StartTime != t0+100 {
		t.Fatalf("reservation after the restart: %+v %v", r, ok)
	}
	now.Store(t0 + 100)
	c = f.clockController(t, &now)
	if j := job(c); j.State != api.StateRunning || !slices.Equal(j.Nodes, []string{"local1"}) {
		t.Fatalf("restart at the start instant: %s %s on %v", j.State, j.Reason, j.Nodes)
	}
}
