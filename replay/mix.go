package replay

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"hora/scheduler/mix"
)

// The be-rt-mix-2001 replay: a time-shared cluster running real-time
// pipelined jobs (RT) and best-effort parallel jobs (BE) under one of the
// paper's three schemes. Unlike Simulate (space sharing through
// scheduler.Engine), processes here share CPUs, so the simulator advances in
// slices and asks scheduler/mix — the code horad uses — which class runs:
// mix.Matrix for 1GS, mix.TDM for 2DCS-TDM, mix.PS for 2DCS-PS, mix.Loads
// for placement and admission, mix.WaitQueue for the RT arrival queue. The
// workload model and every simplification are in docs/mix.md.

// MixOptions are the workload and the machine (be-rt-mix-2001 §3.1 and
// Appendix A; the defaults are the paper's).
type MixOptions struct {
	Mode      mix.Mode
	Ratio     mix.Ratio
	RT, BE    int     // the arrival mix λ_RT : λ_BE
	Rate      float64 // λ_RT + λ_BE, jobs per second
	Admission string  // "off", "on" or "statistical:P"
	Seed      uint64

	Procs    int     // p = 16
	Rows     int     // M = 6 (1GS)
	Quantum  float64 // Q = 0.5 s (1GS)
	Period   float64 // Υ = 3 s (2DCS-TDM)
	Sync     float64 // δ = 1 ms (1GS, 2DCS-TDM)
	Switch   float64 // ω = 200 µs, a context switch
	Slice    float64 // the DCS schedulers' decision interval, 50 ms (BE quanta are 20–200 ms)
	Arrivals float64 // arrivals during [0, Arrivals), 3600 s
	Drain    float64 // then at most this long for the jobs to end, 7200 s

	RTDuration float64 // 180 s
	Frame      float64 // d = 1/30 s
	Buffer     int     // b = 100
	MaxWait    float64 // w = 15 s
	UMin, UMax float64 // per-process RT utilisation ζ/d, uniform: 0.05–0.30
	Actual     float64 // actual per-frame work is ζ·U[Actual, 1]: 0.8
	BEMean     float64 // BE work per process, Erlang mean 120 s
	BEShape    int     // Erlang shape 2
	BESlack    float64 // how far (CPU s) a BE process may run ahead of its slowest sibling: 0.1
	BEIO       float64 // fraction of a BE process's time spent in I/O: 0.2
}

// DefaultMixOptions are Appendix A's parameters.
func DefaultMixOptions() MixOptions {
	return MixOptions{Mode: mix.PSMode, Ratio: mix.Ratio{X: 2, Y: 1}, RT: 2, BE: 1, Rate: 0.02, Admission: "off", Seed: 1,
		Procs: 16, Rows: 6, Quantum: 0.5, Period: 3, Sync: 0.001, Switch: 200e-6, Slice: 0.05, Arrivals: 3600, Drain: 7200,
		RTDuration: 180, Frame: 1.0 / 30, Buffer: 100, MaxWait: 15, UMin: 0.05, UMax: 0.30, Actual: 0.8,
		BEMean: 120, BEShape: 2, BESlack: 0.1, BEIO: 0.2}
}

// MixResult is what `hora replay --synthetic be-rt-mix-2001 --json` prints.
type MixResult struct {
	Mode             string  `json:"mode"`
	Ratio            string  `json:"ratio"`
	RTBEMix          string  `json:"rt_be_mix"`
	Admission        string  `json:"rt_admission"`
	ArrivalRate      float64 `json:"arrival_rate"`
	Seed             uint64  `json:"seed"`
	RTArrived        int     `json:"rt_arrived"`
	RTAdmitted       int     `json:"rt_admitted"`
	RTRejected       int     `json:"rt_rejected"`
	RTRejectRatio    float64 `json:"rt_reject_ratio"`
	RTMissRate       float64 `json:"rt_miss_rate"` // missed frames / frames due, admitted jobs
	BEArrived        int     `json:"be_arrived"`
	BECompleted      int     `json:"be_completed"`
	BEAvgResponse    float64 `json:"be_avg_response_s"`
	BEThroughput     float64 `json:"be_throughput"` // BE jobs completed per hour
	BEUnfinished     int     `json:"be_unfinished"`
	SimulatedSeconds float64 `json:"simulated_s"`
}

