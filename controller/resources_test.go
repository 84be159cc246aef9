package controller

import (
	"reflect"
	"testing"

	"hora/api"
	"hora/scheduler"
)

// A job spec's resource options become the Engine's request; a whole-node
// spec none; what a client other than sbatch sends wrong gets Slurm's text.
func TestRequestOf(t *testing.T) {
	q, err := requestOf(&api.JobSpec{Nodes: 2, NodesMax: 3, CPUsPerTask: 2, MemPerCPU: 500, Gres: "gpu:a100:1,nvme:2",
		GPUsPerNode: "v100:1", GPUsPerTask: "1", GPUs: "a100:4", CPUsPerGPU: 3, NodeList: "n[1-2]", Exclude: "n3",
		Constraint: "ib|avx", Exclusive: "user", MinCPUs: 4, NoMultithread: true})
	if err != nil {
		t.Fatal(err)
	}
	want := &scheduler.Request{NTasks: 2, CPUsPerTask: 2, NodesSet: true, NodesMax: 3, MinCPUs: 4, MemPerCPU: 500, MemGiven: true,
		Gres:        []scheduler.GresReq{{Name: "gpu", Type: "a100", Count: 1}, {Name: "nvme", Count: 2}, {Name: "gpu", Type: "v100", Count: 1}},
		GPUsPerTask: 1, GPUType: "a100", GPUs: 4, CPUsPerGPU: 3, ExclusiveUser: true, NoMultithread: true,
		NodeList: []string{"n1", "n2"}, Exclude: []string{"n3"}, Features: []string{"ib", "avx"}, AnyFeature: true}
	if !reflect.DeepEqual(q, want) {
		t.Fatalf("request\n got %+v\nwant %+v", q, want)
	}
	if q, err := requestOf(&api.JobSpec{Nodes: 3, Exclusive: "node"}); q != nil || err != nil {
		t.Fatalf("whole-node spec: %+v %v", q, err)
	}
	// --exclusive=user alone is a per-CPU request (one task, one CPU).
	if q, err := requestOf(&api.JobSpec{Exclusive: "user"}); err != nil || q == nil || !q.ExclusiveUser || q.Exclusive || q.NTasks != 1 {
		t.Fatalf("--exclusive=user spec: %+v %v", q, err)
	}
	for _, s := range []api.JobSpec{{Gres: "gpu:-1"}, {GPUs: "x"}, {GPUsPerTask: "a:0"}, {NTasks: 1, NodeList: "n[1-"}, {NTasks: 1, Constraint: "a&b|c"}} {
		if _, err := requestOf(&s); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	if _, err := requestOf(&api.JobSpec{Gres: "gpu:-1"}); err.(*api.Error).Message != "Invalid generic resource (gres) specification" {
		t.Errorf("bad gres: %v", err)
	}
}

// Slurm's compressed per-node counts, and the gres text an allocation is
// stored with reads back as it was.
func TestAllocText(t *testing.T) {
	if got := compressCounts([]int{2, 2, 2, 1}); got != "2(x3),1" {
		t.Errorf("compressCounts %q", got)
	}
	a := scheduler.NodeAlloc{Node: "n1", Tasks: 2, CPUs: []int{0, 1}, MemMB: 10,
		Gres: []scheduler.GresUse{{Name: "gpu", Type: "a100", Count: 3, IDs: []int{0, 1, 3}}, {Name: "nvme", Count: 2}}}
	wire := apiAlloc([]scheduler.NodeAlloc{a})
	if wire[0].Gres != "gpu:a100:3(IDX:0-1,3),nvme:2" || !reflect.DeepEqual(wire[0].GPUs, []int{0, 1, 3}) {
		t.Fatalf("wire %+v", wire[0])
	}
	if back := schedAlloc(wire); !reflect.DeepEqual(back[0], a) {
		t.Fatalf("read back %+v, want %+v", back[0], a)
	}
}
