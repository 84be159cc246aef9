package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"hora/config"
	"hora/nodes"
	"hora/nodes/cgmix"
	hssh "hora/nodes/ssh"
	"hora/scheduler/mix"
)

// mixEnforcer carries out [mix] on the nodes (DESIGN.md §1): jobs of the RT
// partitions (dlt, reserve) and of the others go into two cgroups (local
// nodes) or systemd slices (SSH nodes); ps sets their CPU weights to the
// ratio, tdm stops and continues them every division. Nil when the config
// has no [mix] table. A reload (SIGHUP) changes the ratio and the mode under
// running jobs: the weights are rewritten, and the driver picks the new mode
// up at once.
type mixEnforcer struct {
	log *slog.Logger
	g   *cgmix.Groups // local nodes; nil on SSH nodes
	// On SSH nodes: the executor, its [mix] and the nodes tdm drives.
	ssh    *hssh.Executor
	sshMix *hssh.Mix
	nodes  []string
	wake   chan struct{} // a reload changed the mode or its settings
	stepMu sync.Mutex    // orders making a step group (place) and removing empty ones

	mu    sync.Mutex
	cfg   *config.Config // the configuration in force (classes of partitions)
	ratio mix.Ratio
	mode  mix.Mode
	plan  *mix.TDM // tdm mode
}

// mixSupported checks that cfg's [mix] can be enforced on its executor. The
// problems name the [mix] key at fault with its file:line.
func mixSupported(cfg *config.Config) error {
	switch {
	case cfg.Executor == "ssh" && cfg.SSH.Launcher == "setsid":
		return config.Problems{cfg.Problem("mix", "[mix] on ssh nodes needs systemd on the nodes (systemd slices); [ssh] launcher = \"setsid\" cannot enforce it")}
	case cfg.Executor != "ssh" && cfg.Executor != "local":
		return config.Problems{cfg.Problem("mix", "[mix]: enforcement on %s nodes is not implemented (local and ssh nodes only); remove [mix]", cfg.Executor)}
	}
	return nil
}

// tdmPlan is cfg's TDM plan, nil unless mode is tdm.
func tdmPlan(cfg *config.Config, r mix.Ratio, mode mix.Mode) (*mix.TDM, error) {
	if mode != mix.TDMMode {
		return nil, nil
	}
	plan, err := mix.NewTDM(r, cfg.Mix.Period, cfg.Mix.Sync)
	if err != nil {
		return nil, config.Problems{cfg.Problem("mix.period", "%v", err)}
	}
	return &plan, nil
}

// newMixEnforcer checks that [mix] can be enforced here and sets the weights.
func newMixEnforcer(cfg *config.Config, log *slog.Logger) (*mixEnforcer, error) {
	if !cfg.MixEnforced() {
		return nil, nil
	}
	if err := mixSupported(cfg); err != nil {
		return nil, err
	}
	r, _ := mix.ParseRatio(cfg.Mix.Ratio) // validated by config
	mode, _ := mix.ParseMode(cfg.Mix.Mode)
	plan, err := tdmPlan(cfg, r, mode)
	if err != nil {
		return nil, err
	}
	m := &mixEnforcer{log: log, cfg: cfg, ratio: r, mode: mode, plan: plan, nodes: cfg.NodeNames(),
		wake: make(chan struct{}, 1)}
	if cfg.Executor == "ssh" {
		log.Info("mix enforced", "ratio", r.String(), "mode", string(mode), "nodes", "ssh (systemd slices)")
		return m, nil
	}
	if m.g, err = cgmix.Open(cgmix.DefaultRoot, groupName(cfg)); err != nil {
		return nil, fmt.Errorf("[mix]: %w", err)
	}
	if err := m.g.SetRatio(r); err != nil {
		return nil, fmt.Errorf("[mix]: %w", err)
	}
	log.Info("mix enforced", "ratio", r.String(), "mode", string(mode))
	return m, nil
}

// groupName is the local class groups' name, hora-<cluster_name>.
func groupName(cfg *config.Config) string {
	return "hora-" + strings.NewReplacer("/", "_", ".", "_").Replace(cfg.ClusterName)
}

