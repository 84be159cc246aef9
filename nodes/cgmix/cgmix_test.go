package cgmix

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"hora/scheduler/mix"
)

// open makes class groups of a name no other test run uses.
func open(t *testing.T) *Groups {
	t.Helper()
	g, err := Open(DefaultRoot, fmt.Sprintf("hora-test-%d-%d", os.Getpid(), rand.Uint32()))
	if err != nil {
		t.Fatalf("%v (this test needs root and the cgroup v1 cpu and freezer controllers, as CI has)", err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return g
}

// spin starts a CPU-bound process in class c.
func spin(t *testing.T, g *Groups, c mix.Class) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.Freeze(c, false)
		cmd.Process.Kill()
		cmd.Wait()
	})
	if err := g.Add(c, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// cpuTicks is utime+stime of pid (proc(5) stat fields 14 and 15).
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within 60 s", what)
}

// ps mode: the class weights are the ratio's, and a new ratio is written
// while the class's processes keep running.
func TestWeightsFollowRatio(t *testing.T) {
	g := open(t)
	pid := spin(t, g, mix.BE)
	if err := g.SetRatio(mix.Ratio{X: 2, Y: 1}); err != nil {
		t.Fatal(err)
	}
	if rt, be, err := g.Weights(); err != nil || rt != 1365 || be != 683 {
		t.Fatalf("weights %d:%d (%v), want 1365:683", rt, be, err)
	}
	if err := g.SetRatio(mix.Ratio{X: 1, Y: 0}); err != nil {
		t.Fatal(err)
	}
	if rt, be, _ := g.Weights(); rt != 2048 || be != 2 {
		t.Fatalf("weights at 1:0: %d:%d, want 2048:2", rt, be)
	}
	pids, err := g.Pids(mix.BE)
	if err != nil || len(pids) != 1 || pids[0] != pid {
		t.Fatalf("BE group holds %v (%v), want the running process %d", pids, err, pid)
	}
}

// tdm mode: a frozen class's processes get no CPU at all; the other class's
// keep running; thawed, they run again.
func TestFreezeStopsClass(t *testing.T) {
	g := open(t)
	be := spin(t, g, mix.BE)
	rt := spin(t, g, mix.RT)
	if err := g.Freeze(mix.BE, true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "BE frozen", func() bool { s, _ := g.FreezerState(mix.BE); return s == "FROZEN" })
	before := cpuTicks(t, be)
	rt0 := cpuTicks(t, rt)
	waitFor(t, "RT process running while BE is frozen", func() bool { return cpuTicks(t, rt) > rt0 })
	if got := cpuTicks(t, be); got != before {
		t.Fatalf("frozen BE process used CPU: %d → %d ticks", before, got)
	}
	if s, _ := g.FreezerState(mix.RT); s != "THAWED" {
		t.Fatalf("RT freezer state %s", s)
	}
	if err := g.Freeze(mix.BE, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "BE running again after thaw", func() bool { return cpuTicks(t, be) > before })
}

