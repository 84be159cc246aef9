// Package cgmix enforces the fairness ratio between the real-time and
// best-effort classes on a local node with cgroup v1 (DESIGN.md §1, [mix]):
// two class groups under the cpu controller whose cpu.shares are the ratio's
// weights (ps mode), and two under the freezer controller that the TDM
// driver stops and continues every division (tdm mode). The decisions are
// scheduler/mix's; this package only writes them to the kernel.
//
// Layout, for a group name N under the cgroup root R (/sys/fs/cgroup):
//
//	R/cpu/N/{rt,be}/cpu.shares        ps weights
//	R/freezer/N/{rt,be}/freezer.state tdm stop/continue
//	R/freezer/N/{rt,be}/<step>/        one group per job and node (AddStep):
//	                                   gang stops and continues each job
//	R/cpuacct/N/{rt,be}/cpuacct.usage CPU used per class (live shares), when mounted
package cgmix

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"hora/scheduler/mix"
)

// DefaultRoot is where cgroup v1 controllers are mounted.
const DefaultRoot = "/sys/fs/cgroup"

// Groups are a node's two class groups.
type Groups struct {
	root, name string
	ctrls      []string // controllers in use: cpu, freezer and, if mounted, cpuacct
}

var classes = []mix.Class{mix.RT, mix.BE}

// Open creates (or reuses) the class groups named name under root. It
// needs the cpu and freezer controllers mounted as cgroup v1 hierarchies.
func Open(root, name string) (*Groups, error) {
	if name == "" || strings.ContainsAny(name, "/.") {
		return nil, fmt.Errorf("cgmix: group name %q: want a plain name", name)
	}
	g := &Groups{root: root, name: name}
	for _, c := range []string{"cpu", "freezer", "cpuacct"} {
		if _, err := os.Stat(filepath.Join(root, c, "cgroup.procs")); err != nil {
			if c == "cpuacct" {
				continue // live shares only
			}
			return nil, fmt.Errorf("cgmix: controller %s not mounted as cgroup v1 under %s: %w", c, root, err)
		}
		g.ctrls = append(g.ctrls, c)
		for _, cl := range classes {
			if err := os.MkdirAll(g.dir(c, cl), 0o755); err != nil {
				return nil, fmt.Errorf("cgmix: %w", err)
			}
		}
	}
	return g, nil
}

// Dir is class c's group directory under controller ctrl.
func (g *Groups) Dir(ctrl string, c mix.Class) string { return g.dir(ctrl, c) }

func (g *Groups) dir(ctrl string, c mix.Class) string {
	return filepath.Join(g.root, ctrl, g.name, c.String())
}

func (g *Groups) has(ctrl string) bool {
	for _, c := range g.ctrls {
		if c == ctrl {
			return true
		}
	}
	return false
}

func write(path, v string) error {
	// cgroup files take one value per write(2), without O_TRUNC semantics.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cgmix: write %q to %s: %w", v, path, err)
	}
	return nil
}

