package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"hora/scheduler/mix"
)

// MixWorkload is the --synthetic name of the be-rt-mix-2001 workload, which
// SimulateMix runs (time sharing) instead of Simulate.
const MixWorkload = "be-rt-mix-2001"

var mixFlagNames = []string{"mix-mode", "ratio", "rt-be-mix", "rt-admission", "arrival-rate"}

var mixFlags = []cli.Flag{
	&cli.StringFlag{Name: "mix-mode", Value: "ps", Usage: "--synthetic be-rt-mix-2001: scheme gang (1GS), tdm (2DCS-TDM) or ps (2DCS-PS)"},
	&cli.StringFlag{Name: "ratio", Value: "2:1", Usage: "fairness ratio x:y of RT to BE time; with another workload or a log the dlt and reserve policies plan with s = x/(x+y)"},
	&cli.StringFlag{Name: "rt-be-mix", Value: "2:1", Usage: "--synthetic be-rt-mix-2001: arrival mix λ_RT:λ_BE"},
	&cli.StringFlag{Name: "rt-admission", Value: "off", Usage: "--synthetic be-rt-mix-2001: RT admission on, off or statistical:P (admit while the predicted miss rate ≤ P)"},
	&cli.Float64Flag{Name: "arrival-rate", Value: 0.02, Usage: "--synthetic be-rt-mix-2001: λ_RT + λ_BE in jobs per second"},
}

func init() {
	for _, n := range mixFlagNames {
		valueFlags[n] = true
	}
}

// mixOptionsFromFlags reads the be-rt-mix-2001 flags; every bad value is a
// usage error naming its flag.
func mixOptionsFromFlags(c *cli.Context) (MixOptions, error) {
	o := DefaultMixOptions()
	o.Seed = c.Uint64("seed")
	var err error
	if o.Mode, err = mix.ParseMode(c.String("mix-mode")); err != nil {
		return o, usageError{fmt.Errorf("--mix-mode: %w", err)}
	}
	if o.Ratio, err = mix.ParseRatio(c.String("ratio")); err != nil {
		return o, usageError{fmt.Errorf("--ratio: %w", err)}
	}
	m, err := mix.ParseRatio(c.String("rt-be-mix"))
	if err != nil {
		return o, usageError{fmt.Errorf("--rt-be-mix: %w", err)}
	}
	o.RT, o.BE = m.X, m.Y
	o.Admission = c.String("rt-admission")
	if _, err := ParseMixAdmission(o.Admission); err != nil {
		return o, usageError{err}
	}
	o.Rate = c.Float64("arrival-rate")
	if !(o.Rate > 0) || o.Rate > 100 {
		return o, usageError{fmt.Errorf("--arrival-rate %g: want jobs per second in (0, 100]", o.Rate)}
	}
	prm := map[string]string{}
	for _, kv := range c.StringSlice("param") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return o, usageError{fmt.Errorf("--param %q: want KEY=VALUE", kv)}
		}
		prm[k] = v
	}
	p := newParams(MixWorkload, prm)
	o.Arrivals = p.float("arrivals", o.Arrivals, 1, 1e7)
	o.Drain = p.float("drain", o.Drain, 0, 1e7)
	o.UMin = p.float("umin", o.UMin, 0.001, 1)
	o.UMax = p.float("umax", o.UMax, o.UMin, 1)
	o.Actual = p.float("actual", o.Actual, 0.01, 1)
	o.Slice = p.float("slice", o.Slice, 0.001, 1)
	o.BEIO = p.float("be-io", o.BEIO, 0, 0.9)
	if err := p.check(); err != nil {
		return o, usageError{err}
	}
	if c.IsSet("procs") {
		o.Procs = c.Int("procs")
	}
	return o, nil
}

// runMix is `hora replay --synthetic be-rt-mix-2001 …`.
func runMix(ctx context.Context, c *cli.Context, stdout io.Writer) error {
	for _, k := range []string{"policy", "admission", "strategy", "config", "load", "jobs", "out", "out-swf", "as-recorded", "coalloc", "deadline-factor", "advance-fraction"} {
		if c.IsSet(k) {
			return usageError{fmt.Errorf("--%s does not apply to --synthetic %s (its flags: --%s)", k, MixWorkload, strings.Join(mixFlagNames, ", --"))}
		}
	}
	o, err := mixOptionsFromFlags(c)
	if err != nil {
		return err
	}
	r, err := SimulateMix(ctx, o)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		enc := json.NewEncoder(stdout)
		return enc.Encode(r)
	}
	fmt.Fprintf(stdout, "## hora replay: %s, %s, ratio %s, RT:BE %s, admission %s, λ = %s/s, seed %d\n\n",
		MixWorkload, r.Mode, r.Ratio, r.RTBEMix, r.Admission, ftoa(r.ArrivalRate), r.Seed)
	fmt.Fprintln(stdout, "| metric | value |\n|---|---:|")
	for _, kv := range [][2]string{
		{"RT arrived", strconv.Itoa(r.RTArrived)}, {"RT admitted", strconv.Itoa(r.RTAdmitted)},
		{"RT reject ratio", f4(r.RTRejectRatio)}, {"RT miss rate", f4(r.RTMissRate)},
		{"BE arrived", strconv.Itoa(r.BEArrived)}, {"BE completed", strconv.Itoa(r.BECompleted)},
		{"BE average response (s)", f1(r.BEAvgResponse)}, {"BE throughput (jobs/h)", f1(r.BEThroughput)},
		{"simulated (s)", f1(r.SimulatedSeconds)},
	} {
		fmt.Fprintf(stdout, "| %s | %s |\n", kv[0], kv[1])
	}
	return nil
}
