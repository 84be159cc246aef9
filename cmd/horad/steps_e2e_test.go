package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// Job steps end to end: srun inside a batch job on two nodes, srun and
// salloc creating their own allocations, scancel of a step, another
// user's srun into my job, sbatch --wait and --test-only (docs/steps.md).

// readWhenDone waits for a job to end and returns its output file.
func (c *cluster) outputOf(work, id string) string {
	c.t.Helper()
	c.waitState(id, "COMPLETED", "FAILED", "CANCELLED")
	b, err := os.ReadFile(filepath.Join(work, "slurm-"+id+".out"))
	if err != nil {
		c.t.Fatal(err)
	}
	return string(b)
}

func TestSrunStepsEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newCluster(t)
	work := c.workDir()
	srun := filepath.Join(c.bin, "srun")

	// 1. Four tasks on two nodes, two per node, labelled; each task sees
	// its own Slurm step environment.
	script := writeScript(t, work, "multi.sh", `#!/bin/sh
#SBATCH -N 2
`+srun+` -n 4 --ntasks-per-node=2 -l sh -c 'echo "proc=$SLURM_PROCID local=$SLURM_LOCALID node=$SLURM_NODEID host=$SLURMD_NODENAME step=$SLURM_STEP_ID ntasks=$SLURM_STEP_NUM_TASKS nodes=$SLURM_STEP_NODELIST job=$SLURM_JOB_ID"'
echo "rc=$?"
`+srun+` -n 4 -m cyclic -l sh -c 'echo "host=$SLURMD_NODENAME"'
`+srun+` -n 3 sh -c 'exit $SLURM_PROCID'
echo "rc=$?"
`+srun+` -n 2 sh -c 'if [ $SLURM_PROCID = 1 ]; then kill -TERM $$; fi; exit 5'
echo "rc=$?"
`+srun+` -n 2 -o 'task-%j-%s-%t.out' sh -c 'echo "out of $SLURM_PROCID"'
echo hello | `+srun+` -n 2 -i 0 -l cat
echo hey | `+srun+` -n 2 -l cat
`+srun+` -u sh -c 'printf "no newline"'
echo
`+srun+` --unbuffered --output sub-%j_%t_log.out --error sub-%j_%t_log.err sh -c 'echo o; echo e >&2'
`)
	id := c.submit(work, script)
	out := c.outputOf(work, id)
	lines := strings.Split(out, "\n")
	var step0 []string
	for _, l := range lines {
		if strings.Contains(l, "proc=") {
			step0 = append(step0, l)
		}
	}
	sort.Strings(step0)
	want := []string{
		"0: proc=0 local=0 node=0 host=local1 step=0 ntasks=4 nodes=local[1-2] job=" + id,
		"1: proc=1 local=1 node=0 host=local1 step=0 ntasks=4 nodes=local[1-2] job=" + id,
		"2: proc=2 local=0 node=1 host=local2 step=0 ntasks=4 nodes=local[1-2] job=" + id,
		"3: proc=3 local=1 node=1 host=local2 step=0 ntasks=4 nodes=local[1-2] job=" + id,
	}
	if strings.Join(step0, "\n") != strings.Join(want, "\n") {
		t.Errorf("step 0 lines:\n%s\nwant:\n%s\n(output %q)", strings.Join(step0, "\n"), strings.Join(want, "\n"), out)
	}
	for _, w := range []string{"0: host=local1", "1: host=local2", "2: host=local1", "3: host=local2"} {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("cyclic layout: no line %q in %q", w, out)
		}
	}
	// Exit code rule: the largest exit; a signalled task outranks exits
	// (128+15), with Slurm's per-task error lines.
	for _, w := range []string{
		"rc=0\n",
		"srun: error: local1: task 1: Exited with exit code 1\n",
		"srun: error: local2: task 2: Exited with exit code 2\n",
		"rc=2\n",
		"srun: error: local2: task 1: Terminated\n",
		"rc=143\n",
		"0: hello\n",
		"0: hey\n", "1: hey\n", // stdin goes to every task by default
		"no newline\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "1: hello") {
		t.Errorf("-i 0 gave stdin to task 1 too:\n%s", out)
	}
	for task := range 2 {
		name := filepath.Join(work, "task-"+id+"-4-"+string(rune('0'+task))+".out")
		b, err := os.ReadFile(name)
		if err != nil || string(b) != "out of "+string(rune('0'+task))+"\n" {
			t.Errorf("%s: %q %v", name, b, err)
		}
	}
	// submitit's srun line (COMPAT.md §7.2): one file per stream and task.
	for name, w := range map[string]string{"sub-" + id + "_0_log.out": "o\n", "sub-" + id + "_0_log.err": "e\n"} {
		if b, err := os.ReadFile(filepath.Join(work, name)); err != nil || string(b) != w {
			t.Errorf("%s: %q %v", name, b, err)
		}
	}
	r := c.run(0, work, "sacct", "-j", id, "-P", "-n", "-o", "JobID,JobName,NNodes,NTasks,State,ExitCode")
	for _, w := range []string{
		id + ".batch|batch|1|1|COMPLETED|0:0\n",
		id + ".0|sh|2|4|COMPLETED|0:0\n",
		id + ".2|sh|2|3|FAILED|2:0\n",
		id + ".3|sh|2|2|FAILED|0:15\n",
	} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("sacct lacks %q:\n%s", w, r.stdout)
		}
	}

	// 2. A step that does not fit beside a running one waits, then runs;
	// one larger than the allocation is refused with Slurm's texts.
	script = writeScript(t, work, "busy.sh", `#!/bin/sh
#SBATCH -N 1
`+srun+` sleep 8 &
for i in $(seq 300); do squeue -s -h -o %i | grep -q "^$SLURM_JOB_ID\.0$" && break; sleep 0.1; done
`+srun+` echo second
wait
`+srun+` -n 100000 true
echo "rc=$?"
`+srun+` -N 3 true
echo "rc=$?"
`)
	// squeue must be found by the script: the test's PATH plus the binaries.
	id = c.submitEnv(work, []string{"PATH=" + c.bin + ":" + os.Getenv("PATH")}, script)
	out = c.outputOf(work, id)
	for _, w := range []string{
		"srun: Job " + id + " step creation temporarily disabled, retrying (Requested nodes are busy)\n",
		"srun: Step created for job " + id + "\n",
		"second\n",
		"srun: error: Unable to create step for job " + id + ": More processors requested than permitted\nrc=1\n",
		"srun: error: Only allocated 1 nodes asked for 3\nrc=1\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("busy job output lacks %q:\n%s", w, out)
		}
	}
	// The refused steps left nothing: the job has its two steps only.
	r = c.run(0, work, "sacct", "-j", id, "-P", "-n", "-o", "JobID")
	if r.stdout != id+"\n"+id+".batch\n"+id+".0\n"+id+".1\n" {
		t.Errorf("steps after refusals: %q", r.stdout)
	}

	// 3. scancel JOBID.STEP ends that step only; another user's srun into
	// my job is refused and records nothing.
	script = writeScript(t, work, "long.sh", "#!/bin/sh\n"+srun+" sleep 300\necho \"srun rc=$?\"\necho after\n")
	id = c.submit(work, script)
	waitFor(t, "step "+id+".0 running", func() bool {
		return strings.Contains(c.run(0, work, "squeue", "-s", "-h", "-o", "%i").stdout, id+".0\n")
	})
	r = c.run(65534, "/", "srun", "--jobid="+id, "true")
	if r.code != 1 || r.stderr != "srun: error: Unable to confirm allocation for job "+id+": Access/permission denied\n"+
		"srun: Check SLURM_JOB_ID environment variable. Expired or invalid job "+id+"\n" {
		t.Errorf("nobody's srun: exit %d stderr %q", r.code, r.stderr)
	}
	if got := c.run(0, work, "squeue", "-s", "-h", "-o", "%i").stdout; strings.Contains(got, id+".1") {
		t.Errorf("a refused srun left a step: %q", got)
	}
	r = c.run(0, work, "scontrol", "show", "step", id+".0")
	if r.code != 0 || !strings.Contains(r.stdout, "StepId="+id+".0 UserId=0 ") || !strings.Contains(r.stdout, "Tasks=1 Name=sleep") {
		t.Errorf("scontrol show step: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = c.run(65534, "/", "scancel", id+".0")
	if r.code != 1 || r.stderr != "scancel: error: Kill job error on job step id "+id+".0: Access/permission denied\n" {
		t.Errorf("nobody's scancel of the step: %d %q", r.code, r.stderr)
	}
	if got := c.run(0, work, "squeue", "-s", "-h", "-o", "%i").stdout; !strings.Contains(got, id+".0\n") {
		t.Errorf("nobody's scancel ended the step: %q", got)
	}
	if r = c.run(0, work, "scancel", id+".0"); r.code != 0 {
		t.Errorf("scancel step: %d %q", r.code, r.stderr)
	}
	out = c.outputOf(work, id)
	if !strings.Contains(out, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n") ||
		!regexp.MustCompile(`slurmstepd: error: \*\*\* STEP `+id+`\.0 ON local\d CANCELLED AT \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d \*\*\*\n`).MatchString(out) ||
		strings.Contains(out, "Killed") || !strings.Contains(out, "srun rc=137\nafter\n") {
		t.Errorf("cancelled step's job output: %q", out)
	}
	r = c.run(0, work, "sacct", "-j", id, "-P", "-n", "-o", "JobID,State")
	if !strings.Contains(r.stdout, id+"|COMPLETED\n") || !strings.Contains(r.stdout, id+".0|CANCELLED\n") {
		t.Errorf("sacct after scancel of the step: %q", r.stdout)
	}
}

// submitEnv is submit with extra environment for sbatch (exported to the job).
func (c *cluster) submitEnv(dir string, env []string, args ...string) string {
	c.t.Helper()
	r := c.runEnv(0, dir, env, "sbatch", args...)
	m := submitted.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		c.t.Fatalf("sbatch %q: exit %d stdout %q stderr %q", args, r.code, r.stdout, r.stderr)
	}
	return m[1]
}

func TestSallocAndSrunAllocationsEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newCluster(t)
	work := c.workDir()

	// 1. srun outside an allocation creates one, runs the step, streams
	// its output, prints nothing else and releases it.
	r := c.run(0, work, "srun", "-N", "2", "-n", "2", "-l", "sh", "-c", "echo $SLURMD_NODENAME $SLURM_JOB_NUM_NODES")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("srun: exit %d stderr %q", r.code, r.stderr)
	}
	got := strings.Split(strings.TrimSpace(r.stdout), "\n")
	sort.Strings(got)
	if strings.Join(got, "|") != "0: local1 2|1: local2 2" {
		t.Errorf("srun output %q", r.stdout)
	}
	// The allocation ends once its holder is stopped, moments after srun.
	c.waitState("1", "COMPLETED")
	r = c.run(0, work, "sacct", "-P", "-n", "-o", "JobID,JobName,State,ExitCode")
	if r.stdout != "1|sh|COMPLETED|0:0\n1.0|sh|COMPLETED|0:0\n" {
		t.Errorf("sacct after srun: %q", r.stdout)
	}
	r = c.run(0, work, "srun", "sh", "-c", "exit 7")
	if r.code != 7 || r.stderr != "srun: error: local1: task 0: Exited with exit code 7\n" {
		t.Errorf("srun exit 7: %d %q", r.code, r.stderr)
	}

	// 2. salloc grants, runs the command with the allocation's
	// environment, and relinquishes; its exit is the command's.
	r = c.run(0, work, "salloc", "-N", "2", "sh", "-c", "echo id=$SLURM_JOB_ID nodes=$SLURM_JOB_NODELIST n=$SLURM_NNODES; "+
		filepath.Join(c.bin, "srun")+" -l hostname >/dev/null; exit 3")
	// A loaded machine may take longer than salloc's grace to schedule:
	// then Slurm's waiting lines come first.
	m := regexp.MustCompile(`^(?:salloc: Pending job allocation \d+\nsalloc: job \d+ queued and waiting for resources\nsalloc: job \d+ has been allocated resources\n)?` +
		`salloc: Granted job allocation (\d+)\nsalloc: Relinquishing job allocation (\d+)\n$`).FindStringSubmatch(r.stderr)
	if r.code != 3 || m == nil || m[1] != m[2] {
		t.Fatalf("salloc: exit %d stderr %q stdout %q", r.code, r.stderr, r.stdout)
	}
	alloc := m[1]
	if !regexp.MustCompile(`^id=` + alloc + ` nodes=local(\[\d-\d\]|\[\d,\d\]) n=2\n$`).MatchString(r.stdout) {
		t.Errorf("salloc command output %q", r.stdout)
	}
	c.waitState(alloc, "FAILED")
	r = c.run(0, work, "sacct", "-j", alloc, "-P", "-n", "-o", "JobID,State,ExitCode")
	if r.stdout != alloc+"|FAILED|3:0\n"+alloc+".0|COMPLETED|0:0\n" {
		t.Errorf("sacct of the salloc job: %q", r.stdout)
	}

	// 3. While the nodes are busy salloc says it waits, and -I gives up.
	hold := c.submit(work, "-N", "4", "--wrap", "sleep 300")
	c.waitState(hold, "RUNNING")
	r = c.run(0, work, "salloc", "-I", "-N", "1", "true")
	if r.code != 1 || !strings.HasSuffix(r.stderr, "salloc: error: Unable to allocate resources: Requested nodes are busy\n") {
		t.Errorf("salloc -I: %d %q", r.code, r.stderr)
	}
	errFile := filepath.Join(work, "salloc.err")
	done := make(chan result, 1)
	go func() {
		done <- c.run(0, work, "/bin/sh", "-c", filepath.Join(c.bin, "salloc")+" -N 1 true 2>"+errFile)
	}()
	waitFor(t, "salloc to say it waits", func() bool {
		b, _ := os.ReadFile(errFile)
		return strings.Contains(string(b), "queued and waiting for resources")
	})
	c.run(0, work, "scancel", hold)
	r = <-done
	stderr, _ := os.ReadFile(errFile)
	m = regexp.MustCompile(`^salloc: Pending job allocation (\d+)\nsalloc: job (\d+) queued and waiting for resources\n` +
		`salloc: job (\d+) has been allocated resources\nsalloc: Granted job allocation (\d+)\nsalloc: Relinquishing job allocation (\d+)\n$`).FindStringSubmatch(string(stderr))
	r.stderr = string(stderr)
	if r.code != 0 || m == nil {
		t.Errorf("waiting salloc: %d %q", r.code, r.stderr)
	}
}

func TestSbatchWaitAndTestOnlyEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newCluster(t)
	work := c.workDir()
	r := c.run(0, work, "sbatch", "--wait", "--wrap", "sleep 0.2; exit 7")
	if r.code != 7 || !submitted.MatchString(r.stdout) {
		t.Errorf("sbatch --wait: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = c.run(0, work, "sbatch", "--test-only", "-N", "2", "--wrap", "true")
	if r.code != 0 || !regexp.MustCompile(`^sbatch: Job \d+ to start at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d using \d+ processors on nodes local\[1-2\] in partition batch\n$`).MatchString(r.stderr) {
		t.Errorf("sbatch --test-only: exit %d stderr %q", r.code, r.stderr)
	}
}

func TestSrunSignalsAndMultiProgEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newCluster(t)
	work := c.workDir()
	srun := filepath.Join(c.bin, "srun")
	conf := filepath.Join(work, "multi.conf")
	if err := os.WriteFile(conf, []byte("# rank program args\n0 echo first %t\n1-2 echo range %t %o\n* echo rest %t\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Two SIGINTs within a second end the step (the first only shows the
	// tasks' states); --kill-on-bad-exit ends the others when one fails.
	script := writeScript(t, work, "sig.sh", `#!/bin/sh
#SBATCH -N 2
`+srun+` -n 4 -l --multi-prog `+conf+`
`+srun+` -n 2 sleep 300 &
pid=$!
for i in $(seq 300); do squeue -s -h -o %i | grep -q "^$SLURM_JOB_ID\.1$" && break; sleep 0.1; done
# Signals sent back to back may merge into one: repeat ^C every 0.2 s
# until srun is gone, as an impatient user would.
for i in $(seq 100); do kill -INT $pid 2>/dev/null || break; sleep 0.2; done
wait $pid
echo "int rc=$?"
`+srun+` -K -n 2 sh -c 'if [ $SLURM_PROCID = 0 ]; then exit 3; fi; exec sleep 300'
echo "K rc=$?"
`)
	id := c.submitEnv(work, []string{"PATH=" + c.bin + ":" + os.Getenv("PATH")}, script)
	out := c.outputOf(work, id)
	for _, w := range []string{
		"0: first 0\n", "1: range 1 0\n", "2: range 2 1\n", "3: rest 3\n",
		"srun: interrupt (one more within 1 sec to abort)\n",
		"srun: StepId=" + id + ".1 tasks 0-1: running\n",
		"srun: sending Ctrl-C to StepId=" + id + ".1\n",
		"srun: forcing job termination\n",
		"srun: error: local1: task 0: Exited with exit code 3\n",
		"srun: error: local2: task 1: Terminated\n",
		"K rc=143\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if !regexp.MustCompile(`int rc=(130|137)\n`).MatchString(out) {
		t.Errorf("srun after two SIGINTs: %s", out)
	}
}

// A step outlives a SIGKILL of horad: its srun reports the end to the new
// horad, which records it (and the job's end) as usual.
func TestStepSurvivesHoradRestartEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newCluster(t)
	work := c.workDir()
	release := filepath.Join(work, "release")
	script := writeScript(t, work, "restart.sh", "#!/bin/sh\n"+filepath.Join(c.bin, "srun")+
		" sh -c 'while [ ! -e "+release+" ]; do sleep 0.1; done; exit 4'\necho \"rc=$?\"\n")
	id := c.submit(work, script)
	waitFor(t, "step "+id+".0 running", func() bool {
		return strings.Contains(c.run(0, work, "squeue", "-s", "-h", "-o", "%i").stdout, id+".0\n")
	})
	c.kill9()
	c.start()
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := c.outputOf(work, id); !strings.Contains(out, "rc=4\n") {
		t.Errorf("job output: %q", out)
	}
	r := c.run(0, work, "sacct", "-j", id, "-P", "-n", "-o", "JobID,State,ExitCode")
	if r.stdout != id+"|COMPLETED|0:0\n"+id+".batch|COMPLETED|0:0\n"+id+".0|FAILED|4:0\n" {
		t.Errorf("sacct after the restart: %q", r.stdout)
	}
}

// A step past its own -t is ended by horad as slurmstepd ends it: TERM to
// its tasks, Slurm's "CANCELLED AT ... DUE TO TIME LIMIT" line, the step
// TIMEOUT in sacct, while the batch script goes on (the job's limit is not
// the step's).
func TestSrunStepTimeLimitEndToEnd(t *testing.T) {
	requireRootWaiting(t)
	c := newCluster(t)
	work := c.workDir()
	srun := filepath.Join(c.bin, "srun")
	script := writeScript(t, work, "steplimit.sh", `#!/bin/sh
`+srun+` -t 0:01 sh -c 'echo started; exec sleep 600'
echo "rc=$?"
`+srun+` -t 5 sh -c 'echo quick'
echo "rc=$?"
`)
	id := c.submit(work, script)
	out := c.outputOf(work, id)
	if st := c.state(id); st != "COMPLETED" {
		t.Errorf("job %s, want COMPLETED (the step's limit is not the job's):\n%s", st, out)
	}
	for _, want := range []string{"started\n", "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n",
		"slurmstepd: error: *** STEP " + id + ".0 ON ", " DUE TO TIME LIMIT ***\n", "task 0: Terminated\n", "rc=143\n", "quick\nrc=0\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	r := c.run(0, work, "sacct", "-j", id, "-n", "-P", "-o", "JobID,State")
	if !strings.Contains(r.stdout, id+".0|TIMEOUT\n") || !strings.Contains(r.stdout, id+".1|COMPLETED\n") {
		t.Errorf("sacct:\n%s", r.stdout)
	}
}

// A step with its own --mem gets a memory cgroup of its own below the
// job's (srun holds its tasks until horad has put them there): a task that
// touches more is killed by the kernel, the step ends OUT_OF_MEMORY with
// slurmstepd's line, and the next step, within its limit, completes.
func TestSrunStepMemoryEndToEnd(t *testing.T) {
	requireRoot(t)
	for _, c := range []string{"cpuset", "memory"} {
		if _, err := os.Stat("/sys/fs/cgroup/" + c + "/cgroup.procs"); err != nil {
			t.Fatalf("this test needs the cgroup v1 %s hierarchy at /sys/fs/cgroup/%s (CI mounts it): %v", c, c, err)
		}
	}
	c := newCluster(t)
	work := c.workDir()
	srun := filepath.Join(c.bin, "srun")
	script := writeScript(t, work, "stepmem.sh", `#!/bin/sh
`+srun+` --mem=30M sh -c 'head -c 300M /dev/zero | tail > /dev/null'
echo "rc=$?"
`+srun+` --mem=100M sh -c 'grep -c ":memory:/hora-.*\.batch\.r0/step1$" /proc/self/cgroup; head -c 10M /dev/zero | tail > /dev/null; echo fine'
`)
	id := c.submit(work, script)
	out := c.outputOf(work, id)
	// The kernel may kill head as well as tail: one or two events, each
	// counted as Slurm counts them ("1 oom_kill event", "2 ... events").
	oom := regexp.MustCompile(`slurmstepd: error: Detected (1 oom_kill event|2 oom_kill events) in StepId=` + id + `\.0\. Some of the step tasks have been OOM Killed\.\n`)
	if !oom.MatchString(out) {
		t.Errorf("output lacks slurmstepd's oom_kill line for step %s.0:\n%s", id, out)
	}
	for _, want := range []string{"task 0: Exited with exit code 137\n", "rc=137\n", "1\nfine\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	r := c.run(0, work, "sacct", "-j", id, "-n", "-P", "-o", "JobID,State")
	if !strings.Contains(r.stdout, id+".0|OUT_OF_MEMORY\n") || !strings.Contains(r.stdout, id+".1|COMPLETED\n") {
		t.Errorf("sacct:\n%s", r.stdout)
	}
}
