package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"hora/api"
)

// rawDB opens path with the writer's settings but without migrating.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, map[string][]string{
		"_pragma": {"journal_mode(WAL)", "foreign_keys(1)"}, "_txlock": {"immediate"}}))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	return db
}

// A database written by the previous schema version opens, is migrated, and
// keeps its jobs; the new version's objects exist afterwards.
func TestMigrateFromPreviousVersion(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "hora.db")
	old := rawDB(t, path)
	prev := len(migrations) - 1
	if err := migrate(ctx, old, migrations[:prev]); err != nil {
		t.Fatal(err)
	}
	// Write a job and two events as the previous version's store did: the
	// jobs columns are those of version 2 (version 4 adds two).
	tx, err := old.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	sub := testJob(1)
	sub.ID = 7
	evs := []Event{
		{JobID: 7, Time: 10, Kind: KindSubmit, Job: sub},
		{JobID: 7, Time: 11, Kind: KindStart, Nodes: []string{"n1"}},
	}
	j, err := Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	nodes, _ := json.Marshal(j.Nodes)
	spec, _ := json.Marshal(j.Spec)
	if _, err := tx.ExecContext(ctx, `INSERT INTO jobs (id, uid, gid, user_name, group_name, state, reason,
	priority, partition, name, submit_time, eligible_time, start_time, end_time, exit_code, signal,
	cancelled_by, nodes, restarts, stdout_path, stderr_path, spec)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		j.ID, j.UID, j.GID, j.User, j.Group, string(j.State), j.Reason, j.Priority, j.Spec.Partition,
		j.Spec.Name, j.SubmitTime, j.EligibleTime, j.StartTime, j.EndTime, j.ExitCode, j.Signal,
		j.CancelledBy, string(nodes), j.Restarts, j.StdoutPath, j.StderrPath, string(spec)); err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		if err := putEvent(ctx, tx, &evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = '8' WHERE key = 'next_job_id'`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	old.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var version int
	if err := s.r.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != len(migrations) {
		t.Fatalf("schema version %d after Open, want %d", version, len(migrations))
	}
	if got := checkFold(t, s, 7); got.State != api.StateRunning {
		t.Fatalf("migrated job: %+v", got)
	}
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name IN
('job_events_job', 'jobs_uid_end', 'jobs_end_time', 'job_events_no_update', 'job_events_no_delete')`).Scan(&n); err != nil || n != 5 {
		t.Fatalf("version %d objects: %d of 5, %v", len(migrations), n, err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM job_events WHERE job_id = 7`)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("deleting events: %v", err)
	}
	// Version 4: the migrated job can be suspended (new columns), and the
	// node_admin table takes a row.
	if err := s.Append(ctx, Event{JobID: 7, Time: 12, Kind: KindSuspend}); err != nil {
		t.Fatal(err)
	}
	if got := checkFold(t, s, 7); got.State != api.StateSuspended || got.SuspendTime != 12 {
		t.Fatalf("suspended migrated job: %+v", got)
	}
	if err := s.PutNodeAdmin(ctx, NodeAdmin{Name: "n1", Drain: true, Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	j8 := testJob(8)
	if err := s.Submit(ctx, j8); err != nil || j8.ID != 8 {
		t.Fatalf("first id after migration: %d, %v", j8.ID, err)
	}
	// Version 5: an srun step keeps its command name and task count.
	if err := s.Append(ctx, Event{JobID: 8, Time: 13, Kind: KindStart, Nodes: []string{"n1", "n2"}},
		Event{JobID: 8, Time: 14, Kind: KindStepStart, Step: &api.Step{Index: 0, Node: "n[1-2]", Name: "hostname", NTasks: 4, CPUs: 8}}); err != nil {
		t.Fatal(err)
	}
	if got := checkFold(t, s, 8); len(got.Steps) != 1 || got.Steps[0].Name != "hostname" || got.Steps[0].NTasks != 4 || got.Steps[0].CPUs != 8 {
		t.Fatalf("srun step after migration: %+v", got.Steps)
	}
}

// Opening twice applies nothing twice; a database from a newer program is refused.
func TestMigrateIsIdempotentAndRefusesNewer(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for range 2 {
		s := openStore(t, dir)
		s.Close()
	}
	db := rawDB(t, filepath.Join(dir, "hora.db"))
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(migrations) {
		t.Fatalf("%d migrations recorded, want %d (%v)", n, len(migrations), err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO schema_migrations VALUES (?, 'from the future', 0)`, len(migrations)+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err := Open(ctx, filepath.Join(dir, "hora.db")); err == nil || !strings.Contains(err.Error(), "newer") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("opened a newer schema: %v", err)
	}
}
