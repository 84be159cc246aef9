package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A step's own -t survives a SIGKILL of horad: the limit is recorded with
// the step, the new horad arms it again, TERMs the tasks (found by their
// SLURM_JOB_ID and SLURM_STEP_ID, since srun's report of their process
// group died with the old horad), and the step ends TIMEOUT with Slurm's
// lines while the batch script goes on. Without the re-armed timer the
// task would sleep its 600 s and the job would not complete in time.
func TestSrunStepTimeLimitSurvivesRestartEndToEnd(t *testing.T) {
	requireRootWaiting(t)
	c := newCluster(t)
	work := c.workDir()
	srun := filepath.Join(c.bin, "srun")
	script := writeScript(t, work, "steplimit.sh", `#!/bin/sh
`+srun+` -t 0:20 sh -c 'echo started; exec sleep 600'
echo "rc=$?"
`)
	id := c.submit(work, script)
	waitFor(t, "step "+id+".0 running", func() bool {
		b, _ := os.ReadFile(filepath.Join(work, "slurm-"+id+".out"))
		return strings.Contains(string(b), "started\n") &&
			strings.Contains(c.run(0, work, "squeue", "-s", "-h", "-o", "%i").stdout, id+".0\n")
	})
	// Slurm's limits are whole minutes: 0:20 is one minute.
	if r := c.run(0, work, "scontrol", "show", "step", id+".0"); !strings.Contains(r.stdout, " TimeLimit=00:01:00") {
		t.Errorf("scontrol show step: not the step's own limit:\n%s", r.stdout)
	}
	c.kill9()
	before := c.log.String()
	c.start()
	out := c.outputOf(work, id)
	if st := c.state(id); st != "COMPLETED" {
		t.Errorf("job %s, want COMPLETED (the step's limit is not the job's):\n%s", st, out)
	}
	for _, want := range []string{"started\n", "slurmstepd: error: *** STEP " + id + ".0 ON ", " DUE TO TIME LIMIT ***\n",
		"task 0: Terminated\n", "rc=143\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if r := c.run(0, work, "sacct", "-j", id, "-n", "-P", "-o", "JobID,State"); !strings.Contains(r.stdout, id+".0|TIMEOUT\n") {
		t.Errorf("sacct:\n%s", r.stdout)
	}
	// The limit fired in the new horad, unless a very loaded machine took
	// the minute to reach the restart (then the old one ended it: nothing
	// about the restart is proved, but nothing is wrong either).
	if !strings.Contains(before, "step time limit") && !strings.Contains(c.log.String(), "step time limit re-armed") {
		t.Errorf("the new horad did not re-arm the step's limit:\n%s", c.log.String())
	}
}
