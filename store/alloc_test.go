package store

import (
	"context"
	"reflect"
	"testing"

	"hora/api"
)

// A resource job's allocation is part of its start: it survives the
// projection and a reopen, and a requeue clears it.
func TestAllocDurable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	j := testJob(1)
	j.ID = 1
	j.Spec.NTasks, j.Spec.MemPerCPU = 3, 100
	if err := s.Submit(ctx, j); err != nil {
		t.Fatal(err)
	}
	alloc := []api.NodeAlloc{{Node: "n1", CPUs: []int{0, 1}, MemMB: 200, Tasks: 2, Gres: "gpu:a100:1(IDX:1)", GPUs: []int{1}},
		{Node: "n2", CPUs: []int{5}, MemMB: 100, Tasks: 1}}
	if err := s.Append(ctx, Event{JobID: 1, Time: 1700000100, Kind: KindStart, Nodes: []string{"n1", "n2"}, Alloc: alloc}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Job(ctx, 1)
	if err != nil || !reflect.DeepEqual(got.Alloc, alloc) {
		t.Fatalf("projection: %v %+v", err, got.Alloc)
	}
	checkFold(t, s, 1)
	s.Close()
	s = openStore(t, dir)
	defer s.Close()
	if got, err = s.Job(ctx, 1); err != nil || !reflect.DeepEqual(got.Alloc, alloc) {
		t.Fatalf("after reopen: %v %+v", err, got.Alloc)
	}
	if err := s.Append(ctx, Event{JobID: 1, Kind: KindRequeue}); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.Job(ctx, 1); got.Alloc != nil {
		t.Fatalf("requeued job keeps %+v", got.Alloc)
	}
}

// The batch step's usage comes with its end event and stays with the job.
func TestUsageDurable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	j := testJob(1)
	j.ID = 1
	if err := s.Submit(ctx, j); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, Event{JobID: 1, Time: 1700000100, Kind: KindStart, Nodes: []string{"n1"}},
		Event{JobID: 1, Time: 1700000200, Kind: KindEnd, State: api.StateCompleted, MaxRSSKB: 2048, TotalCPUMs: 1500}); err != nil {
		t.Fatal(err)
	}
	checkFold(t, s, 1)
	s.Close()
	s = openStore(t, dir)
	defer s.Close()
	if got, err := s.Job(ctx, 1); err != nil || got.MaxRSSKB != 2048 || got.TotalCPUMs != 1500 {
		t.Fatalf("usage after reopen: %v %d %d", err, got.MaxRSSKB, got.TotalCPUMs)
	}
}
