package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"hora/api"
)

func TestOpenCreatesPrivateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "db")
	s := openStore(t, dir)
	defer s.Close()
	if err := s.Submit(t.Context(), testJob(1)); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{
		dir:                               0o700 | os.ModeDir,
		filepath.Join(dir, "hora.db"):     0o600,
		filepath.Join(dir, "hora.db-wal"): 0o600,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
		}
	}
}

func TestSubmitFillsDefaultsAndReadsBack(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	ctx := t.Context()
	j := &api.Job{Spec: api.JobSpec{Name: "x", Args: []string{}}, UID: 0, CancelledBy: 0}
	if err := s.Submit(ctx, j); err != nil {
		t.Fatal(err)
	}
	if j.ID != 1 || j.State != api.StatePending || j.Reason != "None" || j.SubmitTime == 0 || j.CancelledBy != -1 {
		t.Fatalf("defaults not filled in: %+v", j)
	}
	got := checkFold(t, s, 1)
	if !reflect.DeepEqual(got, *j) {
		t.Fatalf("read back %+v, submitted %+v", got, *j)
	}
	evs, _ := s.Events(ctx, 1)
	if len(evs) != 1 || evs[0].Kind != KindSubmit || evs[0].Time != j.SubmitTime || evs[0].Seq <= 0 {
		t.Fatalf("events %+v", evs)
	}
	if _, err := s.Job(ctx, 2); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown job: %v", err)
	}
	if _, err := s.Events(ctx, 2); !errors.Is(err, ErrNotFound) {
		t.Fatalf("events of unknown job: %v", err)
	}
}

