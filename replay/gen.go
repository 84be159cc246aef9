package replay

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Generator parameters every generator takes (`--load`, `--jobs`); the
// seed is the generator's rng.
const (
	ParamLoad = "load"
	ParamJobs = "jobs"
)

// params reads a generator's settings: each getter records the key, and
// check refuses any key nobody asked for, naming it.
type params struct {
	gen  string
	m    map[string]string
	used map[string]bool
	err  error
}

func newParams(gen string, m map[string]string) *params {
	return &params{gen: gen, m: m, used: map[string]bool{}}
}

func (p *params) float(key string, def, lo, hi float64) float64 {
	p.used[key] = true
	v, ok := p.m[key]
	if !ok || v == "" {
		return def
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || !(x >= lo && x <= hi) {
		if p.err == nil {
			p.err = fmt.Errorf("%s: %s=%q: want a number in [%g, %g]", p.gen, key, v, lo, hi)
		}
		return def
	}
	return x
}

func (p *params) int(key string, def, lo, hi int) int {
	x := p.float(key, float64(def), float64(lo), float64(hi))
	if x != math.Trunc(x) && p.err == nil {
		p.err = fmt.Errorf("%s: %s=%q: want a whole number", p.gen, key, p.m[key])
	}
	return int(x)
}

func (p *params) str(key, def string, allowed ...string) string {
	p.used[key] = true
	v, ok := p.m[key]
	if !ok || v == "" {
		return def
	}
	if len(allowed) > 0 && !slices.Contains(allowed, v) && p.err == nil {
		p.err = fmt.Errorf("%s: %s=%q: want one of %s", p.gen, key, v, strings.Join(allowed, ", "))
	}
	return v
}

func (p *params) check() error {
	if p.err != nil {
		return p.err
	}
	var unknown []string
	for k := range p.m {
		if !p.used[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		known := make([]string, 0, len(p.used))
		for k := range p.used {
			known = append(known, k)
		}
		slices.Sort(known)
		return fmt.Errorf("%s: unknown parameter %s (known: %s)", p.gen, strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return nil
}

// expo draws an exponential variate of the given mean.
func expo(rng *rand.Rand, mean float64) float64 { return rng.ExpFloat64() * mean }

// uniform draws from [a, b).
func uniform(rng *rand.Rand, a, b float64) float64 { return a + (b-a)*rng.Float64() }

func ftoa(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
