package replay

import (
	"fmt"
	"math"
	"math/rand/v2"

	"hora/scheduler"
)

// Divisible-load workloads of the real-time DLT papers. Each task is a
// divisible job: a load σ (data units) and a deadline, no node count and no
// time limit; the "dlt" policy sizes and places its chunks. The cost model is
// the one both papers use, for a homogeneous cluster of N nodes with
// transmission cost Cms and processing cost Cps per data unit:
//
//	E(σ, n) = (1−β)/(1−βⁿ) · σ(Cms + Cps),  β = Cps/(Cms + Cps)
//
// (rt-dlt-2005 §4.1 eq. 4.5 and the formula after it; ac-fast-2009 eq. 1–2).

func init() {
	Register("rt-dlt-2005", dltGen{name: "rt-dlt-2005", n: 10, cms: 10, cps: 10, perNode: false})
	Register("ac-fast-2009", dltGen{name: "ac-fast-2009", n: 512, cms: 1, cps: 1000, perNode: true})
}

// DLTExec is E(σ, n): the execution time of load σ on n nodes under the
// optimal partitioning rule without setup costs.
func DLTExec(sigma float64, n int, cms, cps float64) float64 {
	beta := cps / (cms + cps)
	return (1 - beta) / (1 - math.Pow(beta, float64(n))) * sigma * (cms + cps)
}

// truncNormalMean is the mean of Normal(mu, sd) conditioned on being > 0.
func truncNormalMean(mu, sd float64) float64 {
	a := mu / sd
	phi := math.Exp(-a*a/2) / math.Sqrt(2*math.Pi)
	Phi := 0.5 * (1 + math.Erf(a/math.Sqrt2))
	return mu + sd*phi/Phi
}

// dltGen generates the tasks of rt-dlt-2005 §6.1; ac-fast-2009 §5.1 uses
// "the same approach as [17, 18]" on its own cluster and defines the load
// per node (perNode).
type dltGen struct {
	name     string
	n        int
	cms, cps float64
	perNode  bool
}

func (g dltGen) Doc() string {
	if g.perNode {
		return fmt.Sprintf("divisible real-time tasks, ac-fast-2009 §5.1: N=%d, Cms=%g, Cps=%g, load = E(avg σ, 1)·λ/N", g.n, g.cms, g.cps)
	}
	return fmt.Sprintf("divisible real-time tasks, rt-dlt-2005 §6.1: N=%d, Cms=Cps=%g, load = Σ E(σ, N) / time", g.n, g.cms)
}

// Generate draws the tasks (rt-dlt-2005 §6.1):
//   - data sizes σ ~ Normal(mean 100, sd 100), redrawn until positive;
//   - arrival instants of a Poisson process, each bringing 1–10 tasks
//     (uniform, inclusive);
//   - relative deadline uniform in [E(σ, N), E(σ, 1)], between the
//     minimum and the maximum execution time.
//
// Load. rt-dlt-2005 defines the system load as Σ E(σ, N) over the tasks
// divided by the simulated time, and the "average interval" as the average
// minimum execution time divided by the load. We keep the first definition
// exact: tasks arrive at mean interval avg E(σ, N)/load, so arrival instants,
// which bring 5.5 tasks on average, are 5.5 times as far apart. ac-fast-2009
// §5.1 defines SystemLoad = E(avg σ, 1)·λ/N with λ the task arrival rate;
// it gets the same arrival process with λ = load·N/E(avg σ, 1).
//
// Parameters: load (default 0.5), jobs (default 2000), cms and cps (the
// cluster's, defaults of the paper), admission (passed to the dlt policy).
func (g dltGen) Generate(rng *rand.Rand, m map[string]string) (*Workload, error) {
	p := newParams(g.name, m)
	load := p.float(ParamLoad, 0.5, 1e-6, 100)
	jobs := p.int(ParamJobs, 2000, 1, 1e8)
	cms := p.float("cms", g.cms, 1e-9, 1e9)
	cps := p.float("cps", g.cps, 1e-9, 1e9)
	admission := p.str("admission", "")
	if err := p.check(); err != nil {
		return nil, err
	}
	const mu, sd = 100.0, 100.0
	avgSigma := truncNormalMean(mu, sd)
	var perTask float64 // mean interval between tasks
	if g.perNode {
		perTask = DLTExec(avgSigma, 1, cms, cps) / (load * float64(g.n))
	} else {
		perTask = DLTExec(avgSigma, g.n, cms, cps) / load
	}
	const meanBatch = 5.5 // 1..10 tasks per arrival instant
	w := &Workload{Name: g.name, Procs: g.n, Offered: load, Doc: g.Doc()}
	w.Cluster = dltCluster(g.n, cms, cps, admission)
	t := 0.0
	for len(w.Jobs) < jobs {
		t += expo(rng, perTask*meanBatch)
		k := 1 + rng.IntN(10)
		for ; k > 0 && len(w.Jobs) < jobs; k-- {
			sigma := 0.0
			for sigma <= 0 {
				sigma = mu + sd*rng.NormFloat64()
			}
			emin, emax := DLTExec(sigma, g.n, cms, cps), DLTExec(sigma, 1, cms, cps)
			id := scheduler.JobID(len(w.Jobs) + 1)
			w.Jobs = append(w.Jobs, Job{ID: id, Submit: t, Run: emax, Limit: scheduler.Inf, Procs: 1,
				Deadline: t + uniform(rng, emin, emax), Load: sigma, RecordedWait: -1})
		}
	}
	return w, nil
}

// dltCluster is N homogeneous nodes in one partition of policy "dlt".
func dltCluster(n int, cms, cps float64, admission string) *scheduler.Config {
	c := &scheduler.Config{}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("dlt%04d", i+1)
		c.Nodes = append(c.Nodes, scheduler.NodeSpec{Name: names[i], CPUs: 1})
	}
	ps := scheduler.PartitionSpec{Name: "rt", Nodes: names, Policy: "dlt", Default: true,
		Params: map[string]string{"cms": ftoa(cms), "cps": ftoa(cps)}}
	if admission != "" {
		ps.Params["admission"] = admission
	}
	c.Partitions = []scheduler.PartitionSpec{ps}
	return c
}
