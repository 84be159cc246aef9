package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"hora/api"
	"hora/config"
	"hora/scheduler"
)

// Reload applies a new configuration (horad's SIGHUP, `systemctl reload
// horad`) without dropping a job: the Engine is rebuilt from the new
// partitions and nodes and every active job is restored into it, exactly as
// recovery does after a restart, but in process and under c.mu, so no event
// is lost and no running job is touched. Operators and limits (kill_wait_s,
// min_job_age_s, return_to_service, job_requeue, reservation_access) are
// swapped in as well.
//
// The new configuration is refused as a whole, with the running one kept,
// when it would orphan work: a running job on a node the file removes, an
// active job or a reservation in a partition it removes. state_dir, socket
// and executor only change at the next start; with the ssh executor the
// node list does too (its connections are set up at start).
func (c *Controller) Reload(ctx context.Context, nc *config.Config) error {
	forgetNames() // a renamed user or group shows its new name from now on
	operators := map[uint32]bool{0: true}
	for _, op := range nc.Operators {
		uid, ok := lookupUID(op)
		if !ok {
			return fmt.Errorf("%s: operators: unknown user %q", nc.Path(), op)
		}
		operators[uid] = true
	}
	eng, err := newEngine(nc)
	if err != nil {
		return fmt.Errorf("%s: %w", nc.Path(), err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.cfg
	if nc.StateDir != old.StateDir || nc.Socket != old.Socket || nc.Executor != old.Executor {
		c.log.Warn("state_dir, socket and executor change only at the next start; keeping the running ones",
			"state_dir", old.StateDir, "socket", old.Socket, "executor", old.Executor)
		cp := *nc
		cp.StateDir, cp.Socket, cp.Executor = old.StateDir, old.Socket, old.Executor
		nc = &cp
	}
	newNodes := nc.ExpandedNodes()
	names := func(ns []config.Node) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = n.Name
		}
		return out
	}
	if old.Executor == "ssh" && !slices.Equal(names(c.nodes), names(newNodes)) {
		return fmt.Errorf("%s: the ssh executor's nodes change only at the next start "+
			"(systemctl restart horad; running jobs keep running)", nc.Path())
	}
	parts := map[string]bool{}
	for _, p := range nc.Partitions {
		parts[p.Name] = true
	}
	nodeOK := map[string]bool{}
	for _, n := range newNodes {
		nodeOK[n.Name] = true
	}
	var refuse []string
	for _, j := range c.order {
		if j.State.Finished() {
			continue
		}
		if !parts[j.Spec.Partition] && j.Spec.Partition != "" {
			refuse = append(refuse, fmt.Sprintf("job %d is in partition %s, which the file removes", j.ID, j.Spec.Partition))
		}
		for _, n := range j.Nodes {
			if !nodeOK[n] {
				refuse = append(refuse, fmt.Sprintf("job %d runs on node %s, which the file removes", j.ID, n))
			}
		}
		for _, n := range j.chunks {
			if !nodeOK[n] {
				refuse = append(refuse, fmt.Sprintf("job %d runs a chunk on node %s, which the file removes", j.ID, n))
			}
		}
	}
	for name, r := range c.resvs {
		if !parts[r.Partition] {
			refuse = append(refuse, fmt.Sprintf("reservation %s is in partition %s, which the file removes", name, r.Partition))
		}
	}
	if len(refuse) > 0 {
		return fmt.Errorf("%s: %s", nc.Path(), strings.Join(refuse, "; "))
	}

	prevEng, prevCfg, prevNodes := c.eng, c.cfg, c.nodes
	c.eng, c.cfg, c.nodes = eng, nc, newNodes
	if err := c.restoreEngineLocked(ctx); err != nil {
		c.eng, c.cfg, c.nodes = prevEng, prevCfg, prevNodes
		return fmt.Errorf("%s: %w", nc.Path(), err)
	}
	c.operators = operators
	c.setLimits(nc.Limits)
	for _, p := range nc.Partitions {
		if p.Policy == "dlt" && c.stageQ[p.Name] == nil {
			q := newWorkQueue()
			c.stageQ[p.Name] = q
			c.startStageQueue(q)
		}
	}
	c.lastReload = c.now()
	c.log.Info("configuration reloaded", "config", nc.Path(), "nodes", len(newNodes), "partitions", len(nc.Partitions))
	// The first pass on the new configuration may start pending jobs.
	c.applyLocked(ctx, c.eng.Handle(scheduler.Tick{Now: c.nowSec()}))
	return nil
}