type mixRT struct {
	id       int64
	arrive   float64
	start    float64 // admitted at; frames arrive from then on
	est      []float64
	act      []float64 // actual work per frame of each stage
	node     []int
	done     []float64 // frames each stage has finished (fluid)
	missed   float64
	frames   float64 // frames in the job's duration
	running  bool
	finished bool
}

type mixBE struct {
	id      int64
	arrive  float64
	work    float64 // CPU seconds each process needs
	node    []int
	cpu     []float64
	io      []float64 // when each process's I/O ends
	min     float64   // the slowest process's CPU at the start of the slice
	end     float64
	running bool
}

type mixProc struct {
	rt    *mixRT
	be    *mixBE
	stage int
}

type mixNode struct {
	procs []mixProc
	ps    *mix.PS
	last  mixProc
	lists [2][]mixProc // scratch: ready processes per class
}

type mixSim struct {
	o      MixOptions
	adm    mix.Admission
	now    float64
	nodes  []*mixNode
	loads  *mix.Loads
	matrix *mix.Matrix
	tdm    mix.TDM
	rtq    mix.WaitQueue
	beq    []*mixBE
	rts    map[int64]*mixRT
	bes    map[int64]*mixBE
	events bool // an arrival or departure since the last gang reallocation
	res    MixResult
	// totals
	rtDue, rtMissed, beResp float64
}

type mixArrival struct {
	t  float64
	rt *mixRT
	be *mixBE
}

// ParseMixAdmission reads --rt-admission: on, off or statistical:P with
// 0 < P < 1.
func ParseMixAdmission(s string) (mix.Admission, error) {
	switch s {
	case "on":
		return mix.Admission{On: true}, nil
	case "off", "":
		return mix.Admission{}, nil
	}
	if v, ok := strings.CutPrefix(s, "statistical:"); ok {
		if p, err := strconv.ParseFloat(v, 64); err == nil && p > 0 && p < 1 {
			return mix.Admission{On: true, MissRate: p}, nil
		}
	}
	return mix.Admission{}, fmt.Errorf("--rt-admission %q: want on, off or statistical:P with 0 < P < 1", s)
}

// mixWorkload draws the arrivals (§3.1): a Poisson stream of rate λ, each
// job RT with probability RT/(RT+BE).
func mixWorkload(o MixOptions) []mixArrival {
	rng := newRand(o.Seed)
	var out []mixArrival
	pRT := float64(o.RT) / float64(o.RT+o.BE)
	id := int64(0)
	for t := expo(rng, 1/o.Rate); t < o.Arrivals; t += expo(rng, 1/o.Rate) {
		id++
		if rng.Float64() < pRT {
			j := &mixRT{id: id, arrive: t, frames: o.RTDuration / o.Frame}
			for range o.Procs { // s = p (Appendix A)
				z := uniform(rng, o.UMin, o.UMax) * o.Frame
				j.est = append(j.est, z)
				j.act = append(j.act, z*uniform(rng, o.Actual, 1))
			}
			out = append(out, mixArrival{t: t, rt: j})
			continue
		}
		size := 2 + rng.IntN(o.Procs-1) // uniform 2..p
		w := 0.0
		for range o.BEShape { // Erlang: a sum of k exponentials of mean μ/k
			w += expo(rng, o.BEMean/float64(o.BEShape))
		}
		out = append(out, mixArrival{t: t, be: &mixBE{id: id, arrive: t, work: w, cpu: make([]float64, size), io: make([]float64, size)}})
	}
	return out
}

