package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"

	"hora/api"
)

// TestBackupWhileWriting: a backup taken while jobs are being submitted is
// a valid database holding a prefix of them, and the store goes on.
func TestBackupWhileWriting(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, filepath.Join(dir, "hora.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	submit := func(i int) {
		j := &api.Job{Spec: api.JobSpec{Name: "j", Script: "#!/bin/sh\ntrue\n"}, State: api.StatePending, SubmitTime: int64(i)}
		if err := s.Submit(ctx, j); err != nil {
			t.Error(err)
		}
	}
	for i := range 200 {
		submit(i)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 300 {
			submit(200 + i)
		}
	}()
	dst := filepath.Join(dir, "backup.db")
	if err := s.Backup(ctx, dst); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := s.Backup(ctx, dst); err == nil {
		t.Error("a second backup over the first one was not refused")
	}
	db, err := sql.Open("sqlite", "file:"+dst+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ok string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check of the backup: %q %v", ok, err)
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM jobs").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n < 200 || n > 500 {
		t.Errorf("backup holds %d jobs, want 200..500", n)
	}
	all, err := s.Jobs(ctx, Filter{})
	if err != nil || len(all) != 500 {
		t.Errorf("store after the backup: %d jobs, %v", len(all), err)
	}
}
