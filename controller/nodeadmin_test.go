package controller

import (
	"errors"
	"fmt"
	"testing"

	"hora/api"
	"hora/nodes"
)

// ReturnToService: a node that answers again returns to service according
// to why it went down — 0 never by itself, 1 only if it was down for not
// responding, 2 always — and the outcome is what the store keeps.
func TestReturnToService(t *testing.T) {
	for _, rts := range []int{0, 1, 2} {
		for _, cause := range []string{causeNoResp, causeAdmin} {
			t.Run(fmt.Sprintf("rts%d-%s", rts, cause), func(t *testing.T) {
				f := newFixture(t)
				f.cfg.ReturnToService = &rts
				c := f.controller(t)
				ctx := t.Context()
				if cause == causeAdmin {
					if _, err := c.updateNodes(ctx, root, api.NodeUpdateRequest{Nodes: []string{"local2"}, State: api.NodeDown, Reason: "bad dimm"}); err != nil {
						t.Fatal(err)
					}
				}
				c.mu.Lock()
				c.nodeHealthLocked(ctx, nodes.NodeEvent{Node: "local2", Err: errors.New("no route to host")})
				if c.admin["local2"].inService() {
					t.Fatal("a node that does not answer is in service")
				}
				c.nodeHealthLocked(ctx, nodes.NodeEvent{Node: "local2", Up: true})
				back := c.admin["local2"].inService()
				c.mu.Unlock()
				want := rts == 2 || (rts == 1 && cause == causeNoResp)
				if back != want {
					t.Fatalf("back in service %v, want %v", back, want)
				}
				saved, err := f.st.NodeAdmins(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if want != (len(saved) == 0) {
					t.Fatalf("store keeps %+v", saved)
				}
				if !want {
					if saved[0].DownCause != cause {
						t.Fatalf("down cause %q, want %q", saved[0].DownCause, cause)
					}
					// RESUME brings it back whatever the setting.
					if _, err := c.updateNodes(ctx, root, api.NodeUpdateRequest{Nodes: []string{"local2"}, State: api.NodeResume}); err != nil {
						t.Fatal(err)
					}
					if saved, _ := f.st.NodeAdmins(ctx); len(saved) != 0 {
						t.Fatalf("after resume the store keeps %+v", saved)
					}
				}
			})
		}
	}
}

// Refusals of scontrol update change nothing and carry Slurm's texts.
func TestUpdateNodesRefusals(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	ctx := t.Context()
	nobody := &Caller{UID: 65534, GID: 65534, User: "nobody"}
	cases := []struct {
		name string
		who  *Caller
		req  api.NodeUpdateRequest
		msg  string
	}{
		{"non-operator", nobody, api.NodeUpdateRequest{Nodes: []string{"local1"}, State: api.NodeDrain, Reason: "x"}, "Invalid user id"},
		{"unknown node among known", root, api.NodeUpdateRequest{Nodes: []string{"local1", "nosuch"}, State: api.NodeDrain, Reason: "x"}, "Invalid node name specified"},
		{"drain without reason", root, api.NodeUpdateRequest{Nodes: []string{"local1"}, State: api.NodeDrain}, "You must specify a reason when DOWNING or DRAINING a node. Request denied"},
		{"down without reason", root, api.NodeUpdateRequest{Nodes: []string{"local1"}, State: api.NodeDown}, "You must specify a reason when DOWNING or DRAINING a node. Request denied"},
		{"resume an idle node", root, api.NodeUpdateRequest{Nodes: []string{"local1"}, State: api.NodeResume}, "Invalid node state specified"},
		{"undrain an idle node", root, api.NodeUpdateRequest{Nodes: []string{"local1"}, State: api.NodeUndrain}, "Invalid node state specified"},
		{"bogus state", root, api.NodeUpdateRequest{Nodes: []string{"local1"}, State: "SLEEPY", Reason: "x"}, "Invalid node state specified: SLEEPY"},
	}
	for _, tc := range cases {
		_, err := c.updateNodes(ctx, tc.who, tc.req)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Message != tc.msg {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.msg)
		}
		if saved, _ := f.st.NodeAdmins(ctx); len(saved) != 0 {
			t.Fatalf("%s changed the store: %+v", tc.name, saved)
		}
		c.mu.Lock()
		for name, a := range c.admin {
			if !a.inService() {
				t.Fatalf("%s changed node %s: %+v", tc.name, name, a)
			}
		}
		c.mu.Unlock()
	}
}