// SimulateMix runs the be-rt-mix-2001 workload under o. The same options
// and seed give the same result.
func SimulateMix(ctx context.Context, o MixOptions) (*MixResult, error) {
	adm, err := ParseMixAdmission(o.Admission)
	if err != nil {
		return nil, err
	}
	if o.RT < 0 || o.BE < 0 || o.RT+o.BE == 0 || !(o.Rate > 0) || math.IsInf(o.Rate, 0) {
		return nil, fmt.Errorf("be-rt-mix-2001: --rt-be-mix %d:%d and --arrival-rate %g: want a mix with a non-zero side and a rate > 0", o.RT, o.BE, o.Rate)
	}
	s := &mixSim{o: o, adm: adm, loads: mix.NewLoads(o.Procs, o.Ratio), rtq: mix.WaitQueue{MaxWait: o.MaxWait},
		rts: map[int64]*mixRT{}, bes: map[int64]*mixBE{}}
	s.res = MixResult{Mode: string(o.Mode), Ratio: o.Ratio.String(), RTBEMix: fmt.Sprintf("%d:%d", o.RT, o.BE),
		Admission: o.Admission, ArrivalRate: o.Rate, Seed: o.Seed}
	if s.res.Admission == "" {
		s.res.Admission = "off"
	}
	for range o.Procs {
		s.nodes = append(s.nodes, &mixNode{ps: mix.NewPS(o.Ratio)})
	}
	switch o.Mode {
	case mix.GangMode:
		if s.matrix, err = mix.NewMatrix(o.Procs, o.Rows, o.Ratio); err != nil {
			return nil, err
		}
	case mix.TDMMode:
		if s.tdm, err = mix.NewTDM(o.Ratio, o.Period, o.Sync); err != nil {
			return nil, err
		}
	case mix.PSMode:
	default:
		return nil, fmt.Errorf("--mix-mode %q: want gang, ps or tdm", o.Mode)
	}
	arr := mixWorkload(o)
	step := o.Slice
	if o.Mode == mix.GangMode {
		step = o.Quantum + o.Sync
	}
	end := o.Arrivals + o.Drain
	next := 0
	for k := 0; ; k++ {
		if k%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s.now = float64(k) * step
		for next < len(arr) && arr[next].t <= s.now {
			s.arrive(arr[next])
			next++
		}
		s.expire()
		if next == len(arr) && len(s.rts) == 0 && len(s.bes) == 0 && s.rtq.Len() == 0 {
			break
		}
		if s.now >= end {
			break
		}
		if o.Mode == mix.GangMode {
			s.gangQuantum(k)
		} else {
			s.dcsSlice(s.now, s.now+step)
		}
		s.account(s.now + step)
	}
	s.res.SimulatedSeconds = s.now
	s.finish()
	return &s.res, nil
}

func (s *mixSim) rtJob(j *mixRT) mix.RTJob {
	return mix.RTJob{Frame: s.o.Frame, Buffer: s.o.Buffer, Work: j.est}
}

func (s *mixSim) arrive(a mixArrival) {
	s.events = true
	if j := a.be; j != nil {
		s.res.BEArrived++
		s.bes[j.id] = j
		if s.matrix != nil {
			s.beq = append(s.beq, j)
			return
		}
		j.node = s.loads.PlaceBE(j.id, len(j.cpu))
		s.startBE(j)
		return
	}
	j := a.rt
	s.res.RTArrived++
	if !s.tryRT(j) {
		if s.never(j) {
			s.res.RTRejected++
			return
		}
		s.rts[j.id] = j
		s.rtq.Push(j.id, s.now)
	}
}

// never reports whether RT job j cannot be admitted even on an empty cluster.
func (s *mixSim) never(j *mixRT) bool {
	if s.matrix != nil {
		if !s.adm.On {
			return false
		}
		_, ok := s.matrix.GangRows(s.o.Quantum, s.o.Sync, s.o.Frame, s.o.Buffer, slices.Max(j.est))
		return !ok
	}
	return mix.NewLoads(s.o.Procs, s.o.Ratio).Place(1, s.rtJob(j), s.adm).Verdict == mix.Never
}

