package replay

import (
	"math"
	"slices"
	"strconv"

	"hora/replay/swf"
)

// Tau is the bounded-slowdown threshold: bsld = max(1, (wait+run)/max(Tau, run)).
const Tau = 10.0

// Bsld is the bounded slowdown of a job that waited wait and ran run seconds.
func Bsld(wait, run float64) float64 {
	return max(1, (wait+run)/max(Tau, run))
}

// Summary holds the metrics of one simulation. Job metrics leave out the
// warm-up jobs; machine metrics (utilization, makespan) cover every job.
type Summary struct {
	Workload      string  `json:"workload"`
	Mode          string  `json:"mode"` // "simulated" or "as-recorded"
	Policy        string  `json:"policy"`
	Engine        string  `json:"engine"`
	Procs         int     `json:"procs"`
	Nodes         int     `json:"nodes"`
	CoresPerNode  int     `json:"cores_per_node"`
	KillAtLimit   bool    `json:"kill_at_limit"`
	WarmupDropped int     `json:"warmup_dropped"`
	Jobs          int     `json:"jobs"`
	Admitted      int     `json:"admitted"`
	Rejected      int     `json:"rejected"`
	RejectRatio   float64 `json:"reject_ratio"`
	Started       int     `json:"started"`
	NeverStarted  int     `json:"never_started"` // admitted but never run (ended pending)
	Killed        int     `json:"killed_at_limit"`

	DeadlineJobs      int     `json:"deadline_jobs"`
	DeadlineMisses    int     `json:"deadline_misses"`
	DeadlineMissRatio float64 `json:"deadline_miss_ratio"`
	JobLossRate       float64 `json:"job_loss_rate"`
	WorkLossRate      float64 `json:"work_loss_rate"`
	Fairness          float64 `json:"fairness_index"`
	// LargeJobLoss is the loss rate of the tenth of the jobs with the most
	// work (processors × run): how unfair a policy is to large jobs, which
	// the fairness index with arrival-share weights cannot show.
	LargeJobLoss float64 `json:"large_job_loss_rate"`

	AvgWait     float64 `json:"avg_wait_s"`
	AvgDelay    float64 `json:"avg_delay_s"` // start − max(submit, begin): the thesis' "delay"
	MedianWait  float64 `json:"median_wait_s"`
	MaxWait     float64 `json:"max_wait_s"`
	AvgResponse float64 `json:"avg_response_s"`
	AvgBsld     float64 `json:"avg_bsld"`
	MaxBsld     float64 `json:"max_bsld"`
	// TemporalPenalty and AvgRetries: see Group. The spatial penalty of
	// all jobs is AvgDelay.
	TemporalPenalty float64  `json:"temporal_penalty"`
	AvgRetries      *float64 `json:"avg_retries,omitempty"`
	Utilization     float64  `json:"utilization"`
	// UtilizationArrivals is the busy share between the first submission
	// (plus the workload's Ramp) and the last: the steady-state utilization
	// of a synthetic run, without the ramp-up and the drain.
	UtilizationArrivals float64 `json:"utilization_arrivals"`
	Makespan            float64 `json:"makespan_s"`

	Classes  []Group     `json:"classes"`
	SizeBins []Group     `json:"size_bins"`
	Input    *InputStats `json:"input,omitempty"`
}

// Group is the metrics of a subset of jobs (a class or a size bin).
type Group struct {
	Name        string  `json:"name"`
	Jobs        int     `json:"jobs"`
	Rejected    int     `json:"rejected"`
	Misses      int     `json:"deadline_misses"`
	AvgWait     float64 `json:"avg_wait_s"`
	AvgResponse float64 `json:"avg_response_s"`
	AvgBsld     float64 `json:"avg_bsld"`
	LossRate    float64 `json:"job_loss_rate"`
	// The fairness metrics of the thesis' chapter 5 (§5.5), over the
	// started jobs, with W_r = start − ready (submission or begin):
	// TemporalPenalty is the mean of P^l_r = W_r / l_r, l_r the job's run
	// time, bounded below by τ = 10 s as in bsld so that a job of no length
	// has a finite penalty; SpatialPenalty is P^n, the mean W_r of the
	// group (of a size bin: the thesis' W as a function of n_r).
	TemporalPenalty float64 `json:"temporal_penalty"`
	SpatialPenalty  float64 `json:"spatial_penalty_s"`
	// AvgRetries is the mean number of times a request's start was moved
	// by Δt before it was placed (Table 5.3), over the placed jobs; only
	// when the run counts retries (co-allocation replay).
	AvgRetries *float64 `json:"avg_retries,omitempty"`
}

