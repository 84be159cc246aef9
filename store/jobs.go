package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"hora/api"
)

// Filter selects jobs for Jobs; its conditions are ANDed.
type Filter struct {
	Active bool     // only jobs not in a final state
	Since  int64    // only jobs not ended before this Unix time (sacct -S): end_time 0 or >= Since
	IDs    []int64  // only these ids (nil = any)
	UIDs   []uint32 // only jobs of these owners (nil = any): sacct -u over a long history
}

// metaNextJobID is the meta key of the next id to allocate. It only grows, and
// is committed with the job that used the previous value, so no id is ever
// handed out twice, whatever happened to the process in between.
const metaNextJobID = "next_job_id"

// Submit records a new job and its submit event in one transaction.
//
// With job.ID 0 it allocates the next id; a caller that allocates ids itself
// (the controller tells the Engine the id before it commits) may pass one,
// which must not be below the next id, or the store would reuse one. On
// success job.ID is set, and so are the defaults Submit fills in: State
// PENDING and Reason "None" when empty, SubmitTime now when 0, and
// CancelledBy -1 (a new job cannot have been cancelled, and 0 would be root).
func (s *Store) Submit(ctx context.Context, job *api.Job) error {
	wait, err := s.SubmitQueued(ctx, job)
	if err != nil {
		return err
	}
	return wait()
}

// SubmitQueued is Submit in two halves: it queues the write and returns at
// once; wait blocks until the job is durable (or not) and then sets job.ID.
// Submissions queued one after another commit in that order, so a caller
// that hands out ids itself may queue under its own lock and wait outside
// it, letting concurrent submissions share one commit.
func (s *Store) SubmitQueued(ctx context.Context, job *api.Job) (wait func() error, err error) {
	j := cloneJob(job)
	if j.State == "" {
		j.State = api.StatePending
	}
	if j.Reason == "" {
		j.Reason = reasonNone
	}
	if j.SubmitTime == 0 {
		j.SubmitTime = time.Now().Unix()
	}
	j.CancelledBy = -1
	canonical(&j)
	var id int64
	req, err := s.enqueue(ctx, func(sqltx *sql.Tx) error {
		tx := s.prepared(sqltx)
		next, err := nextJobID(ctx, tx)
		if err != nil {
			return err
		}
		id = j.ID
		if id == 0 {
			id = next
		} else if id < next {
			return fmt.Errorf("job id %d: already allocated (next is %d)", id, next)
		}
		if _, err := tx.ExecContext(ctx, sqlSetNextJobID,
			strconv.FormatInt(id+1, 10), metaNextJobID); err != nil {
			return err
		}
		sj := j
		sj.ID = id
		ev := Event{JobID: id, Time: sj.SubmitTime, Kind: KindSubmit, Job: &sj}
		var nj api.Job
		if err := apply(&nj, &ev); err != nil {
			return err
		}
		if err := putJob(ctx, tx, &nj, nil); err != nil {
			return err
		}
		return putEvent(ctx, tx, &ev)
	})
	if err != nil {
		return nil, err
	}
	return func() error {
		if err := s.wait(ctx, req); err != nil {
			return err
		}
		j.ID = id
		*job = j
		return nil
	}, nil
}

const (
	sqlNextJobID    = `SELECT value FROM meta WHERE key = ?`
	sqlSetNextJobID = `UPDATE meta SET value = ? WHERE key = ?`
)

func nextJobID(ctx context.Context, tx execer) (int64, error) {
	var v string
	if err := tx.QueryRowContext(ctx, sqlNextJobID, metaNextJobID).Scan(&v); err != nil {
		return 0, fmt.Errorf("meta %s: %w", metaNextJobID, err)
	}
	return strconv.ParseInt(v, 10, 64)
}

// Append commits events, for any jobs, all or none: an event that cannot
// follow its job's history fails the call with an *EventError and nothing of
// the call is written. Each job's row is advanced by apply, the function Fold
// uses. Events with Time 0 get the current time. Submit events go through
// Submit, which allocates the id.
func (s *Store) Append(ctx context.Context, evs ...Event) error {
	wait, err := s.AppendQueued(ctx, evs...)
	if err != nil {
		return err
	}
	return wait()
}

