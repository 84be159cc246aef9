package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// soloNode is one local node of 4 CPUs and 4000 MiB in one partition.
const soloNode = `
[[node]]
name = "solo"
cpus = 4
memory_mb = 4000

[[partition]]
name = "batch"
nodes = "solo"
default = true
`

// Consumable resources through the real daemon and clients (issue 11):
// eight one-CPU jobs on one 4-CPU node run four at a time (counted from the
// jobs' own start/end log, not from timing), each with its own CPU and
// Slurm's variables; the node shows as allocated then mixed; a request no
// node could ever satisfy is refused at submit with Slurm's text, exit 1,
// and nothing stored.
func TestConsumableResourcesEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, soloNode)
	work := c.workDir()
	logf := filepath.Join(work, "runs.log")
	gate := filepath.Join(work, "gate")
	var ids []string
	for k := 0; k < 8; k++ {
		ids = append(ids, c.submit(work, "-n", "1", "--mem=100M", "-o", filepath.Join(work, "out-%j"), "--wrap",
			"echo start $SLURM_JOB_ID >> "+logf+"; echo $SLURM_CPUS_ON_NODE $SLURM_JOB_CPUS_PER_NODE $SLURM_NTASKS $SLURM_MEM_PER_NODE; "+
				"while [ ! -e "+gate+" ]; do sleep 0.05; done; echo end $SLURM_JOB_ID >> "+logf))
	}
	starts := func() int {
		b, _ := os.ReadFile(logf)
		return strings.Count(string(b), "start ")
	}
	waitFor(t, "four jobs running", func() bool { return starts() == 4 })
	// Four run and hold the gate: the others must be pending, for
	// Resources (the first) and Priority.
	waitFor(t, "squeue agrees", func() bool {
		r := c.run(0, work, "squeue", "-h", "-o", "%t %r %C %m")
		return strings.Count(r.stdout, "R None 1 100M") == 4 && strings.Count(r.stdout, "PD ") == 4
	})
	if r := c.run(0, work, "squeue", "-h", "-t", "PD", "-o", "%r"); !strings.Contains(r.stdout, "Resources") {
		t.Errorf("pending reasons %q", r.stdout)
	}
	node := c.run(0, work, "scontrol", "show", "node", "solo").stdout
	for _, w := range []string{"CPUAlloc=4 ", "CPUTot=4 ", "RealMemory=4000 AllocMem=400 ", "State=ALLOCATED ", "AllocTRES=cpu=4,mem=400M"} {
		if !strings.Contains(node, w) {
			t.Errorf("scontrol show node lacks %q:\n%s", w, node)
		}
	}
	if starts() != 4 {
		t.Fatalf("%d jobs started while four held all CPUs", starts())
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		c.waitState(id, "COMPLETED")
	}
	// Overlap accounting: never more than four between a start and its end.
	b, _ := os.ReadFile(logf)
	running, most := 0, 0
	for _, ln := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		switch {
		case strings.HasPrefix(ln, "start "):
			running++
		case strings.HasPrefix(ln, "end "):
			running--
		}
		most = max(most, running)
	}
	if most != 4 || strings.Count(string(b), "end ") != 8 {
		t.Fatalf("at most %d ran at once (want 4):\n%s", most, b)
	}
	for _, id := range ids {
		out, _ := os.ReadFile(filepath.Join(work, "out-"+id))
		if strings.TrimSpace(string(out)) != "1 1 1 100" {
			t.Errorf("job %s environment %q, want \"1 1 1 100\"", id, out)
		}
	}
	r := c.run(0, work, "sacct", "-j", ids[0], "-X", "-P", "-n", "-o", "AllocCPUS,ReqMem,AllocTRES")
	if got := strings.TrimSpace(r.stdout); got != "1|100M|billing=1,cpu=1,mem=100M,node=1" {
		t.Errorf("sacct %q", got)
	}

	// A 1-CPU job and a 2-CPU job share the node: mixed, 3 of 4 CPUs.
	gate2 := filepath.Join(work, "gate2")
	hold := "while [ ! -e " + gate2 + " ]; do sleep 0.05; done"
	a := c.submit(work, "-c", "1", "-o", "/dev/null", "--wrap", hold)
	bb := c.submit(work, "-c", "2", "-o", "/dev/null", "--wrap", hold)
	c.waitState(a, "RUNNING")
	c.waitState(bb, "RUNNING")
	if r := c.run(0, work, "sinfo", "-h", "-o", "%t %C"); strings.TrimSpace(r.stdout) != "mix 3/1/0/4" {
		t.Errorf("sinfo %q, want \"mix 3/1/0/4\"", r.stdout)
	}
	os.WriteFile(gate2, nil, 0o644)
	c.waitState(a, "COMPLETED")
	c.waitState(bb, "COMPLETED")

	// Never satisfiable: refused, exit 1, nothing stored.
	before := c.run(0, work, "sacct", "-a", "-X", "-n", "-P", "-o", "JobID", "-S", "2000-01-01").stdout
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--mem=1T"}, "Memory required by task is not available"},
		{[]string{"-n", "5", "-N", "1"}, "Requested node configuration is not available"},
		{[]string{"--gres=gpu:1"}, "Invalid generic resource (gres) specification"},
	} {
		r := c.run(0, work, "sbatch", append(tc.args, "--wrap", "true")...)
		want := "sbatch: error: Batch job submission failed: " + tc.msg + "\n"
		if r.code != 1 || r.stderr != want || r.stdout != "" {
			t.Errorf("sbatch %q: exit %d stdout %q stderr %q, want exit 1 and %q", tc.args, r.code, r.stdout, r.stderr, want)
		}
	}
	if after := c.run(0, work, "sacct", "-a", "-X", "-n", "-P", "-o", "JobID", "-S", "2000-01-01").stdout; after != before {
		t.Errorf("a refused job was stored: before %q after %q", before, after)
	}
	// The next job gets the next id: refusals consumed none.
	next := c.submit(work, "-o", "/dev/null", "--wrap", "true")
	if n, _ := strconv.Atoi(next); n != 11 {
		t.Errorf("next job id %s, want 11", next)
	}
}

