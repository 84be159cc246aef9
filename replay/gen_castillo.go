package replay

import (
	"fmt"
	"math"
	"math/rand/v2"

	"hora/scheduler"
)

// Advance-reservation workloads of Castillo's thesis
// (papers/advance-reservations-thesis): rigid one-server jobs with a ready
// time (Job.Begin) and a deadline, booked at submit time by the "reserve"
// policy, which refuses what it cannot book.

func init() {
	Register("castillo-ch3", castilloCh3{})
	Register("castillo-ch4", castilloCh4{})
}

// BoundedPareto is the bounded Pareto distribution on [Lo, Hi] with shape
// Alpha (thesis §3.4: job sizes).
type BoundedPareto struct{ Lo, Hi, Alpha float64 }

// Mean is the distribution's mean.
func (b BoundedPareto) Mean() float64 {
	l, h, a := b.Lo, b.Hi, b.Alpha
	if a == 1 {
		return math.Log(h/l) * l * h / (h - l)
	}
	return math.Pow(l, a) / (1 - math.Pow(l/h, a)) * a / (a - 1) * (math.Pow(l, 1-a) - math.Pow(h, 1-a))
}

// Draw samples by inversion of the CDF.
func (b BoundedPareto) Draw(rng *rand.Rand) float64 {
	// F(x) = (1 − (Lo/x)^α) / (1 − (Lo/Hi)^α)
	u := rng.Float64()
	return b.Lo / math.Pow(1-u*(1-math.Pow(b.Lo/b.Hi, b.Alpha)), 1/b.Alpha)
}

// ParetoWithMean finds the shape that gives a bounded Pareto on [lo, hi]
// the given mean (lo < mean < (lo+hi)/2), by bisection: the mean falls as
// the shape grows.
func ParetoWithMean(lo, hi, mean float64) BoundedPareto {
	a, b := 1e-3, 50.0
	for range 200 {
		mid := (a + b) / 2
		if (BoundedPareto{lo, hi, mid}).Mean() > mean {
			a = mid
		} else {
			b = mid
		}
	}
	return BoundedPareto{lo, hi, (a + b) / 2}
}

// castilloUnit is the length of the thesis' time unit (the minimum job
// size) in simulated seconds: the reserve policy books whole seconds, and
// its l_min of 60 s is then the thesis' l_min = 1.
const castilloUnit = 60.0

type castilloCh3 struct{}

func (castilloCh3) Doc() string {
	return "advance reservations, thesis §3.4: n=20 servers, bounded Pareto sizes [1,50] mean 3.28, L=200, q=0.1, ρ = λ·mean/n (1 unit = 60 s)"
}

// Generate draws the §3.4 workload: Poisson arrivals of rate λ = ρn/x̄;
// length l from the bounded Pareto on [1, 50] with mean x̄ = 3.28; a ready
// time r uniform in [0, L − l] after the arrival (the thesis: "a job may
// request to be scheduled at most L units of time in the future"; it does
// not give r's distribution); deadline uniform in (r + l, r + l + q(L − r − l)).
// Times are whole seconds, one thesis unit = 60 s.
//
// Parameters: load ρ (default 0.5), jobs (default 5000), n (20), mean
// (3.28), q (0.1), horizon L (200), strategy (default min-lip, the thesis'
// recommendation; passed to the reserve policy).
func (castilloCh3) Generate(rng *rand.Rand, m map[string]string) (*Workload, error) {
	p := newParams("castillo-ch3", m)
	load := p.float(ParamLoad, 0.5, 1e-6, 100)
	jobs := p.int(ParamJobs, 5000, 1, 1e8)
	n := p.int("n", 20, 1, 1e6)
	mean := p.float("mean", 3.28, 1.01, 25)
	q := p.float("q", 0.1, 0, 1)
	horizon := p.float("horizon", 200, 51, 1e6)
	strategy := p.str("strategy", "min-lip")
	if err := p.check(); err != nil {
		return nil, err
	}
	bp := ParetoWithMean(1, 50, mean)
	lambda := load * float64(n) / mean // arrivals per unit
	w := &Workload{Name: "castillo-ch3", Procs: n, Offered: load, Doc: castilloCh3{}.Doc(), Ramp: horizon * castilloUnit}
	w.Cluster = reserveCluster("ar", make([]float64, n), strategy)
	a := 0.0
	for i := range jobs {
		a += expo(rng, 1/lambda)
		l := bp.Draw(rng)
		r := uniform(rng, 0, horizon-l)
		slack := uniform(rng, 0, q*(horizon-r-l))
		submit := math.Floor(a * castilloUnit)
		run := math.Ceil(l * castilloUnit)
		begin := submit + math.Round(r*castilloUnit)
		w.Jobs = append(w.Jobs, Job{ID: scheduler.JobID(i + 1), Submit: submit, Run: run, Limit: run, Procs: 1,
			Begin: begin, Deadline: begin + run + math.Floor(slack*castilloUnit), RecordedWait: -1})
	}
	return w, nil
}