// checkReload says whether nc's [mix] can replace the running one. Adding
// or removing [mix] needs a restart: without it horad started local jobs
// outside any class group, and with it every job already placed.
func (m *mixEnforcer) checkReload(nc *config.Config) error {
	switch {
	case m == nil && !nc.MixEnforced():
		return nil
	case m == nil:
		return config.Problems{nc.Problem("mix", "[mix] added: enforcement starts only at the next start of horad (running jobs keep running)")}
	case !nc.MixEnforced():
		return fmt.Errorf("%s: [mix] removed: enforcement ends only at the next start of horad (running jobs keep running)", nc.Path())
	}
	if err := mixSupported(nc); err != nil {
		return err
	}
	r, _ := mix.ParseRatio(nc.Mix.Ratio)
	mode, _ := mix.ParseMode(nc.Mix.Mode)
	_, err := tdmPlan(nc, r, mode)
	return err
}

// reload applies nc's [mix] (checked by checkReload) under running jobs:
// new weights on local groups and on every SSH node's slices at once, and
// the driver switches mode at its next wake-up, which is now.
func (m *mixEnforcer) reload(ctx context.Context, nc *config.Config) {
	if m == nil {
		return
	}
	r, _ := mix.ParseRatio(nc.Mix.Ratio)
	mode, _ := mix.ParseMode(nc.Mix.Mode)
	plan, _ := tdmPlan(nc, r, mode)
	m.mu.Lock()
	old, oldMode := m.ratio, m.mode
	m.cfg, m.ratio, m.mode, m.plan = nc, r, mode, plan
	m.mu.Unlock()
	if m.g != nil {
		if err := m.g.SetRatio(r); err != nil {
			m.log.Error("mix: reload: class weights", "err", err)
		}
	}
	if m.sshMix != nil {
		rt, be := r.SystemdWeights()
		m.sshMix.SetWeights(rt, be)
		m.eachNode(ctx, func(ctx context.Context, n string) error { return m.ssh.SetMixWeights(ctx, n, rt, be) })
	}
	m.poke()
	m.log.Info("mix reloaded", "ratio", r.String(), "mode", string(mode), "was_ratio", old.String(), "was_mode", string(oldMode))
}

// current is the configuration and TDM plan in force.
func (m *mixEnforcer) current() (*config.Config, *mix.TDM) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cfg, m.plan
}

// place is local.Config.Place: the shepherd, and so the job, joins its
// partition's class group, and under the freezer the group of its job on
// its node (stepGroup), which gang mode stops and continues.
func (m *mixEnforcer) place() func(nodes.LaunchSpec, int) error {
	return func(s nodes.LaunchSpec, pid int) error {
		cfg, _ := m.current()
		m.stepMu.Lock()
		defer m.stepMu.Unlock()
		return m.g.AddStep(classOf(cfg, s), stepGroup(s.Key.Job, s.Node), pid)
	}
}

// stepGroup names the freezer group of job on node: "<job>_<node>", with
// any '/' or '.' of the node name as '_'.
func stepGroup(job int64, node string) string {
	return strconv.FormatInt(job, 10) + "_" + plainName(node)
}

func plainName(s string) string { return strings.NewReplacer("/", "_", ".", "_").Replace(s) }

// parseStepGroup reads a stepGroup name back.
func parseStepGroup(name string) (job int64, node string, ok bool) {
	id, node, ok := strings.Cut(name, "_")
	if !ok {
		return 0, "", false
	}
	job, err := strconv.ParseInt(id, 10, 64)
	return job, node, err == nil && job > 0
}

// gcSteps removes the step groups whose processes are all gone.
func (m *mixEnforcer) gcSteps() {
	m.stepMu.Lock()
	defer m.stepMu.Unlock()
	steps, _ := m.g.Steps()
	for _, s := range steps {
		if s.Procs == 0 {
			_ = m.g.RemoveStep(s.Class, s.Name)
		}
	}
}