// Enforcement on a real local node (cgroup v1 cpuset and memory): a job
// sees only its CPUs; one that touches more memory than --mem is killed by
// the kernel and ends OUT_OF_MEMORY (squeue OOM, sacct 0:125) with
// slurmstepd's line in its error file; its cgroups are gone afterwards.
func TestResourceEnforcementEndToEnd(t *testing.T) {
	requireRoot(t)
	for _, c := range []string{"cpuset", "memory"} {
		if _, err := os.Stat("/sys/fs/cgroup/" + c + "/cgroup.procs"); err != nil {
			t.Fatalf("this test needs the cgroup v1 %s hierarchy at /sys/fs/cgroup/%s (CI mounts it): %v", c, c, err)
		}
	}
	c := newClusterWith(t, soloNode)
	work := c.workDir()
	cpus := c.submit(work, "-c", "1", "-o", filepath.Join(work, "cpus.out"), "--wrap",
		"grep Cpus_allowed_list /proc/self/status; grep -c ':cpuset:/hora-' /proc/self/cgroup; grep -c ':memory:/hora-' /proc/self/cgroup; true")
	c.waitState(cpus, "COMPLETED")
	out, _ := os.ReadFile(filepath.Join(work, "cpus.out"))
	lines := strings.Fields(string(out))
	if len(lines) != 4 || lines[0] != "Cpus_allowed_list:" || strings.ContainsAny(lines[1], ",-") || lines[2] != "1" || lines[3] != "0" {
		t.Errorf("a 1-CPU job sees %q, want one CPU and one hora cgroup (cpuset; no memory limit asked)", out)
	}
	// Usage measured by the shepherd: the batch step's peak RSS and CPU time.
	busy := c.submit(work, "-c", "1", "-o", "/dev/null", "--wrap", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done")
	c.waitState(busy, "COMPLETED")
	use := c.run(0, work, "sacct", "-j", busy, "-P", "-n", "-o", "JobID,MaxRSS,TotalCPU").stdout
	if !regexp.MustCompile(`^` + busy + `\|\|\d\d:\d\d\.\d{3}\n` + busy + `\.batch\|[1-9]\d*K\|\d\d:\d\d\.\d{3}\n$`).MatchString(use) {
		t.Errorf("sacct usage %q", use)
	}

	oom := c.submit(work, "--mem=40M", "-o", filepath.Join(work, "oom.out"), "-e", filepath.Join(work, "oom.err"),
		"--wrap", "head -c 400M /dev/zero | tail > /dev/null; echo survived")
	c.waitState(oom, "OUT_OF_MEMORY")
	if r := c.run(0, work, "squeue", "-h", "-t", "all", "-j", oom, "-o", "%t %r"); strings.TrimSpace(r.stdout) != "OOM OutOfMemory" {
		t.Errorf("squeue %q", r.stdout)
	}
	r := c.run(0, work, "sacct", "-j", oom, "-X", "-P", "-n", "-o", "State,ExitCode")
	if got := strings.TrimSpace(r.stdout); got != "OUT_OF_MEMORY|0:125" {
		t.Errorf("sacct %q", got)
	}
	errb, _ := os.ReadFile(filepath.Join(work, "oom.err"))
	// One event, or two when the kernel also kills head (Slurm counts them).
	want := regexp.MustCompile(`slurmstepd: error: Detected (1 oom_kill event|2 oom_kill events) in StepId=` + oom + `\.batch\. Some of the step tasks have been OOM Killed\.\n$`)
	if !want.Match(errb) {
		t.Errorf("error file %q lacks slurmstepd's oom_kill line", errb)
	}
	// This horad's groups only (nodes/local names them after a hash of its
	// node state directory): job ids start at 1 in every test cluster, and
	// another run's groups are not this one's to judge.
	h := sha256.Sum256([]byte(filepath.Join(c.varDir, "nodes")))
	mine := "hora-" + hex.EncodeToString(h[:4])
	waitFor(t, "the step's cgroups removed", func() bool {
		m, _ := filepath.Glob("/sys/fs/cgroup/memory/" + mine + "/solo/" + oom + ".batch*")
		p, _ := filepath.Glob("/sys/fs/cgroup/cpuset/" + mine + "/solo/" + cpus + ".batch*")
		return len(m) == 0 && len(p) == 0
	})
	// Once horad has stopped, none of its groups is left on any controller
	// (the node's and the top group go with the last step).
	c.stop()
	for _, ctrl := range []string{"cpuset", "memory", "devices", "freezer", "cpu"} {
		if _, err := os.Stat("/sys/fs/cgroup/" + ctrl + "/" + mine); !os.IsNotExist(err) {
			left, _ := filepath.Glob("/sys/fs/cgroup/" + ctrl + "/" + mine + "/*/*")
			t.Errorf("after horad stopped, /sys/fs/cgroup/%s/%s is still there (%v; steps %v)", ctrl, mine, err, left)
		}
	}
}

// Allocations survive kill -9 of horad: after the restart the running
// jobs hold the same CPUs (scontrol CPUAlloc, no fifth job squeezed in),
// the pending one waits, and starts when a CPU is given back.
func TestConsumableResourcesRecoveryEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, soloNode)
	work := c.workDir()
	gate := filepath.Join(work, "gate")
	var ids []string
	for k := 0; k < 5; k++ {
		ids = append(ids, c.submit(work, "-c", "1", "--mem=50M", "-o", "/dev/null", "--wrap",
			"while [ ! -e "+gate+"-$SLURM_JOB_ID ]; do sleep 0.05; done"))
	}
	for _, id := range ids[:4] {
		c.waitState(id, "RUNNING")
	}
	alloc := func() string {
		return strings.TrimSpace(c.run(0, work, "squeue", "-h", "-S", "i", "-o", "%i %t %C %m").stdout)
	}
	before := alloc()
	cpusOf := func(id string) string {
		return strings.TrimSpace(c.run(0, work, "sacct", "-j", id, "-X", "-P", "-n", "-o", "AllocCPUS,ReqMem").stdout)
	}
	c.kill9()
	c.start()
	if got := alloc(); got != before {
		t.Fatalf("after restart squeue\n%s\nwant\n%s", got, before)
	}
	node := c.run(0, work, "scontrol", "show", "node", "solo").stdout
	if !strings.Contains(node, "CPUAlloc=4 ") || !strings.Contains(node, "AllocMem=200 ") {
		t.Fatalf("after restart the node shows\n%s", node)
	}
	if c.state(ids[4]) != "PENDING" {
		t.Fatalf("job %s started on a node whose CPUs were all held", ids[4])
	}
	os.WriteFile(gate+"-"+ids[0], nil, 0o644)
	c.waitState(ids[0], "COMPLETED")
	c.waitState(ids[4], "RUNNING")
	if got := cpusOf(ids[4]); got != "1|50M" {
		t.Errorf("sacct of the job started after the restart: %q", got)
	}
	for _, id := range ids[1:] {
		os.WriteFile(gate+"-"+id, nil, 0o644)
		c.waitState(id, "COMPLETED")
	}
}

// removeCgroups ends what a stopped test cluster left running in its
// cgroups (jobs a test left running when it stopped horad: their shepherds
// outlive it by design) and removes the groups, so that test clusters do
// not pile up groups on the machine. Tests that check horad's own removal
// do so before this runs.
func (c *cluster) removeCgroups() {
	h := sha256.Sum256([]byte(filepath.Join(c.varDir, "nodes")))
	mine := "hora-" + hex.EncodeToString(h[:4])
	for _, ctrl := range []string{"cpuset", "memory", "devices", "freezer", "cpu"} {
		top := filepath.Join("/sys/fs/cgroup", ctrl, mine)
		for try := 0; try < 100; try++ {
			var dirs []string
			_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			if len(dirs) == 0 {
				break
			}
			for k := len(dirs) - 1; k >= 0; k-- { // deepest first
				b, _ := os.ReadFile(filepath.Join(dirs[k], "cgroup.procs"))
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
				_ = os.Remove(dirs[k])
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
