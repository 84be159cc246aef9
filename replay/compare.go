package replay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// Variant is one policy setting compared: the partition policy (or batch
// flavour) and its parameter overrides.
type Variant struct {
	Policy string
	Params map[string]string
}

// Name is how tables and plots label the variant.
func (v Variant) Name() string {
	name := v.Policy
	for _, k := range []string{"admission", "strategy"} {
		if x := v.Params[k]; x != "" {
			if name == "" {
				name = x
			} else {
				name += "/" + x
			}
		}
	}
	if name == "" {
		return "default"
	}
	return name
}

// Run is one simulation of a comparison.
type Run struct {
	Variant Variant
	Load    float64 // the generator's load; 0 for a log
	Summary *Summary
}

// CompareRuns simulates every (load, variant) pair, at most GOMAXPROCS at
// once; build makes the workload of a load (called once per load, in order).
// The runs come back in (load, variant) order whatever the scheduling.
func CompareRuns(ctx context.Context, loads []string, variants []Variant, warmup float64,
	build func(load string) (*Workload, Options, error)) ([]Run, error) {
	type task struct {
		w   *Workload
		opt Options
		run *Run
	}
	var tasks []task
	runs := make([]Run, len(loads)*len(variants))
	for li, load := range loads {
		w, opt, err := build(load)
		if err != nil {
			return nil, err
		}
		for vi, v := range variants {
			o := opt
			o.Policy = v.Policy
			if len(v.Params) > 0 {
				o.Params = map[string]string{}
				for k, x := range opt.Params {
					o.Params[k] = x
				}
				for k, x := range v.Params {
					o.Params[k] = x
				}
			}
			r := &runs[li*len(variants)+vi]
			r.Variant, r.Load = v, w.Offered
			tasks = append(tasks, task{w: w, opt: o, run: r})
		}
	}
	fs := make([]func() error, len(tasks))
	for i, t := range tasks {
		fs[i] = func() error {
			o, err := Simulate(ctx, t.w, t.opt)
			if err != nil {
				return fmt.Errorf("%s: %w", t.run.Variant.Name(), err)
			}
			t.run.Summary = Summarize(o, warmup, "simulated")
			return nil
		}
	}
	if err := parallel(fs); err != nil {
		return nil, err
	}
	return runs, nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// variantsOf is the product of --policies × --admission × --strategy.
func variantsOf(policies, admissions, strategies []string) []Variant {
	orOne := func(xs []string) []string {
		if len(xs) == 0 {
			return []string{""}
		}
		return xs
	}
	var out []Variant
	for _, p := range orOne(policies) {
		for _, a := range orOne(admissions) {
			for _, s := range orOne(strategies) {
				v := Variant{Policy: p}
				if a != "" || s != "" {
					v.Params = map[string]string{}
					if a != "" {
						v.Params["admission"] = a
					}
					if s != "" {
						v.Params["strategy"] = s
					}
				}
				out = append(out, v)
			}
		}
	}
	return out
}

// CompareMain is `hora compare [flags] [LOG.swf[.gz]]`: several policies on
// one log or generated workload, side by side; it returns the exit status.
func CompareMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	status := 0
	app := compareApp(ctx, stdout, stderr, &status)
	if err := app.RunContext(ctx, append([]string{"hora compare"}, normalize(args)...)); err != nil {
		fmt.Fprintf(stderr, "hora compare: %v\n", err)
		return 2
	}
	return status
}

