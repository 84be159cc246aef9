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

// commands maps a program name (argv[0] base name, or `hora <verb>`) to its
// implementation. Each command registers itself from its own file's init.
var commands = map[string]Command{}

func register(name string, c Command) { commands[name] = c }

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
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "hora: unknown command %q\n", name)
		usage(os.Stderr)
		return 2
	}
	env := &Env{Prog: name, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv: os.Getenv, Environ: os.Environ, Getwd: os.Getwd}
	return cmd(ctx, env, args)
}

func usage(w io.Writer) {
	names := make([]string, 0, len(commands))
	for n := range commands {
		if !hiddenCommands[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	fmt.Fprintln(w, "usage: hora <command> [options]   (or call it as sbatch, squeue, ...)")
	fmt.Fprintln(w, "commands:")
	for _, n := range names {
		fmt.Fprintln(w, "  "+n)
	}
}
