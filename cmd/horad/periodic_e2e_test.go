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
)

// Periodic real-time jobs through the real sbatch: at 2:1 a node gives RT
// 2/3 of its CPU. A job of four processes of 40 ms per 100 ms frame with
// 10 frames of buffer takes 0.4 of each of the four nodes; a fifth process
// of the same size is refused at submit with what would fit, and nothing is
// stored; a best-effort job still runs on those nodes meanwhile. The
// periodic job runs in the RT class group with its contract in the
// environment, and squeue, scontrol and sacct show it; a restart of horad
// keeps it running with its share held. Once it ends, the
// refused job is admitted. Bad input is refused by sbatch naming the option.
func TestPeriodicRealTimeEndToEnd(t *testing.T) {
	requireRoot(t)
	name := fmt.Sprintf("e2eper%d", rand.Uint32())
	c := newClusterWith(t, "cluster_name = \""+name+"\"\n"+localBatch+`
[mix]
ratio = "2:1"
mode = "ps"
`)
	g := openMixGroups(t, name)
	work := c.workDir()
	out := filepath.Join(work, "per.out")
	// The job reports its missed frames itself (hora does not see frames).
	report := filepath.Join(c.bin, "scontrol") + ` update JobId=$SLURM_JOB_ID RTMisses=3`
	id := c.submit(work, "--rt-frame=100ms", "--rt-buffer=10", "--rt-work=40ms", "-n", "4", "-o", out,
		"--wrap", `cat /proc/self/cgroup; `+report+` && echo "rt $HORA_RT_FRAME $HORA_RT_BUFFER $HORA_RT_WORK"; sleep 300`)
	c.waitState(id, "RUNNING")
	deadline := time.Now().Add(60 * time.Second)
	var text string
	for !strings.Contains(text, "rt ") && time.Now().Before(deadline) {
		b, _ := os.ReadFile(out)
		text = string(b)
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(text, "rt 0.1 10 0.04,0.04,0.04,0.04") || !strings.Contains(text, ":freezer:/hora-"+name+"/rt") {
		t.Fatalf("periodic job output:\n%s\nwant its contract and the RT group", text)
	}
	squeueRT := func() {
		t.Helper()
		if r := c.run(0, work, "squeue", "-h", "-j", id, "-O", "JobID,RTFrame,RTMisses,NodeList"); strings.Join(strings.Fields(r.stdout), " ") != id+" 0.1s/10 3 local[1-4]" {
			t.Errorf("squeue -O JobID,RTFrame,RTMisses,NodeList: %q", r.stdout)
		}
	}
	squeueRT()
	if r := c.run(0, work, "scontrol", "show", "job", id); !strings.Contains(r.stdout, "RTClass=periodic RTFrame=0.1s RTBuffer=10 RTWork=0.04s(x4) RTMisses=3") {
		t.Errorf("scontrol show job:\n%s", r.stdout)
	}
	if r := c.run(0, work, "scontrol", "update", "JobId="+id, "RTMisses=-1"); r.code != 1 || !strings.Contains(r.stderr, "Invalid RTMisses value") {
		t.Errorf("RTMisses=-1: exit %d stderr %q", r.code, r.stderr)
	}

	count := func() int {
		r := c.run(0, work, "squeue", "-h", "-t", "all", "-o", "%i")
		return len(strings.Fields(r.stdout))
	}
	before := count()
	r := c.run(0, work, "sbatch", "--rt-frame=100ms", "--rt-buffer=10", "--rt-work=40ms", "--wrap", "true")
	if r.code != 1 || !strings.Contains(r.stderr, "Real-time job not admitted: node local") ||
		!strings.Contains(r.stderr, "would fit: one process of at most 0.02667s of work per 0.1s frame") {
		t.Errorf("over-full submit: exit %d stderr %q", r.code, r.stderr)
	}
	r = c.run(0, work, "sbatch", "--test-only", "--rt-frame=100ms", "--rt-buffer=10", "--rt-work=40ms", "--wrap", "true")
	if r.code != 1 || !strings.Contains(r.stderr, "would fit: one process of at most 0.02667s") {
		t.Errorf("--test-only over-full: exit %d stderr %q", r.code, r.stderr)
	}
	if r := c.run(0, work, "sbatch", "--test-only", "--rt-frame=100ms", "--rt-buffer=10", "--rt-work=20ms", "--wrap", "true"); r.code != 0 {
		t.Errorf("--test-only that fits: exit %d stderr %q", r.code, r.stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rt-frame=0", "--rt-work=1ms"}, "--rt-frame"},
		{[]string{"--rt-frame=10ms", "--rt-work=20ms"}, "--rt-work"},
		{[]string{"--rt-frame=10ms", "--rt-work=1ms,1ms", "-n", "3"}, "--rt-work"},
	} {
		r := c.run(0, work, "sbatch", append(tc.args, "--wrap", "true")...)
		if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("sbatch %q: exit %d stderr %q, want exit 1 naming %s", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if n := count(); n != before {
		t.Errorf("refused submissions stored jobs: %d jobs, had %d", n, before)
	}

	// A restart keeps the admitted job running and its share held.
	c.stop()
	c.start()
	if st := c.state(id); st != "RUNNING" {
		t.Fatalf("after a restart the periodic job is %s", st)
	}
	if r := c.run(0, work, "sbatch", "--rt-frame=100ms", "--rt-buffer=10", "--rt-work=40ms", "--wrap", "true"); r.code != 1 ||
		!strings.Contains(r.stderr, "Real-time job not admitted") {
		t.Errorf("over-full submit after a restart: exit %d stderr %q", r.code, r.stderr)
	}

	squeueRT() // the reported misses are durable

	// Best effort shares the nodes the periodic job runs on; it has no
	// frames to miss.
	be := c.submit(work, "-N", "4", "--wrap", "sleep 300")
	c.waitState(be, "RUNNING")
	if r := c.run(0, work, "scontrol", "update", "JobId="+be, "RTMisses=1"); r.code == 0 || !strings.Contains(r.stderr, "periodic real-time jobs") {
		t.Errorf("RTMisses on a batch job: exit %d stderr %q", r.code, r.stderr)
	}
	c.run(0, work, "scancel", be)
	c.waitState(be, "CANCELLED")

	c.run(0, work, "scancel", id)
	c.waitState(id, "CANCELLED")
	if r := c.run(0, work, "sacct", "-n", "-X", "-j", id, "-P", "-o", "JobID,RTFrame,RTMisses,State"); !strings.HasPrefix(r.stdout, id+"|0.1s/10|3|CANCELLED") {
		t.Errorf("sacct -o JobID,RTFrame,RTMisses,State: %q", r.stdout)
	}
	again := c.submit(work, "--rt-frame=100ms", "--rt-buffer=10", "--rt-work=40ms", "--wrap", "true")
	c.waitState(again, "COMPLETED")

	// With every job gone, a stopped horad leaves no class group behind.
	waitMixEmpty(t, g)
	c.stop()
	if left := cgmix.Leftover(cgmix.DefaultRoot, "hora-"+name); len(left) > 0 {
		t.Fatalf("horad stopped with no job left hora-%s groups under %v", name, left)
	}
}
