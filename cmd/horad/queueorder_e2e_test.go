package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// oneNode is a cluster of one node, so that whole-node jobs run one at a
// time, in the order the pending queue serves them.
const oneNode = `
[[node]]
name = "solo"

[[partition]]
name = "batch"
nodes = "solo"
default = true
`

// TestScontrolReordersPendingQueue: scontrol update Priority= (root),
// Nice= and scontrol top change the order in which pending jobs start,
// with Slurm 22.05's texts for refused requests, which change nothing.
func TestScontrolReordersPendingQueue(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, oneNode)
	work := c.workDir()
	order := filepath.Join(work, "order.txt")
	blocker := c.submit(work, "-o", "/dev/null", "--wrap", "sleep 300")
	c.waitState(blocker, "RUNNING")
	job := func(name string) string {
		return c.submit(work, "-J", name, "-o", "/dev/null", "--wrap", "echo "+name+" >> "+order)
	}
	a, b, cc, d := job("a"), job("b"), job("c"), job("d")
	queue := func() string {
		return c.run(0, work, "squeue", "-h", "-t", "PD", "-o", "%j %y").stdout
	}
	before := queue()
	if before != "a 0\nb 0\nc 0\nd 0\n" {
		t.Fatalf("pending queue before any change:\n%s", before)
	}

	// Refusals: Slurm's texts and exit 1, and nothing changes.
	for _, tc := range []struct {
		uid    int
		args   []string
		stderr string
	}{
		{65534, []string{"top", cc}, "Access/permission denied for job " + cc + "\n"},
		{0, []string{"top", "99999"}, "Invalid job id specified for job 99999\n"},
		{0, []string{"top", blocker}, "Job is no longer pending execution for job " + blocker + "\n"},
		{0, []string{"top", "abc"}, "Invalid job id specified for job abc\n"},
		{0, []string{"top"}, "too few arguments for keyword:top\n"},
		{0, []string{"update", "JobId=" + a, "Priority=abc"}, "scontrol: error: Invalid Priority value: abc\n"},
		{0, []string{"update", "JobId=" + a, "Priority=-1"}, "scontrol: error: Invalid Priority value: -1\n"},
		{0, []string{"update", "JobId=" + a, "Nice=2147483646"}, "scontrol: error: Nice value out of range (+/- 2147483645). Value ignored\n"},
		{65534, []string{"update", "JobId=" + a, "Nice=5"}, "Invalid user id for job " + a + "\n"},
		{0, []string{"update", "JobId=" + blocker, "ExcNodeList=solo"}, "Job is no longer pending execution for job " + blocker + "\n"},
		{0, []string{"update", "JobId=" + a, "ExcNodeList=n[1-"}, "Invalid node name specified for job " + a + "\n"},
	} {
		r := c.run(tc.uid, work, "scontrol", tc.args...)
		if r.code != 1 || r.stderr != tc.stderr || r.stdout != "" {
			t.Errorf("scontrol %v as %d: exit %d stdout %q stderr %q, want exit 1 and %q", tc.args, tc.uid, r.code, r.stdout, r.stderr, tc.stderr)
		}
	}
	if got := queue(); got != before {
		t.Fatalf("refused requests changed the queue:\n%s\nwas\n%s", got, before)
	}

	// Nice=10 puts a behind b, c and d (priority/basic: priority − nice).
	if r := c.run(0, work, "scontrol", "update", "JobId="+a, "Nice=10"); r.code != 0 {
		t.Fatalf("Nice: %+v", r)
	}
	// top c: c takes b's place, b moves down one, each by a change of nice.
	if r := c.run(0, work, "scontrol", "top", cc); r.code != 0 || r.stderr != "" {
		t.Fatalf("top: %+v", r)
	}
	if got := queue(); got != "c -1\nb 1\nd 0\na 10\n" {
		t.Fatalf("after Nice and top, the queue (name nice) is\n%s", got)
	}
	// Priority= (root) puts d first.
	if r := c.run(0, work, "scontrol", "update", "JobId="+d, "Priority=4294967000"); r.code != 0 {
		t.Fatalf("Priority: %+v", r)
	}
	// Priority=0 holds a pending job (JobHeldAdmin), as Slurm 22.05 does.
	e := job("e")
	if r := c.run(0, work, "scontrol", "update", "JobId="+e, "Priority=0"); r.code != 0 {
		t.Fatalf("Priority=0: %+v", r)
	}
	// Restart: the order and the hold are durable.
	c.kill9()
	c.start()
	if r := c.run(0, work, "squeue", "-h", "-j", e, "-o", "%r %Q"); r.stdout != "JobHeldAdmin 0\n" {
		t.Fatalf("after Priority=0 and a restart, job e shows %q", r.stdout)
	}
	if r := c.run(0, work, "scancel", blocker); r.code != 0 {
		t.Fatalf("scancel: %+v", r)
	}
	for _, id := range []string{a, b, cc, d} {
		c.waitState(id, "COMPLETED")
	}
	got, _ := os.ReadFile(order)
	if string(got) != "d\nc\nb\na\n" {
		t.Fatalf("jobs started in the order\n%s, want d c b a (e held)", got)
	}
	if st := c.state(e); st != "PENDING" {
		t.Fatalf("the held job e is %s", st)
	}
	c.run(0, work, "scancel", e)
}

