package main

import (
	"testing"

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
