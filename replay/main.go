package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"hora/replay/swf"
	"hora/scheduler/mix"
)

// valueFlags are the flags that take a value, for the argument normaliser.
var valueFlags = map[string]bool{
	"policy": true, "procs": true, "cores-per-node": true, "warmup-fraction": true, "seed": true,
	"out": true, "out-swf": true, "engine": true, "synthetic": true, "load": true, "jobs": true,
	"param": true, "deadline-factor": true, "advance-fraction": true, "config": true, "admission": true,
	"strategy": true, "chunk-scale": true, "chunk-jitter": true, "policies": true, "loads": true,
	"coalloc": true, "dt": true, "quantum": true, "horizon": true, "rt-class": true,
}

// normalize moves flags in front of positional arguments (urfave/cli v2 stops
// parsing flags at the first positional) and keeps "--" semantics.
func normalize(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && valueFlags[name] && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
			continue
		}
		pos = append(pos, a)
	}
	if len(pos) > 0 {
		flags = append(flags, "--")
	}
	return append(flags, pos...)
}

// Main is `hora replay [flags] [LOG.swf[.gz]]`; it returns the exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	status := 0
	app := replayApp(ctx, stdout, stderr, &status)
	if err := app.RunContext(ctx, append([]string{"hora replay"}, normalize(args)...)); err != nil {
		fmt.Fprintf(stderr, "hora replay: %v\n", err)
		return 2
	}
	return status
}

// replayApp is the command's cli.App; its man page is built from it too.
func replayApp(ctx context.Context, stdout, stderr io.Writer, status *int) *cli.App {
	return &cli.App{
		Name:      "hora replay",
		Usage:     "replay an SWF workload log through hora's scheduler in simulated time",
		UsageText: "hora replay [flags] [LOG.swf[.gz]]   (no LOG or - reads standard input)",
		Description: "Reads a Standard Workload Format log (gzipped or not), replays it through the\n" +
			"scheduler in virtual time and prints the metrics as a Markdown table.\n" +
			"The scheduler sees the requested time (field 9); the run time (field 4) drives\n" +
			"the simulation. Bounded slowdown uses τ = 10 s.",
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		HideHelp:        true, // -h belongs to Slurm-style tools; --help is ours below
		HideVersion:     true,
		ExitErrHandler:  func(*cli.Context, error) {},
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "help", Usage: "show this help"},
			&cli.StringFlag{Name: "policy", Usage: "easy or fcfs (batch backfilling; default easy for logs), or a registered policy (reserve, dlt); default for --synthetic: the generator's"},
			&cli.StringFlag{Name: "admission", Usage: "dlt admission algorithm (partition param \"admission\")"},
			&cli.StringFlag{Name: "strategy", Usage: "reserve strategy (partition param \"strategy\"): min-lip, min-tip, best-fit, first-fit, lact, ff-ha+, ..."},
			&cli.StringFlag{Name: "engine", Value: "hora", Usage: "scheduler: hora (scheduler.Engine) or reference (independent EASY oracle)"},
			&cli.BoolFlag{Name: "json", Usage: "print the summary as one JSON object"},
			&cli.StringFlag{Name: "out", Usage: "write jobs.csv, summary.json and SVG plots into `DIR`"},
			&cli.StringFlag{Name: "out-swf", Usage: "write the simulated schedule as an SWF log to `FILE`"},
			&cli.BoolFlag{Name: "as-recorded", Usage: "no simulation: use the logged start times (field 3)"},
			&cli.BoolFlag{Name: "swf-dependencies", Usage: "a job waits for its preceding job (SWF field 17) to end, plus the think time (field 18)"},
			&cli.StringFlag{Name: "coalloc", Usage: "no Engine: co-allocate each request at its submission (thesis ch. 5), `MODE` online (every job booked where placed) or logged (against the schedule as logged)"},
			&cli.Float64Flag{Name: "dt", Value: CoallocDeltaT, Usage: "--coalloc: retry step Δt in seconds"},
			&cli.Float64Flag{Name: "quantum", Usage: "--coalloc: quantum l_q in seconds, a multiple of 60 (default Δt)"},
			&cli.Float64Flag{Name: "horizon", Value: CoallocHorizon, Usage: "--coalloc: horizon H in seconds; maxRet = ⌈H/l_q⌉/2"},
		}, append(workloadFlags, mixFlags...)...),
		Action: func(c *cli.Context) error {
			if c.Bool("help") {
				return cli.ShowAppHelp(c)
			}
			err := run(ctx, c, stdout, stderr)
			var ue usageError
			switch {
			case errors.As(err, &ue):
				fmt.Fprintf(stderr, "hora replay: %v\n", err)
				*status = 2
			case err != nil:
				fmt.Fprintf(stderr, "hora replay: %v\n", err)
				*status = 1
			}
			return nil
		},
	}
}

type usageError struct{ error }

