// Command hora is hora's one client binary. Installed under the names of the
// Slurm (and later PBS) commands it dispatches on argv[0], so that sbatch,
// squeue, scancel, ... are symlinks to it; as `hora <verb>` it offers hora's
// own verbs (replay, compare, ...). It links neither SQLite nor SSH code: it
// only speaks HTTP+JSON to horad over a Unix socket (see deps_test.go).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
)

// Command is the signature of every client command: it gets its arguments
// (without the program name), its standard streams, and returns the exit code.
type Command func(ctx context.Context, env *Env, args []string) int

// Env is the process context of a command, injectable for tests.
type Env struct {
	Prog    string // program name for messages: "sbatch", "squeue", ...
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	Getenv  func(string) string
	Environ func() []string
	Getwd   func() (string, error)
}

// command is a program name (argv[0] base name, or `hora <verb>`) and its
// implementation.
type command struct {
	name   string
	run    Command
	hidden bool // not listed by `hora` without arguments
}

// commands are the commands in order of name. A function rather than a
// variable: a table of function values costs nothing at start, where
// registering each command from an init of its file cost every client
// process a map built at start (and gendoc, listed here, lists them).
func commands() []command {
	return []command{
		{name: "admin", run: adminMain},
		{name: "compare", run: func(_ context.Context, env *Env, args []string) int { return execSim(env, "compare", args) }},
		{name: "free", run: freeMain},
		{name: "gendoc", run: gendocMain, hidden: true},
		{name: "mix", run: func(_ context.Context, env *Env, args []string) int { return execSim(env, "mix", args) }},
		{name: "pbsnodes", run: pbsnodesMain},
		{name: "qalter", run: qalterMain},
		{name: "qdel", run: func(ctx context.Context, env *Env, args []string) int { return pbsControl(ctx, env, args, "qdel") }},
		{name: "qhold", run: func(ctx context.Context, env *Env, args []string) int { return pbsControl(ctx, env, args, "qhold") }},
		{name: "qrerun", run: func(ctx context.Context, env *Env, args []string) int { return pbsControl(ctx, env, args, "qrerun") }},
		{name: "qrls", run: func(ctx context.Context, env *Env, args []string) int { return pbsControl(ctx, env, args, "qrls") }},
		{name: "qselect", run: qselectMain},
		{name: "qsig", run: func(ctx context.Context, env *Env, args []string) int { return pbsControl(ctx, env, args, "qsig") }},
		{name: "qstat", run: qstatMain},
		{name: "qsub", run: qsubMain},
		{name: "replay", run: func(_ context.Context, env *Env, args []string) int { return execSim(env, "replay", args) }},
		{name: "sacct", run: sacctMain},
		{name: "salloc", run: sallocMain},
		{name: "sbatch", run: sbatchMain},
		{name: "scancel", run: scancelMain},
		{name: "scontrol", run: scontrolMain},
		{name: "sinfo", run: sinfoMain},
		{name: "squeue", run: squeueMain},
		{name: "srun", run: srunMain},
		{name: "stats", run: statsMain},
	}
}

// lookup is the command called name, nil if there is none.
func lookup(name string) Command {
	cs := commands()
	i, found := sort.Find(len(cs), func(i int) int { return strings.Compare(name, cs[i].name) })
	if !found {
		return nil
	}
	return cs[i].run
}

// commandNames are the names `hora` without arguments lists.
func commandNames() []string {
	var names []string
	for _, c := range commands() {
		if !c.hidden {
			names = append(names, c.name)
		}
	}
	return names
}

func main() {
	// A client process lives milliseconds and squeue over 10,000 jobs
	// allocates about 10 MB at once: with the default GOGC it stops for a
	// collection that frees nothing worth having. A higher target still
	// bounds squeue -i's heap.
	debug.SetGCPercent(400)
	os.Exit(run(context.Background(), os.Args))
}

// interruptible returns ctx cancelled by SIGINT or SIGTERM, for the commands
// that wait (squeue -i, sbatch -W, hora replay/compare), which then end
// their loop cleanly. The other commands keep the default action (the
// process ends at once, as Slurm's C clients do): os/signal's watcher
// blocks a thread and cost every process ~0.2 ms, 6% of an sbatch.
func interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

func run(ctx context.Context, argv []string) int {
	name := filepath.Base(argv[0])
	args := argv[1:]
	if name == "hora" {
		if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
			usage(os.Stdout)
			if len(args) == 0 {
				return 2
			}
			return 0
		}
		name, args = args[0], args[1:]
	}
	cmd := lookup(name)
	if cmd == nil {
		fmt.Fprintf(os.Stderr, "hora: unknown command %q\n", name)
		usage(os.Stderr)
		return 2
	}
	env := &Env{Prog: name, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv: os.Getenv, Environ: os.Environ, Getwd: os.Getwd}
	return cmd(ctx, env, args)
}

func usage(w io.Writer) {
	names := commandNames()
	fmt.Fprintln(w, "usage: hora <command> [options]   (or call it as sbatch, squeue, ...)")
	fmt.Fprintln(w, "commands:")
	for _, n := range names {
		fmt.Fprintln(w, "  "+n)
	}
}
