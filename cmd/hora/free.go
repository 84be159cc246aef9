package main

import (
	"context"
	"fmt"
	"strconv"

	"hora/sbatch"
)

var freeOpts = []sbatch.Opt{
	{Short: 'p', Long: "partition", Arg: sbatch.RequiredArg, Key: "partition"},
	{Short: 'N', Long: "nodes", Arg: sbatch.RequiredArg, Key: "nodes"},
	{Long: "from", Arg: sbatch.RequiredArg, Key: "from"},
	{Long: "to", Arg: sbatch.RequiredArg, Key: "to"},
	{Short: 'h', Long: "noheader", Arg: sbatch.NoArg, Key: "noheader"},
	{Long: "help", Arg: sbatch.NoArg, Key: "help"},
}

const freeHelp = `Usage: hora free [-p partition] [-N nodes] [-h] --from TIME --to TIME
The range search: which nodes of a reserve-policy partition are free (no job
booked, no reservation) for the whole window [--from, --to), without booking
anything. TIME takes sbatch --begin's forms (now+1hour, 2026-11-23T12:00,
16:00, tomorrow, ...).

  -p, --partition=name  partition (default: the default partition if its
                        policy is reserve, else the first reserve partition)
  -N, --nodes=n         exit 1 unless at least n nodes are free
  -h, --noheader        no header line
      --from=TIME       window start (default now)
      --to=TIME         window end (required)
`

// freeMain implements `hora free`: one line per query,
//
//	PARTITION FROM                TO                  FREE/TOTAL NODELIST
//	res       2026-11-23T12:00:00 2026-11-23T13:00:00 3/4        local[1-3]
//
// NODELIST is a Slurm hostlist, "(null)" when nothing is free.
func freeMain(ctx context.Context, env *Env, args []string) int {
	p, err := sbatch.Getopt(freeOpts, args, false)
	if err != nil {
		return usageError(env, err)
	}
	if _, ok := p.Last("help"); ok {
		fmt.Fprint(env.Stdout, freeHelp)
		return 0
	}
	if len(p.Args) > 0 {
		fmt.Fprintf(env.Stderr, "%s: error: unexpected argument %q\n", env.Prog, p.Args[0])
		return 1
	}
	now := nowFunc()
	when := func(key string) (int64, bool) {
		v, ok := p.Last(key)
		if !ok {
			return now.Unix(), false
		}
		t, err := sbatch.ParseSlurmTime(v.Val, now)
		if err != nil {
			fmt.Fprintf(env.Stderr, "%s: error: Invalid --%s specification: %v\n", env.Prog, key, err)
			return 0, true
		}
		return t.Unix(), true
	}
	from, _ := when("from")
	to, given := when("to")
	switch {
	case from == 0 || to == 0:
		return 1
	case !given:
		fmt.Fprintf(env.Stderr, "%s: error: --to is required\n", env.Prog)
		return 1
	case to <= from:
		fmt.Fprintf(env.Stderr, "%s: error: --to (%s) must be after --from (%s)\n", env.Prog,
			sbatch.FormatTimestamp(to, "", now), sbatch.FormatTimestamp(from, "", now))
		return 1
	}
	want := 0
	if v, ok := p.Last("nodes"); ok {
		n, err := strconv.Atoi(v.Val)
		if err != nil || n < 1 {
			fmt.Fprintf(env.Stderr, "%s: error: Invalid --nodes specification %q\n", env.Prog, v.Val)
			return 1
		}
		want = n
	}
	part := ""
	if v, ok := p.Last("partition"); ok {
		part = v.Val
	}
	cl := dial(env)
	if cl == nil {
		return 1
	}
	resp, err := cl.Free(ctxOrBackground(ctx), part, from, to)
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: error: %s\n", env.Prog, apiErrText(err))
		return 1
	}
	tfmt := timeFormat(env)
	if _, ok := p.Last("noheader"); !ok {
		fmt.Fprintf(env.Stdout, "%-9s %-19s %-19s %-10s %s\n", "PARTITION", "FROM", "TO", "FREE/TOTAL", "NODELIST")
	}
	fmt.Fprintf(env.Stdout, "%-9s %-19s %-19s %-10s %s\n", resp.Partition,
		sbatch.FormatTimestamp(resp.From, tfmt, now), sbatch.FormatTimestamp(resp.To, tfmt, now),
		fmt.Sprintf("%d/%d", len(resp.Nodes), resp.Total), orNull(hostlist(resp.Nodes)))
	if want > len(resp.Nodes) {
		fmt.Fprintf(env.Stderr, "%s: %d nodes asked for, %d free\n", env.Prog, want, len(resp.Nodes))
		return 1
	}
	return 0
}
