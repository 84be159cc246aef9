package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"hora/nodes/ssh/sshtest"
)

// [mix] ps on SSH nodes running systemd: a periodic RT job's step runs in
// hora-rt.slice and a batch job's in hora-be.slice on the same node, the
// slices weighted 2:1 (CPUWeight 6667 and 3333).
func TestMixPSOnSSHNodes(t *testing.T) {
	c, _, dir := mixSSHCluster(t, "ratio = \"2:1\"\nmode = \"ps\"\n")
	script := `grep '^0::' /proc/self/cgroup; systemctl show --property=CPUWeight hora-rt.slice hora-be.slice | tr '\n' ' '`
	rt := c.submit(dir, "--rt-frame=10ms", "--rt-work=2ms", "-o", "rt.out", "--wrap", script)
	be := c.submit(dir, "-w", "n1", "-o", "be.out", "--wrap", script)
	for id, class := range map[string]string{rt: "rt", be: "be"} {
		c.waitState(id, "COMPLETED")
		out, _ := os.ReadFile(filepath.Join(dir, class+".out"))
		want := regexp.MustCompile(`^0::/hora\.slice/hora-` + class + `\.slice/hora-job-` + id + `-batch-r0\.scope\nCPUWeight=6667 +CPUWeight=3333 $`)
		if !want.Match(out) {
			t.Errorf("job %s (%s) wrote %q, want its scope in hora-%s.slice and the weights 6667 3333", id, class, out, class)
		}
	}
}

