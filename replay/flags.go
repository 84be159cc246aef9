package replay

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"hora/scheduler"
)

// loadConfig reads hora.toml into the Engine's view of the cluster; set by
// config_hora.go, which links hora/config.
var loadConfig func(path string) (*scheduler.Config, error)

// workloadFlags choose the workload and the machine; `hora replay` and
// `hora compare` share them.
var workloadFlags = []cli.Flag{
	&cli.StringFlag{Name: "synthetic", Usage: "generate the workload instead of reading a log: rt-dlt-2005, ac-fast-2009, castillo-ch3, castillo-ch4, be-rt-mix-2001 (time-shared RT/BE mix: --mix-mode, --ratio, --rt-be-mix, --rt-admission, --arrival-rate)"},
	&cli.Float64Flag{Name: "load", Usage: "offered load of the --synthetic workload (its paper's definition)"},
	&cli.IntFlag{Name: "jobs", Usage: "number of jobs of the --synthetic workload"},
	&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of every random choice (generators, deadline models, chunk jitter)"},
	&cli.StringSliceFlag{Name: "param", Usage: "generator parameter `KEY=VALUE` (repeatable), e.g. q=0.2"},
	&cli.StringFlag{Name: "rt-class", Usage: "a log's real-time class, run in a partition rt (reserve policy, planning with the RT share of --ratio) on the same nodes as the best-effort rest: `RULE` deadline (every job given a deadline), queue=N[,N…] or partition=N[,N…] (SWF field 15 or 16), fraction=F (seeded); needs --deadline-factor"},
	&cli.Float64Flag{Name: "deadline-factor", Usage: "give each job the deadline max(submit, begin) + k·requested time (k ≥ 1)"},
	&cli.Float64Flag{Name: "advance-fraction", Usage: "make a fraction f of the jobs advance reservations starting 0–3 h after submission (thesis §5.5.2)"},
	&cli.StringFlag{Name: "config", Usage: "take nodes, partitions and policies from `hora.toml` (jobs go to its default partition)"},
	&cli.IntFlag{Name: "procs", Usage: "machine size in processors (default: the header's MaxProcs)"},
	&cli.IntFlag{Name: "cores-per-node", Value: 1, Usage: "processors per simulated node"},
	&cli.BoolFlag{Name: "per-cpu", Usage: "schedule jobs by processors on shared nodes of --cores-per-node CPUs (consumable resources), not on whole nodes"},
	&cli.BoolFlag{Name: "strict", Usage: "stop at the first log line that needs a repair"},
	&cli.Float64Flag{Name: "warmup-fraction", Usage: "leave the first fraction of jobs out of the job metrics (Tsafrir et al.: 0.01)"},
	&cli.BoolFlag{Name: "kill-at-limit", Usage: "end jobs at their requested time when they run longer"},
	&cli.Float64Flag{Name: "chunk-scale", Value: 1, Usage: "a divisible job's chunk takes this times its planned length"},
	&cli.Float64Flag{Name: "chunk-jitter", Usage: "and again a uniform factor in [1−p, 1+p] (seeded)"},
}

// fromFlags builds the workload and the simulation options the flags ask
// for. The policy flags (--policy, --admission, --strategy) are the
// caller's: one value for replay, lists for compare.
func fromFlags(c *cli.Context) (*Workload, Options, error) { return fromFlagsAt(c, "") }

// fromFlagsAt is fromFlags with the --synthetic load replaced by load
// ("" keeps --load) by atLoad, for load sweeps.
func fromFlagsAt(c *cli.Context, atLoad string) (*Workload, Options, error) {
	opt := Options{Procs: c.Int("procs"), CoresPerNode: c.Int("cores-per-node"), KillAtLimit: c.Bool("kill-at-limit"), PerCPU: c.Bool("per-cpu"),
		Dependencies: c.Bool("swf-dependencies"),
		ChunkScale:   c.Float64("chunk-scale"), ChunkJitter: c.Float64("chunk-jitter"), Seed: c.Uint64("seed"),
		Policy: c.String("policy")}
	if wf := c.Float64("warmup-fraction"); wf < 0 || wf >= 1 {
		return nil, opt, usageError{fmt.Errorf("--warmup-fraction %g: want 0 ≤ f < 1", wf)}
	}
	if opt.Procs < 0 || opt.CoresPerNode < 1 {
		return nil, opt, usageError{fmt.Errorf("--procs must be ≥ 0 and --cores-per-node ≥ 1")}
	}
	if opt.ChunkScale <= 0 || opt.ChunkJitter < 0 || opt.ChunkJitter >= 1 {
		return nil, opt, usageError{fmt.Errorf("--chunk-scale must be > 0 and --chunk-jitter in [0, 1)")}
	}
	for _, k := range []string{"admission", "strategy"} {
		if v := c.String(k); v != "" && !strings.Contains(v, ",") {
			if opt.Params == nil {
				opt.Params = map[string]string{}
			}
			opt.Params[k] = v
		}
	}
	if path := c.String("config"); path != "" {
		if loadConfig == nil {
			return nil, opt, fmt.Errorf("--config: hora/config is not built into this binary")
		}
		sc, err := loadConfig(path)
		if err != nil {
			return nil, opt, err
		}
		opt.Config = sc
	}
	var w *Workload
	var err error
	seed := c.Uint64("seed")
	if name := c.String("synthetic"); name != "" {
		if c.NArg() > 0 {
			return nil, opt, usageError{fmt.Errorf("--synthetic and a log are exclusive")}
		}
		prm := map[string]string{}
		for _, kv := range c.StringSlice("param") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, opt, usageError{fmt.Errorf("--param %q: want KEY=VALUE", kv)}
			}
			prm[k] = v
		}
		if c.IsSet("load") {
			prm[ParamLoad] = strconv.FormatFloat(c.Float64("load"), 'g', -1, 64)
		}
		if atLoad != "" {
			prm[ParamLoad] = atLoad
		}
		if c.IsSet("jobs") {
			prm[ParamJobs] = strconv.Itoa(c.Int("jobs"))
		}
		w, err = Generate(name, seed, prm)
	} else {
		if c.IsSet("load") || c.IsSet("jobs") || c.IsSet("param") {
			return nil, opt, usageError{fmt.Errorf("--load, --jobs and --param set up a --synthetic workload")}
		}
		w, err = load(c.Args().First(), c.Bool("strict"), c.Bool("as-recorded"))
	}
	if err != nil {
		return nil, opt, err
	}
	if c.IsSet("advance-fraction") {
		// Its own stream, so that a generator's draws do not shift it.
		if err := AddAdvance(w, c.Float64("advance-fraction"), newRand(seed^0xadfa)); err != nil {
			return nil, opt, usageError{err}
		}
	}
	if c.IsSet("deadline-factor") {
		if err := AddDeadlines(w, c.Float64("deadline-factor")); err != nil {
			return nil, opt, usageError{err}
		}
	}
	if c.IsSet("rt-class") {
		rc, err := ParseRTClass(c.String("rt-class"))
		switch {
		case err != nil:
			return nil, opt, usageError{err}
		case c.String("synthetic") != "" || opt.Config != nil:
			return nil, opt, usageError{fmt.Errorf("--rt-class splits a log: no --synthetic or --config (a config names its own partitions)")}
		case !c.IsSet("deadline-factor"):
			return nil, opt, usageError{fmt.Errorf("--rt-class needs --deadline-factor: a log has no deadlines")}
		}
		rng := newRand(seed ^ 0x47c1a55)
		rc.Apply(w, rng.Float64)
		opt.RTShare = 1 // --ratio lowers it
	}
	return w, opt, nil
}
