package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"hora/api"
)

// Job arrays (migration "job arrays"). SubmitArray writes one job_arrays
// row, durable before horad answers; a task is a job like any other for
// every reader, but its jobs row and submit event are written only when the
// first event of its own is appended (materialize). Until then Job, Jobs
// and recovery build it from the array's prototype. Its priority is the
// prototype's minus its index, as horad's priorities fall by one per id.

// arrayRec is a job_arrays row.
type arrayRec struct {
	first int64
	tasks []int64
	proto api.Job
	lazy  int
}

// task builds task k (job id first+k) as submitted.
func (a *arrayRec) task(k int) api.Job {
	j := a.proto
	j.ID, j.ArrayJobID, j.ArrayTaskID = a.first+int64(k), a.first, a.tasks[k]
	j.Priority = a.proto.Priority - int64(k)
	return j
}

const sqlArrayLazyDown = `UPDATE job_arrays SET lazy = lazy - 1 WHERE array_job_id = ?`

const sqlArrayOf = `SELECT array_job_id, tasks, proto, lazy FROM job_arrays
WHERE array_job_id <= ? AND lazy > 0 ORDER BY array_job_id DESC LIMIT 1`

func scanArray(row interface{ Scan(...any) error }) (*arrayRec, error) {
	var a arrayRec
	var tasks, proto string
	if err := row.Scan(&a.first, &tasks, &proto, &a.lazy); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(tasks), &a.tasks); err != nil {
		return nil, fmt.Errorf("array %d: tasks: %w", a.first, err)
	}
	if err := json.Unmarshal([]byte(proto), &a.proto); err != nil {
		return nil, fmt.Errorf("array %d: proto: %w", a.first, err)
	}
	return &a, nil
}

// lazyTask returns job id when it is a task of an array that has no row
// yet, built from the array's prototype; ErrNotFound otherwise.
func lazyTask(ctx context.Context, q querier, id int64) (api.Job, *arrayRec, error) {
	rows, err := q.QueryContext(ctx, sqlArrayOf, id)
	if err != nil {
		return api.Job{}, nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		return api.Job{}, nil, ErrNotFound
	}
	a, err := scanArray(rows)
	if err != nil {
		return api.Job{}, nil, err
	}
	rows.Close()
	k := int(id - a.first)
	if k < 0 || k >= len(a.tasks) {
		return api.Job{}, nil, ErrNotFound
	}
	// The task may have its own row already (then the caller found it).
	return a.task(k), a, nil
}

// materialize gives a lazy task its jobs row and submit event, inside the
// caller's transaction, and returns it. cache keeps the arrays already read
// in this transaction (cancelling a whole array materializes every task).
func materialize(ctx context.Context, tx *sql.Tx, ptx execer, id int64, cache map[int64]*arrayRec) (api.Job, error) {
	var j api.Job
	found := false
	for _, a := range cache {
		if k := int(id - a.first); k >= 0 && k < len(a.tasks) {
			j, found = a.task(k), true
			break
		}
	}
	if !found {
		var a *arrayRec
		var err error
		j, a, err = lazyTask(ctx, tx, id)
		if err != nil {
			return api.Job{}, err
		}
		cache[a.first] = a
	}
	sj := j
	sj.Spec = api.JobSpec{} // the array's, shared
	ev := Event{JobID: id, Time: sj.SubmitTime, Kind: KindSubmit, Job: &sj}
	var nj api.Job
	if err := apply(&nj, &ev); err != nil {
		return api.Job{}, err
	}
	if err := putJob(ctx, ptx, &nj, nil); err != nil {
		return api.Job{}, err
	}
	if err := putEvent(ctx, ptx, &ev); err != nil {
		return api.Job{}, err
	}
	if _, err := ptx.ExecContext(ctx, sqlArrayLazyDown, j.ArrayJobID); err != nil {
		return api.Job{}, err
	}
	nj.Spec = j.Spec
	return nj, nil
}