// TemporalPenalty is P^l_r = W_r / l_r (thesis §5.5) of a job that waited
// w beyond its ready time and ran run seconds, with l_r bounded below by
// Tau (a choice of hora's: the thesis' jobs all have a length).
func TemporalPenalty(w, run float64) float64 { return w / max(run, Tau) }

// InputStats is what the SWF reader did to the log.
type InputStats struct {
	Records  int            `json:"records"`
	Kept     int            `json:"kept"`
	Skipped  map[string]int `json:"skipped"`  // by issue key, non-zero only
	Repaired map[string]int `json:"repaired"` // kept records by issue key, non-zero only
}

func inputStats(s *swf.Stats) *InputStats {
	if s == nil {
		return nil
	}
	in := &InputStats{Records: s.Records, Kept: s.Kept, Skipped: map[string]int{}, Repaired: map[string]int{}}
	for i := range swf.NumIssues {
		if n := s.SkippedBy[i]; n > 0 {
			in.Skipped[i.Key()] = n
		}
		if n := s.Repaired[i]; n > 0 {
			in.Repaired[i.Key()] = n
		}
	}
	return in
}

// sizeBin names the power-of-two bin of a processor count: 1, 2, 3-4, 5-8, …
func sizeBin(procs int) (idx int, name string) {
	if procs <= 1 {
		return 0, "1"
	}
	hi := 2
	for idx = 1; hi < procs; idx++ {
		hi *= 2
	}
	if hi == 2 {
		return 1, "2"
	}
	return idx, strconv.Itoa(hi/2+1) + "-" + strconv.Itoa(hi)
}

type acc struct {
	g                Group
	wait, resp, bsld float64
	delay, tpen      float64
	retries          int
	started          int
	lost             int
}

func (a *acc) add(j *Job, r *Result) {
	a.g.Jobs++
	if r.Rejected {
		a.g.Rejected++
	}
	lost := r.Rejected || !r.Started
	if missed(j, r) {
		a.g.Misses++
		lost = true
	}
	if lost {
		a.lost++
	}
	if r.Started {
		wait, run := r.Start-j.Submit, r.End-r.Start
		a.started++
		a.wait += wait
		a.resp += wait + run
		a.bsld += Bsld(wait, run)
		d := r.Start - j.ready()
		a.delay += d
		a.tpen += TemporalPenalty(d, run)
		a.retries += r.Retries
	}
}

func (a *acc) done(retries bool) Group {
	if a.started > 0 {
		n := float64(a.started)
		a.g.AvgWait = a.wait / n
		a.g.AvgResponse = a.resp / n
		a.g.AvgBsld = a.bsld / n
		a.g.SpatialPenalty = a.delay / n
		a.g.TemporalPenalty = a.tpen / n
		if retries {
			x := float64(a.retries) / n
			a.g.AvgRetries = &x
		}
	}
	if a.g.Jobs > 0 {
		a.g.LossRate = float64(a.lost) / float64(a.g.Jobs)
	}
	return a.g
}

// missed reports a deadline miss: an admitted job with a deadline that the
// scheduler ended unrun (DEADLINE) or whose last step ended after it.
func missed(j *Job, r *Result) bool {
	if j.Deadline <= 0 || !r.Admitted {
		return false
	}
	return (r.Ended && !r.Started) || (r.Started && r.End > j.Deadline)
}