// gangStep applies 1GS (be-rt-mix-2001 §4.1) on the local nodes for the
// quantum in force: the matrix of the running jobs (mix.NewGang, each job
// on the nodes it runs on, overflow rows for jobs with no free row) and
// the row of this quantum (mix.GangRow, rows rotate every Q on the
// Unix-time axis); every step group not in the row
// is stopped, the others continued — stops first, so two jobs of one node
// never run in the same instant. frozen holds what was last written and
// is updated. It returns the time to the next quantum.
func (m *mixEnforcer) gangStep(cfg *config.Config, r mix.Ratio, frozen map[cgmix.Step]bool) time.Duration {
	m.stepMu.Lock()
	steps, err := m.g.Steps()
	m.stepMu.Unlock()
	if err != nil {
		m.log.Error("mix: gang: listing the step groups", "err", err)
	}
	col := map[string]int{}
	for i, n := range cfg.NodeNames() {
		col[plainName(n)] = i
	}
	type ref struct {
		step cgmix.Step
		job  int64
		col  int
	}
	var refs []ref
	byJob := map[int64]*mix.GangJob{}
	for _, s := range steps {
		if s.Procs == 0 {
			continue
		}
		job, node, ok := parseStepGroup(s.Name)
		c, known := col[node]
		if !ok || !known {
			continue // not a step of this cluster's nodes: left running
		}
		s.Procs = 0 // the key of frozen
		refs = append(refs, ref{s, job, c})
		j := byJob[job]
		if j == nil {
			j = &mix.GangJob{ID: job, Class: s.Class}
			byJob[job] = j
		}
		if !slices.Contains(j.Cols, c) {
			j.Cols = append(j.Cols, c)
		}
	}
	jobs := make([]mix.GangJob, 0, len(byJob))
	for _, j := range byJob {
		jobs = append(jobs, *j)
	}
	x, err := mix.NewGang(len(col), cfg.Mix.Rows, r, jobs)
	if err != nil {
		m.log.Error("mix: gang plan", "err", err)
		return time.Second
	}
	now := unixNow()
	row, next := mix.GangRow(now, cfg.Mix.Quantum, x.Rows())
	seen := map[cgmix.Step]bool{}
	for _, stop := range []bool{true, false} {
		for _, f := range refs {
			seen[f.step] = true
			want := !x.Runs(row, f.col, f.job)
			if want != stop {
				continue
			}
			if was, ok := frozen[f.step]; ok && was == want {
				continue
			}
			if err := m.g.FreezeStep(f.step.Class, f.step.Name, want); err != nil {
				m.log.Debug("mix: gang: freezer", "step", f.step.Name, "err", err)
				continue
			}
			frozen[f.step] = want
		}
	}
	for s := range frozen {
		if !seen[s] {
			delete(frozen, s)
		}
	}
	return time.Duration((next - now) * float64(time.Second))
}

// sshMixFor is the SSH executor's [mix]: ps through the nodes' systemd slices.
func (m *mixEnforcer) sshMixFor() *hssh.Mix {
	rt, be := m.ratio.SystemdWeights()
	m.sshMix = &hssh.Mix{RTWeight: rt, BEWeight: be, RT: func(s nodes.LaunchSpec) bool {
		cfg, _ := m.current()
		return classOf(cfg, s) == mix.RT
	}, JobsChanged: func(string) { m.poke() }}
	return m.sshMix
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
// stay stopped while horad is down (its jobs keep running). In ps mode it
// only waits for a reload.
func (m *mixEnforcer) run(ctx context.Context) {
	if m.g == nil {
		m.runSSH(ctx)
		return
	}
	// thaw continues both classes and every step group gang stopped.
	thaw := func() {
		for _, c := range []mix.Class{mix.RT, mix.BE} {
			if err := m.g.Freeze(c, false); err != nil {
				m.log.Error("mix: thaw", "class", c.String(), "err", err)
			}
		}
		steps, _ := m.g.Steps()
		for _, s := range steps {
			_ = m.g.FreezeStep(s.Class, s.Name, false)
		}
	}
	defer thaw()
	var drv *cgmix.TDM
	var gang map[cgmix.Step]bool // nil unless gang is driving
	var lastGC time.Time
	for {
		cfg, plan := m.current()
		m.mu.Lock()
		mode, ratio := m.mode, m.ratio
		m.mu.Unlock()
		if time.Since(lastGC) >= time.Second {
			m.gcSteps()
			lastGC = time.Now()
		}
		wait := 10 * time.Second // ps: only the step groups to collect
		if (gang != nil && mode != mix.GangMode) || (drv != nil && plan == nil) {
			thaw() // left gang or tdm: nobody stays stopped
			gang, drv = nil, nil
		}
		switch {
		case mode == mix.GangMode:
			if gang == nil {
				thaw()
				gang = map[cgmix.Step]bool{}
			}
			wait = m.gangStep(cfg, ratio, gang)
		case plan != nil:
			if drv == nil || drv.Plan != *plan {
				drv = &cgmix.TDM{G: m.g, Plan: *plan}
			}
			now := unixNow()
			_, _, next, err := drv.Step(now)
			if err != nil {
				m.log.Error("mix: tdm step", "err", err)
				next = now + 1
			}
			wait = time.Duration((next - now) * float64(time.Second))
		}
		if !m.sleep(ctx, wait) {
			return
		}
	}
}

// sleep waits d (forever when d < 0) or for a reload; false when ctx ended.
func (m *mixEnforcer) sleep(ctx context.Context, d time.Duration) bool {
	var timer <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-m.wake:
	case <-timer:
	}
	return true
}