// restoreEngineLocked hands every active job, node state and reservation to
// a fresh Engine (c.eng), as recover does from the store. Caller holds c.mu.
func (c *Controller) restoreEngineLocked(ctx context.Context) error {
	now := c.nowSec()
	for name, a := range c.admin {
		if !c.knownNode(name) {
			continue
		}
		if !a.inService() {
			c.eng.Handle(scheduler.NodeDown{Now: now, Node: name})
		}
	}
	for name, r := range c.resvs {
		pol, err := c.reservePolicy(r.Partition)
		if err != nil {
			return fmt.Errorf("reservation %s: %w", name, err)
		}
		rv, err := c.toResv(r, len(r.Nodes))
		if err != nil {
			return fmt.Errorf("reservation %s: %w", name, err)
		}
		got, err := pol.CreateResv(now, rv)
		if err != nil {
			return fmt.Errorf("reservation %s no longer fits: %w", name, err)
		}
		c.fromResv(r, got)
	}
	// As recovery: first what the Engine must know of the jobs that ended
	// (a dependency on one is decided by its outcome; a target the Engine
	// does not know counts as satisfied), then the running jobs, then the
	// pending ones, each after those it depends on; what the Engine answers
	// a restore is carried out at the end.
	for _, j := range c.order {
		if j.State.Finished() {
			c.eng.Handle(endedEvent(now, j))
		}
	}
	var suspended []int64
	var pending []*job
	var acts []scheduler.Action
	for _, j := range c.order {
		switch {
		case j.State.Finished():
			continue
		case (j.State == api.StateRunning || j.State == api.StateSuspended) && j.Spec.Load > 0 && c.isDLT(j.Spec.Partition):
			var running []scheduler.RestoredChunk
			done, next := 0.0, 0
			for _, st := range j.Steps {
				next = max(next, st.Index+1)
				done = max(done, st.Offset+st.Size)
				if st.State == api.StateRunning {
					running = append(running, scheduler.RestoredChunk{Step: st.Index, Node: st.Node,
						Offset: st.Offset, Size: st.Size, Start: float64(st.StartTime)})
				}
			}
			acts = append(acts, c.eng.Handle(scheduler.Restore{Now: now, Job: c.schedJob(j), Running: true, Started: float64(j.StartTime),
				Chunks: running, Done: done, NextStep: next})...)
		case j.State == api.StateRunning || j.State == api.StateSuspended:
			started := float64(j.StartTime + j.SuspendedSecs)
			if j.State == api.StateSuspended {
				started += max(0, now-float64(j.SuspendTime))
				suspended = append(suspended, j.ID)
			}
			// With the CPUs, memory and GPUs the run holds, as recovery
			// restores it: without them the Engine took the first such job
			// of a node for a whole-node one and gave the others nothing,
			// so that when the first ended their CPUs went to new jobs
			// (TestReloadKeepsRunningAllocations).
			acts = append(acts, c.eng.Handle(scheduler.Restore{Now: now, Job: c.schedJob(j), Running: true, Nodes: j.Nodes,
				Started: started, Alloc: schedAlloc(j.Alloc)})...)
		default:
			pending = append(pending, j)
		}
	}
	for _, j := range pendingRestoreOrder(pending) {
		acts = append(acts, c.eng.Handle(scheduler.Restore{Now: now, Job: c.schedJob(j)})...)
	}
	c.applyLocked(ctx, acts)
	for _, id := range suspended {
		c.applyLocked(ctx, c.eng.Handle(scheduler.Suspend{Now: now, ID: scheduler.JobID(id)}))
	}
	return nil
}

// Stats is what horad reports to systemd (STATUS=) and `hora stats` shows.
type Stats struct {
	Pending, Running, Suspended int
	Nodes, NodesDown            int
	LastPass                    time.Time     // end of the last scheduling pass
	LastPassTook                time.Duration // its duration
	LastReload                  time.Time     // zero: never reloaded
}

// Stats counts the active jobs and nodes.
func (c *Controller) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Stats{Nodes: len(c.nodes), LastPass: c.lastPass, LastPassTook: c.lastPassTook, LastReload: c.lastReload}
	for _, j := range c.order {
		switch j.State {
		case api.StatePending:
			s.Pending++
		case api.StateRunning:
			s.Running++
		case api.StateSuspended:
			s.Suspended++
		}
	}
	for name, a := range c.admin {
		if c.knownNode(name) && !a.inService() {
			s.NodesDown++
		}
	}
	return s
}

// String is the systemd STATUS= line.
func (s Stats) String() string {
	pass := "no scheduling pass yet"
	if !s.LastPass.IsZero() {
		pass = fmt.Sprintf("last pass %s (%s)", s.LastPass.Format("15:04:05"), s.LastPassTook.Round(time.Microsecond))
	}
	return fmt.Sprintf("%d pending, %d running, %d suspended; %d nodes, %d down; %s",
		s.Pending, s.Running, s.Suspended, s.Nodes, s.NodesDown, pass)
}
