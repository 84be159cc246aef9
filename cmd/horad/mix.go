package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"hora/config"
	"hora/nodes"
	"hora/nodes/cgmix"
	"hora/scheduler/mix"
)

// mixEnforcer carries out [mix] on the local nodes (DESIGN.md §1): jobs of
// the RT partitions (dlt, reserve) and of the others go into two cgroups;
// ps sets their CPU weights to the ratio, tdm stops and continues them every
// division. Nil when the config has no [mix] table.
type mixEnforcer struct {
	g    *cgmix.Groups
	mode mix.Mode
	tdm  *cgmix.TDM
	log  *slog.Logger
}

// newMixEnforcer checks that [mix] can be enforced here and sets the weights.
func newMixEnforcer(cfg *config.Config, log *slog.Logger) (*mixEnforcer, error) {
	if !cfg.MixEnforced() {
		return nil, nil
	}
	r, _ := mix.ParseRatio(cfg.Mix.Ratio) // validated by config
	mode, _ := mix.ParseMode(cfg.Mix.Mode)
	if cfg.Executor != "local" {
		return nil, fmt.Errorf("[mix]: enforcement on %s nodes is not implemented yet (local nodes only); remove [mix] or use executor = \"local\"", cfg.Executor)
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
	m := &mixEnforcer{g: g, mode: mode, log: log}
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
	return func(s nodes.LaunchSpec, pid int) error {
		part := ""
		for _, kv := range s.Env {
			if v, ok := strings.CutPrefix(kv, "SLURM_JOB_PARTITION="); ok {
				part = v
			}
		}
		return m.g.Add(cfg.ClassOf(part), pid)
	}
}

// run drives tdm until ctx ends, then continues both classes: nothing may
// stay stopped while horad is down (its jobs keep running).
func (m *mixEnforcer) run(ctx context.Context) {
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