// compareApp is the command's cli.App; its man page is built from it too.
func compareApp(ctx context.Context, stdout, stderr io.Writer, status *int) *cli.App {
	return &cli.App{
		Name:      "hora compare",
		Usage:     "run several policies on one workload in simulated time and put them side by side",
		UsageText: "hora compare --policies easy,fcfs [flags] [LOG.swf[.gz]]\n   hora compare --synthetic castillo-ch3 --strategy min-lip,lact --loads 0.2,0.6,1.0",
		Description: "Each variant (the product of --policies, --admission and --strategy) is simulated on\n" +
			"the same workload, GOMAXPROCS at a time; --loads repeats it for each load of a --synthetic\n" +
			"workload. Prints a Markdown table; --out DIR adds compare.csv and SVG plots.",
		Writer: stdout, ErrWriter: stderr,
		HideHelpCommand: true, HideHelp: true, HideVersion: true,
		ExitErrHandler: func(*cli.Context, error) {},
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "help", Usage: "show this help"},
			&cli.StringFlag{Name: "policies", Usage: "comma-separated: easy, fcfs, reserve, dlt, ... (default: the workload's)"},
			&cli.StringFlag{Name: "admission", Usage: "comma-separated dlt admission algorithms"},
			&cli.StringFlag{Name: "strategy", Usage: "comma-separated reserve strategies"},
			&cli.StringFlag{Name: "loads", Usage: "comma-separated loads of the --synthetic workload (default: --load)"},
			&cli.StringFlag{Name: "out", Usage: "write compare.csv and SVG plots into `DIR`"},
		}, workloadFlags...),
		Action: func(c *cli.Context) error {
			if c.Bool("help") {
				return cli.ShowAppHelp(c)
			}
			err := compare(ctx, c, stdout)
			var ue usageError
			switch {
			case errors.As(err, &ue):
				fmt.Fprintf(stderr, "hora compare: %v\n", err)
				*status = 2
			case err != nil:
				fmt.Fprintf(stderr, "hora compare: %v\n", err)
				*status = 1
			}
			return nil
		},
	}
}

func compare(ctx context.Context, c *cli.Context, stdout io.Writer) error {
	if c.NArg() > 1 {
		return usageError{fmt.Errorf("one log at most, got %d", c.NArg())}
	}
	variants := variantsOf(splitList(c.String("policies")), splitList(c.String("admission")), splitList(c.String("strategy")))
	loads := splitList(c.String("loads"))
	if len(loads) > 0 && c.String("synthetic") == "" {
		return usageError{fmt.Errorf("--loads sweeps a --synthetic workload")}
	}
	for _, l := range loads {
		if _, err := strconv.ParseFloat(l, 64); err != nil {
			return usageError{fmt.Errorf("--loads: %q is not a number", l)}
		}
	}
	if len(loads) == 0 {
		loads = []string{""}
	}
	runs, err := CompareRuns(ctx, loads, variants, c.Float64("warmup-fraction"), func(load string) (*Workload, Options, error) {
		return fromFlagsAt(c, load)
	})
	if err != nil {
		return err
	}
	if dir := c.String("out"); dir != "" {
		if err := WriteCompareDir(dir, runs); err != nil {
			return err
		}
	}
	return WriteCompareMarkdown(stdout, runs)
}

// compareCols are the columns of a comparison, in order.
var compareCols = []struct {
	head string
	val  func(s *Summary) string
}{
	{"jobs", func(s *Summary) string { return strconv.Itoa(s.Jobs) }},
	{"reject ratio", func(s *Summary) string { return f4(s.RejectRatio) }},
	{"deadline miss ratio", func(s *Summary) string { return f4(s.DeadlineMissRatio) }},
	{"job loss", func(s *Summary) string { return f4(s.JobLossRate) }},
	{"work loss", func(s *Summary) string { return f4(s.WorkLossRate) }},
	{"loss of 10% largest", func(s *Summary) string { return f4(s.LargeJobLoss) }},
	{"fairness (eq. 3.1)", func(s *Summary) string { return f4(s.Fairness) }},
	{"utilization", func(s *Summary) string { return f4(s.UtilizationArrivals) }},
	{"avg wait (min)", func(s *Summary) string { return f1(s.AvgWait / 60) }},
	{"avg delay (s)", func(s *Summary) string { return f1(s.AvgDelay) }},
	{"avg bsld", func(s *Summary) string { return f4(s.AvgBsld) }},
	{"temporal penalty", func(s *Summary) string { return f4(s.TemporalPenalty) }},
}

// WriteCompareMarkdown writes one row per run.
func WriteCompareMarkdown(w io.Writer, runs []Run) error {
	bw := bufio.NewWriter(w)
	if len(runs) > 0 {
		s := runs[0].Summary
		fmt.Fprintf(bw, "## hora compare: %s\n\n%d processors (%d nodes × %d cores); utilization is the busy share between the first submission (after the generator's booking horizon) and the last.\n\n",
			filepath.Base(s.Workload), s.Procs, s.Nodes, s.CoresPerNode)
	}
	fmt.Fprint(bw, "| policy | load |")
	sep := "|---|---:|"
	for _, col := range compareCols {
		fmt.Fprintf(bw, " %s |", col.head)
		sep += "---:|"
	}
	fmt.Fprintln(bw, "\n"+sep)
	for _, r := range runs {
		load := "log"
		if r.Load > 0 {
			load = ftoa(r.Load)
		}
		fmt.Fprintf(bw, "| %s | %s |", r.Summary.Policy, load)
		for _, col := range compareCols {
			fmt.Fprintf(bw, " %s |", col.val(r.Summary))
		}
		fmt.Fprintln(bw)
	}
	return bw.Flush()
}

