package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"hora/config"
	"hora/nodes/cgmix"
	"hora/sbatch"
	"hora/scheduler/mix"
)

var mixOpts = []sbatch.Opt{
	{Long: "config", Arg: sbatch.RequiredArg, Key: "config"},
	{Long: "sample", Arg: sbatch.RequiredArg, Key: "sample"},
	{Long: "help", Arg: sbatch.NoArg, Key: "help"},
}

const mixHelp = `Usage: hora mix [--config FILE] [--sample SECONDS]
Shows the fairness ratio between real-time and best-effort jobs ([mix] in
hora.toml), how it is enforced, and on this machine's local nodes the live
state of the two class groups: CPU weight, freezer state, processes, and the
CPU each class used over the sample (default 1 s) with its share; then each
running job per node with its freezer state (gang stops them a row at a
time).

      --config=FILE     hora.toml (default /etc/hora/hora.toml when it
                        exists, else the embedded default)
      --sample=SECONDS  how long to measure the shares (0 = do not)
`

// mixMain is `hora mix` (hora-sim mix): it reads hora.toml and the cgroups,
// which the client binary must not link (cmd/hora/deps_test.go).
func mixMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var path string
	sample := time.Second
	for _, s := range []string{"/etc/hora/hora.toml"} {
		if _, err := os.Stat(s); err == nil {
			path = s
		}
	}
	p, err := sbatch.Getopt(mixOpts, args, false)
	if err != nil {
		fmt.Fprintf(stderr, "hora mix: %v\n", err)
		return 2
	}
	if _, ok := p.Last("help"); ok {
		fmt.Fprint(stdout, mixHelp)
		return 0
	}
	if len(p.Args) > 0 {
		fmt.Fprintf(stderr, "%s: error: unexpected argument %q\n", "hora mix", p.Args[0])
		return 1
	}
	if v, ok := p.Last("config"); ok {
		path = v.Val
	}
	if v, ok := p.Last("sample"); ok {
		f, err := strconv.ParseFloat(v.Val, 64)
		if err != nil || f < 0 || f > 60 {
			fmt.Fprintf(stderr, "%s: error: --sample %q: want seconds in [0, 60]\n", "hora mix", v.Val)
			return 1
		}
		sample = time.Duration(f * float64(time.Second))
	}
	cfg := config.Default()
	if path != "" {
		if cfg, err = config.Load(path); err != nil {
			fmt.Fprintf(stderr, "hora mix: %v\n", err)
			return 1
		}
	}
	r, _ := mix.ParseRatio(cfg.Mix.Ratio)
	enforced := "not enforced (no [mix] table)"
	if cfg.MixEnforced() {
		enforced = "enforced on " + cfg.Executor + " nodes"
	}
	fmt.Fprintf(stdout, "ratio %s (RT share %.3f), mode %s, %s\n", r, r.Share(mix.RT), cfg.Mix.Mode, enforced)
	switch mix.Mode(cfg.Mix.Mode) {
	case mix.TDMMode:
		fmt.Fprintf(stdout, "tdm: period %g s: RT %g s, then BE %g s\n", cfg.Mix.Period, r.Share(mix.RT)*cfg.Mix.Period, r.Share(mix.BE)*cfg.Mix.Period)
	case mix.GangMode:
		fmt.Fprintf(stdout, "gang: %d rows, quantum %g s\n", cfg.Mix.Rows, cfg.Mix.Quantum)
	}
	if !cfg.MixEnforced() || cfg.Executor != "local" {
		return 0
	}
	name := "hora-" + strings.NewReplacer("/", "_", ".", "_").Replace(cfg.ClusterName)
	if _, err := os.Stat(cgmix.DefaultRoot + "/freezer/" + name); err != nil {
		fmt.Fprintf(stdout, "local nodes: no class groups (%s): is horad running with this config?\n", name)
		return 0
	}
	g, err := cgmix.Open(cgmix.DefaultRoot, name)
	if err != nil {
		fmt.Fprintf(stderr, "hora mix: %v\n", err)
		return 1
	}
	classes := []mix.Class{mix.RT, mix.BE}
	var u0 [2]time.Duration
	measured := sample > 0
	for _, c := range classes {
		d, ok, err := g.Usage(c)
		u0[c], measured = d, measured && ok && err == nil
	}
	if measured {
		select {
		case <-ctx.Done():
			return 1
		case <-time.After(sample):
		}
	}
	var used [2]float64
	for _, c := range classes {
		d, _, _ := g.Usage(c)
		used[c] = (d - u0[c]).Seconds() / sample.Seconds()
	}
	rtW, beW, _ := g.Weights()
	weight := [2]int{rtW, beW}
	tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NODES\tCLASS\tWEIGHT\tFREEZER\tPROCS\tCPU\tSHARE")
	for _, c := range classes {
		st, _ := g.FreezerState(c)
		pids, _ := g.Pids(c)
		cpu, share := "-", "-"
		if measured {
			cpu = fmt.Sprintf("%.2f", used[c])
			if tot := used[0] + used[1]; tot > 0 {
				share = fmt.Sprintf("%.1f%%", 100*used[c]/tot)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\n", "local (this machine)", c, weight[c], st, len(pids), cpu, share)
	}
	tw.Flush()
	// Each running job on each node has a freezer group of its own: gang
	// stops and continues them one by one (a row at a time).
	steps, _ := g.Steps()
	var running []cgmix.Step
	for _, s := range steps {
		if s.Procs > 0 {
			running = append(running, s)
		}
	}
	if len(running) == 0 {
		return 0
	}
	fmt.Fprintln(stdout)
	tw = tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "JOBID\tNODE\tCLASS\tFREEZER\tPROCS")
	for _, s := range running {
		job, node, _ := strings.Cut(s.Name, "_")
		st, _ := g.StepState(s.Class, s.Name)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", job, node, s.Class, st, s.Procs)
	}
	tw.Flush()
	return 0
}