// TestScontrolUpdateExcNodeList: a pending job's excluded nodes change
// where it may run; the job then starts on the node left.
func TestScontrolUpdateExcNodeList(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, localBatch)
	work := c.workDir()
	j := c.submit(work, "-n", "1", "-H", "-o", "/dev/null", "--wrap", "true")
	if r := c.run(0, work, "scontrol", "update", "JobId="+j, "ExcNodeList=local[1-3]"); r.code != 0 {
		t.Fatalf("update: %+v", r)
	}
	if r := c.run(0, work, "scontrol", "show", "job", j); !strings.Contains(r.stdout, " ExcNodeList=local[1-3]\n") {
		t.Fatalf("show job after the update:\n%s", r.stdout)
	}
	if r := c.run(0, work, "scontrol", "release", j); r.code != 0 {
		t.Fatalf("release: %+v", r)
	}
	c.waitState(j, "COMPLETED")
	if r := c.run(0, work, "squeue", "-h", "-t", "all", "-j", j, "-o", "%N"); r.stdout != "local4\n" {
		t.Fatalf("the job ran on %q, want local4 (local[1-3] excluded)", r.stdout)
	}
}

// TestScontrolListPids: the processes of a running job on this machine in
// Slurm's columns, its batch shell with task ids 0 and its children with
// "-"; Slurm's texts for a job or step with none.
func TestScontrolListPids(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, localBatch)
	work := c.workDir()
	j := c.submit(work, "-o", "/dev/null", "--wrap", "sleep 300 & wait")
	c.waitState(j, "RUNNING")
	row := regexp.MustCompile(`^(\d+) +` + j + ` +batch +(0|-) +(0|-) +$`)
	var r result
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		r = c.run(0, work, "scontrol", "listpids", j)
		if strings.Count(r.stdout, "\n") >= 3 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != 0 || lines[0] != "PID      JOBID    STEPID   LOCALID GLOBALID" || len(lines) != 3 {
		t.Fatalf("listpids %s: exit %d\n%s%s", j, r.code, r.stdout, r.stderr)
	}
	m0, m1 := row.FindStringSubmatch(lines[1]), row.FindStringSubmatch(lines[2])
	if m0 == nil || m1 == nil || m0[2] != "0" || m1[2] != "-" {
		t.Fatalf("listpids rows:\n%s", r.stdout)
	}
	// The first row is the batch shell, the second its sleep.
	if comm, _ := os.ReadFile("/proc/" + m1[1] + "/comm"); string(comm) != "sleep\n" {
		t.Fatalf("pid %s is %q, not the job's sleep", m1[1], comm)
	}
	if all := c.run(0, work, "scontrol", "listpids"); !strings.Contains(all.stdout, lines[1]+"\n") || all.code != 0 {
		t.Fatalf("listpids without a job lacks the job's shell:\n%s", all.stdout)
	}
	header := "PID      JOBID    STEPID   LOCALID GLOBALID\n"
	for _, tc := range []struct {
		args           []string
		stdout, stderr string
	}{
		{[]string{"99999"}, header, "There are no steps for job 99999 on node (null).\n"},
		{[]string{j + ".7"}, header, "StepId=" + j + ".7 does not exist on node (null).\n"},
		{[]string{j, "nosuch"}, header, "JobId=" + j + " does not exist on node nosuch.\n"},
		{[]string{"abc"}, "", "\"abc\" does not look like a jobid\n"},
		{[]string{j + ".batch"}, "", "\"" + j + ".batch\" does not look like a stepid\n"},
	} {
		got := c.run(0, work, "scontrol", append([]string{"listpids"}, tc.args...)...)
		if got.code != 1 || got.stdout != tc.stdout || got.stderr != tc.stderr {
			t.Errorf("listpids %v: exit %d stdout %q stderr %q, want exit 1, %q, %q", tc.args, got.code, got.stdout, got.stderr, tc.stdout, tc.stderr)
		}
	}
	c.run(0, work, "scancel", j)
}

