package store

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"hora/api"
)

// testJob is a job as the controller builds one before Submit.
func testJob(n int) *api.Job {
	return &api.Job{
		Spec: api.JobSpec{
			Name: fmt.Sprintf("job-%d", n), Script: fmt.Sprintf("#!/bin/sh\necho %d\n", n),
			WorkDir: "/home/alice", Partition: "batch", Nodes: 1, TimeLimit: 600,
			Env: []string{"N=" + fmt.Sprint(n)},
		},
		UID: 1000, GID: 1000, User: "alice", Group: "alice",
		State: api.StatePending, Reason: "None", SubmitTime: 1700000000 + int64(n),
		EligibleTime: 1700000000 + int64(n), CancelledBy: -1,
	}
}

func openStore(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(dir, "hora.db"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fataler is what checkFold needs of *testing.T and *rapid.T alike.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// checkFold asserts that the projection of job id is the fold of its events.
func checkFold(t fataler, s *Store, id int64) api.Job {
	t.Helper()
	ctx := context.Background()
	evs, err := s.Events(ctx, id)
	if err != nil {
		t.Fatalf("events of %d: %v", id, err)
	}
	want, err := Fold(evs)
	if err != nil {
		t.Fatalf("fold of %d: %v", id, err)
	}
	got, err := s.Job(ctx, id)
	if err != nil {
		t.Fatalf("job %d: %v", id, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("job %d: row differs from the fold of its %d events:\nrow  %+v\nfold %+v", id, len(evs), got, want)
	}
	return got
}