// WriteCompareDir writes compare.csv and, for a load sweep, one SVG per
// metric against the load (one line per policy), else bars per policy.
func WriteCompareDir(dir string, runs []Run) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	err := writeFile(filepath.Join(dir, "compare.csv"), func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		fmt.Fprint(bw, "policy,load")
		for _, col := range compareCols {
			fmt.Fprint(bw, ","+csvQuote(col.head))
		}
		fmt.Fprintln(bw)
		for _, r := range runs {
			fmt.Fprintf(bw, "%s,%s", csvQuote(r.Summary.Policy), ftoa(r.Load))
			for _, col := range compareCols {
				fmt.Fprint(bw, ","+col.val(r.Summary))
			}
			fmt.Fprintln(bw)
		}
		return bw.Flush()
	})
	if err != nil {
		return err
	}
	for _, m := range comparePlots {
		err := writeFile(filepath.Join(dir, m.file), func(w io.Writer) error { return plotCompare(w, runs, m.title, m.val) })
		if err != nil {
			return err
		}
	}
	return nil
}

var comparePlots = []struct {
	file, title string
	val         func(s *Summary) float64
}{
	{"reject-ratio.svg", "Reject ratio", func(s *Summary) float64 { return s.RejectRatio }},
	{"job-loss.svg", "Job loss rate (rejected, ended or late)", func(s *Summary) float64 { return s.JobLossRate }},
	{"utilization.svg", "Utilization (steady state, arrivals window)", func(s *Summary) float64 { return s.UtilizationArrivals }},
	{"delay.svg", "Average delay beyond the ready time (s)", func(s *Summary) float64 { return s.AvgDelay }},
	{"large-job-loss.svg", "Loss rate of the 10% largest jobs", func(s *Summary) float64 { return s.LargeJobLoss }},
	{"avg-wait.svg", "Average wait (min)", func(s *Summary) float64 { return s.AvgWait / 60 }},
}

// plotCompare draws one line per policy against the load, or one bar per
// policy when every run has the same load.
func plotCompare(w io.Writer, runs []Run, title string, val func(*Summary) float64) error {
	var names []string
	var loads []float64
	top := 0.0
	for _, r := range runs {
		if !slices.Contains(names, r.Summary.Policy) {
			names = append(names, r.Summary.Policy)
		}
		if !slices.Contains(loads, r.Load) {
			loads = append(loads, r.Load)
		}
		top = max(top, val(r.Summary))
	}
	top = niceCeil(top)
	if len(loads) < 2 {
		p := newPlot(w, title, "policy", "", 0, float64(max(1, len(runs))), 0, top)
		for i, r := range runs {
			x0, x1 := p.px(float64(i)+0.15), p.px(float64(i)+0.85)
			y := p.py(val(r.Summary))
			fmt.Fprintf(p.w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x0, y, x1-x0, p.py(0)-y, palette[i%len(palette)])
			fmt.Fprintf(p.w, `<text x="%.1f" y="%d" text-anchor="middle" font-size="9">%s</text>`+"\n", (x0+x1)/2, padT+plotH+30, esc(r.Summary.Policy))
		}
		return p.close()
	}
	slices.Sort(loads)
	p := newPlot(w, title, "load", "", loads[0], loads[len(loads)-1], 0, top)
	for k, name := range names {
		var xs, ys []float64
		for _, r := range runs {
			if r.Summary.Policy == name {
				xs = append(xs, r.Load)
				ys = append(ys, val(r.Summary))
			}
		}
		p.polylineColor(xs, ys, palette[k%len(palette)])
		fmt.Fprintf(p.w, `<text x="%d" y="%d" fill="%s">%s</text>`+"\n", padL+8, padT+14+14*k, palette[k%len(palette)], esc(name))
	}
	return p.close()
}
