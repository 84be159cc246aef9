package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

const adminHelp = `Usage: hora admin backup FILE
  backup FILE   write a consistent copy of horad's database to FILE while
                horad runs (SQLite VACUUM INTO; root and operators only).
                FILE must not exist; it is written 0600. Restore by stopping
                horad and putting the copy in place of state_dir/hora.db.
`

// adminMain implements `hora admin`: operations for root and operators.
func adminMain(ctx context.Context, env *Env, args []string) int {
	if len(args) == 2 && args[0] == "backup" {
		return backup(ctx, env, args[1])
	}
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(env.Stdout, adminHelp)
		return 0
	}
	fmt.Fprint(env.Stderr, adminHelp)
	return 2
}

// backup fetches the copy into FILE.part next to FILE, checks that it is
// an SQLite database, syncs it and renames it into place: FILE appears
// whole or not at all.
func backup(ctx context.Context, env *Env, file string) int {
	fail := func(err error) int {
		fmt.Fprintf(env.Stderr, "hora admin backup: error: %s\n", apiErrText(err))
		return 1
	}
	if !filepath.IsAbs(file) {
		wd, err := env.Getwd()
		if err != nil {
			return fail(err)
		}
		file = filepath.Join(wd, file)
	}
	if _, err := os.Lstat(file); err == nil {
		return fail(fmt.Errorf("%s exists; choose a new file", file))
	}
	cl := dial(env)
	if cl == nil {
		return 1
	}
	part := file + ".part"
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fail(err)
	}
	t0 := time.Now()
	n, err := cl.Backup(ctxOrBackground(ctx), f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = checkSQLite(part)
	}
	if err == nil {
		err = os.Rename(part, file)
	}
	if err != nil {
		os.Remove(part)
		return fail(err)
	}
	fmt.Fprintf(env.Stdout, "backup of horad's database written to %s (%d bytes, %.1f s)\n", file, n, time.Since(t0).Seconds())
	return 0
}

func checkSQLite(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 16)
	if _, err := f.Read(head); err != nil || !bytes.Equal(head, []byte("SQLite format 3\x00")) {
		return fmt.Errorf("%s: horad sent something that is not an SQLite database", path)
	}
	return nil
}

const statsHelp = `Usage: hora stats [--prometheus]
  Print horad's numbers: jobs pending, running and suspended, nodes and
  nodes down, the last scheduling pass. --prometheus prints them in the
  Prometheus text format (for node_exporter's textfile collector).
`

// statsMain implements `hora stats`.
func statsMain(ctx context.Context, env *Env, args []string) int {
	prom := false
	for _, a := range args {
		switch a {
		case "--prometheus":
			prom = true
		case "-h", "--help":
			fmt.Fprint(env.Stdout, statsHelp)
			return 0
		default:
			fmt.Fprintf(env.Stderr, "hora stats: unknown option %q\n%s", a, statsHelp)
			return 2
		}
	}
	cl := dial(env)
	if cl == nil {
		return 1
	}
	s, err := cl.Stats(ctxOrBackground(ctx))
	if err != nil {
		fmt.Fprintf(env.Stderr, "hora stats: error: %s\n", apiErrText(err))
		return 1
	}
	if prom {
		m := func(name, help string, v any) {
			fmt.Fprintf(env.Stdout, "# HELP %s %s\n# TYPE %s gauge\n%s %v\n", name, help, name, name, v)
		}
		fmt.Fprintf(env.Stdout, "# HELP hora_jobs Active jobs by state.\n# TYPE hora_jobs gauge\n")
		fmt.Fprintf(env.Stdout, "hora_jobs{state=\"pending\"} %d\nhora_jobs{state=\"running\"} %d\nhora_jobs{state=\"suspended\"} %d\n",
			s.Pending, s.Running, s.Suspended)
		m("hora_nodes", "Configured nodes.", s.Nodes)
		m("hora_nodes_down", "Nodes drained or down.", s.NodesDown)
		m("hora_last_pass_timestamp_seconds", "Unix time of the last scheduling pass.", s.LastPass)
		m("hora_last_pass_duration_seconds", "Duration of the last scheduling pass.", s.LastPassSeconds)
		m("hora_start_time_seconds", "Unix time horad started.", s.Started)
		return 0
	}
	ts := func(sec int64) string {
		if sec == 0 {
			return "never"
		}
		return time.Unix(sec, 0).Format(time.RFC3339)
	}
	fmt.Fprintf(env.Stdout, "version       %s\nstarted       %s\njobs          %d pending, %d running, %d suspended\n"+
		"nodes         %d, %d drained or down\nlast pass     %s (%.3f ms)\nlast reload   %s\n",
		s.Version, ts(s.Started), s.Pending, s.Running, s.Suspended, s.Nodes, s.NodesDown,
		ts(s.LastPass), s.LastPassSeconds*1000, ts(s.LastReload))
	return 0
}