// ready is when a job may start: its submission or its begin time.
func (j *Job) ready() float64 { return max(j.Submit, j.Begin) }

// Summarize computes the metrics of an outcome; the first ⌊warmup·n⌋ jobs
// (in submission order) are left out of the job metrics.
func Summarize(o *Outcome, warmup float64, mode string) *Summary {
	w := o.Workload
	s := &Summary{Workload: w.Name, Mode: mode, Policy: o.Label, Engine: o.Opts.Engine,
		Procs: o.Nodes * o.Cores, Nodes: o.Nodes, CoresPerNode: o.Cores, KillAtLimit: o.Opts.KillAtLimit,
		Input: inputStats(w.SWFStats)}
	if s.Policy == "" {
		s.Policy = o.Opts.Policy
	}
	if s.Engine == "" {
		s.Engine = "hora"
	}
	if mode == "as-recorded" {
		s.Policy, s.Engine = "as recorded", "log"
	}
	skip := int(math.Floor(warmup * float64(len(w.Jobs))))
	skip = min(max(skip, 0), len(w.Jobs))
	s.WarmupDropped = skip

	// Machine metrics over all jobs.
	first, last := math.Inf(1), math.Inf(-1)
	var busy float64
	for i := range w.Jobs {
		j, r := &w.Jobs[i], &o.Results[i]
		first = min(first, j.Submit)
		if r.Started {
			last = max(last, r.End)
			busy += float64(o.Cores) * r.Busy
		} else if r.Rejected || r.End > 0 {
			last = max(last, r.End)
		}
	}
	if last > first {
		s.Makespan = last - first
		s.Utilization = busy / (float64(s.Procs) * s.Makespan)
	}
	if n := len(w.Jobs); n > 1 {
		lo, hi := first, w.Jobs[n-1].Submit
		if lo+w.Ramp < hi {
			lo += w.Ramp
		}
		var in float64
		for i := range w.Jobs {
			r := &o.Results[i]
			if r.Started && r.End > r.Start {
				// The share of the job's busy time inside the window.
				ov := min(r.End, hi) - max(r.Start, lo)
				in += r.Busy * max(0, ov) / (r.End - r.Start)
			}
		}
		if hi > lo {
			s.UtilizationArrivals = float64(o.Cores) * in / (float64(s.Procs) * (hi - lo))
		}
	}

	// Job metrics.
	all := acc{g: Group{Name: "all"}}
	classes := map[string]*acc{}
	var bins []*acc
	var waits []float64
	var delay float64
	var work, lostWork float64
	// Fairness (thesis eq. 3.1): bins of equal width over [1, Procs].
	nb := min(100, max(s.Procs, 1))
	z := make([]int, nb)
	zok := make([]int, nb)
	for i := skip; i < len(w.Jobs); i++ {
		j, r := &w.Jobs[i], &o.Results[i]
		all.add(j, r)
		c := classes[j.Class()]
		if c == nil {
			c = &acc{g: Group{Name: j.Class()}}
			classes[j.Class()] = c
		}
		c.add(j, r)
		bi, bn := sizeBin(j.Procs)
		for len(bins) <= bi {
			bins = append(bins, nil)
		}
		if bins[bi] == nil {
			bins[bi] = &acc{g: Group{Name: bn}}
		}
		bins[bi].add(j, r)
		if r.Admitted {
			s.Admitted++
		}
		if r.Rejected {
			s.Rejected++
		}
		if r.Killed {
			s.Killed++
		}
		if r.Started {
			s.Started++
			wait := r.Start - j.Submit
			waits = append(waits, wait)
			delay += r.Start - j.ready()
			s.MaxWait = max(s.MaxWait, wait)
			s.MaxBsld = max(s.MaxBsld, Bsld(wait, r.End-r.Start))
		} else if !r.Rejected {
			s.NeverStarted++
		}
		ok := r.Started
		if j.Deadline > 0 {
			s.DeadlineJobs++
			if missed(j, r) {
				s.DeadlineMisses++
				ok = false
			}
		}
		jw := float64(j.Procs) * j.Run
		work += jw
		if !ok {
			lostWork += jw
		}
		fb := 0
		if s.Procs > 1 {
			fb = min(nb-1, max(0, (j.Procs-1)*nb/s.Procs))
		}
		z[fb]++
		if ok {
			zok[fb]++
		}
	}
	g := all.done(o.Retries)
	s.TemporalPenalty, s.AvgRetries = g.TemporalPenalty, g.AvgRetries
	s.Jobs = g.Jobs
	s.AvgWait, s.AvgResponse, s.AvgBsld, s.JobLossRate = g.AvgWait, g.AvgResponse, g.AvgBsld, g.LossRate
	if s.Jobs > 0 {
		s.RejectRatio = float64(s.Rejected) / float64(s.Jobs)
	}
	if s.DeadlineJobs > 0 {
		s.DeadlineMissRatio = float64(s.DeadlineMisses) / float64(s.DeadlineJobs)
	}
	if work > 0 {
		s.WorkLossRate = lostWork / work
	}
	if len(waits) > 0 {
		s.AvgDelay = delay / float64(len(waits))
		slices.Sort(waits)
		s.MedianWait = waits[len(waits)/2]
	}
	// With no size distribution known, the weights w_i are the shares of
	// arrivals per bin, and F reduces to the share of jobs served.
	if s.Jobs > 0 {
		served := 0
		for i := range z {
			served += zok[i] // w_i·z'_i/z_i with w_i = z_i/Z
		}
		s.Fairness = float64(served) / float64(s.Jobs)
	}
	if n := len(w.Jobs) - skip; n >= 10 {
		idx := make([]int, 0, n)
		for i := skip; i < len(w.Jobs); i++ {
			idx = append(idx, i)
		}
		work := func(i int) float64 { return float64(w.Jobs[i].Procs) * w.Jobs[i].Run }
		slices.SortStableFunc(idx, func(a, b int) int {
			switch {
			case work(a) > work(b):
				return -1
			case work(a) < work(b):
				return 1
			}
			return a - b
		})
		lost := 0
		for _, i := range idx[:n/10] {
			j, r := &w.Jobs[i], &o.Results[i]
			if r.Rejected || !r.Started || missed(j, r) {
				lost++
			}
		}
		s.LargeJobLoss = float64(lost) / float64(n/10)
	}
	for _, name := range []string{"BE", "RT"} {
		if c := classes[name]; c != nil {
			s.Classes = append(s.Classes, c.done(o.Retries))
		}
	}
	for _, b := range bins {
		if b != nil {
			s.SizeBins = append(s.SizeBins, b.done(o.Retries))
		}
	}
	return s
}

// AsRecorded builds the outcome the log itself records: each job starts at
// submit + wait and runs its logged run time. Jobs whose wait or run time is
// unknown are left out (reported in Summary.Input as read).
func AsRecorded(w *Workload, procs, cores int) *Outcome {
	cores = max(cores, 1)
	if procs == 0 {
		procs = w.Procs
	}
	kept := &Workload{Name: w.Name, Procs: w.Procs, Header: w.Header, SWFStats: w.SWFStats}
	for _, j := range w.Jobs {
		if j.RecordedWait >= 0 && j.Run >= 0 {
			kept.Jobs = append(kept.Jobs, j)
		}
	}
	o := &Outcome{Workload: kept, Opts: Options{Procs: procs, CoresPerNode: cores}, Nodes: procs / cores,
		Cores: cores, Results: make([]Result, len(kept.Jobs))}
	for i, j := range kept.Jobs {
		start := j.Submit + j.RecordedWait
		n := ceilDiv(j.Procs, cores)
		o.Results[i] = Result{Admitted: true, Started: true, Start: start, End: start + j.Run,
			Nodes: n, Busy: float64(n) * j.Run}
	}
	return o
}
