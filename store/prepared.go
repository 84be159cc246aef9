package store

import (
	"context"
	"database/sql"
)

// execer is what the row writers need of a transaction: *sql.Tx itself, or
// preparedTx, which runs the submit path's statements prepared once.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// hotStatements run for every submission (and the savepoints for every
// request). SQLite compiled each of them again on every call, about a
// tenth of horad's CPU per sbatch; they are prepared once at Open, on the
// writer's only connection, before any transaction holds it.
var hotStatements = []string{sqlNextJobID, sqlSetNextJobID, sqlPutJob, sqlPutEvent,
	sqlSavepoint, sqlRelease, sqlArrayLazyDown, sqlJobRecords + whereID, sqlJobSteps}

const (
	sqlSavepoint = "SAVEPOINT req"
	sqlRelease   = "RELEASE req"
)

func (s *Store) prepare(ctx context.Context) error {
	s.stmts = make(map[string]*sql.Stmt, len(hotStatements))
	for _, q := range hotStatements {
		st, err := s.w.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		s.stmts[q] = st
	}
	return nil
}

// preparedTx runs a statement of hotStatements through its prepared form
// (tx.StmtContext reuses it, the transaction being on the same connection)
// and any other statement as *sql.Tx does.
type preparedTx struct {
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
}

func (s *Store) prepared(tx *sql.Tx) preparedTx { return preparedTx{tx, s.stmts} }

func (p preparedTx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st, ok := p.stmts[q]; ok {
		return p.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return p.tx.ExecContext(ctx, q, args...)
}

func (p preparedTx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st, ok := p.stmts[q]; ok {
		return p.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return p.tx.QueryContext(ctx, q, args...)
}

func (p preparedTx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st, ok := p.stmts[q]; ok {
		return p.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return p.tx.QueryRowContext(ctx, q, args...)
}
