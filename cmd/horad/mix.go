package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"hora/config"
	"hora/nodes"
	"hora/nodes/cgmix"
	hssh "hora/nodes/ssh"
	"hora/scheduler/mix"
)

// mixEnforcer carries out [mix] on the local nodes (DESIGN.md §1): jobs of
// the RT partitions (dlt, reserve) and of the others go into two cgroups;
// ps sets their CPU weights to the ratio, tdm stops and continues them every
// division. Nil when the config has no [mix] table.
type mixEnforcer struct {
	g     *cgmix.Groups // local nodes; nil on SSH nodes
	ratio mix.Ratio
	// On SSH nodes: the executor and nodes tdm drives (plan non-nil in tdm).
	ssh   *hssh.Executor
	nodes []string
	plan  *mix.TDM
	mode  mix.Mode
	tdm   *cgmix.TDM
	log   *slog.Logger
}

// newMixEnforcer checks that [mix] can be enforced here and sets the weights.
func newMixEnforcer(cfg *config.Config, log *slog.Logger) (*mixEnforcer, error) {
	if !cfg.MixEnforced() {
		return nil, nil
	}
	r, _ := mix.ParseRatio(cfg.Mix.Ratio) // validated by config
	mode, _ := mix.ParseMode(cfg.Mix.Mode)
	switch {
	case cfg.Executor == "ssh" && mode == mix.GangMode:
		return nil, fmt.Errorf("[mix] mode = \"gang\": enforcement on nodes is not implemented yet (replay only); use ps or tdm")
	case cfg.Executor == "ssh" && cfg.SSH.Launcher == "setsid":
		return nil, fmt.Errorf("[mix] on ssh nodes needs systemd on the nodes (systemd slices); [ssh] launcher = \"setsid\" cannot enforce it")
	case cfg.Executor == "ssh":
		m := &mixEnforcer{ratio: r, mode: mode, log: log, nodes: cfg.NodeNames()}
		if mode == mix.TDMMode {
			plan, err := mix.NewTDM(r, cfg.Mix.Period, 0)
			if err != nil {
				return nil, fmt.Errorf("[mix]: %w", err)
			}
			m.plan = &plan
		}
		log.Info("mix enforced", "ratio", r.String(), "mode", string(mode), "nodes", "ssh (systemd slices)")
		return m, nil
	case cfg.Executor != "local":
		return nil, fmt.Errorf("[mix]: enforcement on %s nodes is not implemented (local and ssh nodes only); remove [mix]", cfg.Executor)
	}
	if mode == mix.GangMode {
		return nil, fmt.Errorf("[mix] mode = \"gang\": enforcement on nodes is not implemented yet (replay only); use ps or tdm")
	}
	g, err := cgmix.Open(cgmix.DefaultRoot, "hora-"+strings.NewReplacer("/", "_", ".", "_").Replace(cfg.ClusterName))
	if err != nil {
		return nil, fmt.Errorf("[mix]: %w", err)
	}
	if err := g.SetRatio(r); err != nil {
		return nil, fmt.Errorf("[mix]: %w", err)
	}
	m := &mixEnforcer{g: g, ratio: r, mode: mode, log: log}
	if mode == mix.TDMMode {
		plan, err := mix.NewTDM(r, cfg.Mix.Period, 0)
		if err != nil {
			return nil, fmt.Errorf("[mix]: %w", err)
		}
		m.tdm = &cgmix.TDM{G: g, Plan: plan}
	}
	log.Info("mix enforced", "ratio", r.String(), "mode", string(mode))
	return m, nil
}

// place is local.Config.Place: the shepherd, and so the job, joins its
// partition's class group.
func (m *mixEnforcer) place(cfg *config.Config) func(nodes.LaunchSpec, int) error {
	return func(s nodes.LaunchSpec, pid int) error { return m.g.Add(classOf(cfg, s), pid) }
}

// sshMix is the SSH executor's [mix]: ps through the nodes' systemd slices.
func (m *mixEnforcer) sshMix(cfg *config.Config) *hssh.Mix {
	m.nodes = cfg.NodeNames()
	rt, be := m.ratio.SystemdWeights()
	return &hssh.Mix{RTWeight: rt, BEWeight: be, RT: func(s nodes.LaunchSpec) bool { return classOf(cfg, s) == mix.RT }}
}

// classOf is a step's class: its partition's (config.ClassOf), except that
// periodic jobs (HORA_RT_FRAME) are RT in any partition.
func classOf(cfg *config.Config, s nodes.LaunchSpec) mix.Class {
	part := ""
	for _, kv := range s.Env {
		if strings.HasPrefix(kv, "HORA_RT_FRAME=") {
			return mix.RT
		}
		if v, ok := strings.CutPrefix(kv, "SLURM_JOB_PARTITION="); ok {
			part = v
		}
	}
	return cfg.ClassOf(part)
}

// run drives tdm until ctx ends, then continues both classes: nothing may
// stay stopped while horad is down (its jobs keep running).
func (m *mixEnforcer) run(ctx context.Context) {
	if m.g == nil {
		m.runSSH(ctx)
		return
	}
	defer func() {
		for _, c := range []mix.Class{mix.RT, mix.BE} {
			if err := m.g.Freeze(c, false); err != nil {
				m.log.Error("mix: thaw", "class", c.String(), "err", err)
			}
		}
	}()
	if m.tdm == nil {
		<-ctx.Done()
		return
	}
	for {
		now := float64(time.Now().UnixNano()) / 1e9
		_, _, next, err := m.tdm.Step(now)
		if err != nil {
			m.log.Error("mix: tdm step", "err", err)
			next = now + 1
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration((next - now) * float64(time.Second))):
		}
	}
}

// runSSH drives tdm on SSH nodes: at every division boundary each node
// applies the division (TDMDivision, in parallel, bounded by the division);
// on exit every node thaws both classes. ps needs no driving.
func (m *mixEnforcer) runSSH(ctx context.Context) {
	if m.plan == nil || m.ssh == nil {
		<-ctx.Done()
		return
	}
	defer func() {
		tctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		m.eachNode(tctx, "none")
	}()
	for {
		now := float64(time.Now().UnixNano()) / 1e9
		owner, next, _ := m.plan.At(now)
		dctx, cancel := context.WithTimeout(ctx, time.Duration(max(next-now, 1)*float64(time.Second)))
		m.eachNode(dctx, owner.String())
		cancel()
		now = float64(time.Now().UnixNano()) / 1e9
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(max(next-now, 0) * float64(time.Second))):
		}
	}
}

// release runs once horad has stopped scheduling: on local nodes the class
// groups of a class with no process left are removed, so a stopped horad
// leaves no hora-<cluster> groups behind; a class whose jobs keep running
// keeps its groups, thawed, for the next horad to open again.
func (m *mixEnforcer) release() {
	if m.g == nil {
		return
	}
	kept, err := m.g.Release()
	if err != nil {
		m.log.Warn("mix: removing the class groups", "err", err)
	}
	for _, c := range kept {
		m.log.Info("mix: class group kept for its running jobs", "class", c.String())
	}
}

// eachNode applies the division owned by owner on every node at once.
func (m *mixEnforcer) eachNode(ctx context.Context, owner string) {
	var wg sync.WaitGroup
	for _, n := range m.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.ssh.TDMDivision(ctx, n, owner); err != nil {
				m.log.Debug("mix: tdm division", "node", n, "owner", owner, "err", err)
			}
		}()
	}
	wg.Wait()
}