// TestToilReadsShowConfig runs toil's own SlurmBatchSystem.getWaitDuration
// (Debian's toil, scripts/deps.sh) against hora's scontrol show config:
// it takes the larger of SchedulerTimeSlice and AcctGatherNodeFreq × 1.2
// and fails when neither is printed.
func TestToilReadsShowConfig(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, localBatch)
	cmd := exec.Command("/usr/bin/python3", "-c",
		"from toil.batchSystems.slurm import SlurmBatchSystem as S; print(S.getWaitDuration())")
	cmd.Env = append(cleanEnv("HORA_SOCKET="+c.sock, "TZ=UTC"), "PATH="+c.bin+":/usr/bin:/bin")
	out, err := cmd.Output() // stderr: toil's warnings about cwltool
	if err != nil || !strings.HasSuffix("\n"+string(out), "\n36\n") {
		t.Fatalf("toil's getWaitDuration: %v\n%s", err, out)
	}
}

// TestScontrolListPidsSteps: the tasks of an srun step inside a batch job
// are listed under their step id with their task ids, after the batch
// step's processes.
func TestScontrolListPidsSteps(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, localBatch)
	work := c.workDir()
	j := c.submit(work, "-n", "2", "-o", filepath.Join(work, "steps.out"), "--wrap", filepath.Join(c.bin, "srun")+" -n 2 sleep 300")
	c.waitState(j, "RUNNING")
	step := regexp.MustCompile(`(?m)^\d+ +` + j + ` +0 +([01]) +([01]) +$`)
	var r result
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		r = c.run(0, work, "scontrol", "listpids", j+".0")
		if len(step.FindAllString(r.stdout, -1)) == 2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	m := step.FindAllStringSubmatch(r.stdout, -1)
	if len(m) != 2 || m[0][1] != "0" || m[1][1] != "1" || m[0][2] != "0" || m[1][2] != "1" {
		jo, _ := os.ReadFile(filepath.Join(work, "steps.out"))
		t.Fatalf("listpids %s.0: the step's two tasks with ids 0 and 1:\n%s%s\njob %s, its output:\n%s", j, r.stdout, r.stderr, c.state(j), jo)
	}
	all := c.run(0, work, "scontrol", "listpids", j).stdout
	if b, s := strings.Index(all, " batch "), strings.Index(all, " 0        0 "); b < 0 || s < b {
		t.Fatalf("listpids %s: the batch step's rows come first, then step 0's:\n%s", j, all)
	}
	c.run(0, work, "scancel", j)
}
