// Package reserve books rigid jobs and advance reservations at submit time:
// a request (release r, work l, deadline d, nodes n) gets n nodes for an
// interval inside [r, d], chosen among the idle periods of the nodes by a
// strategy, or a refusal with the earliest feasible start.
//
// It implements the idle-period index of Castillo's thesis
// (papers/advance-reservations-thesis.txt): idle periods as points in the
// plane cut into strips (ch. 3), heterogeneous node rates with FF-HA+ (ch. 4)
// and co-allocation with range search (ch. 5). The package is pure: no
// goroutines, no clock, no I/O. Time is an integer tick (hora uses seconds).
// See README.md for the design and measured costs.
package reserve

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// Inf is "never" for a time and "unbounded" for a length.
const Inf int64 = math.MaxInt64

// Strategy chooses one feasible idle period (thesis §3.2.2).
type Strategy int

const (
	MinLIP   Strategy = iota // minimise the leading idle period (default)
	MinTIP                   // minimise the trailing idle period
	BestFit                  // minimise leading+trailing, i.e. the smallest period
	FirstFit                 // earliest-starting feasible idle period
	MaxLIP                   // maximise the leading idle period
	MaxTIP                   // maximise the trailing idle period
	LACT                     // latest available completion time (§3.1), the baseline
	FFHA                     // FF-HA+ (§4.4): first fit, slowest rate class first
)

var strategyNames = [...]string{"min-lip", "min-tip", "best-fit", "first-fit", "max-lip", "max-tip", "lact", "ff-ha+"}

func (s Strategy) String() string {
	if int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return fmt.Sprintf("Strategy(%d)", int(s))
}

// Strategies lists every strategy in a fixed order.
func Strategies() []Strategy {
	return []Strategy{MinLIP, MinTIP, BestFit, FirstFit, MaxLIP, MaxTIP, LACT, FFHA}
}

// ParseStrategy maps a name ("min-lip", ...) to a Strategy; "" is MinLIP.
func ParseStrategy(name string) (Strategy, error) {
	if name == "" {
		return MinLIP, nil
	}
	for i, n := range strategyNames {
		if n == name {
			return Strategy(i), nil
		}
	}
	return 0, fmt.Errorf("reserve: unknown strategy %q (want one of %v)", name, strategyNames)
}

// Config fixes the shape of an Index.
type Config struct {
	Rates    []float64 // one per node; 0 means 1 (thesis §4.1: service rate μ_i)
	LMin     int64     // l_min: minimum work of a request, in ticks (>0)
	M        int       // strips are M·2·l_min wide (thesis §3.2.1 footnote 2); 0 means 1
	Strategy Strategy
	Start    int64 // time origin: every node is idle from Start on
	DeltaT   int64 // co-allocation retry step Δt (§5.4); 0 means l_min
	MaxRet   int   // co-allocation retries maxRet (§5.4); 0 means 64
}

// Request asks for Nodes nodes for Work ticks of work (on a node of rate μ
// it lasts ⌈Work/μ⌉), starting no earlier than Release and ending no later
// than Deadline (Inf: none).
type Request struct {
	Release  int64
	Work     int64
	Deadline int64
	Nodes    int
}

// Booking is an accepted request: node Nodes[i] is booked for [Start, Ends[i]).
type Booking struct {
	ID    int64
	Start int64
	Nodes []int
	Ends  []int64
}

// End is the latest end over the booked nodes.
func (b Booking) End() int64 { return slices.Max(b.Ends) }

// Refusal explains why a request was not booked. Never: it cannot be booked
// whatever the time (too many nodes, bad values). Otherwise EarliestStart
// (and EarliestDeadline = EarliestStart + length) is a start that would be
// accepted without the deadline.
type Refusal struct {
	Never            bool
	Reason           string
	EarliestStart    int64
	EarliestDeadline int64
}

func (r *Refusal) Error() string {
	if r.Never {
		return "reserve: " + r.Reason
	}
	return fmt.Sprintf("reserve: %s (earliest start %d, earliest deadline %d)", r.Reason, r.EarliestStart, r.EarliestDeadline)
}

// ErrUnknownBooking is returned by Cancel and Finish for an unknown id.
var ErrUnknownBooking = errors.New("reserve: unknown booking")

// Stats counts work done by the index.
type Stats struct {
	Ops          int64 // tree node visits (searches and updates)
	Rotations    int64 // strips discarded
	O1Rotations  int64 // strips discarded without touching any entry
	MovedPeriods int64 // live periods moved out of a discarded strip
}