// The controller tells its Engine the id before it commits, so it may pass
// one; the store accepts it only if it has never been handed out.
func TestIDsNeverReused(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	s := openStore(t, dir)
	for n := 1; n <= 3; n++ {
		if err := s.Submit(ctx, testJob(n)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s = openStore(t, dir)
	defer s.Close()
	j := testJob(4)
	if err := s.Submit(ctx, j); err != nil || j.ID != 4 {
		t.Fatalf("after reopen: id %d, %v", j.ID, err)
	}
	old := testJob(5)
	old.ID = 2
	if err := s.Submit(ctx, old); err == nil || !strings.Contains(err.Error(), "job id 2") {
		t.Fatalf("reused id 2: %v", err)
	}
	if err := s.SetMeta(ctx, "next_job_id", "3"); err == nil {
		t.Fatal("lowered the next job id")
	}
	if err := s.SetMeta(ctx, "next_job_id", "100"); err != nil {
		t.Fatal(err)
	}
	explicit := testJob(6)
	explicit.ID = 100
	if err := s.Submit(ctx, explicit); err != nil {
		t.Fatal(err)
	}
	j = testJob(7)
	if err := s.Submit(ctx, j); err != nil || j.ID != 101 {
		t.Fatalf("after an explicit id: id %d, %v", j.ID, err)
	}
	all, err := s.Jobs(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, j := range all {
		ids = append(ids, j.ID)
	}
	if want := []int64{1, 2, 3, 4, 100, 101}; !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
}

func TestConcurrentSubmit16(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	const workers, each = 16, 25
	ids := make([][]int64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				j := testJob(w*1000 + i)
				if err := s.Submit(t.Context(), j); err != nil {
					t.Error(err)
					return
				}
				ids[w] = append(ids[w], j.ID)
			}
		})
	}
	wg.Wait()
	seen := map[int64]bool{}
	for w, list := range ids {
		if !slices.IsSorted(list) {
			t.Errorf("worker %d saw ids out of order: %v", w, list)
		}
		for i, id := range list {
			if seen[id] {
				t.Fatalf("id %d handed out twice", id)
			}
			seen[id] = true
			j, err := s.Job(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if want := testJob(w*1000 + i).Spec; !reflect.DeepEqual(j.Spec, want) {
				t.Fatalf("job %d has spec %+v, want %+v", id, j.Spec, want)
			}
		}
	}
	for id := int64(1); id <= workers*each; id++ {
		if !seen[id] {
			t.Fatalf("ids are not dense: %d missing", id)
		}
	}
	t.Logf("%d submissions in %d commits", workers*each, s.commits.Load())
}

func TestJobsFilter(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	ctx := t.Context()
	for n := 1; n <= 4; n++ {
		if err := s.Submit(ctx, testJob(n)); err != nil {
			t.Fatal(err)
		}
	}
	// 1 pending; 2 running; 3 ended at 100; 4 ended at 200.
	err := s.Append(ctx,
		Event{JobID: 2, Time: 50, Kind: KindStart, Nodes: []string{"n1"}},
		Event{JobID: 3, Time: 100, Kind: KindEnd, State: api.StateCancelled},
		Event{JobID: 4, Time: 150, Kind: KindStart, Nodes: []string{"n2"}},
		Event{JobID: 4, Time: 200, Kind: KindEnd, State: api.StateCompleted},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		f    Filter
		want []int64
	}{
		{Filter{}, []int64{1, 2, 3, 4}},
		{Filter{Active: true}, []int64{1, 2}},
		{Filter{Since: 150}, []int64{1, 2, 4}},
		{Filter{Since: 201}, []int64{1, 2}},
		{Filter{IDs: []int64{4, 3, 9}}, []int64{3, 4}},
		{Filter{IDs: []int64{}}, nil},
		{Filter{IDs: []int64{1, 3, 4}, Active: true}, []int64{1}},
	} {
		js, err := s.Jobs(ctx, c.f)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, j := range js {
			got = append(got, j.ID)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v: got %v, want %v", c.f, got, c.want)
		}
	}
}

func TestMeta(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	ctx := t.Context()
	if _, err := s.GetMeta(ctx, "cluster_name"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing key: %v", err)
	}
	for _, v := range []string{"alpha", "beta"} {
		if err := s.SetMeta(ctx, "cluster_name", v); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s = openStore(t, dir)
	defer s.Close()
	if v, err := s.GetMeta(ctx, "cluster_name"); err != nil || v != "beta" {
		t.Fatalf("got %q, %v", v, err)
	}
}

func TestClosedStoreRefusesCalls(t *testing.T) {
	s := openStore(t, t.TempDir())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(t.Context(), testJob(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("submit after close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

// A caller that gives up before the writer takes its request is told so, and
// its write does not happen: an error from Submit must mean "not recorded".
func TestCancelledContextWritesNothing(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Submit(ctx, testJob(1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if js, _ := s.Jobs(t.Context(), Filter{}); len(js) != 0 {
		t.Fatalf("a cancelled submit was recorded: %+v", js)
	}
	j := testJob(2)
	if err := s.Submit(t.Context(), j); err != nil || j.ID != 1 {
		t.Fatalf("id %d, %v: the cancelled submit consumed an id", j.ID, err)
	}
}

// One bad request in a group commit fails alone; its batch-mates commit.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	ctx := t.Context()
	if err := s.Submit(ctx, testJob(1)); err != nil {
		t.Fatal(err)
	}
	mk := func(fn func(tx *sql.Tx) error) *request {
		return &request{ctx: ctx, fn: fn, done: make(chan struct{})}
	}
	setName := func(v string) func(tx *sql.Tx) error {
		return func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES ('k'||?, ?)`, v, v)
			return err
		}
	}
	boom := errors.New("boom")
	batch := []*request{
		mk(setName("a")),
		mk(func(tx *sql.Tx) error {
			// Writes, then fails: the write must be rolled back.
			if err := setName("bad")(tx); err != nil {
				return err
			}
			return boom
		}),
		mk(setName("c")),
	}
	// The writer goroutine is idle (blocked on the empty queue), so calling
	// commit directly is what it would do with this batch.
	s.commit(batch)
	for i, want := range []error{nil, boom, nil} {
		<-batch[i].done
		if batch[i].err != want {
			t.Errorf("request %d: %v, want %v", i, batch[i].err, want)
		}
	}
	// A request alone runs without a savepoint: failing, it leaves nothing
	// and its own error, and the next write commits.
	lone := mk(func(tx *sql.Tx) error {
		if err := setName("lone")(tx); err != nil {
			return err
		}
		return boom
	})
	s.commit([]*request{lone})
	<-lone.done
	if lone.err != boom {
		t.Errorf("lone request: %v, want %v", lone.err, boom)
	}
	if err := s.write(ctx, setName("after")); err != nil {
		t.Fatalf("write after a lone failure: %v", err)
	}
	for key, present := range map[string]bool{"ka": true, "kbad": false, "kc": true, "klone": false, "kafter": true} {
		_, err := s.GetMeta(ctx, key)
		if (err == nil) != present {
			t.Errorf("meta %s: present=%v, err %v", key, present, err)
		}
	}
}

// The durability of an acknowledgement rests on these settings of the
// writer's connection, and the isolation of readers on the read-only pool.
func TestConnectionSettings(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	ctx := t.Context()
	err := s.write(ctx, func(tx *sql.Tx) error {
		var mode string
		var syncLevel, fk int
		if err := tx.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&syncLevel); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
			return err
		}
		if mode != "wal" || syncLevel != 2 || fk != 1 {
			t.Errorf("writer: journal_mode %s, synchronous %d (2 = FULL), foreign_keys %d", mode, syncLevel, fk)
		}
		// An event of a job that does not exist breaks the foreign key.
		_, err := tx.ExecContext(ctx, `INSERT INTO job_events(job_id, time, kind, payload) VALUES (42, 0, 'hold', '{}')`)
		if err == nil {
			t.Error("foreign key on job_events.job_id not enforced")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.r.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES ('x', 'y')`); err == nil {
		t.Fatal("the read pool can write")
	}
}

// Close racing with submitters: every Submit either succeeds, and its job is
// in the file afterwards, or fails with ErrClosed and left no trace.
func TestCloseCommitsQueuedWrites(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	var mu sync.Mutex
	var ok []int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				j := testJob(w*1000 + i)
				err := s.Submit(context.Background(), j)
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ok = append(ok, j.ID)
				mu.Unlock()
			}
		})
	}
	for {
		mu.Lock()
		n := len(ok)
		mu.Unlock()
		if n >= 50 {
			break
		}
		runtime.Gosched()
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	s = openStore(t, dir)
	defer s.Close()
	all, err := s.Jobs(t.Context(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(ok) {
		t.Fatalf("%d jobs in the file, %d acknowledged", len(all), len(ok))
	}
	for _, id := range ok {
		if _, err := s.Job(t.Context(), id); err != nil {
			t.Fatalf("acknowledged job %d: %v", id, err)
		}
	}
}

// AppendEachQueued: the appends of one unit share a commit, each stands or
// falls alone (an append refused by its job's history fails, the others
// are written), and each wait reports its own append.
func TestAppendEachQueuedOneCommitEachAlone(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	ctx := t.Context()
	var ids []int64
	for i := range 3 {
		j := testJob(i)
		if err := s.Submit(ctx, j); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	end := func(id int64) []Event {
		return []Event{{JobID: id, Kind: KindEnd, State: api.StateCancelled, Reason: "None"}}
	}
	before := s.Commits()
	waits, err := s.AppendEachQueued(ctx, [][]Event{
		end(ids[0]),
		{{JobID: ids[1], Kind: KindStepEnd, Step: &api.Step{Index: 0}}}, // no such step: refused
		end(ids[2]),
		end(ids[0]), // a second end of the same job, after the first: refused
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, wantErr := range []bool{false, true, false, true} {
		if err := waits[i](); (err != nil) != wantErr {
			t.Errorf("append %d: err %v, want an error: %v", i, err, wantErr)
		}
	}
	if n := s.Commits() - before; n != 1 {
		t.Errorf("one unit took %d commits, want 1", n)
	}
	for i, want := range []api.JobState{api.StateCancelled, api.StatePending, api.StateCancelled} {
		if j := checkFold(t, s, ids[i]); j.State != want {
			t.Errorf("job %d: %s, want %s", ids[i], j.State, want)
		}
	}
}
