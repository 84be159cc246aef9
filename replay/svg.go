package replay

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
)

// Hand-written SVG plots: a fixed frame, linear axes with a few ticks, one
// polyline or a set of bars. Numbers are printed with fixed precision so the
// files are byte-identical across runs.

const (
	svgW, svgH   = 640, 360
	padL, padR   = 64, 16
	padT, padB   = 32, 48
	plotW, plotH = svgW - padL - padR, svgH - padT - padB
	svgStyle     = `font-family="sans-serif" font-size="11"`
	lineColor    = "#1f77b4"
)

type svgPlot struct {
	w                     *bufio.Writer
	x0, x1, y0, y1        float64
	title, xlabel, ylabel string
}

func newPlot(w io.Writer, title, xl, yl string, x0, x1, y0, y1 float64) *svgPlot {
	if x1 <= x0 {
		x1 = x0 + 1
	}
	if y1 <= y0 {
		y1 = y0 + 1
	}
	p := &svgPlot{w: bufio.NewWriter(w), x0: x0, x1: x1, y0: y0, y1: y1, title: title, xlabel: xl, ylabel: yl}
	fmt.Fprintf(p.w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s>`+"\n",
		svgW, svgH, svgW, svgH, svgStyle)
	fmt.Fprintf(p.w, `<rect width="%d" height="%d" fill="white"/>`+"\n", svgW, svgH)
	fmt.Fprintf(p.w, `<text x="%d" y="20" font-size="14">%s</text>`+"\n", padL, esc(title))
	fmt.Fprintf(p.w, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>`+"\n", padL, padT, plotW, plotH)
	for i := 0; i <= 4; i++ {
		fx := float64(i) / 4
		x := padL + fx*plotW
		y := padT + plotH - fx*plotH
		fmt.Fprintf(p.w, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, padT+plotH+16, tick(x0+fx*(x1-x0)))
		fmt.Fprintf(p.w, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", padL-6, y+4, tick(y0+fx*(y1-y0)))
		fmt.Fprintf(p.w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", padL, y, padL+plotW, y)
	}
	fmt.Fprintf(p.w, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", padL+plotW/2, svgH-10, esc(xl))
	fmt.Fprintf(p.w, `<text x="14" y="%d" text-anchor="middle" transform="rotate(-90 14 %d)">%s</text>`+"\n",
		padT+plotH/2, padT+plotH/2, esc(yl))
	return p
}

func (p *svgPlot) px(x float64) float64 { return padL + (x-p.x0)/(p.x1-p.x0)*plotW }
func (p *svgPlot) py(y float64) float64 { return padT + plotH - (y-p.y0)/(p.y1-p.y0)*plotH }

// palette colours the lines and bars of comparisons.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

func (p *svgPlot) polyline(xs, ys []float64) { p.polylineColor(xs, ys, lineColor) }

func (p *svgPlot) polylineColor(xs, ys []float64, color string) {
	fmt.Fprintf(p.w, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="`, color)
	for i := range xs {
		if i > 0 {
			p.w.WriteByte(' ')
		}
		fmt.Fprintf(p.w, "%.1f,%.1f", p.px(xs[i]), p.py(ys[i]))
	}
	fmt.Fprintln(p.w, `"/>`)
}

func (p *svgPlot) close() error {
	fmt.Fprintln(p.w, "</svg>")
	return p.w.Flush()
}

func tick(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6 || (a < 0.01 && a > 0):
		return strconv.FormatFloat(v, 'g', 3, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func esc(s string) string {
	var b []byte
	for _, c := range []byte(s) {
		switch c {
		case '<':
			b = append(b, "&lt;"...)
		case '>':
			b = append(b, "&gt;"...)
		case '&':
			b = append(b, "&amp;"...)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// plotUtilization plots the busy share of the machine, averaged over 400
// equal slices of the makespan, against days since the first submission.
func plotUtilization(w io.Writer, o *Outcome) error {
	const n = 400
	t0, t1 := math.Inf(1), math.Inf(-1)
	for i, j := range o.Workload.Jobs {
		t0 = min(t0, j.Submit)
		if r := o.Results[i]; r.Started {
			t1 = max(t1, r.End)
		}
	}
	if !(t1 > t0) {
		t0, t1 = 0, 1
	}
	busy := make([]float64, n)
	width := (t1 - t0) / n
	for i := range o.Results {
		r := &o.Results[i]
		if !r.Started || r.End <= r.Start {
			continue
		}
		c := float64(r.Nodes * o.Cores)
		a, b := (r.Start-t0)/width, (r.End-t0)/width
		for k := int(a); k < n && float64(k) < b; k++ {
			lo, hi := max(a, float64(k)), min(b, float64(k+1))
			busy[k] += c * (hi - lo)
		}
	}
	procs := float64(o.Nodes * o.Cores)
	xs, ys := make([]float64, n), make([]float64, n)
	for k := range busy {
		xs[k] = (float64(k) + 0.5) * width / 86400
		ys[k] = busy[k] / procs
	}
	p := newPlot(w, "Utilization over time", "days since first submission", "busy share of processors",
		0, (t1-t0)/86400, 0, 1)
	p.polyline(xs, ys)
	return p.close()
}

// plotWaitCDF plots the empirical CDF of the wait time (log10 of 1 + wait in
// seconds on x) of the measured jobs.
func plotWaitCDF(w io.Writer, o *Outcome, skip int) error {
	var waits []float64
	for i := skip; i < len(o.Results); i++ {
		if r := o.Results[i]; r.Started {
			waits = append(waits, math.Log10(1+r.Start-o.Workload.Jobs[i].Submit))
		}
	}
	slices.Sort(waits)
	hi := 1.0
	if len(waits) > 0 {
		hi = max(1, math.Ceil(waits[len(waits)-1]))
	}
	const n = 200
	xs, ys := make([]float64, 0, n+1), make([]float64, 0, n+1)
	for k := 0; k <= n; k++ {
		x := hi * float64(k) / n
		c, _ := slices.BinarySearch(waits, math.Nextafter(x, math.Inf(1)))
		xs = append(xs, x)
		ys = append(ys, float64(c)/float64(max(1, len(waits))))
	}
	p := newPlot(w, "Wait time CDF", "log10(1 + wait in seconds)", "share of jobs", 0, hi, 0, 1)
	p.polyline(xs, ys)
	return p.close()
}

// plotBsldBySize draws one bar per power-of-two size bin: the average
// bounded slowdown of its jobs.
func plotBsldBySize(w io.Writer, s *Summary) error {
	top := 1.0
	for _, g := range s.SizeBins {
		top = max(top, g.AvgBsld)
	}
	top = niceCeil(top)
	p := newPlot(w, "Average bounded slowdown by job size", "job size (processors)", "avg bsld (τ = 10 s)",
		0, float64(max(1, len(s.SizeBins))), 0, top)
	// Replace the numeric x ticks' meaning with bin labels under each bar.
	for i, g := range s.SizeBins {
		x0, x1 := p.px(float64(i)+0.15), p.px(float64(i)+0.85)
		y := p.py(g.AvgBsld)
		fmt.Fprintf(p.w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x0, y, x1-x0, p.py(0)-y, lineColor)
		fmt.Fprintf(p.w, `<text x="%.1f" y="%d" text-anchor="middle" font-size="9">%s</text>`+"\n", (x0+x1)/2, padT+plotH+30, esc(g.Name))
	}
	return p.close()
}

func niceCeil(x float64) float64 {
	if x <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= x {
			return m * e
		}
	}
	return 10 * e
}
