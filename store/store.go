// Package store is horad's durable record: one SQLite file holding every job
// event (the truth, append-only) and a projection of each job folded from
// them. All writes go through one goroutine that commits whatever is queued in
// one transaction (group commit), so concurrent callers share an fsync; a call
// returns only once its write is durable. README.md has the schema, the fold
// rules and the design.
package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	_ "modernc.org/sqlite" // driver "sqlite"
)

// maxBatch bounds one group commit so that a burst cannot hold the write
// lock, and delay the first caller's answer, for long.
const maxBatch = 512

// Store is an open database. Its methods are safe for concurrent use.
type Store struct {
	w     *sql.DB         // the writer's single connection; only the writer goroutine uses it after Open
	r     *sql.DB         // read-only pool
	path  string          // the database file, absolute
	queue chan []*request // units: the requests of one enqueue or enqueueAll

	mu     sync.RWMutex // guards closed against sends on a closed queue
	closed bool
	done   chan struct{} // closed when the writer has exited

	commits atomic.Int64 // transactions committed, to measure batching

	stmts map[string]*sql.Stmt // hotStatements, prepared on w (prepared.go)
}

// request is one caller's write, run by the writer inside its own savepoint
// when it shares a batch with others.
type request struct {
	ctx   context.Context
	fn    func(tx *sql.Tx) error
	state atomic.Int32 // queued → taken by the writer, or queued → withdrawn by the caller
	err   error
	done  chan struct{}
}

const (
	queued int32 = iota
	taken
	withdrawn
)

// Open opens or creates the database at path, creating its directory (0700)
// and the file (0600) when missing, and applies pending migrations.
func Open(ctx context.Context, path string) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, err
	}
	// Create the file ourselves for its mode: SQLite would use 0644, and it
	// gives the -wal and -shm files the mode of the database.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	f.Close()

	w, err := sql.Open("sqlite", dsn(abs, url.Values{
		"_pragma": {"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(FULL)", "foreign_keys(1)"},
		"_txlock": {"immediate"},
	}))
	if err != nil {
		return nil, err
	}
	// One connection: the pragmas above are per connection, and a single
	// writer never waits on another of its own connections for the lock.
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	var mode string
	if err := w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	if mode != "wal" {
		w.Close()
		return nil, fmt.Errorf("open %s: journal mode is %q, want wal", abs, mode)
	}
	if err := migrate(ctx, w, migrations); err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	r, err := sql.Open("sqlite", dsn(abs, url.Values{
		"mode":    {"ro"},
		"_pragma": {"busy_timeout(10000)", "query_only(1)"},
	}))
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	s := &Store{w: w, r: r, path: abs, queue: make(chan []*request, maxBatch), done: make(chan struct{})}
	if err := s.prepare(ctx); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	go s.writer()
	return s, nil
}

// dsn builds a file: URI so that SQLite sees mode=ro and any odd characters
// of the path are escaped.
func dsn(abs string, q url.Values) string {
	return (&url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}).String()
}

// Close waits for queued writes to commit, then closes the database. Calls
// made after Close return ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.queue)
	s.mu.Unlock()
	<-s.done
	rerr := s.r.Close()
	if err := s.w.Close(); err != nil {
		return err
	}
	return rerr
}

// write queues fn for the writer and waits until it has committed or failed.
// An error means fn's changes are not in the database, except for an error
// of the commit itself, where the disk may have taken it.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	req, err := s.enqueue(ctx, fn)
	if err != nil {
		return err
	}
	return s.wait(ctx, req)
}

// enqueue hands fn to the writer without waiting: writes enqueued one after
// another commit in that order.
func (s *Store) enqueue(ctx context.Context, fn func(tx *sql.Tx) error) (*request, error) {
	reqs, err := s.enqueueAll(ctx, []func(tx *sql.Tx) error{fn})
	if err != nil {
		return nil, err
	}
	return reqs[0], nil
}