type castilloCh4 struct{}

func (castilloCh4) Doc() string {
	return "advance reservations on heterogeneous servers, thesis §4.6: n=120, 3 rates, 80% of jobs < 4 h, 20% 4–36 h (mean 5.6 h), q=20 h"
}

// Ch4Rates are the service rates of the §4.6 (H = 3, n)-heterogeneous
// system at heterogeneity level 1..4: a third of the servers at 1+0.2·level,
// a third at 1, a third at 1−0.2·level, so the total rate stays n (thesis
// expression 4.2) and a higher level majorizes a lower one. The thesis does
// not list its four rate vectors; this family has its stated properties.
func Ch4Rates(n, level int) []float64 {
	rates := make([]float64, n)
	d := 0.2 * float64(level)
	for i := range rates {
		switch i % 3 {
		case 0:
			rates[i] = 1 + d
		case 1:
			rates[i] = 1
		default:
			rates[i] = 1 - d
		}
	}
	if n%3 == 1 { // keep the sum at n: the unmatched fast server goes to 1
		rates[n-1] = 1
	}
	return rates
}

// Generate draws the §4.6 workload: Poisson arrivals; the ready time
// uniform between one minute and 14 days after the arrival; the length 80%
// uniform in [1 min, 4 h] and 20% uniform in [4 h, 36 h] (mean 5.6 h);
// deadline = ready + length + uniform(0, q), q = 20 h (the thesis writes
// (r, r+q), which a 36 h job could never meet; we add the length). Load
// ρ = λ·x̄/Σμ. Times are seconds at rate 1.
//
// Parameters: load (0.5), jobs (2000), n (120), level (heterogeneity 1..4,
// default 4), q (hours, 20), strategy (default ff-ha+, §4.4).
func (castilloCh4) Generate(rng *rand.Rand, m map[string]string) (*Workload, error) {
	p := newParams("castillo-ch4", m)
	load := p.float(ParamLoad, 0.5, 1e-6, 100)
	jobs := p.int(ParamJobs, 2000, 1, 1e8)
	n := p.int("n", 120, 3, 1e6)
	level := p.int("level", 4, 0, 4)
	q := p.float("q", 20, 0, 1e4) * 3600
	strategy := p.str("strategy", "ff-ha+")
	if err := p.check(); err != nil {
		return nil, err
	}
	const h = 3600.0
	mean := 0.8*(60+4*h)/2 + 0.2*(4*h+36*h)/2
	rates := Ch4Rates(n, level)
	total := 0.0
	for _, r := range rates {
		total += r
	}
	lambda := load * total / mean
	w := &Workload{Name: "castillo-ch4", Procs: n, Offered: load,
		Doc: castilloCh4{}.Doc() + fmt.Sprintf(", level %d", level), Ramp: 14*24*h + 36*h + q}
	w.Cluster = reserveCluster("ar", rates, strategy)
	a := 0.0
	for i := range jobs {
		a += expo(rng, 1/lambda)
		var l float64
		if rng.Float64() < 0.8 {
			l = uniform(rng, 60, 4*h)
		} else {
			l = uniform(rng, 4*h, 36*h)
		}
		submit := math.Floor(a)
		run := math.Ceil(l)
		begin := submit + math.Round(uniform(rng, 60, 14*24*h))
		w.Jobs = append(w.Jobs, Job{ID: scheduler.JobID(i + 1), Submit: submit, Run: run, Limit: run, Procs: 1,
			Begin: begin, Deadline: begin + run + math.Floor(uniform(rng, 0, q)), RecordedWait: -1})
	}
	return w, nil
}

// reserveCluster is one node per rate (0 = 1) in one partition of policy
// "reserve" with l_min = 60 s.
func reserveCluster(prefix string, rates []float64, strategy string) *scheduler.Config {
	c := &scheduler.Config{}
	names := make([]string, len(rates))
	for i, r := range rates {
		names[i] = fmt.Sprintf("%s%04d", prefix, i+1)
		c.Nodes = append(c.Nodes, scheduler.NodeSpec{Name: names[i], CPUs: 1, Rate: r})
	}
	ps := scheduler.PartitionSpec{Name: "ar", Nodes: names, Policy: "reserve", Default: true,
		Params: map[string]string{"lmin": "60"}}
	if strategy != "" {
		ps.Params["strategy"] = strategy
	}
	c.Partitions = []scheduler.PartitionSpec{ps}
	return c
}
