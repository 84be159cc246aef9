package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
)

// Backup writes a consistent copy of the whole database to dst with
// SQLite's VACUUM INTO, on a connection of its own: it reads one snapshot
// (WAL mode), so horad goes on writing while it runs, and the copy is a
// compact database file that opens without its -wal. dst must not exist;
// it is created 0600 (it holds every user's scripts and environments).
func (s *Store) Backup(ctx context.Context, dst string) error {
	if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("backup %s: the file exists", dst)
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	f.Close()
	// VACUUM INTO wants an empty target; the empty file keeps the mode.
	db, err := sql.Open("sqlite", dsn(s.path, url.Values{"_pragma": {"busy_timeout(10000)"}}))
	if err != nil {
		os.Remove(dst)
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
		os.Remove(dst)
		return fmt.Errorf("backup to %s: %w", dst, err)
	}
	return nil
}
