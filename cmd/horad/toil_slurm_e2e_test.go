package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestToilSlurmEndToEnd runs Debian's toil (scripts/deps.sh) with
// --batchSystem slurm against a real horad: toil's own code submits with
// `sbatch -J toil_job_… --export=ALL --mem=… --cpus-per-task=… -o … -e …
// --wrap=…` and reads the id as the last word of its output, polls
// `squeue -h --format '%i %t %M'` (parsing the elapsed time) and reads exit
// codes with `sacct -n -j IDS --format JobIDRaw,State,ExitCode -P -S
// 1970-01-01`, all through hora's commands found first on PATH.
//
// --statePollingWait 1 keeps the test short; without it toil asks
// `scontrol show config` for SchedulerTimeSlice (docs/compat.md, real
// clients).
func TestToilSlurmEndToEnd(t *testing.T) {
	requireRootWaiting(t)
	python := "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import toil.batchSystems.slurm").Run(); err != nil {
		t.Fatalf("toil is not installed for %s (run scripts/deps.sh): %v", python, err)
	}
	c := newClusterWith(t, localBatch)
	work := c.workDir()
	wf := writeScript(t, work, "wf.py", toilWorkflow)
	out := filepath.Join(work, "out.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, wf, "file:"+filepath.Join(work, "jobstore"), "--batchSystem", "slurm",
		"--disableChaining", "--statePollingWait", "1", "--out", out, "--workDir", work, "--logLevel", "DEBUG")
	cmd.Dir = work
	cmd.Env = append(cleanEnv("HORA_SOCKET="+c.sock, "TZ=UTC"), "PATH="+c.bin+":/usr/local/bin:/usr/bin:/bin")
	log, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("toil: %v\n%s", err, log)
	}
	if got, _ := os.ReadFile(out); string(got) != "hello slurm\n" {
		t.Errorf("workflow output %q\n%s", got, log)
	}
	// Toil's log shows it read hora's sbatch and sacct answers.
	for _, re := range []string{`sbatch submitted job \d+`, `sacct state of job \d+ is COMPLETED`} {
		if n := len(regexp.MustCompile(re).FindAllIndex(log, -1)); n < 2 {
			t.Errorf("toil's log has %q %d times, want 2 (one per job):\n%s", re, n, log)
		}
	}
	// Both jobs went through sbatch with toil's names and finished.
	r := c.run(0, work, "sacct", "-X", "-n", "-P", "-o", "JobName,State", "-S", "1970-01-01")
	if n := strings.Count(r.stdout, "|COMPLETED\n"); n != 2 || strings.Count(r.stdout, "toil_job_") != 2 {
		t.Errorf("toil's jobs in sacct:\n%s%s", r.stdout, r.stderr)
	}
}
