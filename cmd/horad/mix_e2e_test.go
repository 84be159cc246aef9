package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hora/nodes/cgmix"
	"hora/scheduler/mix"
)

// [mix] on local nodes: horad sets the class weights to the ratio, a batch
// job runs in the BE group and a reserve job in the RT group. On SIGTERM
// both classes are left running (thawed); the group of a class with a job
// still running is kept for the next horad, the empty one removed, and once
// every job is gone a stopped horad leaves no hora-<cluster> group in any
// controller. Shares themselves are measured in nodes/cgmix's
// BenchmarkShares, not here.
func TestMixEnforcedOnLocalNodes(t *testing.T) {
	requireRoot(t)
	name := fmt.Sprintf("e2emix%d", rand.Uint32())
	c := newClusterWith(t, "cluster_name = \""+name+"\"\n"+localBatch+`
[[partition]]
name = "res"
nodes = "local[1-4]"
policy = "reserve"

[mix]
ratio = "2:1"
mode = "tdm"
period = 3
`)
	g := openMixGroups(t, name)
	if rt, be, err := g.Weights(); err != nil || rt != 1365 || be != 683 {
		t.Fatalf("weights %d:%d (%v), want 1365:683", rt, be, err)
	}
	work := c.workDir()
	be := c.submit(work, "-o", filepath.Join(work, "be.out"), "--wrap", "cat /proc/self/cgroup")
	rt := c.submit(work, "-p", "res", "-N", "1", "-t", "1", "--begin=now", "--deadline=now+600",
		"-o", filepath.Join(work, "rt.out"), "--wrap", "cat /proc/self/cgroup")
	for id, class := range map[string]mix.Class{be: mix.BE, rt: mix.RT} {
		c.waitState(id, "COMPLETED")
		out, err := os.ReadFile(filepath.Join(work, class.String()+".out"))
		if err != nil {
			t.Fatal(err)
		}
		want := "/hora-" + name + "/" + class.String()
		if !strings.Contains(string(out), ":freezer:"+want) {
			t.Fatalf("job %s (%s) cgroups:\n%s\nwant freezer %s", id, class, out, want)
		}
	}
	// Started for real (the script runs) before horad stops: a launch still
	// in flight when horad stops is abandoned.
	long := c.submit(work, "-o", filepath.Join(work, "long.out"), "--wrap", "echo up; sleep 300")
	waitMix(t, "the long BE job's script running", func() bool {
		b, _ := os.ReadFile(filepath.Join(work, "long.out"))
		return strings.Contains(string(b), "up")
	})
	// Its launch has long returned (the shepherd answers before the script
	// runs) once a whole other job has gone through; stopping horad within
	// a launch is another matter (the launch is abandoned, the job requeued).
	c.waitState(c.submit(work, "--wrap", "true"), "COMPLETED")
	c.stop()
	if s, err := g.FreezerState(mix.BE); err != nil || s != "THAWED" {
		t.Fatalf("after horad stopped, the BE group of the running job is %q (%v), want THAWED", s, err)
	}
	if _, err := g.FreezerState(mix.RT); !os.IsNotExist(err) {
		t.Fatalf("after horad stopped, the empty RT group is still there (%v)", err)
	}
	c.start()
	if st := c.state(long); st != "RUNNING" {
		t.Fatalf("BE job after the restart: %s", st)
	}
	c.run(0, work, "scancel", long)
	c.waitState(long, "CANCELLED")
	waitMixEmpty(t, g)
	c.stop()
	if left := cgmix.Leftover(cgmix.DefaultRoot, "hora-"+name); len(left) > 0 {
		t.Fatalf("horad stopped with no job left hora-%s groups under %v", name, left)
	}
}

// openMixGroups opens the class groups horad made for cluster name. If the
// test fails before horad removed them, its cleanup does.
func openMixGroups(t *testing.T, name string) *cgmix.Groups {
	t.Helper()
	g, err := cgmix.Open(cgmix.DefaultRoot, "hora-"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if len(cgmix.Leftover(cgmix.DefaultRoot, "hora-"+name)) > 0 {
			g.Close()
		}
	})
	return g
}

func waitMix(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within 60 s", what)
}

