package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hora/nodes/cgmix"
	"hora/scheduler/mix"
)

// [mix] on local nodes: horad sets the class weights to the ratio, a batch
// job runs in the BE group and a reserve job in the RT group; on SIGTERM
// both classes are left running (thawed). Shares themselves are measured in
// nodes/cgmix's BenchmarkShares, not here.
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
	g, err := cgmix.Open(cgmix.DefaultRoot, "hora-"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
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
	c.stop()
	for _, cl := range []mix.Class{mix.RT, mix.BE} {
		if s, _ := g.FreezerState(cl); s != "THAWED" {
			t.Fatalf("after horad stopped, %s is %s", cl, s)
		}
	}
}