// enqueueAll is enqueue of several writes as one unit: the writer takes
// them into the same batch, in order, each in its own savepoint, so that
// they share a commit (a batch may exceed maxBatch by one unit).
func (s *Store) enqueueAll(ctx context.Context, fns []func(tx *sql.Tx) error) ([]*request, error) {
	reqs := make([]*request, len(fns))
	for i, fn := range fns {
		reqs[i] = &request{ctx: ctx, fn: fn, done: make(chan struct{})}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	// The writer drains the queue without taking mu, so this send cannot
	// deadlock with Close, which waits for the read lock to be free.
	select {
	case s.queue <- reqs:
		return reqs, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// wait waits until an enqueued write has committed or failed.
func (s *Store) wait(ctx context.Context, req *request) error {
	select {
	case <-req.done:
		return req.err
	case <-ctx.Done():
		// Give up only if the writer has not started on it; once taken, the
		// answer is near and the caller must know whether it was written.
		if req.state.CompareAndSwap(queued, withdrawn) {
			return ctx.Err()
		}
		<-req.done
		return req.err
	}
}

// Commits is how many transactions the store has committed since Open:
// benchmarks divide their writes by it to see how well they share commits.
func (s *Store) Commits() int64 { return s.commits.Load() }

// writer is the only goroutine that writes. It takes everything queued, up
// to maxBatch, and commits it in one transaction.
func (s *Store) writer() {
	defer close(s.done)
	batch := make([]*request, 0, maxBatch)
	for {
		unit, ok := <-s.queue
		if !ok {
			return
		}
		batch = append(batch[:0], unit...)
	drain:
		for len(batch) < maxBatch {
			select {
			case unit, ok := <-s.queue:
				if !ok {
					break drain // commit this batch; the next receive returns
				}
				batch = append(batch, unit...)
			default:
				break drain
			}
		}
		s.commit(batch)
	}
}

// commit runs a batch in one transaction, each request in its own savepoint
// so that one bad request fails alone, and then answers every request.
func (s *Store) commit(batch []*request) {
	live := batch[:0:0]
	for _, r := range batch {
		if r.ctx.Err() == nil && r.state.CompareAndSwap(queued, taken) {
			live = append(live, r)
		}
	}
	if len(live) == 0 {
		return
	}
	ctx := context.Background() // the writes must not half-happen because one caller left
	fail := func(err error) {
		for _, r := range live {
			if r.err == nil {
				r.err = err
			}
			close(r.done)
		}
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		fail(fmt.Errorf("begin: %w", err))
		return
	}
	if len(live) == 1 {
		// A request alone needs no savepoint: when it fails, the
		// transaction, which holds nothing else, is rolled back. A
		// savepoint costs a copy of each page the request changes.
		r := live[0]
		if r.err = r.fn(tx); r.err != nil {
			tx.Rollback()
			close(r.done)
			return
		}
	} else if err := s.runEach(ctx, tx, live); err != nil {
		fail(err)
		return
	}
	if err := tx.Commit(); err != nil {
		fail(fmt.Errorf("commit: %w", err))
		return
	}
	s.commits.Add(1)
	for _, r := range live {
		close(r.done)
	}
}

// runEach runs each request of a batch in its own savepoint of tx, so that
// one that fails leaves the others' changes. An error is the savepoints'
// own, after which tx has been rolled back.
func (s *Store) runEach(ctx context.Context, tx *sql.Tx, live []*request) error {
	ptx := s.prepared(tx)
	for _, r := range live {
		if _, err := ptx.ExecContext(ctx, sqlSavepoint); err != nil {
			tx.Rollback()
			return fmt.Errorf("savepoint: %w", err)
		}
		if r.err = r.fn(tx); r.err != nil {
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO req"); err != nil {
				tx.Rollback()
				return fmt.Errorf("rollback to savepoint: %w", err)
			}
		}
		if _, err := ptx.ExecContext(ctx, sqlRelease); err != nil {
			tx.Rollback()
			return fmt.Errorf("release savepoint: %w", err)
		}
	}
	return nil
}
