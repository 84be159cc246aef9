package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migration is one step of the schema. Versions are 1, 2, ... in list order;
// a released migration is never edited, only followed by a new one, because
// databases in the field have already run it.
type migration struct {
	name string
	sql  string
}

var migrations = []migration{
	{"core tables", `
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) STRICT;
INSERT INTO meta(key, value) VALUES ('next_job_id', '1');

-- The projection: one row per job, always equal to the fold of its events.
CREATE TABLE jobs (
	id            INTEGER PRIMARY KEY,
	uid           INTEGER NOT NULL,
	gid           INTEGER NOT NULL,
	user_name     TEXT    NOT NULL,
	group_name    TEXT    NOT NULL,
	state         TEXT    NOT NULL,
	reason        TEXT    NOT NULL,
	priority      INTEGER NOT NULL,
	partition     TEXT    NOT NULL,
	name          TEXT    NOT NULL,
	submit_time   INTEGER NOT NULL, -- Unix seconds, as every *_time column
	eligible_time INTEGER NOT NULL,
	start_time    INTEGER NOT NULL, -- 0 = not started
	end_time      INTEGER NOT NULL, -- 0 = not ended
	exit_code     INTEGER NOT NULL,
	signal        INTEGER NOT NULL,
	cancelled_by  INTEGER NOT NULL, -- uid, -1 = not cancelled
	nodes         TEXT    NOT NULL, -- JSON array of node names
	restarts      INTEGER NOT NULL,
	stdout_path   TEXT    NOT NULL,
	stderr_path   TEXT    NOT NULL,
	spec          TEXT    NOT NULL  -- api.JobSpec as JSON
) STRICT;

-- The truth: append-only, seq orders all events of the database.
CREATE TABLE job_events (
	seq     INTEGER PRIMARY KEY,
	job_id  INTEGER NOT NULL REFERENCES jobs(id),
	time    INTEGER NOT NULL,
	kind    TEXT    NOT NULL,
	payload TEXT    NOT NULL -- kind-specific fields as JSON
) STRICT;

-- Chunks of divisible jobs of the current run (part of the projection).
CREATE TABLE job_steps (
	job_id       INTEGER NOT NULL REFERENCES jobs(id),
	idx          INTEGER NOT NULL,
	node         TEXT    NOT NULL,
	state        TEXT    NOT NULL,
	chunk_offset REAL    NOT NULL,
	chunk_size   REAL    NOT NULL,
	start_time   INTEGER NOT NULL,
	end_time     INTEGER NOT NULL,
	exit_code    INTEGER NOT NULL,
	signal       INTEGER NOT NULL,
	PRIMARY KEY (job_id, idx)
) STRICT, WITHOUT ROWID;
`},
	{"indexes for the read paths, append-only events", `
CREATE INDEX job_events_job ON job_events(job_id, seq);
CREATE INDEX jobs_state ON jobs(state);
CREATE INDEX jobs_end_time ON jobs(end_time);
CREATE TRIGGER job_events_no_update BEFORE UPDATE ON job_events
BEGIN SELECT RAISE(ABORT, 'job_events is append-only'); END;
CREATE TRIGGER job_events_no_delete BEFORE DELETE ON job_events
BEGIN SELECT RAISE(ABORT, 'job_events is append-only'); END;
`},
	{"advance reservations", `
-- One row per live reservation (scontrol create/update/delete reservation);
-- horad books them into the reserve policy again after a restart.
CREATE TABLE reservations (
	name       TEXT    PRIMARY KEY,
	partition  TEXT    NOT NULL,
	start_time INTEGER NOT NULL, -- Unix seconds
	end_time   INTEGER NOT NULL, -- Unix seconds, > start_time
	nodes      TEXT    NOT NULL, -- JSON array of node names
	users      TEXT    NOT NULL, -- JSON array of user names
	flags      TEXT    NOT NULL, -- JSON array of Slurm flag names
	CHECK (end_time > start_time)
) STRICT;
`},
	{"node administrative state", `
-- One row per node that is not simply "up": drained, or down (set by an
-- operator or by the health prober). A node without a row is in service.
CREATE TABLE node_admin (
	name       TEXT    PRIMARY KEY,
	drain      INTEGER NOT NULL, -- 1 = no new work (scontrol update State=DRAIN)
	down       INTEGER NOT NULL, -- 1 = out of service
	down_cause TEXT    NOT NULL, -- 'admin' (State=DOWN) or 'noresp' (health prober); '' when up
	reason     TEXT    NOT NULL,
	uid        INTEGER NOT NULL, -- who set the reason
	user_name  TEXT    NOT NULL,
	time       INTEGER NOT NULL  -- when the reason was set, Unix seconds
) STRICT;

-- scontrol suspend/resume: when the job was last suspended (0 = never in
-- this run) and the seconds it has spent suspended in this run.
ALTER TABLE jobs ADD COLUMN suspend_time   INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN suspended_secs INTEGER NOT NULL DEFAULT 0;
`},
	{"job allocations", `
-- What a job that asked for resources holds on each node (CPU ids, memory,
-- gres): JSON array of api.NodeAlloc; '' for whole-node jobs.
ALTER TABLE jobs ADD COLUMN alloc TEXT NOT NULL DEFAULT '';
`},
	{"job usage", `
-- The batch step's peak resident memory (KiB) and CPU time (ms), from its
-- end event; 0 = not measured.
ALTER TABLE jobs ADD COLUMN max_rss_kb   INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN total_cpu_ms INTEGER NOT NULL DEFAULT 0;
`},
	{"srun steps: command name, task count and CPUs", `
ALTER TABLE job_steps ADD COLUMN name   TEXT    NOT NULL DEFAULT '';
ALTER TABLE job_steps ADD COLUMN ntasks INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_steps ADD COLUMN cpus   INTEGER NOT NULL DEFAULT 0;
`},
	{"job arrays", `
-- Each task of a job array is a job of its own; array_job_id is the array's
-- id (its first task's job id, 0 = not a task) and array_task_id the task's
-- index. An array is written as one job_arrays row: a task gets its own
-- jobs row and submit event only when something happens to it (it starts,
-- is held, updated, cancelled), so that a 10,000-task submit is one small
-- insert. The tasks share the spec they were submitted with: a task's spec
-- column (and its submit event's) is '' until an update gives it its own
-- (store/README.md, arrays.go).
ALTER TABLE jobs ADD COLUMN array_job_id  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN array_task_id INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_array ON jobs(array_job_id) WHERE array_job_id != 0;
CREATE TABLE job_arrays (
	array_job_id INTEGER PRIMARY KEY, -- the first task's job id; task k has id array_job_id + k
	tasks        TEXT    NOT NULL,    -- JSON array of the task ids, in job id order
	proto        TEXT    NOT NULL,    -- api.Job as JSON: what every task was submitted as
	lazy         INTEGER NOT NULL     -- tasks that have no jobs row yet
) STRICT;
CREATE INDEX job_arrays_lazy ON job_arrays(array_job_id) WHERE lazy > 0;
`},
	{"job records, jobs by owner", `
-- The whole row (but steps) as one compact binary record (store/record.go),
-- written with the columns: readers decode one column instead of 29
-- (recovery of 100,000 jobs). NULL = written before this migration; such a
-- row is read from its columns.
ALTER TABLE jobs ADD COLUMN rec BLOB;
-- sacct -u over a long history: one user's jobs ended since a time.
CREATE INDEX jobs_uid_end ON jobs(uid, end_time);
`},
	{"step time limits", `
-- srun -t: a step's own time limit in seconds (0 = the job's), so that a
-- restarted horad arms it again (controller/steps.go rearmSrunSteps).
ALTER TABLE job_steps ADD COLUMN time_limit INTEGER NOT NULL DEFAULT 0;
`},
	{"no state index", `
-- A job not ended has end_time 0, and those are exactly the jobs in a
-- state that is not final (store/fold.go): jobs(end_time) finds the live
-- jobs, in id order, and jobs(state) was one more index entry for every
-- submission and every change of state to write.
DROP INDEX jobs_state;
`},
}

// migrate brings db to the last of ms in one immediate transaction, so two
// processes opening the same new file cannot both apply a migration. A
// database newer than ms is refused rather than used by code that does not
// know its schema.
func migrate(ctx context.Context, db *sql.DB, ms []migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	name       TEXT    NOT NULL,
	applied_at INTEGER NOT NULL
) STRICT`); err != nil {
		return err
	}
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return err
	}
	if have > len(ms) {
		return fmt.Errorf("database schema version %d is newer than this program knows (%d)", have, len(ms))
	}
	for v := have + 1; v <= len(ms); v++ {
		m := ms[v-1]
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("migration %d (%s): %w", v, m.name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)`,
			v, m.name, time.Now().Unix()); err != nil {
			return err
		}
	}
	return tx.Commit()
}