// class groups the nodes of one rate (thesis §4.1.1, (H,n)-heterogeneous).
type class struct {
	rate   float64
	minDur int64 // ⌈l_min/μ⌉: shorter periods are not indexed
	rank   int   // position in ascending rate order (FF-HA+ search order)
}

type slot struct {
	start, end int64
	id         int64
	gap        *period // indexed idle period ending at start, if any
}

type nodeState struct {
	cls   int
	floor int64 // end of the last pruned booking (or Start)
	slots []slot
	tail  *period // indexed trailing idle period [last end, Inf)
}

type strip struct {
	trees []*tree // per class, lazily created
}

// Index is the idle-period index with its bookings.
type Index struct {
	cfg     Config
	width   int64 // strip width W = M·2·l_min
	now     int64
	classes []class
	order   []int // class ids in ascending rate
	nodes   []nodeState
	ring    []*strip
	head    int       // ring slot of strip base
	base    int64     // absolute index of the first live strip
	tails   []*tree   // per class: node completion times (LACT, min-TIP)
	mir     *mirror   // vertical strips (min-TIP only)
	twoD    bool      // strip trees carry secondary trees (best-fit, max-TIP)
	lact    []*period // per node: its entry in tails
	books   map[int64]Booking
	nextID  int64
	stats   Stats
	muts    uint64 // bookings placed or given back (occupy, release)
}

// New builds an index where every node is idle from cfg.Start on.
func New(cfg Config) (*Index, error) {
	if len(cfg.Rates) == 0 {
		return nil, errors.New("reserve: no nodes")
	}
	if cfg.LMin <= 0 {
		return nil, errors.New("reserve: LMin must be positive")
	}
	if cfg.M <= 0 {
		cfg.M = 1
	}
	if cfg.DeltaT <= 0 {
		cfg.DeltaT = cfg.LMin
	}
	if cfg.MaxRet <= 0 {
		cfg.MaxRet = 64
	}
	if int(cfg.Strategy) < 0 || int(cfg.Strategy) >= len(strategyNames) {
		return nil, fmt.Errorf("reserve: bad strategy %d", cfg.Strategy)
	}
	ix := &Index{cfg: cfg, width: int64(cfg.M) * 2 * cfg.LMin, now: cfg.Start, books: map[int64]Booking{}, nextID: 1}
	ix.base = floorDiv(cfg.Start, ix.width)
	ix.ring = make([]*strip, 8)
	byRate := map[float64]int{}
	ix.nodes = make([]nodeState, len(cfg.Rates))
	for i, r := range cfg.Rates {
		if r == 0 {
			r = 1
		}
		if r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
			return nil, fmt.Errorf("reserve: node %d: bad rate %v", i, r)
		}
		c, ok := byRate[r]
		if !ok {
			c = len(ix.classes)
			byRate[r] = c
			ix.classes = append(ix.classes, class{rate: r})
		}
		ix.nodes[i] = nodeState{cls: c, floor: cfg.Start}
	}
	for c := range ix.classes {
		ix.classes[c].minDur = ix.dur(c, cfg.LMin)
		ix.order = append(ix.order, c)
	}
	sort.SliceStable(ix.order, func(a, b int) bool { return ix.classes[ix.order[a]].rate < ix.classes[ix.order[b]].rate })
	for rk, c := range ix.order {
		ix.classes[c].rank = rk
	}
	ix.setStrategy(cfg.Strategy)
	for i := range ix.nodes {
		ix.setTail(i, cfg.Start)
	}
	return ix, nil
}

// setStrategy switches the strategy of a live index (benchmarks warm up
// with one strategy and measure another).
func (ix *Index) setStrategy(st Strategy) {
	ix.cfg.Strategy = st
	if (st == LACT || st == MinTIP || st == BestFit || st == MaxTIP) && ix.tails == nil {
		ix.tails = make([]*tree, len(ix.classes))
		ix.lact = make([]*period, len(ix.nodes))
		for c := range ix.tails {
			ix.tails[c] = newTree(&ix.stats.Ops)
		}
		for i := range ix.nodes {
			ix.lactSet(i, ix.completion(i))
		}
	}
	if (st == BestFit || st == MaxTIP) && !ix.twoD {
		ix.twoD = true
		for k := ix.base; k < ix.topStrip(); k++ {
			if s := ix.stripAt(k); s != nil {
				for _, t := range s.trees {
					if t != nil {
						t.withSec()
					}
				}
			}
		}
	}
	if st == MinTIP && ix.mir == nil {
		ix.mir = &mirror{slots: make([]*strip, 8), base: floorDiv(ix.now, ix.width)}
		for k := ix.base; k < ix.topStrip(); k++ {
			if s := ix.stripAt(k); s != nil {
				for _, t := range s.trees {
					if t != nil {
						t.each(ix.mirAdd)
					}
				}
			}
		}
	}
}