// AppendQueued is Append in two halves, as SubmitQueued is Submit: it queues
// the write and returns at once; wait blocks until the events are durable
// (or not). Appends queued one after another commit in that order, and
// those queued together share a commit: horad records a whole pass's
// starts with one fsync instead of one each.
func (s *Store) AppendQueued(ctx context.Context, evs ...Event) (wait func() error, err error) {
	if len(evs) == 0 {
		return func() error { return nil }, nil
	}
	fn, err := s.appendFn(ctx, evs)
	if err != nil {
		return nil, err
	}
	req, err := s.enqueue(ctx, fn)
	if err != nil {
		return nil, err
	}
	return func() error { return s.wait(ctx, req) }, nil
}

// AppendEachQueued queues several appends at once, each an AppendQueued of
// its own (all or none of its events; one refused fails alone), and hands
// them to the writer as one unit, so that they share a commit: horad
// records a batch of job ends, or the starts of a pass, with one fsync even
// when the writer was idle and would have taken the first alone. waits[i]
// waits for appends[i]. Appends queued one after another commit in order.
func (s *Store) AppendEachQueued(ctx context.Context, appends [][]Event) (waits []func() error, err error) {
	fns := make([]func(*sql.Tx) error, 0, len(appends))
	for _, evs := range appends {
		if len(evs) == 0 {
			fns = append(fns, func(*sql.Tx) error { return nil })
			continue
		}
		fn, err := s.appendFn(ctx, evs)
		if err != nil {
			return nil, err
		}
		fns = append(fns, fn)
	}
	reqs, err := s.enqueueAll(ctx, fns)
	if err != nil {
		return nil, err
	}
	waits = make([]func() error, len(reqs))
	for i, req := range reqs {
		waits[i] = func() error { return s.wait(ctx, req) }
	}
	return waits, nil
}

