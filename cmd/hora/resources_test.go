package main

import (
	"strings"
	"testing"
	"time"

	"hora/api"
)

// A job that asked for resources shows what it holds: squeue %C, %m, %b
// and sacct AllocCPUS, ReqMem, AllocTRES read its allocation.
func TestResourceFields(t *testing.T) {
	j := &api.Job{StartTime: 1, Nodes: []string{"n1", "n2"},
		Spec: api.JobSpec{NTasks: 3, MemPerCPU: 500, Gres: "gpu:a100:1"},
		Alloc: []api.NodeAlloc{{Node: "n1", CPUs: []int{0, 1}, MemMB: 1000, Tasks: 2, GPUs: []int{1}},
			{Node: "n2", CPUs: []int{3}, MemMB: 500, Tasks: 1, GPUs: []int{0}}}}
	if got := jobCPUs(j); got != 3 {
		t.Errorf("CPUs %d", got)
	}
	if got := reqMem(j, "0M"); got != "500M" {
		t.Errorf("ReqMem %q", got)
	}
	if got := tresPerNode(j); got != "gres:gpu:a100:1" {
		t.Errorf("%%b %q", got)
	}
	if got := reqTRES(j); got != "billing=3,cpu=3,mem=1500M,node=1" {
		t.Errorf("ReqTRES %q", got)
	}
	if got := allocTRES(j); got != "billing=3,cpu=3,mem=1500M,node=2,gres/gpu=2" {
		t.Errorf("AllocTRES %q", got)
	}
	if got := tresText(8, 16384, "gpu:a100:2,nvme:1", 8); got != "cpu=8,mem=16G,billing=8,gres/gpu=2,gres/gpu:a100=2,gres/nvme=1" {
		t.Errorf("CfgTRES %q", got)
	}
	whole := &api.Job{Spec: api.JobSpec{Nodes: 2}, Nodes: []string{"a", "b"}}
	if reqMem(whole, "0") != "0" || tresPerNode(whole) != "N/A" || allocTRES(whole) != "" {
		t.Errorf("whole-node job: %q %q %q", reqMem(whole, "0"), tresPerNode(whole), allocTRES(whole))
	}
}

// scontrol show job of a resource job: requested nodes and features, tasks
// per node, memory per CPU and what it holds.
func TestShowJobResources(t *testing.T) {
	j := &api.Job{ID: 5, State: api.StateRunning, StartTime: 1, SubmitTime: 1, Nodes: []string{"n1"},
		Spec: api.JobSpec{NTasks: 2, CPUsPerTask: 2, NTasksPerNode: 2, MemPerCPU: 100, NodeList: "n1", Exclude: "n2",
			Constraint: "ib", Exclusive: "node", Partition: "p"},
		Alloc: []api.NodeAlloc{{Node: "n1", CPUs: []int{0, 1, 2, 3}, MemMB: 400, Tasks: 2, GPUs: []int{0}}}}
	var b strings.Builder
	jobRecord(j, time.Unix(10, 0), "").write(&b, true)
	for _, w := range []string{"ReqNodeList=n1 ExcNodeList=n2", "NumCPUs=4 NumTasks=2 CPUs/Task=2",
		"TRES=cpu=4,mem=400M,node=1,billing=4,gres/gpu=1", "NtasksPerN:B:S:C=2:0:*:*",
		"MinCPUsNode=2 MinMemoryCPU=100M", "Features=ib", "OverSubscribe=NO"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("scontrol show job lacks %q:\n%s", w, b.String())
		}
	}
}