// tryRT admits and places RT job j now, or reports false.
func (s *mixSim) tryRT(j *mixRT) bool {
	if s.matrix != nil {
		if s.adm.On {
			if _, ok := s.matrix.GangRows(s.o.Quantum, s.o.Sync, s.o.Frame, s.o.Buffer, slices.Max(j.est)); !ok {
				return false
			}
			s.matrix.ClearReplicas()
			// The §4.4 rows test, as horad's Engine applies it in gang mode.
			if mix.GangAdmitOn(s.matrix, s.o.Quantum, s.o.Sync).Place(j.id, s.rtJob(j), s.adm).Verdict != mix.Admitted {
				return false
			}
		} else {
			s.matrix.ClearReplicas()
			if !s.matrix.Place(j.id, mix.RT, len(j.est), 1) { // one row without admission (§4.1)
				return false
			}
		}
		cols := s.matrix.Cols(j.id)
		j.node = slices.Clone(cols)
	} else {
		d := s.loads.Place(j.id, s.rtJob(j), s.adm)
		if d.Verdict != mix.Admitted {
			return false
		}
		j.node = d.Nodes
	}
	j.start, j.running = s.now, true
	j.done = make([]float64, len(j.est))
	s.rts[j.id] = j
	s.res.RTAdmitted++
	if s.matrix == nil {
		for k, n := range j.node {
			s.nodes[n].procs = append(s.nodes[n].procs, mixProc{rt: j, stage: k})
		}
	}
	return true
}

func (s *mixSim) startBE(j *mixBE) {
	j.running = true
	if s.matrix == nil {
		for k, n := range j.node {
			s.nodes[n].procs = append(s.nodes[n].procs, mixProc{be: j, stage: k})
		}
	}
}

// expire evicts RT jobs that waited longer than w (§3.2).
func (s *mixSim) expire() {
	for _, id := range s.rtq.Expire(s.now) {
		delete(s.rts, id)
		s.res.RTRejected++
	}
}

// retry offers the queues the room a departure left, FCFS.
func (s *mixSim) retry() {
	s.rtq.Retry(func(id int64) bool { return s.tryRT(s.rts[id]) })
	if s.matrix == nil {
		return
	}
	keep := s.beq[:0]
	for _, j := range s.beq {
		s.matrix.ClearReplicas()
		if s.matrix.Place(j.id, mix.BE, len(j.cpu), 1) {
			j.node = slices.Clone(s.matrix.Cols(j.id))
			s.startBE(j)
		} else {
			keep = append(keep, j)
		}
	}
	s.beq = keep
}

// account checks the RT deadlines at t and retires the jobs that ended.
// A frame arriving at a is due by a + b·d (the buffer, §3.1); frames not
// out by then are missed and skipped.
func (s *mixSim) account(t float64) {
	gamma := float64(s.o.Buffer) * s.o.Frame
	departed := false
	for _, id := range s.sortedRT() {
		j := s.rts[id]
		if !j.running {
			continue
		}
		due := min((t-j.start-gamma)/s.o.Frame, j.frames)
		last := len(j.done) - 1
		if due > j.done[last] {
			j.missed += due - j.done[last]
			for k := range j.done {
				j.done[k] = max(j.done[k], due)
			}
		}
		if due >= j.frames {
			s.rtDue += j.frames
			s.rtMissed += j.missed
			s.dropRT(j)
			departed = true
		}
	}
	for _, id := range s.sortedBE() {
		j := s.bes[id]
		if j.running && slices.Min(j.cpu) >= j.work-1e-9 {
			j.end = t
			s.res.BECompleted++
			s.beResp += t - j.arrive
			s.dropBE(j)
			departed = true
		}
	}
	if departed {
		s.events = true
		s.now = t
		s.retry()
	}
}