// appendFn checks and copies the events of one append and returns the
// writer's function for them.
func (s *Store) appendFn(ctx context.Context, evs []Event) (func(*sql.Tx) error, error) {
	now := time.Now().Unix()
	evs = slices.Clone(evs)
	for i := range evs {
		if evs[i].Time == 0 {
			evs[i].Time = now
		}
		if evs[i].Kind == KindSubmit {
			return nil, &EventError{JobID: evs[i].JobID, Kind: KindSubmit, Msg: "use Submit, which allocates the id"}
		}
	}
	return func(tx *sql.Tx) error {
		type touched struct{ before, after api.Job }
		jobs := map[int64]*touched{}
		arrays := map[int64]*arrayRec{} // read once per call, for lazy tasks
		ptx := s.prepared(tx)
		var order []int64
		for i := range evs {
			ev := &evs[i]
			t := jobs[ev.JobID]
			if t == nil {
				before, err := loadJob(ctx, ptx, ev.JobID)
				if errors.Is(err, ErrNotFound) {
					// A task of an array gets its row with its first event.
					before, err = materialize(ctx, tx, ptx, ev.JobID, arrays)
				}
				if errors.Is(err, ErrNotFound) {
					return &EventError{JobID: ev.JobID, Kind: ev.Kind, Msg: "no such job", Err: ErrNotFound}
				}
				if err != nil {
					return err
				}
				t = &touched{before: before, after: cloneJob(&before)}
				jobs[ev.JobID] = t
				order = append(order, ev.JobID)
			}
			if err := apply(&t.after, ev); err != nil {
				return err
			}
		}
		for _, id := range order {
			t := jobs[id]
			canonical(&t.after)
			if err := putJob(ctx, ptx, &t.after, t.before.Steps); err != nil {
				return err
			}
		}
		for i := range evs {
			if err := putEvent(ctx, ptx, &evs[i]); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// jobColumns are the jobs columns in the order scanJob reads them.
const jobColumns = `id, uid, gid, user_name, group_name, state, reason, priority, partition, name,
	submit_time, eligible_time, start_time, end_time, exit_code, signal, cancelled_by, nodes,
	restarts, stdout_path, stderr_path, spec, suspend_time, suspended_secs, alloc, max_rss_kb, total_cpu_ms,
	array_job_id, array_task_id`

// sqlPutJob inserts or replaces a job's row, its columns and its record
// (record.go) together.
const sqlPutJob = `INSERT INTO jobs (` + jobColumns + `, rec)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
	uid = excluded.uid, gid = excluded.gid, user_name = excluded.user_name,
	group_name = excluded.group_name, state = excluded.state, reason = excluded.reason,
	priority = excluded.priority, partition = excluded.partition, name = excluded.name,
	submit_time = excluded.submit_time, eligible_time = excluded.eligible_time,
	start_time = excluded.start_time, end_time = excluded.end_time,
	exit_code = excluded.exit_code, signal = excluded.signal,
	cancelled_by = excluded.cancelled_by, nodes = excluded.nodes, restarts = excluded.restarts,
	stdout_path = excluded.stdout_path, stderr_path = excluded.stderr_path, spec = excluded.spec,
	suspend_time = excluded.suspend_time, suspended_secs = excluded.suspended_secs,
	alloc = excluded.alloc, max_rss_kb = excluded.max_rss_kb, total_cpu_ms = excluded.total_cpu_ms,
	array_job_id = excluded.array_job_id, array_task_id = excluded.array_task_id, rec = excluded.rec`

// putJob writes a job's row and the steps that differ from oldSteps.
//
// The spec column is left empty: the record holds the spec, and rows with
// a record are read from it alone (readJobs). Writing the spec's JSON
// there too stored it twice in every row (about 1.9 KB each with a usual
// environment), so that no two rows fitted in a 4 KiB page: the jobs table
// was 4 KB a job and is 2 KB, and each submission writes a page fewer to
// the WAL before its fsync (docs/benchmarks.md). Rows written before
// migration 9 keep their spec column, which is how they are read.
func putJob(ctx context.Context, tx execer, j *api.Job, oldSteps []api.Step) error {
	nodes, err := json.Marshal(j.Nodes)
	if err != nil {
		return err
	}
	if j.Nodes == nil {
		nodes = []byte("[]")
	}
	var alloc []byte
	if len(j.Alloc) > 0 {
		if alloc, err = json.Marshal(j.Alloc); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, sqlPutJob,
		j.ID, j.UID, j.GID, j.User, j.Group, string(j.State), j.Reason, j.Priority, j.Spec.Partition,
		j.Spec.Name, j.SubmitTime, j.EligibleTime, j.StartTime, j.EndTime, j.ExitCode, j.Signal,
		j.CancelledBy, string(nodes), j.Restarts, j.StdoutPath, j.StderrPath, "",
		j.SuspendTime, j.SuspendedSecs, string(alloc), j.MaxRSSKB, j.TotalCPUMs, j.ArrayJobID, j.ArrayTaskID,
		encodeRecord(nil, j))
	if err != nil {
		return fmt.Errorf("job %d: %w", j.ID, err)
	}
	// Steps change one or two at a time; rewriting only those keeps a job
	// with many chunks linear rather than quadratic.
	for _, st := range j.Steps {
		if i, ok := findStep(oldSteps, st.Index); ok && oldSteps[i] == st {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO job_steps
(job_id, idx, node, state, chunk_offset, chunk_size, start_time, end_time, exit_code, signal, name, ntasks, cpus, time_limit)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			j.ID, st.Index, st.Node, string(st.State), st.Offset, st.Size, st.StartTime, st.EndTime,
			st.ExitCode, st.Signal, st.Name, st.NTasks, st.CPUs, st.TimeLimit); err != nil {
			return fmt.Errorf("job %d step %d: %w", j.ID, st.Index, err)
		}
	}
	for _, st := range oldSteps {
		if _, ok := findStep(j.Steps, st.Index); !ok {
			if _, err := tx.ExecContext(ctx, `DELETE FROM job_steps WHERE job_id = ? AND idx = ?`, j.ID, st.Index); err != nil {
				return fmt.Errorf("job %d step %d: %w", j.ID, st.Index, err)
			}
		}
	}
	return nil
}

const sqlPutEvent = `INSERT INTO job_events (job_id, time, kind, payload) VALUES (?, ?, ?, ?)`

func putEvent(ctx context.Context, tx execer, ev *Event) error {
	p, err := encodePayload(ev)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, sqlPutEvent,
		ev.JobID, ev.Time, string(ev.Kind), string(p))
	if err != nil {
		return fmt.Errorf("job %d: %s event: %w", ev.JobID, ev.Kind, err)
	}
	ev.Seq, err = res.LastInsertId()
	return err
}

// querier is what both *sql.Tx and *sql.DB offer, so that the writer (inside
// its transaction) and the readers share the row decoding.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// whereID selects one job; its queries are prepared (hotStatements), as
// Append loads every job it advances.
const whereID = `WHERE id = ?`

const (
	sqlJobRecords  = `SELECT id, rec FROM jobs `
	sqlStepColumns = `SELECT job_id, idx, node, state, chunk_offset, chunk_size,
	start_time, end_time, exit_code, signal, name, ntasks, cpus, time_limit
FROM job_steps `
	sqlJobSteps = sqlStepColumns + `WHERE job_id = ? ORDER BY idx`
)

func loadJob(ctx context.Context, q querier, id int64) (api.Job, error) {
	js, err := queryJobs(ctx, q, whereID, id)
	if err != nil {
		return api.Job{}, err
	}
	if len(js) == 0 {
		return api.Job{}, ErrNotFound
	}
	return js[0], nil
}

// queryJobs reads the jobs selected by where (over the jobs table) with their
// steps, ordered by id.
//
// The SQL has no ORDER BY: with one, SQLite walks the whole table in id
// order rather than the index of the condition (recovery over a million
// finished jobs read all of them to keep the recent ones). The (id,
// record) pairs are sorted here instead, and the records, all read, are
// decoded on every CPU.
func queryJobs(ctx context.Context, q querier, where string, args ...any) ([]api.Job, error) {
	rows, err := q.QueryContext(ctx, sqlJobRecords+where, args...)
	if err != nil {
		return nil, err
	}
	type raw struct {
		id  int64
		rec string
	}
	var recs []raw
	var old []int64 // rows written before migration 9, without a record
	for rows.Next() {
		var id int64
		var rec sql.RawBytes
		if err := rows.Scan(&id, &rec); err != nil {
			rows.Close()
			return nil, err
		}
		if rec == nil {
			old = append(old, id)
			continue
		}
		recs = append(recs, raw{id, string(rec)})
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if !slices.IsSortedFunc(recs, func(a, b raw) int { return cmp.Compare(a.id, b.id) }) {
		slices.SortFunc(recs, func(a, b raw) int { return cmp.Compare(a.id, b.id) })
	}
	out := make([]api.Job, len(recs))
	err = parallel(len(recs), func(i int) error {
		if err := decodeRecord(recs[i].rec, &out[i]); err != nil {
			return fmt.Errorf("job %d: %w", recs[i].id, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(old) > 0 {
		ids, err := json.Marshal(old)
		if err != nil {
			return nil, err
		}
		cols, err := scanColumns(ctx, q, `WHERE id IN (SELECT value FROM json_each(?))`, string(ids))
		if err != nil {
			return nil, err
		}
		out = append(out, cols...)
		sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	}
	return withSteps(ctx, q, out, where, args...)
}

// parallel runs fn(0..n-1) on GOMAXPROCS goroutines, in contiguous ranges,
// and returns the error of the lowest failing index, as a loop would.
func parallel(n int, fn func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), n/1024+1)
	if workers <= 1 {
		for i := range n {
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w * n / workers; i < (w+1)*n/workers; i++ {
				if err := fn(i); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// scanColumns reads jobs from their columns, as rows without a record (rec
// NULL, written before migration 9) must be read; without their steps.
func scanColumns(ctx context.Context, q querier, where string, args ...any) ([]api.Job, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs `+where+` ORDER BY id`, args...)
	if err != nil {
		return nil, err
	}
	var out []api.Job
	for rows.Next() {
		var j api.Job
		var state, nodes, spec, alloc string
		if err := rows.Scan(&j.ID, &j.UID, &j.GID, &j.User, &j.Group, &state, &j.Reason, &j.Priority,
			new(string), new(string), &j.SubmitTime, &j.EligibleTime, &j.StartTime, &j.EndTime,
			&j.ExitCode, &j.Signal, &j.CancelledBy, &nodes, &j.Restarts, &j.StdoutPath, &j.StderrPath,
			&spec, &j.SuspendTime, &j.SuspendedSecs, &alloc, &j.MaxRSSKB, &j.TotalCPUMs, &j.ArrayJobID, &j.ArrayTaskID); err != nil {
			rows.Close()
			return nil, err
		}
		j.State = api.JobState(state)
		if err := json.Unmarshal([]byte(nodes), &j.Nodes); err != nil {
			rows.Close()
			return nil, fmt.Errorf("job %d: nodes: %w", j.ID, err)
		}
		// An array task without a spec of its own shares its array's
		// (shareArraySpecs, below).
		if spec != "" || j.ArrayJobID == 0 {
			if err := json.Unmarshal([]byte(spec), &j.Spec); err != nil {
				rows.Close()
				return nil, fmt.Errorf("job %d: spec: %w", j.ID, err)
			}
		}
		if alloc != "" {
			if err := json.Unmarshal([]byte(alloc), &j.Alloc); err != nil {
				rows.Close()
				return nil, fmt.Errorf("job %d: alloc: %w", j.ID, err)
			}
		}
		out = append(out, j)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	return out, rows.Err()
}

// withSteps adds their steps to out, the jobs where selects, and finishes
// them as every reader returns them.
func withSteps(ctx context.Context, q querier, out []api.Job, where string, args ...any) ([]api.Job, error) {
	if len(out) == 0 {
		return nil, nil
	}
	query := sqlJobSteps
	if where != whereID {
		// Only a job that has run has steps: the fold adds steps to a
		// running job only, and a requeue (back to PENDING) drops them. So
		// the steps of the others are read by id, not through the whole
		// selection again (100,000 ids in a temporary b-tree at recovery,
		// to find that pending jobs have none).
		var ran []int64
		for i := range out {
			if out[i].State != api.StatePending {
				ran = append(ran, out[i].ID)
			}
		}
		if len(ran) == 0 {
			return finish(ctx, q, out)
		}
		ids, err := json.Marshal(ran)
		if err != nil {
			return nil, err
		}
		query = sqlStepColumns + `WHERE job_id IN (SELECT value FROM json_each(?)) ORDER BY job_id, idx`
		args = []any{string(ids)}
	}
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var st api.Step
		var state string
		if err := rows.Scan(&id, &st.Index, &st.Node, &state, &st.Offset, &st.Size, &st.StartTime,
			&st.EndTime, &st.ExitCode, &st.Signal, &st.Name, &st.NTasks, &st.CPUs, &st.TimeLimit); err != nil {
			return nil, err
		}
		st.State = api.JobState(state)
		// out is ordered by id.
		if i := sort.Search(len(out), func(i int) bool { return out[i].ID >= id }); i < len(out) && out[i].ID == id {
			out[i].Steps = append(out[i].Steps, st)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return finish(ctx, q, out)
}

// finish gives array tasks their array's spec and makes every job canonical.
func finish(ctx context.Context, q querier, out []api.Job) ([]api.Job, error) {
	if err := shareArraySpecs(ctx, q, out); err != nil {
		return nil, err
	}
	for i := range out {
		canonical(&out[i])
	}
	return out, nil
}

// readTx runs fn in a read transaction of the read-only pool, so that a job's
// row and its steps come from one snapshot.
func (s *Store) readTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(tx)
}

// Job returns one job as the projection has it, or ErrNotFound.
func (s *Store) Job(ctx context.Context, id int64) (api.Job, error) {
	var j api.Job
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		j, err = loadJob(ctx, tx, id)
		if errors.Is(err, ErrNotFound) {
			j, _, err = lazyTask(ctx, tx, id)
		}
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return api.Job{}, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	return j, err
}

// Jobs returns the jobs f selects, ordered by id.
func (s *Store) Jobs(ctx context.Context, f Filter) ([]api.Job, error) {
	where, args, err := f.where()
	if err != nil {
		return nil, err
	}
	var out []api.Job
	err = s.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		if out, err = queryJobs(ctx, tx, where, args...); err != nil {
			return err
		}
		out, err = lazyTasks(ctx, tx, f, out)
		return err
	})
	return out, err
}

// where is the WHERE clause over the jobs table that selects what f says,
// and its arguments.
//
// A job not ended has end_time 0, and those are exactly the jobs in a
// state that is not final (fold.go sets end_time with the final state and
// clears it on requeue): the live jobs are found through jobs(end_time),
// in id order, which is also the order their rows are stored in (recovery
// reads 100,000 held jobs). jobs(uid, end_time) finds one owner's.
func (f Filter) where() (string, []any, error) {
	var conds []string
	var args []any
	if f.Active {
		conds = append(conds, `end_time = 0`)
	}
	var uids string
	if f.UIDs != nil {
		b, err := json.Marshal(f.UIDs)
		if err != nil {
			return "", nil, err
		}
		uids = string(b)
	}
	switch {
	case f.Since != 0 && f.UIDs != nil:
		// Spelled so that both halves search jobs(uid, end_time): given
		// as one AND of an OR, SQLite takes jobs(end_time) and reads every
		// user's jobs of the period (sacct -u over a million jobs).
		conds = append(conds, `id IN (SELECT id FROM jobs WHERE uid IN (SELECT value FROM json_each(?)) AND end_time = 0
	UNION ALL SELECT id FROM jobs WHERE uid IN (SELECT value FROM json_each(?)) AND end_time >= ?)`)
		args = append(args, uids, uids, f.Since)
	case f.Since != 0:
		conds = append(conds, `(end_time = 0 OR end_time >= ?)`)
		args = append(args, f.Since)
	case f.UIDs != nil:
		conds = append(conds, `uid IN (SELECT value FROM json_each(?))`)
		args = append(args, uids)
	}
	if f.IDs != nil {
		// One JSON parameter, not one '?' per id: a long scancel list
		// cannot hit SQLite's limit on bound variables.
		ids, err := json.Marshal(f.IDs)
		if err != nil {
			return "", nil, err
		}
		// An array's id names all its tasks.
		conds = append(conds, `(id IN (SELECT value FROM json_each(?)) OR array_job_id IN (SELECT value FROM json_each(?)))`)
		args = append(args, string(ids), string(ids))
	}
	if len(conds) == 0 {
		return "", nil, nil
	}
	return "WHERE " + strings.Join(conds, " AND "), args, nil
}

// Events returns a job's events, oldest first, or ErrNotFound.
func (s *Store) Events(ctx context.Context, jobID int64) ([]Event, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT seq, job_id, time, kind, payload FROM job_events
WHERE job_id = ? ORDER BY seq`, jobID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var ev Event
		var kind, p string
		if err := rows.Scan(&ev.Seq, &ev.JobID, &ev.Time, &kind, &p); err != nil {
			return nil, err
		}
		ev.Kind = Kind(kind)
		if err := decodePayload(&ev, []byte(p)); err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("job %d: %w", jobID, ErrNotFound)
	}
	return out, nil
}

// SetMeta stores a small value under key. The next job id may be raised (a
// site's first job id) but never lowered, which could reuse ids.
func (s *Store) SetMeta(ctx context.Context, key, value string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		if key == metaNextJobID {
			v, err := strconv.ParseInt(value, 10, 64)
			if err != nil || v < 1 {
				return fmt.Errorf("meta %s: %q is not a job id", key, value)
			}
			next, err := nextJobID(ctx, tx)
			if err != nil {
				return err
			}
			if v < next {
				return fmt.Errorf("meta %s: %d is below the next id %d; ids are never reused", key, v, next)
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES (?, ?)
ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
		return err
	})
}

// GetMeta returns the value stored under key, or ErrNotFound.
func (s *Store) GetMeta(ctx context.Context, key string) (string, error) {
	var v string
	err := s.r.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("meta %s: %w", key, ErrNotFound)
	}
	return v, err
}
