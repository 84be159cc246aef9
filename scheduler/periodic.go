package scheduler

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"hora/scheduler/mix"
)

// Periodic is a periodic real-time job (be-rt-mix-2001 §3.1): a frame every
// Frame seconds (d), a buffer of Buffer frames (b), and Work[k] seconds of
// CPU per frame for process k (ζ_k).
type Periodic struct {
	Frame  float64
	Buffer int
	Work   []float64
}

// CodeRTNotAdmitted is the refusal code of a periodic job the RT admitter
// cannot guarantee.
const CodeRTNotAdmitted = "RTNotAdmitted"

// rtAdmitter keeps, per partition, the RT work per period placed on each
// node (mix.Loads, the §4.2 laxity allocation). A periodic job does not
// hold its nodes in the Engine's exclusive or consumable account: it holds
// a CPU share of them, guaranteed by the class weights x:y on the node
// (docs/mix.md "Periodic jobs in the Engine"); best-effort work keeps
// scheduling on the same nodes as before.
type rtAdmitter struct {
	ratio mix.Ratio
	gang  *GangSpec // [mix] mode gang: the §4.4 rows test
	loads map[*Partition]rtAccount
	// restart are periodic jobs restored before their start was recorded.
	restart []JobID
}

// rtAccount is a partition's RT admission account: mix.Loads (the TDM/PS
// test of be-rt-mix-2001 §4.4) or, in gang mode, mix.GangAdmit (its 1GS
// rows test).
type rtAccount interface {
	Place(id int64, j mix.RTJob, a mix.Admission) mix.Decision
	PlaceOn(id int64, j mix.RTJob, nodes []int)
	Release(id int64)
	NodesOf(id int64) []int
}

func (e *Engine) rtLoads(p *Partition) rtAccount {
	if e.rt.loads == nil {
		e.rt.loads = map[*Partition]rtAccount{}
	}
	l := e.rt.loads[p]
	if l == nil {
		r := e.rt.ratio
		if r.X == 0 && r.Y == 0 {
			r = mix.Ratio{X: 1} // no [mix]: RT may take whole nodes (DESIGN §1)
		}
		l = mix.NewLoads(len(p.nodes), r)
		if g := e.rt.gang; g != nil {
			// Config validated rows and quantum; a matrix that cannot be
			// made (a partition of no node) keeps the utilisation test.
			if ga, err := mix.NewGangAdmit(len(p.nodes), g.Rows, r, g.Quantum, g.Sync); err == nil {
				l = ga
			}
		}
		e.rt.loads[p] = l
	}
	return l
}

func (pj *Periodic) rtJob() mix.RTJob {
	return mix.RTJob{Frame: pj.Frame, Buffer: pj.Buffer, Work: pj.Work}
}

// submitPeriodic admits or refuses a periodic job at once by the §4.4 test
// (the code replay uses) and starts an admitted one on the nodes its
// processes were placed on.
func (e *Engine) submitPeriodic(now float64, j Job, p *Partition) {
	pj := j.Periodic
	if err := pj.rtJob().Validate(); err != nil {
		e.verdict(Reject{ID: j.ID, Err: &AdmissionError{Verdict: Never, Code: CodeRTNotAdmitted,
			Message: "Invalid periodic real-time job: " + err.Error()}})
		return
	}
	l := e.rtLoads(p)
	d := l.Place(int64(j.ID), pj.rtJob(), mix.Admission{On: true})
	if d.Verdict != mix.Admitted {
		e.verdict(Reject{ID: j.ID, Err: e.refusal(d, pj, p)})
		return
	}
	idx := l.NodesOf(int64(j.ID))
	s := runStep{step: BatchStep, expect: now + j.TimeLimit, periodic: true}
	names := make([]string, len(idx))
	for k, i := range idx {
		s.nodes = append(s.nodes, p.nodes[i])
		names[k] = e.nodes[p.nodes[i]].spec.Name
	}
	// done: no policy knows the job; it ends when its step does.
	e.jobs[j.ID] = &jobRec{job: j, part: p, steps: []runStep{s}, started: true, done: true}
	e.verdict(Admit{ID: j.ID})
	e.out = append(e.out, Start{ID: j.ID, Step: BatchStep, Nodes: names, Expect: s.expect})
}

// refusal is the submit-time answer to a periodic job the test refused:
// the reason, naming the node, and what would fit.
func (e *Engine) refusal(d mix.Decision, pj *Periodic, p *Partition) *AdmissionError {
	v := NotNow
	if d.Verdict == mix.Never {
		v = Never
	} else { // name the node, not the partition's index of it
		d.Reason = strings.Replace(d.Reason, fmt.Sprintf("node %d,", d.Node),
			"node "+e.nodes[p.nodes[d.Node]].spec.Name+",", 1)
	}
	return &AdmissionError{Verdict: v, Code: CodeRTNotAdmitted,
		Message: "Real-time job not admitted: " + d.Reason + "; " + wouldFit(e.rt.loads[p], pj, len(p.nodes))}
}