// SubmitArray records a job array, all or none, in one transaction: the
// tasks take consecutive ids from the next one (jobs[0].ID may name the
// first, as with Submit), each task's ArrayJobID is the first id. The jobs
// must be alike but for ArrayTaskID (and Priority, falling by one per task);
// jobs[0] is stored as the prototype. On success each job's ID, ArrayJobID
// and defaults are set as Submit sets them.
func (s *Store) SubmitArray(ctx context.Context, jobs []*api.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	proto := cloneJob(jobs[0])
	if proto.State == "" {
		proto.State = api.StatePending
	}
	if proto.Reason == "" {
		proto.Reason = reasonNone
	}
	if proto.SubmitTime == 0 {
		proto.SubmitTime = time.Now().Unix()
	}
	proto.CancelledBy = -1
	proto.Nodes, proto.Steps = nil, nil
	canonical(&proto)
	tasks := make([]int64, len(jobs))
	for i, j := range jobs {
		tasks[i] = j.ArrayTaskID
	}
	tasksJSON, err := json.Marshal(tasks)
	if err != nil {
		return err
	}
	var first int64
	err = s.write(ctx, func(sqltx *sql.Tx) error {
		tx := s.prepared(sqltx)
		next, err := nextJobID(ctx, tx)
		if err != nil {
			return err
		}
		first = proto.ID
		if first == 0 {
			first = next
		} else if first < next {
			return fmt.Errorf("job id %d: already allocated (next is %d)", first, next)
		}
		p := proto
		p.ID, p.ArrayJobID, p.ArrayTaskID = first, first, tasks[0]
		protoJSON, err := json.Marshal(p)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, sqlSetNextJobID,
			strconv.FormatInt(first+int64(len(jobs)), 10), metaNextJobID); err != nil {
			return err
		}
		_, err = sqltx.ExecContext(ctx, `INSERT INTO job_arrays (array_job_id, tasks, proto, lazy) VALUES (?, ?, ?, ?)`,
			first, string(tasksJSON), string(protoJSON), len(jobs))
		return err
	})
	if err != nil {
		return err
	}
	for i, job := range jobs {
		spec := job.Spec
		prio := job.Priority
		*job = proto
		job.ID, job.ArrayJobID, job.ArrayTaskID = first+int64(i), first, tasks[i]
		job.Spec, job.Priority = spec, prio
	}
	return nil
}

// shareArraySpecs gives array tasks stored without a spec of their own the
// spec their array was submitted with.
func shareArraySpecs(ctx context.Context, q querier, out []api.Job) error {
	cache := map[int64]*api.JobSpec{}
	for i := range out {
		j := &out[i]
		if j.ArrayJobID == 0 || j.Spec.Script != "" {
			continue
		}
		spec, ok := cache[j.ArrayJobID]
		if !ok {
			rows, err := q.QueryContext(ctx, `SELECT proto FROM job_arrays WHERE array_job_id = ?`, j.ArrayJobID)
			if err != nil {
				return err
			}
			var text string
			if rows.Next() {
				if err := rows.Scan(&text); err != nil {
					rows.Close()
					return err
				}
			}
			rows.Close()
			var p api.Job
			if text != "" {
				if err := json.Unmarshal([]byte(text), &p); err != nil {
					return fmt.Errorf("array %d: proto: %w", j.ArrayJobID, err)
				}
			}
			spec = &p.Spec
			cache[j.ArrayJobID] = spec
		}
		j.Spec = *spec
		j.Spec.Args = slices.Clone(spec.Args)
		j.Spec.Env = spec.Env // shared, never written through
	}
	return nil
}

// lazyTasks adds to out the tasks without a row that f selects (they are
// pending and have not ended), and keeps out ordered by id.
func lazyTasks(ctx context.Context, q querier, f Filter, out []api.Job) ([]api.Job, error) {
	rows, err := q.QueryContext(ctx, `SELECT array_job_id, tasks, proto, lazy FROM job_arrays WHERE lazy > 0 ORDER BY array_job_id`)
	if err != nil {
		return nil, err
	}
	var arrays []*arrayRec
	for rows.Next() {
		a, err := scanArray(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		arrays = append(arrays, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	added := false
	for _, a := range arrays {
		if f.UIDs != nil && !slices.Contains(f.UIDs, a.proto.UID) {
			continue
		}
		if f.IDs != nil && !slices.Contains(f.IDs, a.first) && !slices.ContainsFunc(f.IDs, func(id int64) bool {
			return id >= a.first && id < a.first+int64(len(a.tasks))
		}) {
			continue
		}
		have := map[int64]bool{}
		r, err := q.QueryContext(ctx, `SELECT id FROM jobs WHERE array_job_id = ?`, a.first)
		if err != nil {
			return nil, err
		}
		for r.Next() {
			var id int64
			if err := r.Scan(&id); err != nil {
				r.Close()
				return nil, err
			}
			have[id] = true
		}
		r.Close()
		for k := range a.tasks {
			id := a.first + int64(k)
			if have[id] || (f.IDs != nil && !slices.Contains(f.IDs, id) && !slices.Contains(f.IDs, a.first)) {
				continue
			}
			out = append(out, a.task(k))
			added = true
		}
	}
	if added {
		slices.SortFunc(out, func(x, y api.Job) int {
			switch {
			case x.ID < y.ID:
				return -1
			case x.ID > y.ID:
				return 1
			}
			return 0
		})
	}
	return out, nil
}
