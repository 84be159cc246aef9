package controller

import (
	"slices"
	"testing"

	"hora/api"
	"hora/config"
)

// layoutStep places tasks as Slurm does (block, cyclic, per-node counts),
// refuses a step its allocation can never hold, and answers busy while the
// job's other steps hold the CPUs it needs.
func TestLayoutStep(t *testing.T) {
	c := &Controller{nodes: []config.Node{{Name: "n1", CPUs: 4}, {Name: "n2", CPUs: 4}, {Name: "n3", CPUs: 4}}}
	running := func(nodes []string, cpus ...int) map[int]*srunStep {
		return map[int]*srunStep{0: {id: 0, nodes: nodes, cpus: cpus}}
	}
	for _, tc := range []struct {
		name     string
		alloc    []string
		steps    map[int]*srunStep
		req      api.StepRequest
		nodes    []string
		taskNode []int
		cpus     []int
		code     string
	}{
		{name: "one task per node by default", alloc: []string{"n1", "n2"},
			nodes: []string{"n1", "n2"}, taskNode: []int{0, 1}, cpus: []int{4, 4}},
		{name: "block, two per node", alloc: []string{"n1", "n2"}, req: api.StepRequest{NTasks: 4, NTasksPerNode: 2},
			nodes: []string{"n1", "n2"}, taskNode: []int{0, 0, 1, 1}, cpus: []int{4, 4}},
		{name: "cyclic", alloc: []string{"n1", "n2"}, req: api.StepRequest{NTasks: 4, Cyclic: true},
			nodes: []string{"n1", "n2"}, taskNode: []int{0, 1, 0, 1}, cpus: []int{4, 4}},
		{name: "uneven block: the first nodes take one more", alloc: []string{"n1", "n2"}, req: api.StepRequest{NTasks: 3},
			nodes: []string{"n1", "n2"}, taskNode: []int{0, 0, 1}, cpus: []int{4, 4}},
		{name: "fewer tasks than nodes: one node", alloc: []string{"n1", "n2"}, req: api.StepRequest{NTasks: 1},
			nodes: []string{"n1"}, taskNode: []int{0}, cpus: []int{4}},
		{name: "exact takes only its CPUs", alloc: []string{"n1"}, req: api.StepRequest{NTasks: 1, CPUsPerTask: 2, Exact: true},
			nodes: []string{"n1"}, taskNode: []int{0}, cpus: []int{2}},
		{name: "more CPUs than the allocation: refused", alloc: []string{"n1", "n2"}, req: api.StepRequest{NTasks: 9},
			code: api.CodeTooManyCPUs},
		{name: "-c times tasks over a node: refused", alloc: []string{"n1"}, req: api.StepRequest{NTasks: 3, CPUsPerTask: 2},
			code: api.CodeTooManyCPUs},
		{name: "overcommit lets it run", alloc: []string{"n1"}, req: api.StepRequest{NTasks: 9, Overcommit: true},
			nodes: []string{"n1"}, taskNode: slices.Repeat([]int{0}, 9), cpus: []int{4}},
		{name: "more nodes than allocated: refused", alloc: []string{"n1"}, req: api.StepRequest{Nodes: 2},
			code: api.CodeInvalidNodeCount},
		{name: "-w outside the allocation: refused", alloc: []string{"n1", "n2"}, req: api.StepRequest{NodeList: []string{"n3"}},
			code: api.CodeInvalidNodeCount},
		{name: "-w picks the node", alloc: []string{"n1", "n2"}, req: api.StepRequest{NodeList: []string{"n2"}},
			nodes: []string{"n2"}, taskNode: []int{0}, cpus: []int{4}},
		{name: "-x leaves the node out", alloc: []string{"n1", "n2"}, req: api.StepRequest{Exclude: []string{"n1"}},
			nodes: []string{"n2"}, taskNode: []int{0}, cpus: []int{4}},
		{name: "a busy node is skipped", alloc: []string{"n1", "n2"}, steps: running([]string{"n1"}, 4),
			req: api.StepRequest{Nodes: 1}, nodes: []string{"n2"}, taskNode: []int{0}, cpus: []int{4}},
		{name: "busy everywhere: wait", alloc: []string{"n1", "n2"}, steps: running([]string{"n1"}, 4),
			req: api.StepRequest{Nodes: 2}, code: api.CodeStepBusy},
		{name: "exact steps share a node", alloc: []string{"n1"}, steps: running([]string{"n1"}, 1),
			req: api.StepRequest{NTasks: 3, Exact: true}, nodes: []string{"n1"}, taskNode: []int{0, 0, 0}, cpus: []int{3}},
		{name: "an exact step that does not fit beside another waits", alloc: []string{"n1"}, steps: running([]string{"n1"}, 2),
			req: api.StepRequest{NTasks: 3, Exact: true}, code: api.CodeStepBusy},
		{name: "overlap ignores the other steps", alloc: []string{"n1"}, steps: running([]string{"n1"}, 4),
			req: api.StepRequest{Overlap: true}, nodes: []string{"n1"}, taskNode: []int{0}, cpus: []int{4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &job{Job: api.Job{ID: 1, Nodes: tc.alloc}, srun: tc.steps}
			g, err := c.layoutStep(j, tc.req)
			if tc.code != "" {
				if err == nil || err.Code != tc.code {
					t.Fatalf("got %+v, %v; want error %s", g, err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(g.Nodes, tc.nodes) || !slices.Equal(g.TaskNode, tc.taskNode) || !slices.Equal(g.CPUs, tc.cpus) {
				t.Errorf("got nodes %v tasks %v cpus %v; want %v %v %v", g.Nodes, g.TaskNode, g.CPUs, tc.nodes, tc.taskNode, tc.cpus)
			}
		})
	}
}

// Only the job's owner or root gets a step; a pending job has none yet;
// a divisible job's chunks are its steps already.
func TestCreateStepRefusals(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	c.mu.Lock()
	c.addJob(&job{Job: api.Job{ID: 50, UID: 1000, State: api.StateRunning, Nodes: []string{"local1"}}, launched: true})
	c.addJob(&job{Job: api.Job{ID: 51, UID: 1000, State: api.StatePending}})
	c.addJob(&job{Job: api.Job{ID: 52, UID: 1000, State: api.StateRunning, Nodes: []string{"local1"}, Spec: api.JobSpec{Load: 10}}, launched: true})
	c.mu.Unlock()
	for _, tc := range []struct {
		who  *Caller
		id   int64
		code string
	}{
		{&Caller{UID: 1001}, 50, api.CodeAccessDenied},
		{&Caller{UID: 1000}, 49, api.CodeInvalidJobID},
		{&Caller{UID: 1000}, 51, api.CodePending},
		{&Caller{UID: 1000}, 52, api.CodeDisabled},
	} {
		_, err := c.createStep(t.Context(), tc.who, api.StepRequest{JobID: tc.id})
		ae, ok := err.(*api.Error)
		if !ok || ae.Code != tc.code {
			t.Errorf("uid %d job %d: %v, want %s", tc.who.UID, tc.id, err, tc.code)
		}
	}
	if j := c.jobs[50]; len(j.Steps) != 0 || len(j.srun) != 0 {
		t.Errorf("a refused step was recorded: %+v %v", j.Steps, j.srun)
	}
}

// A remote step's tasks run only for the srun granted the step (or root),
// only on the step's nodes, once, and as the job's owner from the record.
func TestClaimRemoteStep(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	c.mu.Lock()
	c.addJob(&job{Job: api.Job{ID: 60, UID: 1000, GID: 1000, State: api.StateRunning, Nodes: []string{"n1", "n2"}}, launched: true,
		srun: map[int]*srunStep{0: {id: 0, nodes: []string{"n1"}, srunPID: 4242, remote: true}, 1: {id: 1, nodes: []string{"n1"}, srunPID: 4243}}})
	c.mu.Unlock()
	task := func(node string, id int) api.StepTask {
		return api.StepTask{ID: id, Node: node, Argv: []string{"true"}}
	}
	for _, tc := range []struct {
		name string
		who  *Caller
		req  api.StepRun
		code string
	}{
		{"another user", &Caller{UID: 1001, PID: 4242}, api.StepRun{JobID: 60, Tasks: []api.StepTask{task("n1", 0)}}, api.CodeAccessDenied},
		{"another process of the owner", &Caller{UID: 1000, PID: 99}, api.StepRun{JobID: 60, Tasks: []api.StepTask{task("n1", 0)}}, api.CodeAccessDenied},
		{"a node outside the step", &Caller{UID: 1000, PID: 4242}, api.StepRun{JobID: 60, Tasks: []api.StepTask{task("n2", 0)}}, api.CodeInvalidNodeCount},
		{"a task twice", &Caller{UID: 1000, PID: 4242}, api.StepRun{JobID: 60, Tasks: []api.StepTask{task("n1", 0), task("n1", 0)}}, api.CodeBadRequest},
		{"a local step", &Caller{UID: 1000, PID: 4243}, api.StepRun{JobID: 60, StepID: 1, Tasks: []api.StepTask{task("n1", 0)}}, api.CodeInvalidJobID},
	} {
		if _, err := c.claimRemoteStep(tc.who, tc.req, func() {}); err == nil || err.Code != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
	specs, err := c.claimRemoteStep(&Caller{UID: 1000, PID: 4242}, api.StepRun{JobID: 60, Tasks: []api.StepTask{task("n1", 0), task("n1", 1)}}, func() {})
	if err != nil || len(specs) != 2 || specs[0].UID != 1000 || specs[0].GID != 1000 || specs[1].Node != "n1" {
		t.Fatalf("the granted srun: %+v, %v", specs, err)
	}
	if _, err := c.claimRemoteStep(&Caller{UID: 0, PID: 1}, api.StepRun{JobID: 60, Tasks: []api.StepTask{task("n1", 0)}}, func() {}); err == nil || err.Code != api.CodeAlreadyDone {
		t.Errorf("a second run of the step: %v", err)
	}
}