// wouldFit says what the partition could admit now with the job's frame and
// buffer: the largest work per frame of one process (the node with the most
// room), from the same inequality as mix.Loads.Place (§4.4).
func wouldFit(a rtAccount, pj *Periodic, n int) string {
	if g, ok := a.(*mix.GangAdmit); ok {
		z := g.WouldFit(len(pj.Work), pj.Frame, pj.Buffer)
		if z <= 1e-9 {
			return "no RT rows of the gang matrix are free for this frame and buffer"
		}
		return fmt.Sprintf("would fit: %d processes of at most %s of work per %s frame",
			len(pj.Work), fmtSec(z), fmtSec(pj.Frame))
	}
	l := a.(*mix.Loads)
	gamma := float64(pj.Buffer) * pj.Frame
	best := 0.0
	for i := range n {
		room := min(l.Omega(i), gamma)*l.Share() - l.Sigma(i)
		best = max(best, room/float64(pj.Buffer))
	}
	if best <= 1e-9 {
		return "no node has RT share left for this frame and buffer"
	}
	return fmt.Sprintf("would fit: one process of at most %s of work per %s frame",
		fmtSec(math.Min(best, pj.Frame)), fmtSec(pj.Frame))
}

func fmtSec(s float64) string { return fmt.Sprintf("%.4gs", s) }

// releasePeriodic gives back the share of an ended periodic job.
func (e *Engine) releasePeriodic(r *jobRec) {
	if l := e.rt.loads[r.part]; l != nil {
		l.Release(int64(r.job.ID))
	}
}

// restorePeriodic puts a periodic job back into its partition's account
// after a restart. It was admitted, so it goes back without the test: a
// running one on the nodes it runs on, one admitted but not yet started by
// laxity, to start at the next pass.
func (e *Engine) restorePeriodic(now float64, r *jobRec, ev Restore) {
	l := e.rtLoads(r.part)
	r.done = true
	if !ev.Running {
		l.Place(int64(r.job.ID), r.job.Periodic.rtJob(), mix.Admission{})
		e.rt.restart = append(e.rt.restart, r.job.ID)
		r.part.dirty = true
		return
	}
	r.started = true
	s := runStep{step: BatchStep, expect: ev.Started + r.job.TimeLimit, periodic: true}
	var idx []int
	for _, name := range ev.Nodes {
		if g, ok := e.byName[name]; ok && !slices.Contains(s.nodes, g) {
			if i := slices.Index(r.part.nodes, g); i >= 0 {
				s.nodes = append(s.nodes, g)
				idx = append(idx, i)
			}
		}
	}
	l.PlaceOn(int64(r.job.ID), r.job.Periodic.rtJob(), idx)
	r.steps = []runStep{s}
}

// startRestoredPeriodic starts the periodic jobs restored before they had
// started, on the nodes the account placed them on.
func (e *Engine) startRestoredPeriodic(now float64) {
	for _, id := range e.rt.restart {
		r := e.jobs[id]
		if r == nil || r.started {
			continue
		}
		nodes := e.rt.loads[r.part].NodesOf(int64(id))
		s := runStep{step: BatchStep, expect: now + r.job.TimeLimit, periodic: true}
		var names []string
		for _, i := range nodes {
			if g := r.part.nodes[i]; !slices.Contains(s.nodes, g) {
				s.nodes = append(s.nodes, g)
				names = append(names, e.nodes[g].spec.Name)
			}
		}
		r.steps, r.started = []runStep{s}, true
		e.out = append(e.out, Start{ID: id, Step: BatchStep, Nodes: names, Expect: s.expect})
	}
	e.rt.restart = e.rt.restart[:0]
}

// RTLoad reports, for the named partition, the RT work per period Σ_i placed
// on each node (mix.Loads) — in gang mode the RT rows taken on it — for
// display and tests; nil when none is placed.
func (e *Engine) RTLoad(partition string) map[string]float64 {
	p := e.partName[partition]
	if p == nil || e.rt.loads[p] == nil {
		return nil
	}
	out := map[string]float64{}
	l, ok := e.rt.loads[p].(*mix.Loads)
	if !ok { // gang: the RT rows taken on each node
		g := e.rt.loads[p].(*mix.GangAdmit)
		for i, n := range p.nodes {
			if r := g.RowsOn(i); r > 0 {
				out[e.nodes[n].spec.Name] = float64(r)
			}
		}
		return out
	}
	for i, g := range p.nodes {
		if s := l.Sigma(i); s > 0 {
			out[e.nodes[g].spec.Name] = s
		}
	}
	return out
}

// testPeriodic is sbatch --test-only for a periodic job: the submit-time
// decision, taken back at once.
func (e *Engine) testPeriodic(now float64, j Job, p *Partition) (float64, []string, error) {
	const probe = math.MinInt64 // never a job id
	l := e.rtLoads(p)
	d := l.Place(probe, j.Periodic.rtJob(), mix.Admission{On: true})
	if d.Verdict != mix.Admitted {
		return 0, nil, e.refusal(d, j.Periodic, p)
	}
	names := make([]string, 0, len(d.Nodes))
	for _, i := range l.NodesOf(probe) {
		names = append(names, e.nodes[p.nodes[i]].spec.Name)
	}
	l.Release(probe)
	return now, names, nil
}
