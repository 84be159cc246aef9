package main

import (
	"context"

	"hora/replay"
)

// hora replay: the same scheduler code in simulated time over SWF logs.
func init() {
	register("replay", func(ctx context.Context, env *Env, args []string) int {
		ctx, stop := interruptible(ctx)
		defer stop()
		return replay.Main(ctx, args, env.Stdout, env.Stderr)
	})
}

// hora compare: several policies on one log or workload, side by side.
func init() {
	register("compare", func(ctx context.Context, env *Env, args []string) int {
		ctx, stop := interruptible(ctx)
		defer stop()
		return replay.CompareMain(ctx, args, env.Stdout, env.Stderr)
	})
}