func unixNow() float64 { return float64(time.Now().UnixNano()) / 1e9 }

// poke wakes the driver (a reload, a node's jobs changed).
func (m *mixEnforcer) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// runSSH drives tdm and gang on SSH nodes through each node's agent
// (ssh.Executor.SetMixSchedule): the agent is given the schedule once and
// switches on the node's own clock at the boundaries of the Unix-time axis,
// so no message is on the critical path of a switch (docs/mix.md). Every
// second, and whenever a node reports a change of its jobs or a reload
// wakes it, the driver gives every node its schedule again, which costs
// nothing where it has not changed and restarts an agent that ended (a
// reconnection). Leaving tdm or gang, and on exit, every node thaws all.
func (m *mixEnforcer) runSSH(ctx context.Context) {
	if m.ssh == nil {
		<-ctx.Done()
		return
	}
	defer func() {
		tctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		m.eachNode(tctx, func(ctx context.Context, n string) error {
			return m.ssh.SetMixSchedule(ctx, n, hssh.MixSchedule{Mode: "none"})
		})
	}()
	clockChecked := map[string]time.Time{}
	for {
		cfg, plan := m.current()
		m.mu.Lock()
		mode, ratio := m.mode, m.ratio
		m.mu.Unlock()
		scheds := m.sshSchedules(cfg, ratio, mode, plan)
		if mode == mix.GangMode || plan != nil {
			m.checkClocks(ctx, clockChecked, cfg)
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m.eachNode(sctx, func(ctx context.Context, n string) error {
			s, ok := scheds[n]
			if !ok {
				return nil // gang plan failed: keep what the node has
			}
			return m.ssh.SetMixSchedule(ctx, n, s)
		})
		cancel()
		if !m.sleep(ctx, time.Second) {
			return
		}
	}
}

// clockCheckEvery is how often each node's clock is compared with horad's.
const clockCheckEvery = 10 * time.Minute

// checkClocks warns about a node whose clock is off horad's by more than
// 1 % of the tdm period or the gang quantum: its agent switches on its own
// clock, so its switches are off by as much. The estimate is Cristian's
// (MixClock), the best of three round trips; nodes are checked every
// clockCheckEvery, in the background of the driver's round.
func (m *mixEnforcer) checkClocks(ctx context.Context, checked map[string]time.Time, cfg *config.Config) {
	var due []string
	for _, n := range m.nodes {
		if time.Since(checked[n]) >= clockCheckEvery {
			due = append(due, n)
		}
	}
	if len(due) == 0 {
		return
	}
	for _, n := range due {
		checked[n] = time.Now()
	}
	limit := seconds(0.01 * cfg.Mix.Period)
	if mode, _ := mix.ParseMode(cfg.Mix.Mode); mode == mix.GangMode {
		limit = seconds(0.01 * cfg.Mix.Quantum)
	}
	go func() {
		for _, n := range due {
			var off, rtt time.Duration
			for range 3 {
				o, r, err := m.ssh.MixClock(ctx, n)
				if err != nil {
					break
				}
				if rtt == 0 || r < rtt {
					off, rtt = o, r
				}
			}
			if rtt > 0 && off.Abs() > rtt/2+limit {
				m.log.Warn("mix: node clock differs from horad's; its tdm/gang switches are off by as much (keep the nodes' clocks synchronised, e.g. NTP)",
					"node", n, "offset", off.Round(time.Microsecond), "uncertainty", (rtt / 2).Round(time.Microsecond))
			}
		}
	}()
}

// sshSchedules is what every SSH node's agent keeps in the mode in force.
func (m *mixEnforcer) sshSchedules(cfg *config.Config, r mix.Ratio, mode mix.Mode, plan *mix.TDM) map[string]hssh.MixSchedule {
	if mode == mix.GangMode {
		return m.gangSchedules(cfg, r)
	}
	s := hssh.MixSchedule{Mode: "none"}
	if plan != nil {
		s = hssh.MixSchedule{Mode: "tdm", Period: seconds(plan.Period),
			RTLen: seconds(plan.RTPart * plan.Period), Sync: seconds(plan.Sync)}
	}
	out := make(map[string]hssh.MixSchedule, len(m.nodes))
	for _, n := range m.nodes {
		out[n] = s
	}
	return out
}

// gangLead is how far ahead of now a new gang table takes over: every node
// must have it before the boundary at which they all change to it.
const gangLead = 300 * time.Millisecond

// gangSchedules applies 1GS (be-rt-mix-2001 §4.1) on the SSH nodes: the
// matrix of the jobs the nodes' agents report (mix.NewGang, as on local
// nodes: each job on the nodes it runs on, overflow rows for jobs with no
// free row), and for each node the jobs of each row on it. The table
// takes over on every node at the same quantum boundary, gangLead ahead.
// Nil when the plan cannot be made (logged): the nodes keep their tables.
func (m *mixEnforcer) gangSchedules(cfg *config.Config, r mix.Ratio) map[string]hssh.MixSchedule {
	byJob := map[int64]*mix.GangJob{}
	for i, n := range m.nodes {
		reported, _ := m.ssh.MixJobs(n)
		for _, j := range reported {
			gj := byJob[j.ID]
			if gj == nil {
				gj = &mix.GangJob{ID: j.ID, Class: mix.BE}
				if j.RT {
					gj.Class = mix.RT
				}
				byJob[j.ID] = gj
			}
			gj.Cols = append(gj.Cols, i)
		}
	}
	jobs := make([]mix.GangJob, 0, len(byJob))
	for _, j := range byJob {
		jobs = append(jobs, *j)
	}
	slices.SortFunc(jobs, func(a, b mix.GangJob) int { return cmp.Compare(a.ID, b.ID) })
	x, err := mix.NewGang(len(m.nodes), cfg.Mix.Rows, r, jobs)
	if err != nil {
		m.log.Error("mix: gang plan", "err", err)
		return nil
	}
	q := seconds(cfg.Mix.Quantum)
	qus := max(q.Microseconds(), 1)
	lead := time.Now().Add(gangLead).UnixMicro()
	from := time.UnixMicro((lead + qus - 1) / qus * qus)
	out := make(map[string]hssh.MixSchedule, len(m.nodes))
	for col, n := range m.nodes {
		rows := make([][]int64, x.Rows())
		for row := range rows {
			for _, j := range jobs {
				if slices.Contains(j.Cols, col) && x.Runs(row, col, j.ID) {
					rows[row] = append(rows[row], j.ID)
				}
			}
		}
		out[n] = hssh.MixSchedule{Mode: "gang", Quantum: q, Rows: rows, From: from}
	}
	return out
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

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

// eachNode runs op on every SSH node at once and waits for all.
func (m *mixEnforcer) eachNode(ctx context.Context, op func(context.Context, string) error) {
	var wg sync.WaitGroup
	for _, n := range m.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := op(ctx, n); err != nil {
				m.log.Debug("mix: node", "node", n, "err", err)
			}
		}()
	}
	wg.Wait()
}