// Release (horad stopping) thaws both classes, keeps the groups of a class
// that still runs processes and removes the rest; once that class is empty
// too, a second Release leaves no group of the name in any controller.
func TestReleaseRemovesEmptyGroups(t *testing.T) {
	name := fmt.Sprintf("hora-test-%d-%d", os.Getpid(), rand.Uint32())
	g, err := Open(DefaultRoot, name)
	if err != nil {
		t.Fatalf("%v (this test needs root and the cgroup v1 cpu and freezer controllers, as CI has)", err)
	}
	t.Cleanup(func() {
		if left := Leftover(DefaultRoot, name); len(left) > 0 {
			g.Close()
		}
	})
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if err := g.Add(mix.BE, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := g.Freeze(mix.BE, true); err != nil {
		t.Fatal(err)
	}
	kept, err := g.Release()
	if err != nil || len(kept) != 1 || kept[0] != mix.BE {
		t.Fatalf("Release with a BE process: kept %v, err %v; want [be]", kept, err)
	}
	if s, err := g.FreezerState(mix.BE); err != nil || s != "THAWED" {
		t.Fatalf("kept BE group: freezer %q (%v), want THAWED", s, err)
	}
	for _, ctrl := range g.ctrls {
		if _, err := os.Stat(g.Dir(ctrl, mix.RT)); !os.IsNotExist(err) {
			t.Errorf("empty RT group under %s not removed (%v)", ctrl, err)
		}
	}
	if left := Leftover(DefaultRoot, name); len(left) != len(g.ctrls) {
		t.Errorf("cluster group left under %v, want under every controller %v while BE runs", left, g.ctrls)
	}
	cmd.Process.Kill()
	cmd.Wait()
	kept, err = g.Release()
	if err != nil || len(kept) != 0 {
		t.Fatalf("Release once empty: kept %v, err %v", kept, err)
	}
	if left := Leftover(DefaultRoot, name); len(left) > 0 {
		t.Fatalf("groups %s left under %v", name, left)
	}
	// The next horad of the cluster makes them again.
	if g, err = Open(DefaultRoot, name); err != nil {
		t.Fatal(err)
	}
	if left := Leftover(DefaultRoot, name); len(left) != len(g.ctrls) {
		t.Fatalf("reopened under %v, want %v", left, g.ctrls)
	}
	if kept, err := g.Release(); err != nil || len(kept) != 0 || len(Leftover(DefaultRoot, name)) > 0 {
		t.Fatalf("Release of the reopened groups: kept %v, err %v, left %v", kept, err, Leftover(DefaultRoot, name))
	}
}

// Step groups (gang mode): each job on a node has its own freezer group
// under its class; one is stopped while its sibling runs, the class counts
// the processes of both, an empty step group is removed, and Release
// removes what is left once the processes are gone.
func TestStepGroups(t *testing.T) {
	g := open(t)
	sleep := func(step string) *exec.Cmd {
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.FreezeStep(mix.BE, step, false); cmd.Process.Kill(); cmd.Wait() })
		if err := g.AddStep(mix.BE, step, cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	a, b := sleep("5_local1"), sleep("6_local1")
	if err := g.AddStep(mix.BE, "x/y", a.Process.Pid); err == nil {
		t.Error("AddStep accepted the step name x/y")
	}
	if err := g.FreezeStep(mix.BE, "5_local1", true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "step 5 frozen", func() bool { s, _ := g.StepState(mix.BE, "5_local1"); return s == "FROZEN" })
	if st, _ := g.StepState(mix.BE, "6_local1"); st != "THAWED" {
		t.Errorf("sibling step 6: %s, want THAWED", st)
	}
	if pids, _ := g.Pids(mix.BE); len(pids) != 2 {
		t.Errorf("BE class processes %v, want the 2 of its steps", pids)
	}
	steps, err := g.Steps()
	if err != nil || len(steps) != 2 || steps[0].Name != "5_local1" || steps[0].Procs != 1 || steps[1].Class != mix.BE {
		t.Fatalf("Steps: %+v, %v", steps, err)
	}
	if err := g.RemoveStep(mix.BE, "6_local1"); err == nil {
		t.Error("RemoveStep removed a group with a process")
	}
	b.Process.Kill()
	b.Wait()
	if err := g.RemoveStep(mix.BE, "6_local1"); err != nil {
		t.Fatal(err)
	}
	g.FreezeStep(mix.BE, "5_local1", false)
	a.Process.Kill()
	a.Wait()
	if kept, err := g.Release(); err != nil || len(kept) > 0 {
		t.Fatalf("Release: kept %v, %v", kept, err)
	}
	if left := Leftover(DefaultRoot, g.name); len(left) > 0 {
		t.Fatalf("left under %v", left)
	}
}

// The TDM driver stops the non-owner only while the owner has processes:
// with no RT process, BE is never frozen, in any division.
func TestTDMLendsWhenOwnerHasNothing(t *testing.T) {
	g := open(t)
	spin(t, g, mix.BE)
	plan, err := mix.NewTDM(mix.Ratio{X: 2, Y: 1}, 3, 0.001)
	if err != nil {
		t.Fatal(err)
	}
	d := &TDM{G: g, Plan: plan}
	for now := 0.0; now < 12; now += 0.25 {
		owner, frozen, _, err := d.Step(now)
		if err != nil {
			t.Fatal(err)
		}
		if frozen[mix.BE] {
			t.Fatalf("at %g s (%s division) BE frozen while RT has no process", now, owner)
		}
		if s, _ := g.FreezerState(mix.BE); s != "THAWED" {
			t.Fatalf("at %g s BE freezer %s", now, s)
		}
	}
	spin(t, g, mix.RT)
	for _, c := range []struct {
		now    float64
		frozen mix.Class
	}{{0.5, mix.BE}, {2.5, mix.RT}, {3.5, mix.BE}} {
		owner, frozen, next, err := d.Step(c.now)
		if err != nil {
			t.Fatal(err)
		}
		if !frozen[c.frozen] || frozen[owner] || next <= c.now {
			t.Fatalf("at %g s (%s division): frozen %v, next %g; want %s frozen", c.now, owner, frozen, next, c.frozen)
		}
		waitFor(t, c.frozen.String()+" frozen", func() bool { s, _ := g.FreezerState(c.frozen); return s == "FROZEN" })
	}
	// In the sync δ that opens a division both classes are stopped, until its end.
	if _, frozen, next, err := d.Step(6.0005); err != nil || frozen != [2]bool{true, true} || math.Abs(next-6.001) > 1e-9 {
		t.Fatalf("in the sync at 6.0005 s: frozen %v until %g (%v); want both until 6.001", frozen, next, err)
	}
	for _, c := range []mix.Class{mix.RT, mix.BE} {
		waitFor(t, c.String()+" frozen in the sync", func() bool { s, _ := g.FreezerState(c); return s == "FROZEN" })
	}
}

// BenchmarkShares measures what the kernel gives each class when a
// CPU-bound RT process and a CPU-bound BE process share one CPU, over a
// window of 6 s (two TDM periods) per iteration, at 2:1. Shares depend on
// the machine's load, so they are measured here, never asserted in a test
// (docs/benchmarks.md). Run: go test -run '^$' -bench Shares -benchtime 1x ./nodes/cgmix/
func BenchmarkShares(b *testing.B) {
	for _, mode := range []string{"ps", "tdm", "ps-be-alone"} {
		b.Run(mode, func(b *testing.B) {
			g, err := Open(DefaultRoot, fmt.Sprintf("hora-bench-%d-%d", os.Getpid(), rand.Uint32()))
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			r := mix.Ratio{X: 2, Y: 1}
			if err := g.SetRatio(r); err != nil {
				b.Fatal(err)
			}
			var cmds []*exec.Cmd
			start := func(c mix.Class) {
				cmd := exec.Command("sh", "-c", "while :; do :; done")
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				cmds = append(cmds, cmd)
				var set unix.CPUSet
				set.Set(0)
				if err := unix.SchedSetaffinity(cmd.Process.Pid, &set); err != nil {
					b.Fatal(err)
				}
				if err := g.Add(c, cmd.Process.Pid); err != nil {
					b.Fatal(err)
				}
			}
			defer func() {
				g.Freeze(mix.RT, false)
				g.Freeze(mix.BE, false)
				for _, c := range cmds {
					c.Process.Kill()
					c.Wait()
				}
			}()
			if mode != "ps-be-alone" {
				start(mix.RT)
			}
			start(mix.BE)
			plan, _ := mix.NewTDM(r, 3, 0.001)
			d := &TDM{G: g, Plan: plan}
			var rtShare, beShare, worstJitter float64
			for b.Loop() {
				rt0, _, _ := g.Usage(mix.RT)
				be0, _, _ := g.Usage(mix.BE)
				t0 := time.Now()
				for time.Since(t0) < 6*time.Second {
					if mode != "tdm" {
						time.Sleep(100 * time.Millisecond)
						continue
					}
					now := time.Since(t0).Seconds()
					_, _, next, err := d.Step(now)
					if err != nil {
						b.Fatal(err)
					}
					time.Sleep(time.Duration((next - now) * float64(time.Second)))
					worstJitter = max(worstJitter, time.Since(t0).Seconds()-next)
				}
				rt1, _, _ := g.Usage(mix.RT)
				be1, _, _ := g.Usage(mix.BE)
				wall := time.Since(t0).Seconds()
				rtShare = (rt1 - rt0).Seconds() / wall
				beShare = (be1 - be0).Seconds() / wall
			}
			b.ReportMetric(rtShare, "rt-cpu")
			b.ReportMetric(beShare, "be-cpu")
			if mode == "tdm" {
				b.ReportMetric(worstJitter*1000, "max-switch-late-ms")
			}
		})
	}
}
