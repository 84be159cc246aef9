package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// TestAdminBackupAndStats: `hora admin backup` copies the database of a
// running horad (which goes on serving), refuses an ordinary user and an
// existing file; `hora stats` counts the jobs.
func TestAdminBackupAndStats(t *testing.T) {
	requireRoot(t)
	c := newCluster(t)
	w := c.workDir()
	var ids []string
	for range 5 {
		ids = append(ids, c.submit(w, "--hold", "--wrap", "true"))
	}
	dst := filepath.Join(w, "backup.db")
	r := c.run(0, w, "hora", "admin", "backup", dst)
	if r.code != 0 || !strings.Contains(r.stdout, "backup of horad's database written to "+dst) {
		t.Fatalf("hora admin backup: %+v", r)
	}
	fi, err := os.Stat(dst)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v", fi, err)
	}
	db, err := sql.Open("sqlite", "file:"+dst+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM jobs").Scan(&n); err != nil || n != 5 {
		t.Errorf("backup holds %d jobs (%v), want 5", n, err)
	}
	if r := c.run(0, w, "hora", "admin", "backup", dst); r.code == 0 || !strings.Contains(r.stderr, "exists") {
		t.Errorf("backup over an existing file: %+v", r)
	}
	nobody := 65534
	if r := c.run(nobody, w, "hora", "admin", "backup", filepath.Join(w, "mine.db")); r.code == 0 || !strings.Contains(r.stderr, "only root and operators") {
		t.Errorf("backup by nobody: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(w, "mine.db.part")); err == nil {
		t.Error("a refused backup left its .part file")
	}
	if left, _ := filepath.Glob(filepath.Join(c.varDir, ".backup-*")); len(left) > 0 {
		t.Errorf("horad left its temporary copies: %v", left)
	}
	// horad goes on serving.
	c.submit(w, "--hold", "--wrap", "true")
	r = c.run(nobody, w, "hora", "stats")
	if r.code != 0 || !strings.Contains(r.stdout, "6 pending, 0 running") {
		t.Errorf("hora stats: %+v", r)
	}
	r = c.run(0, w, "hora", "stats", "--prometheus")
	if r.code != 0 || !strings.Contains(r.stdout, `hora_jobs{state="pending"} 6`) || !strings.Contains(r.stdout, "hora_nodes 4") {
		t.Errorf("hora stats --prometheus: %+v", r)
	}
	_ = ids
}
