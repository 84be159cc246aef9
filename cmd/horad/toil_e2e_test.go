package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// toilWorkflow is a two-job toil workflow: hello's value ("hello <the
// batch system>") is written by a follow-on; --disableChaining makes each a
// batch job of its own. TestToilTorqueEndToEnd and TestToilSlurmEndToEnd
// run it.
const toilWorkflow = `import sys
from toil.common import Toil
from toil.job import Job

def hello(job, who):
    return "hello " + who

def write(job, text, path):
    with open(path, "w") as f:
        f.write(text + "\n")

if __name__ == "__main__":
    parser = Job.Runner.getDefaultArgumentParser()
    parser.add_argument("--out", required=True)
    options = parser.parse_args()
    root = Job.wrapJobFn(hello, options.batchSystem)
    root.addFollowOnJobFn(write, root.rv(), options.out)
    with Toil(options) as toil:
        toil.start(root)
`

// TestToilTorqueEndToEnd runs toil (Debian package toil, scripts/deps.sh)
// with --batchSystem torque against a real horad in the torque flavour:
// toil submits with qsub -V -S, polls with qstat, reads exit_status from
// qstat -f and asks pbsnodes --version, all through hora.
func TestToilTorqueEndToEnd(t *testing.T) {
	requireRootWaiting(t)
	python := "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import toil.batchSystems.torque").Run(); err != nil {
		t.Fatalf("toil is not installed for %s (run scripts/deps.sh): %v", python, err)
	}
	c := newClusterWith(t, localBatch+"\n[pbs]\nflavour = \"torque\"\nserver = \"headnode\"\n")
	work := c.workDir()
	wf := writeScript(t, work, "wf.py", toilWorkflow)
	out := filepath.Join(work, "out.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, wf, "file:"+filepath.Join(work, "jobstore"), "--batchSystem", "torque",
		"--disableChaining", "--out", out, "--workDir", work, "--logLevel", "INFO")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "HORA_SOCKET="+c.sock, "PATH="+c.bin+":"+os.Getenv("PATH"), "TZ=UTC")
	log, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("toil: %v\n%s", err, log)
	}
	if got, _ := os.ReadFile(out); string(got) != "hello torque\n" {
		t.Errorf("workflow output %q\n%s", got, log)
	}
	// Both jobs went through qsub: squeue sees them, finished.
	r := c.run(0, work, "squeue", "-h", "-t", "all", "-o", "%j %T")
	if n := strings.Count(r.stdout, "COMPLETED\n"); n < 2 || strings.Count(r.stdout, "toil_job_") != n {
		t.Errorf("toil's jobs in squeue:\n%s", r.stdout)
	}
}
