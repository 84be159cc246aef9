package batch

import (
	"math"

	"hora/scheduler"
)

// The pass on consumable resources: used whenever a job of the queue asked
// for resources (-n, -c, --mem, --gres, ...) or a node of the partition
// holds one, so that whole-node workloads keep the node-count pass above
// unchanged. The arithmetic (what fits where, the head's reservation) is
// scheduler/tres.go's; this is only EASY's order of decisions (Lifka 1995):
// start jobs in FCFS order while they fit; the first that does not is the
// head and gets a reservation at the earliest time it fits; a later job may
// start now if it fits in what is free and either ends by that time or
// uses only what the head leaves free then.

// shapeKey identifies requests that fit the same nodes, so that a pass
// tries each shape once after it failed (what is free only shrinks during
// a pass). Requests naming nodes, features or gres are not memoised.
type shapeKey struct {
	nodes, tasks, cpt, tpn, nmax, mincpus int
	mem, mpc                              int64
	memAll, excl, set, nomt, whole, extra bool
	share                                 int
}

func shapeOf(j *scheduler.Job, extra bool) (shapeKey, bool) {
	q := j.Req
	if q == nil {
		return shapeKey{nodes: j.Nodes, whole: true, extra: extra}, true
	}
	if len(q.Gres) > 0 || q.GPUsPerTask > 0 || len(q.NodeList) > 0 || len(q.Exclude) > 0 || len(q.Features) > 0 || q.MemPerGPU > 0 {
		return shapeKey{}, false
	}
	return shapeKey{nodes: j.Nodes, tasks: q.NTasks, cpt: q.CPUsPerTask, tpn: q.TasksPerNode, nmax: q.NodesMax,
		mincpus: q.MinCPUs, mem: q.MemPerNode, mpc: q.MemPerCPU, memAll: q.MemAll, excl: q.Exclusive,
		set: q.NodesSet, nomt: q.NoMultithread, extra: extra, share: q.Share}, true
}

// minCPUs is a lower bound of the CPUs j holds, to skip it at once when
// the partition has fewer free.
func minCPUs(j *scheduler.Job) int {
	if j.Req == nil {
		return j.Nodes
	}
	return max(j.Req.NTasks*j.Req.CPUsPerTask, 1)
}

// SharesNodes: the batch policy schedules resource requests.
func (b *Policy) SharesNodes() bool { return true }

func (b *Policy) useTres() bool { return b.nreq > 0 || b.p.SharedNodes() > 0 }

func (b *Policy) scanTres(now float64) {
	b.hasHead = false
	b.bk.reserved = false
	shared := b.p.Shared()
	if shared {
		b.loadBookings(now)
	}
	var extra *scheduler.TresExtra
	shadow := math.Inf(1)
	free, most := b.p.FreeCPUs()
	idle := b.p.FreeCount()
	b.byFree, b.freeOf = b.p.ByFree(b.byFree, b.freeOf)
	if b.failed == nil {
		b.failed = map[shapeKey]bool{}
	}
	clear(b.failed)
	w, i := 0, 0
	keep := func(j *scheduler.Job) {
		b.queue[w] = j
		w++
	}
	// A job that may share CPUs (OverSubscribe=YES/FORCE) can fit where
	// no CPU is free: its bounds count the CPUs it may share too (sfree,
	// smost), kept up to date node by node after every start.
	lim := b.p.OverSubscribe().Jobs
	sharing := lim > 1
	var sfree, smost int
	var before [][2]int
	if sharing {
		sfree, smost = b.p.ShareableCPUs(lim)
	}
	for ; i < len(b.queue); i++ {
		j := b.queue[i]
		if b.hasHead && (free == 0 && (!sharing || sfree == 0) || !b.easy) {
			break
		}
		if !b.eligible(j, now) {
			keep(j)
			continue
		}
		end := now + j.TimeLimit
		var ok func(int) bool
		if shared {
			ok = func(n int) bool { return b.bk.clear(n, now, end) }
		}
		var ex *scheduler.TresExtra
		if b.hasHead && end > shadow {
			ex = extra
		}
		var pl *scheduler.TresPlan
		key, memo := shapeOf(j, ex != nil)
		memo = memo && !shared
		// Cheap bounds first: CPUs left in the partition, CPUs free on the
		// best node (a task fits on one node), idle nodes for whole-node
		// jobs, shapes that already failed in this pass.
		shares := j.Req != nil && j.Req.Share > 1
		fits := (shares && minCPUs(j) <= sfree && scheduler.TaskCPUs(j) <= smost ||
			!shares && minCPUs(j) <= free && scheduler.TaskCPUs(j) <= most) &&
			!(j.Req == nil && j.Nodes > idle) && !(memo && b.failed[key])
		if fits {
			// Only the nodes that had a task's CPUs free at the start of
			// the pass can take one now.
			var among []int
			if !shares {
				among = b.byFree[:scheduler.Among(b.freeOf, scheduler.TaskCPUs(j))]
			}
			pl = b.p.PlaceNow(j, ex, ok, among)
		}
		if pl == nil {
			if memo {
				b.failed[key] = true
			}
			if !b.hasHead {
				b.hasHead, b.head = true, j.ID
				if b.easy {
					var x *scheduler.TresExtra
					shadow, x = b.p.Reserve(j, now, nil)
					if x != nil {
						extra = x
					}
					b.shadow = shadow
				}
			}
			keep(j)
			continue
		}
		if sharing {
			b.planned = pl.NodeIndices(b.planned)
			before = before[:0]
			for _, n := range b.planned {
				before = append(before, [2]int{b.p.NodeFree(n), b.p.NodeShareable(n, lim)})
			}
		}
		if err := b.p.StartPlan(j.ID, scheduler.BatchStep, pl, end, ex); err != nil {
			keep(j)
			continue
		}
		delete(b.byID, j.ID)
		if j.Req != nil {
			b.nreq--
		}
		if sharing {
			// What the start took, node by node: free CPUs, or shared
			// ones (which stay shareable below lim). The best-node
			// bounds stay upper bounds.
			for k, n := range b.planned {
				free += b.p.NodeFree(n) - before[k][0]
				sfree += b.p.NodeShareable(n, lim) - before[k][1]
			}
		} else {
			free -= pl.CPUs()
		}
		if j.Req == nil {
			idle -= pl.Nodes()
		}
	}
	if w < i {
		n := copy(b.queue[w:], b.queue[i:])
		clear(b.queue[w+n:])
		b.queue = b.queue[:w+n]
	}
}

// testTres is Test for a pass on resources: the earliest time j fits by
// the running steps' expected ends, ignoring the queue ahead.
func (b *Policy) testTres(now float64, j *scheduler.Job) (float64, []string) {
	t, x := b.p.Reserve(j, now, nil)
	if x == nil {
		return t, nil
	}
	return t, names(b.p, x.Nodes())
}