// A job that loses its node is requeued unless it or the cluster says no;
// --requeue wins over job_requeue = 0.
func TestRequeueable(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	zero, one := 0, 1
	cases := []struct {
		spec    api.JobSpec
		cluster *int
		want    bool
	}{
		{api.JobSpec{}, &one, true},
		{api.JobSpec{}, &zero, false},
		{api.JobSpec{Requeue: true}, &zero, true},
		{api.JobSpec{NoRequeue: true}, &one, false},
		{api.JobSpec{Requeue: true, Load: 1e6}, &one, false}, // divisible: chunks, not a rerun
	}
	for i, tc := range cases {
		c.cfg.JobRequeue = tc.cluster
		j := &job{Job: api.Job{Spec: tc.spec, CancelledBy: -1}}
		if got := c.requeueable(j); got != tc.want {
			t.Errorf("case %d: requeueable %v, want %v", i, got, tc.want)
		}
	}
	j := &job{Job: api.Job{Spec: api.JobSpec{Requeue: true}, CancelledBy: 0}}
	if c.requeueable(j) {
		t.Error("a cancelled job is requeued")
	}
}

// Only a status of the job's current run counts: the end of a run given up
// (its node was lost, or it was requeued) must not end the job's later run,
// wherever that runs.
func TestCurrentRun(t *testing.T) {
	c := &Controller{}
	batch := func(run int) nodes.StepKey { return nodes.StepKey{Job: 7, Step: -1, Run: run} }
	running := func(restarts int, node string) *job {
		return &job{Job: api.Job{ID: 7, State: api.StateRunning, Restarts: restarts, Nodes: []string{node}}}
	}
	cases := []struct {
		name string
		j    *job
		key  nodes.StepKey
		want bool
	}{
		{"never requeued", running(0, "n1"), batch(0), true},
		{"requeued, pending", &job{Job: api.Job{ID: 7, State: api.StatePending, Restarts: 1}}, batch(0), false},
		{"requeued, pending, its next run", &job{Job: api.Job{ID: 7, State: api.StatePending, Restarts: 1}}, batch(1), false},
		{"requeued, runs again on the same node", running(1, "n1"), batch(0), false},
		{"requeued, its current run ends", running(1, "n1"), batch(1), true},
		{"requeued twice, the first run", running(2, "n1"), batch(0), false},
		{"suspended, current run", &job{Job: api.Job{ID: 7, State: api.StateSuspended, Restarts: 1}}, batch(1), true},
		{"finished", &job{Job: api.Job{ID: 7, State: api.StateNodeFail, Restarts: 1}}, batch(1), false},
		{"unknown job", nil, batch(0), false},
		{"legacy run re-attached", &job{Job: api.Job{ID: 7, State: api.StateRunning, Restarts: 3}, legacyRun: true}, batch(nodes.LegacyRun), true},
		{"legacy run, numbered status", &job{Job: api.Job{ID: 7, State: api.StateRunning, Restarts: 3}, legacyRun: true}, batch(3), false},
		{"unnumbered status, numbered run", running(3, "n1"), batch(nodes.LegacyRun), false},
		{"chunk of the current run", &job{Job: api.Job{ID: 7, State: api.StateRunning}}, nodes.StepKey{Job: 7, Step: 2}, true},
		{"chunk of another run", &job{Job: api.Job{ID: 7, State: api.StateRunning}}, nodes.StepKey{Job: 7, Step: 2, Run: 1}, false},
	}
	for _, tc := range cases {
		if got := c.currentRunLocked(tc.j, nodes.Status{Key: tc.key, Node: "n1"}); got != tc.want {
			t.Errorf("%s: current %v, want %v", tc.name, got, tc.want)
		}
	}
}