func run(ctx context.Context, c *cli.Context, stdout, stderr io.Writer) error {
	if c.NArg() > 1 {
		return usageError{fmt.Errorf("one log at most, got %d", c.NArg())}
	}
	if c.String("synthetic") == MixWorkload {
		return runMix(ctx, c, stdout)
	}
	for _, k := range mixFlagNames {
		if c.IsSet(k) && k != "ratio" {
			return usageError{fmt.Errorf("--%s belongs to --synthetic %s", k, MixWorkload)}
		}
	}
	w, opt, err := fromFlags(c)
	if err != nil {
		return err
	}
	if c.IsSet("ratio") {
		// A log or another workload with a fairness ratio: the RT policies
		// plan with the share s (DESIGN.md §1: Cps/s, LEN/s), as horad's
		// [mix] ratio makes them.
		r, err := mix.ParseRatio(c.String("ratio"))
		if err != nil {
			return usageError{fmt.Errorf("--ratio: %w", err)}
		}
		switch {
		case opt.RTShare > 0: // --rt-class: the RT partition plans with s
			if r.X == 0 {
				return usageError{fmt.Errorf("--ratio %s gives the RT class of --rt-class no share", r)}
			}
			opt.RTShare = r.Share(mix.RT)
		default:
			if opt.Params == nil {
				opt.Params = map[string]string{}
			}
			opt.Params["share"] = strconv.FormatFloat(r.Share(mix.RT), 'g', -1, 64)
		}
	}
	opt.Engine = c.String("engine")
	if c.Bool("as-recorded") && (c.String("synthetic") != "" || c.IsSet("deadline-factor") || c.IsSet("advance-fraction")) {
		return usageError{fmt.Errorf("--as-recorded replays a log as written: no --synthetic, --deadline-factor or --advance-fraction")}
	}
	for _, k := range []string{"dt", "quantum", "horizon"} {
		if c.IsSet(k) && !c.IsSet("coalloc") {
			return usageError{fmt.Errorf("--%s belongs to --coalloc", k)}
		}
	}
	wf := c.Float64("warmup-fraction")
	var o *Outcome
	mode := "simulated"
	switch {
	case c.IsSet("coalloc"):
		m := c.String("coalloc")
		if m != "online" && m != "logged" {
			return usageError{fmt.Errorf("--coalloc %q: want online or logged", m)}
		}
		if c.Bool("as-recorded") || c.String("synthetic") != "" || opt.CoresPerNode != 1 || c.IsSet("policy") {
			return usageError{fmt.Errorf("--coalloc replays a log, one processor per server: no --as-recorded, --synthetic, --policy or --cores-per-node")}
		}
		co := CoallocOptions{Procs: opt.Procs, DeltaT: c.Float64("dt"), Quantum: c.Float64("quantum"),
			Horizon: c.Float64("horizon"), Online: m == "online"}
		if err := co.fill(w); err != nil {
			return usageError{err}
		}
		if o, err = Coallocate(ctx, w, co); err != nil {
			return err
		}
		mode = "co-allocated (thesis ch. 5)"
	case c.Bool("as-recorded"):
		o, mode = AsRecorded(w, opt.Procs, opt.CoresPerNode), "as-recorded"
	default:
		if isTerminal(stderr) {
			opt.Progress = progress(stderr)
		}
		o, err = Simulate(ctx, w, opt)
		if opt.Progress != nil {
			fmt.Fprint(stderr, "\r\033[K")
		}
		if err != nil {
			return err
		}
	}
	s := Summarize(o, wf, mode)
	if dir := c.String("out"); dir != "" {
		if err := WriteOutDir(dir, o, s); err != nil {
			return err
		}
	}
	if path := c.String("out-swf"); path != "" {
		note := fmt.Sprintf("schedule simulated by hora replay (policy %s, engine %s, %d procs, %d cores per node, kill at limit %t)",
			s.Policy, s.Engine, s.Procs, s.CoresPerNode, s.KillAtLimit)
		if err := writeFile(path, func(wr io.Writer) error { return WriteSWF(wr, o, note) }); err != nil {
			return err
		}
	}
	if c.Bool("json") {
		return WriteJSON(stdout, s)
	}
	return WriteMarkdown(stdout, s)
}

// load reads a log; "" or "-" is standard input.
func load(path string, strict, raw bool) (*Workload, error) {
	mode := swf.Lenient
	if strict {
		mode = swf.Strict
	}
	if raw {
		// As recorded: every record as written; the metrics keep those whose
		// wait and run are known.
		mode = swf.Raw
	}
	var lg *swf.Log
	var err error
	if path == "" || path == "-" {
		lg, err = swf.Read(os.Stdin, "<stdin>", mode)
	} else {
		lg, err = swf.ReadFile(path, mode)
	}
	if err != nil {
		return nil, err
	}
	return FromSWF(lg)
}

// isTerminal reports whether w is a terminal (TCGETS succeeds on it).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func progress(w io.Writer) func(done, total int) {
	last := -1
	return func(done, total int) {
		pct := 100 * done / max(total, 1)
		if pct != last {
			last = pct
			fmt.Fprintf(w, "\rreplay: %3d%% (%d/%d jobs)", pct, done, total)
		}
	}
}