func (s *mixSim) sortedRT() []int64 {
	ids := make([]int64, 0, len(s.rts))
	for id := range s.rts {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (s *mixSim) sortedBE() []int64 {
	ids := make([]int64, 0, len(s.bes))
	for id := range s.bes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (s *mixSim) dropRT(j *mixRT) {
	j.running, j.finished = false, true
	delete(s.rts, j.id)
	if s.matrix != nil {
		s.matrix.Remove(j.id)
		return
	}
	s.loads.Release(j.id)
	s.dropProcs(func(p mixProc) bool { return p.rt == j })
}

func (s *mixSim) dropBE(j *mixBE) {
	j.running = false
	delete(s.bes, j.id)
	if s.matrix != nil {
		s.matrix.Remove(j.id)
		return
	}
	s.loads.ReleaseBE(j.id)
	s.dropProcs(func(p mixProc) bool { return p.be == j })
}

func (s *mixSim) dropProcs(del func(mixProc) bool) {
	for _, n := range s.nodes {
		n.procs = slices.DeleteFunc(n.procs, del)
		if del(n.last) {
			n.last = mixProc{}
		}
	}
}

func (s *mixSim) finish() {
	// RT jobs still running at the end count what was due so far.
	for _, id := range s.sortedRT() {
		if j := s.rts[id]; j.running {
			s.rtDue += min(j.frames, (s.now-j.start)/s.o.Frame)
			s.rtMissed += j.missed
		}
	}
	s.res.RTRejected += s.rtq.Len() // still waiting when the run stops
	if s.res.RTArrived > 0 {
		s.res.RTRejectRatio = float64(s.res.RTRejected) / float64(s.res.RTArrived)
	}
	if s.rtDue > 0 {
		s.res.RTMissRate = s.rtMissed / s.rtDue
	}
	if s.res.BECompleted > 0 {
		s.res.BEAvgResponse = s.beResp / float64(s.res.BECompleted)
		s.res.BEThroughput = float64(s.res.BECompleted) / s.now * 3600
	}
	s.res.BEUnfinished = s.res.BEArrived - s.res.BECompleted
}

// Readiness. An RT stage can work while frames are waiting for it: stage 0
// on the input (a frame every d since the job started), stage k on what
// stage k−1 finished. A BE process can work while it has work left, is not
// in I/O (after c seconds of CPU it spends c·f/(1−f) in I/O) and is no more
// than BESlack ahead of its slowest sibling: further ahead it waits for a
// message (spin-block, so it yields the CPU).

func (s *mixSim) rtAvail(j *mixRT, k int, t float64) float64 {
	if k == 0 {
		return min((t-j.start)/s.o.Frame, j.frames)
	}
	return j.done[k-1]
}

func (s *mixSim) ready(p mixProc, t float64) bool {
	if p.rt != nil {
		return s.rtAvail(p.rt, p.stage, t)-p.rt.done[p.stage] > 1e-9
	}
	j := p.be
	return j.cpu[p.stage] < j.work-1e-9 && j.cpu[p.stage]-j.min < s.o.BESlack-1e-9 && t >= j.io[p.stage]
}

// run gives process p up to dt seconds of CPU at t; it returns what it used.
func (s *mixSim) run(p mixProc, t, dt float64) float64 {
	if p.rt != nil {
		j := p.rt
		k := p.stage
		frames := min(dt/j.act[k], s.rtAvail(j, k, t+dt)-j.done[k])
		if frames <= 0 {
			return 0
		}
		j.done[k] += frames
		return frames * j.act[k]
	}
	j := p.be
	lim := min(j.work, j.min+s.o.BESlack)
	use := min(dt, lim-j.cpu[p.stage])
	if use <= 0 {
		return 0
	}
	j.cpu[p.stage] += use
	// Its I/O follows: the process blocks, the CPU goes to others.
	j.io[p.stage] = t + use + use*s.o.BEIO/(1-s.o.BEIO)
	return use
}

// key orders a class's ready processes: RT by earliest deadline (the
// oldest waiting frame's due time), BE by least CPU received (round robin in
// the fluid limit).
func (s *mixSim) key(p mixProc) float64 {
	if p.rt != nil {
		return p.rt.start + p.rt.done[p.stage]*s.o.Frame
	}
	return p.be.cpu[p.stage]
}

// dcsSlice runs every node from t0 to t1 under 2DCS-TDM or 2DCS-PS. Nodes
// are unsynchronised: each decides alone. They are taken in index order, so
// a stage sees what its predecessor on a lower node did in the same slice;
// a BE process sees its siblings' progress as of the slice's start.
func (s *mixSim) dcsSlice(t0, t1 float64) {
	for _, j := range s.bes {
		j.min = slices.Min(j.cpu)
	}
	for _, n := range s.nodes {
		t := t0
		for t < t1-1e-12 {
			end := t1
			var owner mix.Class
			if s.o.Mode == mix.TDMMode {
				var divEnd, syncEnd float64
				owner, divEnd, syncEnd = s.tdm.At(t)
				end = min(end, divEnd)
				if t < syncEnd { // the global switch: nothing runs for δ
					t = min(end, syncEnd)
					continue
				}
			}
			s.runNode(n, owner, t, end)
			t = end
		}
	}
}

// runNode spends [t0, t1) of node n: the top-level scheduler chooses the
// class (TDM: the division's owner, lent when it has nothing ready; PS: the
// lower virtual time), the class's scheduler its first ready process, which
// runs until it blocks or the interval ends; a change of process costs ω. A
// few passes let a stage run again after a sibling on the node fed it.
func (s *mixSim) runNode(n *mixNode, owner mix.Class, t0, t1 float64) {
	t := t0
	for pass := 0; pass < 3 && t < t1-1e-9; pass++ {
		lists := &n.lists
		lists[0], lists[1] = lists[0][:0], lists[1][:0]
		for _, p := range n.procs {
			if s.ready(p, t) {
				c := mix.RT
				if p.be != nil {
					c = mix.BE
				}
				lists[c] = append(lists[c], p)
			}
		}
		if len(lists[0])+len(lists[1]) == 0 {
			return
		}
		for c := range lists {
			slices.SortStableFunc(lists[c], func(a, b mixProc) int {
				ka, kb := s.key(a), s.key(b)
				switch {
				case ka < kb:
					return -1
				case ka > kb:
					return 1
				}
				return 0
			})
		}
		var idx [2]int
		progressed := false
		for t < t1-1e-9 {
			for c := range lists {
				for idx[c] < len(lists[c]) && !s.ready(lists[c][idx[c]], t) {
					idx[c]++
				}
			}
			rtReady, beReady := idx[mix.RT] < len(lists[mix.RT]), idx[mix.BE] < len(lists[mix.BE])
			var c mix.Class
			var ok bool
			if s.o.Mode == mix.TDMMode {
				c, ok = mix.Lend(owner, rtReady, beReady)
			} else {
				c, ok = n.ps.Pick(rtReady, beReady)
			}
			if !ok {
				break
			}
			p := lists[c][idx[c]]
			if p != n.last {
				t += s.o.Switch
				n.last = p
				if t >= t1 {
					return
				}
			}
			used := s.run(p, t, t1-t)
			if s.o.Mode == mix.PSMode {
				n.ps.Charge(c, used+s.o.Switch)
			}
			t += used
			if used > 1e-12 {
				progressed = true
			}
			idx[c]++ // it blocked, or the interval is over
		}
		if !progressed {
			return
		}
	}
}

// gangQuantum runs quantum k of 1GS: after an arrival or departure the
// replicas are cleared, waiting jobs placed and the matrix optimised
// (§4.1); then row k mod M runs on every node for Q, after the switch δ.
// Receives spin: a slot whose process has nothing to do is lost.
func (s *mixSim) gangQuantum(k int) {
	if s.events {
		s.retry()
		s.matrix.ClearReplicas()
		s.matrix.Optimize(func(id int64) bool {
			j := s.rts[id]
			// short of throughput: its rows give less than the largest stage needs
			share := float64(s.matrix.Rows(id)) * s.o.Quantum / (float64(s.o.Rows) * (s.o.Quantum + s.o.Sync))
			return j != nil && share < slices.Max(j.est)/s.o.Frame
		})
		s.events = false
	}
	row := k % s.o.Rows
	t0 := s.now + s.o.Sync
	t1 := t0 + s.o.Quantum
	seen := map[int64]bool{}
	for col := range s.o.Procs {
		id, _ := s.matrix.Slot(row, col)
		if id == 0 || seen[id] {
			continue
		}
		seen[id] = true
		if j := s.rts[id]; j != nil && j.running {
			// the whole pipeline is coscheduled: stages in order, each up to Q
			for st := range j.done {
				s.run(mixProc{rt: j, stage: st}, t0, s.o.Quantum-s.o.Switch)
			}
		} else if j := s.bes[id]; j != nil && j.running {
			// coscheduled, but the quantum's I/O share leaves the slot idle
			for st := range j.cpu {
				j.cpu[st] = min(j.work, j.cpu[st]+(s.o.Quantum-s.o.Switch)*(1-s.o.BEIO))
			}
		}
	}
	_ = t1
}
