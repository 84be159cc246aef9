// Command hora-sim runs hora's scheduler in simulated time: `hora-sim replay`
// and `hora-sim compare` (reached as `hora replay` and `hora compare`). It is
// a binary of its own so that the client commands users run by the thousand
// (sbatch, squeue, ...) link and initialise neither the simulator, the
// scheduler policies nor the TOML reader (issue 16: a client's start should
// cost what a Go program's start costs).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"hora/replay"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: hora-sim replay|compare|mix [options]   (also: hora replay, hora compare, hora mix)")
		return 2
	}
	switch args[0] {
	case "replay":
		return replay.Main(ctx, args[1:], os.Stdout, os.Stderr)
	case "compare":
		return replay.CompareMain(ctx, args[1:], os.Stdout, os.Stderr)
	case "mix":
		return mixMain(ctx, args[1:], os.Stdout, os.Stderr)
	}
	fmt.Fprintf(os.Stderr, "hora-sim: unknown command %q (replay, compare, mix)\n", args[0])
	return 2
}
