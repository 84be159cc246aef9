package scheduler

import (
	"slices"
)

// Window is a booked interval [Start, End) of a node.
type Window struct{ Start, End float64 }

// Booker is implemented by a policy that books its nodes ahead of time (the
// reserve policy: advance reservations and rigid jobs booked at submit). A
// node may belong to several partitions; through Partition.Booked the Engine
// shows these future bookings to the other policies of the node, so that a
// best-effort job never runs into a window promised elsewhere.
type Booker interface {
	// Booked appends to dst the windows booked on node i (an index in the
	// booker's own partition) that end after now, sorted by Start and not
	// overlapping. It must be pure: the same state gives the same answer.
	Booked(i int, now float64, dst []Window) []Window
}

// linkBookers records, for every node of every partition, the other
// partitions of the node whose policy is a Booker. Partitions that share no
// node with a booker keep a nil table, so their policies pay nothing.
func (e *Engine) linkBookers() {
	for _, p := range e.parts {
		var tab [][]nodeRef
		for i, g := range p.nodes {
			for _, ref := range e.nodes[g].parts {
				if ref.p == p {
					continue
				}
				if _, ok := ref.p.policy.(Booker); !ok {
					continue
				}
				if tab == nil {
					tab = make([][]nodeRef, len(p.nodes))
				}
				tab[i] = append(tab[i], ref)
			}
		}
		p.bookers = tab
		p.bookerParts = nil
		for _, refs := range tab {
			for _, ref := range refs {
				if !slices.Contains(p.bookerParts, ref.p) {
					p.bookerParts = append(p.bookerParts, ref.p)
				}
			}
		}
	}
}

// BookVersioner is a Booker that counts the changes of its bookings, so
// that a reader of Booked may skip the reading while nothing changed (the
// reserve policy mirrors the bookings of other reserve partitions of its
// nodes before each decision).
type BookVersioner interface {
	// BookVersion grows whenever an answer of Booked may have changed
	// other than by the passing of time.
	BookVersion() uint64
}

// BookedVersion sums the BookVersion of the other partitions that book
// this partition's nodes: it changes whenever one of their Booked answers
// may have. A Booker without a version makes it change at every call.
func (p *Partition) BookedVersion() uint64 {
	var v uint64
	for _, q := range p.bookerParts {
		if bv, ok := q.policy.(BookVersioner); ok {
			v += bv.BookVersion()
		} else {
			p.eng.bookTick++
			v += p.eng.bookTick
		}
	}
	return v
}

// Shared reports whether some node of the partition also belongs to a
// partition whose policy books ahead; when false, Booked never returns
// anything and a policy may skip the question altogether.
func (p *Partition) Shared() bool { return p.bookers != nil }

// Booked appends to dst the windows that the policies of the other
// partitions of node i have booked on it and that end after now, sorted by
// Start (windows of different partitions may overlap).
func (p *Partition) Booked(i int, now float64, dst []Window) []Window {
	if p.bookers == nil {
		return dst
	}
	n := len(dst)
	refs := p.bookers[i]
	for _, ref := range refs {
		dst = ref.p.policy.(Booker).Booked(ref.i, now, dst)
	}
	if len(refs) > 1 {
		slices.SortFunc(dst[n:], func(a, b Window) int {
			switch {
			case a.Start < b.Start:
				return -1
			case a.Start > b.Start:
				return 1
			}
			return 0
		})
	}
	return dst
}

// Foreign reports whether node i is allocated to a job of another partition
// (a node shared by several partitions runs one job at a time).
func (p *Partition) Foreign(i int) bool {
	n := &p.eng.nodes[p.nodes[i]]
	if !n.busy {
		return false
	}
	r := p.eng.jobs[n.job]
	return r == nil || r.part != p
}

// Generation changes whenever the busy list does (a step starts or ends on
// an up node, its expected end moves, a busy node goes down or comes back),
// so that a policy may skip work that depends on Busy alone.
func (p *Partition) Generation() uint64 { return p.gen }

// Until is the expected end of the step node i runs, whether the node is
// up or not (a drained node lets its job finish); ok is false when idle.
func (p *Partition) Until(i int) (until float64, ok bool) {
	n := &p.eng.nodes[p.nodes[i]]
	return n.expect, n.busy
}

// Holder is the job that node i is allocated to, if any.
func (p *Partition) Holder(i int) (JobID, bool) {
	n := &p.eng.nodes[p.nodes[i]]
	return n.job, n.busy
}

// Suspend tells the Engine that a running job was stopped (scontrol
// suspend): it keeps its nodes, and the time it spends stopped does not
// count toward its limit, so its expected end moves with the clock.
type Suspend struct {
	Now float64
	ID  JobID
}

// Resume tells the Engine that a suspended job runs again: its expected end
// is fixed at the resume time plus what was left of its limit.
type Resume struct {
	Now float64
	ID  JobID
}

func (e Suspend) When() float64 { return e.Now }
func (e Resume) When() float64  { return e.Now }

// suspend marks a running job suspended (stop) or running again (!stop).
// While it is suspended each step keeps its remaining time, and its expected
// end is now + remaining at every event (moveSuspended): the best estimate
// without knowing when it will be resumed, and never earlier than the truth.
func (e *Engine) suspend(now float64, id JobID, stop bool) {
	r := e.jobs[id]
	if r == nil || !r.started || r.suspended == stop {
		return
	}
	r.suspended = stop
	if stop {
		for k := range r.steps {
			r.steps[k].remain = max(0, r.steps[k].expect-now)
		}
		e.susp = append(e.susp, id)
		return
	}
	if k := slices.Index(e.susp, id); k >= 0 {
		e.susp = slices.Delete(e.susp, k, k+1)
	}
	for k := range r.steps {
		e.setExpect(r, k, now+r.steps[k].remain)
	}
}

// moveSuspended pushes the expected end of every suspended job's steps to
// now + their remaining time.
func (e *Engine) moveSuspended(now float64) {
	for k := 0; k < len(e.susp); {
		r := e.jobs[e.susp[k]]
		if r == nil {
			e.susp = slices.Delete(e.susp, k, k+1)
			continue
		}
		for s := range r.steps {
			e.setExpect(r, s, now+r.steps[s].remain)
		}
		k++
	}
}

// setExpect moves the expected end of step k of r, keeping every
// partition's busy list sorted.
func (e *Engine) setExpect(r *jobRec, k int, expect float64) {
	s := &r.steps[k]
	if s.expect == expect {
		return
	}
	s.expect = expect
	if s.shared {
		for _, g := range s.nodes {
			e.moveShare(g, r.job.ID, s.step, expect)
		}
		return
	}
	for _, g := range s.nodes {
		if n := &e.nodes[g]; n.busy && n.job == r.job.ID && n.step == s.step {
			e.moveNodeExpect(g, expect)
		}
	}
}