// waitMixEmpty waits until the last process of a finished job has left the
// class groups (a cancelled job's processes die after its state is recorded).
func waitMixEmpty(t *testing.T, g *cgmix.Groups) {
	t.Helper()
	waitMix(t, "class groups empty", func() bool {
		rt, _ := g.Pids(mix.RT)
		be, _ := g.Pids(mix.BE)
		return len(rt)+len(be) == 0
	})
}

// A reload (SIGHUP) changes [mix] under running jobs: from ps 2:1 to tdm
// 1:3 the class weights are rewritten and the driver starts stopping each
// class in the other's division; a bad ratio or mode is refused naming
// file:line and the configuration in force stays; back to ps, both classes
// are thawed. The jobs run throughout, never restarted.
func TestMixReload(t *testing.T) {
	requireRoot(t)
	name := fmt.Sprintf("e2emixr%d", rand.Uint32())
	head := "cluster_name = \"" + name + "\"\n" + localBatch + `
[[partition]]
name = "res"
nodes = "local[1-4]"
policy = "reserve"
`
	c := newClusterWith(t, head+"\n[mix]\nratio = \"2:1\"\nmode = \"ps\"\n")
	g := openMixGroups(t, name)
	weights := func(wantRT, wantBE int) {
		t.Helper()
		if rt, be, err := g.Weights(); err != nil || rt != wantRT || be != wantBE {
			t.Fatalf("weights %d:%d (%v), want %d:%d", rt, be, err, wantRT, wantBE)
		}
	}
	weights(1365, 683)
	work := c.workDir()
	be := c.submit(work, "--wrap", "sleep 300")
	rt := c.submit(work, "-p", "res", "-N", "1", "-t", "10", "--begin=now", "--deadline=now+3600", "--wrap", "sleep 300")
	started := map[string]string{}
	for _, id := range []string{be, rt} {
		c.waitState(id, "RUNNING")
		started[id] = c.run(0, work, "squeue", "-h", "-j", id, "-o", "%S").stdout
	}
	waitMix(t, "both classes with a process", func() bool {
		r, _ := g.Pids(mix.RT)
		b, _ := g.Pids(mix.BE)
		return len(r) > 0 && len(b) > 0
	})
	frozenOnce := func(cl mix.Class) {
		t.Helper()
		waitMix(t, cl.String()+" stopped in the other's division", func() bool { s, _ := g.FreezerState(cl); return s != "THAWED" })
	}

	mark := c.reload(head + "\n[mix]\nratio = \"1:3\"\nmode = \"tdm\"\nperiod = 1\n")
	c.waitLog(mark, "mix reloaded", "ratio=1:3", "mode=tdm")
	weights(512, 1536)
	frozenOnce(mix.BE)
	frozenOnce(mix.RT)

	for _, bad := range []struct{ mix, key string }{
		{"ratio = \"0:0\"\nmode = \"ps\"\n", "ratio"},
		{"ratio = \"-1:2\"\nmode = \"ps\"\n", "ratio"},
		{"ratio = \"2:1:3\"\nmode = \"ps\"\n", "ratio"},
		{"ratio = \"2:1\"\nmode = \"fifo\"\n", "mode"},
	} {
		text := head + "\n[mix]\n" + bad.mix
		line := strings.Count(text[:strings.Index(text, bad.key+" = ")], "\n") + 1
		mark := c.reload(text)
		l := c.waitLog(mark, "reload refused")
		if at := fmt.Sprintf("%s:%d", c.config, line); !strings.Contains(l, at) || !strings.Contains(l, "mix."+bad.key) {
			t.Errorf("[mix] %q: the refusal does not name %s and mix.%s:\n%s", bad.mix, at, bad.key, l)
		}
		if strings.Contains(l, "mix reloaded") {
			t.Errorf("[mix] %q was applied:\n%s", bad.mix, l)
		}
		weights(512, 1536)
	}
	frozenOnce(mix.BE) // tdm still in force

	mark = c.reload(head + "\n[mix]\nratio = \"2:1\"\nmode = \"ps\"\n")
	c.waitLog(mark, "mix reloaded", "ratio=2:1", "mode=ps")
	weights(1365, 683)
	waitMix(t, "both classes thawed in ps", func() bool {
		r, _ := g.FreezerState(mix.RT)
		b, _ := g.FreezerState(mix.BE)
		return r == "THAWED" && b == "THAWED"
	})
	for _, id := range []string{be, rt} {
		if st, s := c.state(id), c.run(0, work, "squeue", "-h", "-j", id, "-o", "%S").stdout; st != "RUNNING" || s != started[id] {
			t.Errorf("job %s after the reloads: %s started %q, want RUNNING started %q", id, st, s, started[id])
		}
	}
	c.run(0, work, "scancel", be, rt)
	c.waitState(be, "CANCELLED")
	c.waitState(rt, "CANCELLED")
	waitMixEmpty(t, g)
	c.stop()
	if left := cgmix.Leftover(cgmix.DefaultRoot, "hora-"+name); len(left) > 0 {
		t.Fatalf("hora-%s groups left under %v", name, left)
	}
}