func read(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

// SetRatio writes the ps weights x:y (mix.Ratio.Weights) to cpu.shares. It
// changes no process: a reload takes effect on running jobs.
func (g *Groups) SetRatio(r mix.Ratio) error {
	rt, be := r.Weights()
	if err := write(filepath.Join(g.dir("cpu", mix.RT), "cpu.shares"), strconv.Itoa(rt)); err != nil {
		return err
	}
	return write(filepath.Join(g.dir("cpu", mix.BE), "cpu.shares"), strconv.Itoa(be))
}

// Weights reads the class groups' cpu.shares back.
func (g *Groups) Weights() (rt, be int, err error) {
	var v [2]int
	for _, c := range classes {
		s, err := read(filepath.Join(g.dir("cpu", c), "cpu.shares"))
		if err != nil {
			return 0, 0, err
		}
		if v[c], err = strconv.Atoi(s); err != nil {
			return 0, 0, fmt.Errorf("cgmix: cpu.shares %q: %w", s, err)
		}
	}
	return v[0], v[1], nil
}

// Add moves process pid (and the children it forks from now on) into class
// c's groups.
func (g *Groups) Add(c mix.Class, pid int) error {
	for _, ctrl := range g.ctrls {
		if err := write(filepath.Join(g.dir(ctrl, c), "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// AddStep moves process pid into class c's groups and, under the freezer,
// into the group of its own named step (a job on a node), which gang mode
// stops and continues on its own. The step group is made if needed.
func (g *Groups) AddStep(c mix.Class, step string, pid int) error {
	if step == "" || strings.ContainsAny(step, "/.") {
		return fmt.Errorf("cgmix: step group name %q: want a plain name", step)
	}
	d := filepath.Join(g.dir("freezer", c), step)
	if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("cgmix: %w", err)
	}
	for _, ctrl := range g.ctrls {
		dir := g.dir(ctrl, c)
		if ctrl == "freezer" {
			dir = d
		}
		if err := write(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// Step is a step group under a class (AddStep) and how many processes it has.
type Step struct {
	Class mix.Class
	Name  string
	Procs int
}

// Steps lists the step groups of both classes, RT first, by name.
func (g *Groups) Steps() ([]Step, error) {
	var out []Step
	for _, c := range classes {
		ents, err := os.ReadDir(g.dir("freezer", c))
		if err != nil {
			return out, err
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			s, _ := read(filepath.Join(g.dir("freezer", c), e.Name(), "cgroup.procs"))
			out = append(out, Step{Class: c, Name: e.Name(), Procs: len(strings.Fields(s))})
		}
	}
	return out, nil
}

// FreezeStep stops (true) or continues (false) the processes of a step group.
func (g *Groups) FreezeStep(c mix.Class, step string, stop bool) error {
	v := "THAWED"
	if stop {
		v = "FROZEN"
	}
	return write(filepath.Join(g.dir("freezer", c), step, "freezer.state"), v)
}

// StepState is a step group's freezer.state.
func (g *Groups) StepState(c mix.Class, step string) (string, error) {
	return read(filepath.Join(g.dir("freezer", c), step, "freezer.state"))
}

// RemoveStep removes a step group that has no process left (the kernel
// refuses one that has).
func (g *Groups) RemoveStep(c mix.Class, step string) error {
	if err := os.Remove(filepath.Join(g.dir("freezer", c), step)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cgmix: %w", err)
	}
	return nil
}

// Pids lists the processes of class c, those of its step groups included.
func (g *Groups) Pids(c mix.Class) ([]int, error) {
	s, err := read(filepath.Join(g.dir("freezer", c), "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	ents, _ := os.ReadDir(g.dir("freezer", c))
	for _, e := range ents {
		if e.IsDir() {
			sub, _ := read(filepath.Join(g.dir("freezer", c), e.Name(), "cgroup.procs"))
			s += " " + sub
		}
	}
	var out []int
	for _, f := range strings.Fields(s) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// removeEmptySteps removes class c's step groups with no process.
func (g *Groups) removeEmptySteps(c mix.Class) {
	ents, _ := os.ReadDir(g.dir("freezer", c))
	for _, e := range ents {
		if e.IsDir() {
			_ = os.Remove(filepath.Join(g.dir("freezer", c), e.Name()))
		}
	}
}

// Freeze stops (true) or continues (false) every process of class c.
func (g *Groups) Freeze(c mix.Class, stop bool) error {
	v := "THAWED"
	if stop {
		v = "FROZEN"
	}
	return write(filepath.Join(g.dir("freezer", c), "freezer.state"), v)
}

// FreezerState is class c's freezer.state: THAWED, FREEZING or FROZEN.
func (g *Groups) FreezerState(c mix.Class) (string, error) {
	return read(filepath.Join(g.dir("freezer", c), "freezer.state"))
}

// Usage is the CPU time class c has used (cpuacct.usage); ok is false when
// cpuacct is not mounted.
func (g *Groups) Usage(c mix.Class) (d time.Duration, ok bool, err error) {
	if !g.has("cpuacct") {
		return 0, false, nil
	}
	s, err := read(filepath.Join(g.dir("cpuacct", c), "cpuacct.usage"))
	if err != nil {
		return 0, true, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return time.Duration(n), true, err
}

// Close thaws both classes, moves any process left back to the root group
// and removes the groups.
func (g *Groups) Close() error {
	var errs []error
	for _, c := range classes {
		if err := g.Freeze(c, false); !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err) // already removed (Release) is fine
		}
	}
	for _, ctrl := range g.ctrls {
		for _, c := range classes {
			dirs := []string{g.dir(ctrl, c)}
			ents, _ := os.ReadDir(g.dir(ctrl, c))
			for _, e := range ents {
				if e.IsDir() {
					dirs = append(dirs, filepath.Join(g.dir(ctrl, c), e.Name()))
				}
			}
			for _, d := range dirs {
				s, _ := read(filepath.Join(d, "cgroup.procs"))
				for _, f := range strings.Fields(s) {
					errs = append(errs, write(filepath.Join(g.root, ctrl, "cgroup.procs"), f))
				}
			}
			for _, d := range dirs[1:] {
				if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, err)
				}
			}
			if err := os.Remove(g.dir(ctrl, c)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		if err := os.Remove(filepath.Join(g.root, ctrl, g.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Release is what horad does when it stops: it thaws both classes (jobs
// keep running while horad is down, and none may stay stopped) and removes
// the groups of a class that has no process left, then the cluster's group
// once both are gone, so that no stopped horad leaves hora-<cluster> groups
// behind. A class that still has processes keeps its groups, thawed, with
// its weight: the next horad of the cluster opens them again (Open reuses).
// kept lists those classes.
func (g *Groups) Release() (kept []mix.Class, err error) {
	var errs []error
	for _, c := range classes {
		if e := g.Freeze(c, false); e != nil && !errors.Is(e, os.ErrNotExist) {
			errs = append(errs, e)
		}
	}
	for _, c := range classes {
		g.removeEmptySteps(c) // rmdir of a step group with processes fails: kept
		busy := false
		for _, ctrl := range g.ctrls {
			s, e := read(filepath.Join(g.dir(ctrl, c), "cgroup.procs"))
			if e == nil && s != "" {
				busy = true
			}
		}
		if pids, _ := g.Pids(c); len(pids) > 0 {
			busy = true
		}
		if busy {
			kept = append(kept, c)
			continue
		}
		for _, ctrl := range g.ctrls {
			// rmdir fails with EBUSY if a process joined since the check:
			// the group then stays, as it should.
			if e := os.Remove(g.dir(ctrl, c)); e != nil && !errors.Is(e, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("cgmix: %w", e))
				kept = append(kept, c)
			}
		}
	}
	if len(kept) == 0 {
		for _, ctrl := range g.ctrls {
			if e := os.Remove(filepath.Join(g.root, ctrl, g.name)); e != nil && !errors.Is(e, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("cgmix: %w", e))
			}
		}
	}
	return slices.Compact(kept), errors.Join(errs...)
}

// Leftover lists the controllers under root that still hold a group named
// name (what Release or Close should have removed).
func Leftover(root, name string) []string {
	var out []string
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(root, e.Name(), name)); err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

// TDM drives tdm mode on one node: at each Step the division in force
// decides, through mix.TDMFreezeAt (with the sync δ), which class is stopped; a class whose
// owner has no process is never stopped (the division is lent).
type TDM struct {
	G     *Groups
	Plan  mix.TDM
	state [2]bool // frozen as last written
	init  bool
}

// Step applies the division of instant now (seconds on the driver's axis)
// and returns it with the classes left frozen. The driver calls it at least
// at every division boundary (Plan.At gives the next one).
func (d *TDM) Step(now float64) (owner mix.Class, frozen [2]bool, next float64, err error) {
	owner, _, _ = d.Plan.At(now)
	var has [2]bool
	for _, c := range classes {
		pids, err := d.G.Pids(c)
		if err != nil {
			return owner, d.state, next, err
		}
		has[c] = len(pids) > 0
	}
	want, next := mix.TDMFreezeAt(d.Plan, now, has[mix.RT], has[mix.BE])
	for _, c := range classes {
		if !d.init || want[c] != d.state[c] {
			if err := d.G.Freeze(c, want[c]); err != nil {
				return owner, d.state, next, err
			}
			d.state[c] = want[c]
		}
	}
	d.init = true
	return owner, d.state, next, nil
}