// dur is the length of w units of work on a node of class c: ⌈w/μ⌉ (§4.3).
func (ix *Index) dur(c int, w int64) int64 {
	r := ix.classes[c].rate
	if r == 1 {
		return w
	}
	d := int64(math.Ceil(float64(w) / r))
	return max(d, 1)
}

// Now is the index's current time.
func (ix *Index) Now() int64 { return ix.now }

// Stats returns the counters.
func (ix *Index) Stats() Stats { return ix.stats }

// Strategy returns the configured strategy.
func (ix *Index) Strategy() Strategy { return ix.cfg.Strategy }

// NumNodes is the number of nodes.
func (ix *Index) NumNodes() int { return len(ix.nodes) }

// Len counts indexed idle periods (all strips, all classes).
func (ix *Index) Len() int {
	n := 0
	for k := ix.base; k < ix.base+int64(len(ix.ring)); k++ {
		if s := ix.stripAt(k); s != nil {
			for _, t := range s.trees {
				n += t.len()
			}
		}
	}
	return n
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func (ix *Index) stripOf(t int64) int64 { return floorDiv(t, ix.width) }

// clipFloor is where idle periods of discarded strips are clipped to.
func (ix *Index) clipFloor() int64 { return ix.base * ix.width }

// stripAt returns strip k if it is allocated.
func (ix *Index) stripAt(k int64) *strip {
	off := k - ix.base
	if off < 0 || off >= int64(len(ix.ring)) {
		return nil
	}
	return ix.ring[(ix.head+int(off))%len(ix.ring)]
}

// topStrip is one past the last strip that the ring can currently hold.
func (ix *Index) topStrip() int64 { return ix.base + int64(len(ix.ring)) }

func (ix *Index) stripFor(k int64) *strip {
	off := k - ix.base
	for off >= int64(len(ix.ring)) {
		nr := make([]*strip, 2*len(ix.ring))
		for i := range ix.ring {
			nr[i] = ix.ring[(ix.head+i)%len(ix.ring)]
		}
		ix.ring, ix.head = nr, 0
	}
	i := (ix.head + int(off)) % len(ix.ring)
	if ix.ring[i] == nil {
		ix.ring[i] = &strip{trees: make([]*tree, len(ix.classes))}
	}
	return ix.ring[i]
}

// addGap indexes the idle period [st, end) of node i when it is long enough
// for l_min (§3.2.1: shorter periods are dropped). st is clipped to the
// first live strip. It returns the period or nil.
func (ix *Index) addGap(i int, st, end int64) *period {
	st = max(st, ix.clipFloor())
	c := ix.nodes[i].cls
	if span(st, end) < ix.classes[c].minDur || end <= ix.now {
		return nil
	}
	p := &period{node: int32(i), st: st, end: end}
	ix.stripTree(st, c).insert(p)
	ix.mirAdd(p)
	return p
}

// stripTree is the tree of class c in the strip holding st, created on
// first use (with its secondary trees when the strategy searches them).
func (ix *Index) stripTree(st int64, c int) *tree {
	s := ix.stripFor(ix.stripOf(st))
	t := s.trees[c]
	if t == nil {
		t = newTree(&ix.stats.Ops)
		if ix.twoD {
			t.withSec()
		}
		s.trees[c] = t
	}
	return t
}

func (ix *Index) dropGap(p *period) {
	if p == nil {
		return
	}
	ix.mirDrop(p)
	if p.t == nil || p.t.dead {
		return
	}
	p.t.remove(p)
}

func (ix *Index) setTail(i int, st int64) {
	ns := &ix.nodes[i]
	ix.dropGap(ns.tail)
	ns.tail = ix.addGap(i, st, Inf)
	if ix.tails != nil {
		ix.lactSet(i, st)
	}
}

// lactSet keeps the per-class tree of node completion times used by LACT.
func (ix *Index) lactSet(i int, st int64) {
	ns := &ix.nodes[i]
	tt := ix.tails[ns.cls]
	if old := ix.lact[i]; old != nil {
		tt.remove(old)
	}
	p := &period{node: int32(i), st: st, end: Inf}
	tt.insert(p)
	ix.lact[i] = p
}