// [mix] tdm on SSH nodes: while a periodic RT job and a batch job both run
// on n1, horad's divisions freeze the BE slice (RT's division) and thaw it
// again (BE's), observed in the node's cgroup.events. A reload to ps 1:3
// thaws both slices on the node and sets their weights at once, under the
// running jobs; when horad stops, both slices are left thawed.
func TestMixTDMOnSSHNodes(t *testing.T) {
	c, cl, dir := mixSSHCluster(t, "ratio = \"1:1\"\nmode = \"tdm\"\nperiod = 1\n")
	gate := filepath.Join(dir, "gate")
	loop := "while [ ! -e " + gate + " ]; do sleep 0.05; done"
	rt := c.submit(dir, "--rt-frame=10ms", "--rt-work=2ms", "-o", "/dev/null", "--wrap", loop)
	be := c.submit(dir, "-w", "n1", "-o", "/dev/null", "--wrap", loop)
	c.waitState(rt, "RUNNING")
	c.waitState(be, "RUNNING")
	h := cl.Hosts[0]
	frozen := func(class string) string {
		b, _ := os.ReadFile(filepath.Join(h.CgroupDir(), "hora.slice", "hora-"+class+".slice", "cgroup.events"))
		for _, l := range strings.Split(string(b), "\n") {
			if f, ok := strings.CutPrefix(l, "frozen "); ok {
				return f
			}
		}
		return ""
	}
	for _, want := range []string{"1", "0", "1"} {
		deadline := time.Now().Add(60 * time.Second)
		for frozen("be") != want {
			if time.Now().After(deadline) {
				t.Fatalf("hora-be.slice never frozen=%s", want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	mark := c.reload(sshConfig(cl, "", "") + "[mix]\nratio = \"1:3\"\nmode = \"ps\"\n")
	c.waitLog(mark, "mix reloaded", "ratio=1:3", "mode=ps")
	for _, class := range []string{"rt", "be"} {
		deadline := time.Now().Add(60 * time.Second)
		for frozen(class) != "0" {
			if time.Now().After(deadline) {
				t.Fatalf("after the reload to ps, hora-%s.slice is still frozen", class)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for slice, w := range map[string]string{"hora-rt.slice": "2500", "hora-be.slice": "7500"} {
		out, err := h.Systemctl("show", "--property=CPUWeight", slice)
		if err != nil || strings.TrimSpace(out) != "CPUWeight="+w {
			t.Errorf("after the reload, %s on n1: %q, %v; want CPUWeight=%s", slice, out, err, w)
		}
	}
	for _, id := range []string{rt, be} {
		if st := c.state(id); st != "RUNNING" {
			t.Errorf("job %s after the reload: %s", id, st)
		}
	}
	c.stop()
	for _, class := range []string{"rt", "be"} {
		if f := frozen(class); f != "0" {
			t.Errorf("after horad stopped, hora-%s.slice frozen=%q", class, f)
		}
	}
	os.WriteFile(gate, nil, 0o644)
}

// [mix] gang on SSH nodes: a periodic RT job and a batch job on n1 are in
// the two rows of a 1:1 matrix (M = 2); the node's agent rotates the rows
// every quantum, so each job's scope is seen frozen while the other's is
// not, then the other way round, then back. When horad stops, both are
// left thawed.
func TestMixGangOnSSHNodes(t *testing.T) {
	c, cl, dir := mixSSHCluster(t, "ratio = \"1:1\"\nmode = \"gang\"\nquantum = 0.3\nrows = 2\n")
	gate := filepath.Join(dir, "gate")
	loop := "while [ ! -e " + gate + " ]; do sleep 0.02; done"
	// Admitted by the rows test (§4.4): the 1GS cycle M·Q = 0.6 s is within
	// the buffer of 10 frames of 100 ms; a buffer of one frame is refused.
	if r := c.run(0, dir, "sbatch", "--rt-frame=100ms", "--rt-work=2ms", "--wrap", "true"); r.code != 1 ||
		!strings.Contains(r.stderr, "1GS cycle") {
		t.Fatalf("a buffer shorter than the 1GS cycle: exit %d, %q", r.code, r.stderr)
	}
	rt := c.submit(dir, "--rt-frame=100ms", "--rt-buffer=10", "--rt-work=2ms", "-o", "/dev/null", "--wrap", loop)
	be := c.submit(dir, "-w", "n1", "-o", "/dev/null", "--wrap", loop)
	c.waitState(rt, "RUNNING")
	c.waitState(be, "RUNNING")
	h := cl.Hosts[0]
	frozen := func(class, id string) string {
		b, _ := os.ReadFile(filepath.Join(h.CgroupDir(), "hora.slice", "hora-"+class+".slice", "hora-job-"+id+"-batch-r0.scope", "cgroup.events"))
		for _, l := range strings.Split(string(b), "\n") {
			if f, ok := strings.CutPrefix(l, "frozen "); ok {
				return f
			}
		}
		return ""
	}
	for _, want := range [][2]string{{"0", "1"}, {"1", "0"}, {"0", "1"}} {
		deadline := time.Now().Add(60 * time.Second)
		for frozen("rt", rt) != want[0] || frozen("be", be) != want[1] {
			if time.Now().After(deadline) {
				t.Fatalf("RT job %s frozen=%q and BE job %s frozen=%q, never %s and %s", rt, frozen("rt", rt), be, frozen("be", be), want[0], want[1])
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	c.stop()
	if f, g := frozen("rt", rt), frozen("be", be); f != "0" || g != "0" {
		t.Errorf("after horad stopped: RT job frozen=%q, BE job frozen=%q", f, g)
	}
	os.WriteFile(gate, nil, 0o644)
}

// mixSSHCluster is horad on three SSH hosts booting systemd with the given
// [mix] table, and a directory owned by nobody to submit from.
func mixSSHCluster(t *testing.T, mixTable string) (*cluster, *sshtest.Cluster, string) {
	requireRoot(t)
	cl := sshtest.StartCluster(t, 3, sshtest.WithSystemd(1), sshtest.WithSystemd(2), sshtest.WithSystemd(3))
	c := newClusterWith(t, sshConfig(cl, "", "")+"[mix]\n"+mixTable)
	dir := c.nobodyDir()
	return c, cl, dir
}
