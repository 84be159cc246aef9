// Package schedtest stands in for a driver of scheduler.Engine in tests and
// benchmarks: builders for jobs and clusters, and a Harness that feeds
// events in virtual time, applies the actions, records them and checks that
// no node is given to two running steps.
//
// It blank-imports the batch policy so that harness users get it registered.
package schedtest

import (
	"fmt"

	"hora/scheduler"
	_ "hora/scheduler/batch"
)

// JobBuilder builds a scheduler.Job; unset fields keep Slurm's defaults
// (one node, the partition's DefaultTime, default partition).
type JobBuilder struct {
	j   scheduler.Job
	run float64 // actual run time in the Harness; <0: runs until finished by hand
}

// Job starts a builder for job id.
func Job(id scheduler.JobID) *JobBuilder {
	return &JobBuilder{j: scheduler.Job{ID: id, Nodes: 1}, run: -1}
}

func (b *JobBuilder) Nodes(n int) *JobBuilder           { b.j.Nodes = n; return b }
func (b *JobBuilder) Limit(s float64) *JobBuilder       { b.j.TimeLimit = s; return b }
func (b *JobBuilder) Submit(t float64) *JobBuilder      { b.j.Submit = t; return b }
func (b *JobBuilder) Begin(t float64) *JobBuilder       { b.j.Begin = t; return b }
func (b *JobBuilder) Deadline(t float64) *JobBuilder    { b.j.Deadline = t; return b }
func (b *JobBuilder) Load(sigma float64) *JobBuilder    { b.j.Load = sigma; return b }
func (b *JobBuilder) Held() *JobBuilder                 { b.j.Held = true; return b }
func (b *JobBuilder) Partition(name string) *JobBuilder { b.j.Partition = name; return b }
func (b *JobBuilder) User(uid uint32) *JobBuilder       { b.j.User = uid; return b }

// Run sets the job's actual run time for the Harness (the time between its
// Start and the Finished the Harness sends); without it the job runs until
// Harness.Finish.
func (b *JobBuilder) Run(s float64) *JobBuilder { b.run = s; return b }

// Req sets a consumable-resource request (CPUsPerTask and NTasks at
// least 1).
func (b *JobBuilder) Req(q scheduler.Request) *JobBuilder {
	q.NTasks, q.CPUsPerTask = max(q.NTasks, 1), max(q.CPUsPerTask, 1)
	b.j.Req = &q
	return b
}

// Build returns the job.
func (b *JobBuilder) Build() scheduler.Job { return b.j }

// ClusterBuilder builds a scheduler.Config of nodes n0, n1, … Partition
// options apply to the last partition added.
type ClusterBuilder struct{ cfg scheduler.Config }

// Cluster starts a config with n nodes of one CPU named n0 … n(n−1).
func Cluster(n int) *ClusterBuilder {
	c := &ClusterBuilder{}
	for i := range n {
		c.cfg.Nodes = append(c.cfg.Nodes, scheduler.NodeSpec{Name: NodeName(i), CPUs: 1})
	}
	return c
}

// NodeName is the name Cluster gives node i.
func NodeName(i int) string { return fmt.Sprintf("n%d", i) }

// Partition adds a partition of every node, with the given policy.
func (c *ClusterBuilder) Partition(name, policy string) *ClusterBuilder {
	ps := scheduler.PartitionSpec{Name: name, Policy: policy, MaxTime: scheduler.Inf, DefaultTime: scheduler.Inf}
	for _, n := range c.cfg.Nodes {
		ps.Nodes = append(ps.Nodes, n.Name)
	}
	c.cfg.Partitions = append(c.cfg.Partitions, ps)
	return c
}

func (c *ClusterBuilder) last() *scheduler.PartitionSpec {
	return &c.cfg.Partitions[len(c.cfg.Partitions)-1]
}

// NodeRange restricts the last partition to nodes lo … hi−1.
func (c *ClusterBuilder) NodeRange(lo, hi int) *ClusterBuilder {
	c.last().Nodes = nil
	for i := lo; i < hi; i++ {
		c.last().Nodes = append(c.last().Nodes, NodeName(i))
	}
	return c
}

func (c *ClusterBuilder) Backfill(s string) *ClusterBuilder { c.last().Backfill = s; return c }
func (c *ClusterBuilder) MaxTime(s float64) *ClusterBuilder { c.last().MaxTime = s; return c }
func (c *ClusterBuilder) MaxNodes(n int) *ClusterBuilder    { c.last().MaxNodes = n; return c }
func (c *ClusterBuilder) Default() *ClusterBuilder          { c.last().Default = true; return c }

// DefaultTime sets the limit of jobs that give none.
func (c *ClusterBuilder) DefaultTime(s float64) *ClusterBuilder {
	c.last().DefaultTime = s
	return c
}

// Param sets a policy-specific parameter.
func (c *ClusterBuilder) Param(k, v string) *ClusterBuilder {
	if c.last().Params == nil {
		c.last().Params = map[string]string{}
	}
	c.last().Params[k] = v
	return c
}

// Resources gives every node cpus CPUs, memMB MiB and the gres.
func (c *ClusterBuilder) Resources(cpus int, memMB int64, gres ...scheduler.GresDef) *ClusterBuilder {
	for i := range c.cfg.Nodes {
		c.cfg.Nodes[i].CPUs, c.cfg.Nodes[i].MemMB = cpus, memMB
		c.cfg.Nodes[i].Gres = gres
	}
	return c
}

// Config returns the configuration.
func (c *ClusterBuilder) Config() scheduler.Config { return c.cfg }
