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
	long := c.submit(work, "--wrap", "sleep 300")
	c.waitState(long, "RUNNING")
	waitMix(t, "the running BE job in the BE group", func() bool { p, _ := g.Pids(mix.BE); return len(p) > 0 })
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