// Gang mode (1GS) on real local nodes: a periodic RT job and a BE job on
// the same node take the two rows of a 1:1 matrix and are stopped and
// continued in turn every quantum, each in its own freezer group; a BE job
// alone on another node holds every row (the §4.1 replication) and is never
// stopped. The same mix.GangPlan decides as in replay.
func TestMixGangOnLocalNodes(t *testing.T) {
	requireRoot(t)
	name := fmt.Sprintf("e2egang%d", rand.Uint32())
	c := newClusterWith(t, "cluster_name = \""+name+"\"\n"+localBatch+`
[mix]
ratio = "1:1"
mode = "gang"
rows = 2
quantum = 0.5
`)
	g := openMixGroups(t, name)
	work := c.workDir()
	out := filepath.Join(work, "rt.out")
	// A buffer of 20 frames (2 s) covers the 1GS cycle M·Q = 1 s: the rows test admits it.
	rt := c.submit(work, "--rt-frame=100ms", "--rt-buffer=20", "--rt-work=10ms", "-n", "1", "-o", out, "--wrap", "cat /proc/self/cgroup; sleep 300")
	c.waitState(rt, "RUNNING")
	node := strings.TrimSpace(c.run(0, work, "squeue", "-h", "-j", rt, "-o", "%N").stdout)
	other := "local1"
	if node == other {
		other = "local2"
	}
	be := c.submit(work, "-w", node, "--wrap", "sleep 300")
	alone := c.submit(work, "-w", other, "--wrap", "sleep 300")
	for _, id := range []string{be, alone} {
		c.waitState(id, "RUNNING")
	}
	step := func(id, node string) string { return id + "_" + node }
	waitMix(t, "the three step groups populated", func() bool {
		steps, _ := g.Steps()
		n := 0
		for _, s := range steps {
			if s.Procs > 0 && (s.Name == step(rt, node) && s.Class == mix.RT || s.Name == step(be, node) && s.Class == mix.BE ||
				s.Name == step(alone, other) && s.Class == mix.BE) {
				n++
			}
		}
		return n == 3
	})
	b, _ := os.ReadFile(out)
	if want := ":freezer:/hora-" + name + "/rt/" + step(rt, node); !strings.Contains(string(b), want) {
		t.Errorf("periodic job's cgroups:\n%s\nwant %s", b, want)
	}
	// Each job sharing the node is seen stopped and then running again;
	// the lone job is sampled all along.
	seen := map[string]bool{}
	aloneStopped := ""
	waitMix(t, "the two jobs of "+node+" stopped and continued in turn", func() bool {
		for _, s := range []struct {
			c  mix.Class
			id string
		}{{mix.RT, rt}, {mix.BE, be}} {
			st, _ := g.StepState(s.c, step(s.id, node))
			if st == "FROZEN" {
				seen[s.id+" frozen"] = true
			} else if st == "THAWED" && seen[s.id+" frozen"] {
				seen[s.id+" thawed after"] = true
			}
		}
		if st, _ := g.StepState(mix.BE, step(alone, other)); st != "THAWED" {
			aloneStopped = st
		}
		return len(seen) == 4
	})
	if aloneStopped != "" {
		t.Errorf("the job alone on %s was stopped (%s): it holds every row", other, aloneStopped)
	}
	c.run(0, work, "scancel", rt, be, alone)
	for _, id := range []string{rt, be, alone} {
		c.waitState(id, "CANCELLED")
	}
	waitMixEmpty(t, g)
	c.stop()
	if left := cgmix.Leftover(cgmix.DefaultRoot, "hora-"+name); len(left) > 0 {
		t.Fatalf("hora-%s groups left under %v", name, left)
	}
}
