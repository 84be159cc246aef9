package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Slurm clients of ../shared/COMPAT.md §7 that cannot be installed here
// (dask-jobqueue, submitit and Parsl are on PyPI only, Nextflow on no
// registry this machine reaches) are exercised by their recorded
// behaviour: each test writes the job script the client generates, runs
// the exact command lines it runs against a real horad, and reads hora's
// real answers with the client's own parsing rule (quoted from COMPAT.md §7
// and the client's source beside each). toil runs for real
// (TestToilSlurmEndToEnd).

// pollUntil runs f until it says done, for at most 60 s.
func pollUntil(t *testing.T, what string, f func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		done, last := f()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not done after 60 s; last answer %q", what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClientDaskJobqueue: dask-jobqueue (dask_jobqueue/slurm.py, core.py).
func TestClientDaskJobqueue(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, localBatch)
	work := c.workDir()
	logs := filepath.Join(work, "logs")
	os.MkdirAll(logs, 0o755)
	// SLURMJob's template: "#SBATCH -J", "-e/-o <log_directory>/<name>-%J.err|out",
	// "-p", "-n 1", "-N 1", "--cpus-per-task", "--mem" with a K/M/G suffix, "-t".
	script := writeScript(t, work, "tmpdask.sh", fmt.Sprintf(`#!/usr/bin/env bash

#SBATCH -J dask-worker
#SBATCH -e %[1]s/dask-worker-%%J.err
#SBATCH -o %[1]s/dask-worker-%%J.out
#SBATCH -p batch
#SBATCH -n 1
#SBATCH -N 1
#SBATCH --cpus-per-task=1
#SBATCH --mem=954M
#SBATCH -t 00:30:00

echo worker up
sleep 300
`, logs))
	// Submit: shlex.split("sbatch") + [script]; non-zero exit -> RuntimeError.
	r := c.run(0, work, "sbatch", script)
	if r.code != 0 {
		t.Fatalf("sbatch: exit %d, %q", r.code, r.stderr)
	}
	// Job id: re.search(r"(?P<job_id>\d+)", out).
	id := regexp.MustCompile(`(?P<job_id>\d+)`).FindString(r.stdout)
	if id == "" || r.stdout != "Submitted batch job "+id+"\n" {
		t.Fatalf("dask-jobqueue finds job id %q in %q", id, r.stdout)
	}
	c.waitState(id, "RUNNING")
	// %J in -o/-e is the job id (jobid.stepid for steps).
	pollUntil(t, "worker log", func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(logs, "dask-worker-"+id+".out"))
		return string(b) == "worker up\n", string(b)
	})
	// Cancel: "scancel <id>"; errors are only logged, but hora must stop it.
	if r := c.run(0, work, "scancel", id); r.code != 0 {
		t.Errorf("scancel %s: exit %d %q", id, r.code, r.stderr)
	}
	c.waitState(id, "CANCELLED")
}

// TestClientSubmitit: submitit (submitit/slurm/slurm.py).
func TestClientSubmitit(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, localBatch)
	work := c.workDir()
	folder := filepath.Join(work, "submitit")
	os.MkdirAll(folder, 0o755)
	// _make_sbatch_string: "#!/bin/bash", sorted "#SBATCH --key=value" lines,
	// --time in minutes, --mem with "GB", and the task started by submitit's
	// srun line (use_srun=True, its default): one log per task, %j_%t, the
	// same file as the batch's own --output for task 0, opened in append
	// mode.
	srun := filepath.Join(c.bin, "srun")
	script := writeScript(t, folder, "1_submission.sh", fmt.Sprintf(`#!/bin/bash

# Parameters
#SBATCH --cpus-per-task=1
#SBATCH --error=%[1]s/%%j_0_log.err
#SBATCH --job-name=submitit
#SBATCH --mem=1GB
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --open-mode=append
#SBATCH --output=%[1]s/%%j_0_log.out
#SBATCH --signal=USR2@90
#SBATCH --time=5
#SBATCH --wckey=submitit

# command
export SUBMITIT_EXECUTOR=slurm
echo "batch=$SLURM_JOB_ID"
%[2]s --unbuffered --output %[1]s/%%j_%%t_log.out --error %[1]s/%%j_%%t_log.err sh -c 'echo "job=$SLURM_JOB_ID ntasks=$SLURM_NTASKS nodes=$SLURM_JOB_NUM_NODES proc=$SLURM_PROCID step=$SLURM_STEP_ID"'
`, folder, srun))
	r := c.run(0, folder, "sbatch", script)
	// Id: re.search(r"job (?P<id>[0-9]+)", stdout): needs "Submitted batch job N".
	m := regexp.MustCompile(`job (?P<id>[0-9]+)`).FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("submitit cannot read the id: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	id := m[1]

	// Status: sacct -o JobID,State,NodeList --parsable2 -j <id>; the first
	// line is the header (must hold JobID and State), rows keyed by JobID,
	// rows with "." (steps) skipped; done when the upper-cased State is not
	// in READY PENDING RUNNING UNKNOWN REQUEUED COMPLETING PREEMPTED.
	submititState := func(jobID string) (string, string) {
		r := c.run(0, folder, "sacct", "-o", "JobID,State,NodeList", "--parsable2", "-j", jobID)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) < 2 {
			return "unknown yet", r.stdout
		}
		header := strings.Split(lines[0], "|")
		col := map[string]int{}
		for i, h := range header {
			col[h] = i
		}
		if _, ok := col["JobID"]; !ok {
			t.Fatalf("sacct header %q has no JobID", lines[0])
		}
		for _, l := range lines[1:] {
			f := strings.Split(l, "|")
			if len(f) != len(header) {
				t.Fatalf("sacct row %q has %d fields, header %d", l, len(f), len(header))
			}
			if strings.Contains(f[col["JobID"]], ".") {
				continue
			}
			if f[col["JobID"]] == jobID {
				return strings.ToUpper(f[col["State"]]), r.stdout
			}
		}
		return "unknown yet", r.stdout
	}
	running := map[string]bool{"READY": true, "PENDING": true, "RUNNING": true, "UNKNOWN": true,
		"REQUEUED": true, "COMPLETING": true, "PREEMPTED": true, "unknown yet": true}
	var final string
	pollUntil(t, "submitit status", func() (bool, string) {
		st, out := submititState(id)
		final = st
		return !running[st], out
	})
	if final != "COMPLETED" {
		t.Errorf("submitit sees %s, want COMPLETED", final)
	}
	b, _ := os.ReadFile(filepath.Join(folder, id+"_0_log.out"))
	// Slurm 22.05 exports SLURM_NTASKS=1 for --nodes=1 --ntasks-per-node=1
	// (measured on the oracle); submitit reads it. The batch's line and the
	// step's (task 0, step 0) share the file: --open-mode=append.
	if want := "batch=" + id + "\njob=" + id + " ntasks=1 nodes=1 proc=0 step=0\n"; string(b) != want {
		t.Errorf("submitit's log %q, want %q", b, want)
	}
	// map_array: the same script with --array, every file named %A_%a, the
	// srun line's too. A step's %A and %a come from its environment, as
	// slurmstepd reads them: the task's array id and index, not the step's
	// job id and NO_VAL (an earlier srun wrote 8_4294967294_0_log.out, and
	// submitit found no output for any task).
	arr := writeScript(t, folder, "arr_submission.sh", fmt.Sprintf(`#!/bin/bash
#SBATCH --array=0-1%%2
#SBATCH --error=%[1]s/%%A_%%a_0_log.err
#SBATCH --job-name=submitit
#SBATCH --open-mode=append
#SBATCH --output=%[1]s/%%A_%%a_0_log.out
#SBATCH --time=5
echo "batch=$SLURM_JOB_ID"
%[2]s --unbuffered --output %[1]s/%%A_%%a_%%t_log.out --error %[1]s/%%A_%%a_%%t_log.err sh -c 'echo "task=$SLURM_ARRAY_TASK_ID step=$SLURM_STEP_ID"'
`, folder, srun))
	r = c.run(0, folder, "sbatch", arr)
	m = regexp.MustCompile(`job (?P<id>[0-9]+)`).FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("array submit: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	base, _ := strconv.ParseInt(m[1], 10, 64)
	for task := int64(0); task < 2; task++ {
		pollUntil(t, "submitit status of task "+strconv.FormatInt(task, 10), func() (bool, string) {
			st, out := submititState(m[1] + "_" + strconv.FormatInt(task, 10))
			final = st
			return !running[st], out
		})
		log := filepath.Join(folder, fmt.Sprintf("%d_%d_0_log.out", base, task))
		b, _ := os.ReadFile(log)
		if want := fmt.Sprintf("batch=%d\ntask=%d step=0\n", base+task, task); final != "COMPLETED" || string(b) != want {
			t.Errorf("task %d: %s, %s holds %q, want %q", task, final, log, b, want)
		}
	}

	// Cancel: ["scancel", job_id]; "CANCELLED by 0" counts as done.
	r = c.run(0, folder, "sbatch", "--job-name=submitit", "--wrap", "sleep 300")
	id2 := regexp.MustCompile(`job (?P<id>[0-9]+)`).FindStringSubmatch(r.stdout)[1]
	c.waitState(id2, "RUNNING")
	if r := c.run(0, folder, "scancel", id2); r.code != 0 {
		t.Fatalf("scancel: %d %q", r.code, r.stderr)
	}
	pollUntil(t, "submitit status after scancel", func() (bool, string) {
		st, out := submititState(id2)
		return !running[st] && strings.HasPrefix(st, "CANCELLED"), out
	})
}

// TestClientNextflow: Nextflow's SlurmExecutor (AbstractGridExecutor,
// GridTaskHandler).
func TestClientNextflow(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, localBatch)
	work := c.workDir()
	task := filepath.Join(work, "work", "ab", "cdef")
	os.MkdirAll(task, 0o777)
	// Headers "#SBATCH <opt> <value>", the task writes .exitcode itself.
	writeScript(t, task, ".command.run", fmt.Sprintf(`#!/bin/bash
#SBATCH -J nf-hello_(1)
#SBATCH -o %[1]s/.command.log
#SBATCH --no-requeue
#SBATCH --signal B:USR2@30
#SBATCH -t 00:10:00
#SBATCH --mem 100M
echo hello > %[1]s/.command.out
echo 0 > %[1]s/.exitcode
`, task))
	// Submit: "sbatch .command.run" in the task dir, stdout+stderr merged.
	r := c.run(0, task, "sbatch", ".command.run")
	merged := r.stdout + r.stderr
	m := regexp.MustCompile(`Submitted batch job (\d+)`).FindStringSubmatch(merged)
	if r.code != 0 || m == nil {
		t.Fatalf("Nextflow cannot read the id: exit %d %q", r.code, merged)
	}
	id := m[1]
	// Status: squeue --noheader -o '%i %t' -t all -p <queue> -u <user>;
	// every line exactly two columns; CD is DONE; a job missing from the
	// list is "not active" and the .exitcode file decides.
	nfMap := map[string]string{"PD": "PENDING", "R": "RUNNING", "CA": "ERROR", "CF": "PENDING", "CG": "RUNNING",
		"CD": "DONE", "F": "ERROR", "TO": "ERROR", "NF": "ERROR", "PR": "ERROR", "BF": "ERROR", "S": "HOLD", "ST": "HOLD"}
	pollUntil(t, "Nextflow status", func() (bool, string) {
		r := c.run(0, task, "squeue", "--noheader", "-o", "%i %t", "-t", "all", "-p", "batch", "-u", "root")
		if r.code != 0 {
			return false, r.stderr // "status unknown": still alive
		}
		status := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			cols := strings.Fields(l)
			if len(cols) != 2 {
				t.Fatalf("squeue line %q: Nextflow wants exactly 2 columns", l)
			}
			status[cols[0]] = nfMap[cols[1]]
		}
		return status[id] == "DONE", r.stdout
	})
	if b, _ := os.ReadFile(filepath.Join(task, ".exitcode")); string(b) != "0\n" {
		t.Errorf(".exitcode %q", b)
	}
	if r := c.run(0, task, "scancel", id); r.code != 0 && r.code != 1 {
		t.Errorf("scancel of a finished job: exit %d", r.code) // only logged by Nextflow
	}
}

// TestClientParsl: Parsl's SlurmProvider (parsl/providers/slurm/slurm.py).
func TestClientParsl(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, localBatch)
	work := c.workDir()
	// Init probe: "sacct -X"; exit 0 -> use sacct.
	if r := c.run(0, work, "sacct", "-X"); r.code != 0 {
		t.Fatalf("sacct -X: exit %d %q (Parsl would fall back to squeue)", r.code, r.stderr)
	}
	submit := func(name, body string) string {
		script := writeScript(t, work, name+".submit", fmt.Sprintf(`#!/bin/bash
#SBATCH --job-name=%[1]s
#SBATCH --output=%[2]s/%[1]s.stdout
#SBATCH --error=%[2]s/%[1]s.stderr
#SBATCH --nodes=1
#SBATCH --time=10
#SBATCH --ntasks-per-node=1
#SBATCH --mem=1g
#SBATCH --cpus-per-task=1
%[3]s
`, name, work, body))
		r := c.run(0, work, "sbatch", script)
		// Per line: re.match(r"Submitted batch job (?P<id>\S*)", line).
		for _, l := range strings.Split(r.stdout, "\n") {
			if m := regexp.MustCompile(`^Submitted batch job (?P<id>\S*)`).FindStringSubmatch(l); m != nil {
				return m[1]
			}
		}
		t.Fatalf("Parsl finds no id: exit %d %q %q", r.code, r.stdout, r.stderr)
		return ""
	}
	done := submit("parsl.block-0", "true")
	long := submit("parsl.block-1", "sleep 300")
	// Status: sacct -X --noheader --format=jobid,state%20 --job '<ids>';
	// line.split() -> first two tokens. Jobs absent -> COMPLETED.
	parslStates := func() (map[string]string, string) {
		r := c.run(0, work, "sacct", "-X", "--noheader", "--format=jobid,state%20", "--job", done+","+long)
		if r.code != 0 {
			return nil, r.stderr // no update
		}
		st := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				st[f[0]] = f[1]
			}
		}
		return st, r.stdout
	}
	pollUntil(t, "Parsl sacct status", func() (bool, string) {
		st, out := parslStates()
		return st[done] == "COMPLETED" && st[long] == "RUNNING", out
	})
	// The squeue variant: squeue --noheader --format='%i %t' --job '<ids>'.
	r := c.run(0, work, "squeue", "--noheader", "--format=%i %t", "--job", done+","+long)
	if r.code != 0 || strings.TrimSpace(r.stdout) != long+" R" {
		t.Errorf("squeue for Parsl: exit %d %q (the finished job is absent: Parsl takes it as COMPLETED)", r.code, r.stdout)
	}
	// Cancel: scancel <id1> <id2>; exit 0 -> all marked cancelled.
	if r := c.run(0, work, "scancel", done, long); r.code != 0 {
		t.Errorf("scancel %s %s: exit %d %q", done, long, r.code, r.stderr)
	}
	pollUntil(t, "Parsl sacct after scancel", func() (bool, string) {
		st, out := parslStates()
		// "CANCELLED by 0": Parsl's split keeps the first word.
		return st[long] == "CANCELLED" && st[done] == "COMPLETED", out
	})
}

// pbsCluster starts horad in a PBS flavour (openpbs or torque).
func pbsCluster(t *testing.T, flavour string) *cluster {
	return newClusterWith(t, localBatch+"\n[pbs]\nflavour = \""+flavour+"\"\nserver = \"headnode\"\n")
}

// shell runs a client's shell pipeline with hora's commands first on PATH.
func (c *cluster) shell(dir, script string) result {
	c.t.Helper()
	cmd := exec.Command("/bin/bash", "-c", script)
	cmd.Env = append(os.Environ(), "HORA_SOCKET="+c.sock, "TZ=UTC", "PATH="+c.bin+":"+os.Getenv("PATH"))
	cmd.Dir = dir
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	code := 0
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			c.t.Fatalf("bash -c %q: %v", script, err)
		}
		code = ee.ExitCode()
	}
	return result{o.String(), e.String(), code}
}

// TestClientsOpenPBS: the PBS Pro side of dask-jobqueue (qsub, first run of
// digits, qdel of the bare number), Nextflow's PbsProExecutor (id = the
// whole trimmed stdout; status from qstat -f of every server named by
// qstat -B -f, through its grep) and Parsl's PBSProProvider (id = last
// non-empty line; status from qstat -x -f -F json, ids matched by prefix).
func TestClientsOpenPBS(t *testing.T) {
	requireRoot(t)
	c := pbsCluster(t, "openpbs")
	work := c.workDir()
	script := writeScript(t, work, "job.pbs", "#!/bin/bash\n#PBS -N nf-hello\n#PBS -l select=1:ncpus=1:mem=100mb\n#PBS -l walltime=00:10:00\nsleep 300\n")
	short := writeScript(t, work, "short.pbs", "#!/bin/bash\n#PBS -S /bin/bash\n#PBS -N parsl.block-0\n#PBS -m n\n#PBS -l walltime=00:10:00\n#PBS -l select=1:ncpus=1\ntrue\n")

	// dask-jobqueue: re.search(r"(?P<job_id>\d+)", out); cancel with the bare number.
	r := c.run(0, work, "qsub", script)
	daskID := regexp.MustCompile(`(?P<job_id>\d+)`).FindString(r.stdout)
	if r.code != 0 || daskID == "" {
		t.Fatalf("qsub: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	// Nextflow: the entire trimmed stdout, one line, is the id.
	nfID := strings.TrimSpace(r.stdout)
	if strings.Contains(nfID, "\n") || !strings.HasPrefix(nfID, daskID+".") {
		t.Fatalf("qsub printed %q: Nextflow wants one line, dask its first digits", r.stdout)
	}
	nfStatus := func() (map[string]string, string) {
		r := c.shell(work, `set -o pipefail; qstat -f $( qstat -B -f | awk -v ORS=' ' '$1 == "Server:" {print "@"$2}' ) | { grep -E '(Job Id:|job_state =)' || true; }`)
		st := map[string]string{}
		var id string
		for _, l := range strings.Split(r.stdout, "\n") {
			l = strings.TrimSpace(l)
			if v, ok := strings.CutPrefix(l, "Job Id: "); ok {
				id = v
			} else if v, ok := strings.CutPrefix(l, "job_state = "); ok && id != "" {
				st[id] = map[string]string{"F": "DONE", "E": "RUNNING", "R": "RUNNING", "Q": "PENDING",
					"H": "HOLD", "S": "HOLD", "U": "HOLD", "W": "HOLD", "T": "HOLD", "M": "HOLD"}[v]
			}
		}
		return st, r.stdout + r.stderr
	}
	pollUntil(t, "Nextflow's PBS Pro status", func() (bool, string) {
		st, out := nfStatus()
		return st[nfID] == "RUNNING", out
	})

	// Parsl: id = last non-empty stdout line; status by qstat -x -f -F json.
	r = c.run(0, work, "qsub", short)
	var parslID string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.TrimSpace(l) != "" {
			parslID = strings.TrimSpace(l)
		}
	}
	if r.code != 0 || parslID == "" {
		t.Fatalf("qsub for Parsl: exit %d %q", r.code, r.stdout)
	}
	pollUntil(t, "Parsl's PBS Pro status", func() (bool, string) {
		out := c.run(0, work, "qstat", "-x", "-f", "-F", "json", parslID)
		if out.code != 0 {
			return false, out.stderr
		}
		st := parslJSONState(t, out.stdout, parslID)
		return st == "F", out.stdout
	})

	// dask-jobqueue's cancel: qdel <bare number>.
	if r := c.run(0, work, "qdel", daskID); r.code != 0 {
		t.Errorf("qdel %s: exit %d %q", daskID, r.code, r.stderr)
	}
	pollUntil(t, "the cancelled job leaves qstat -f", func() (bool, string) {
		st, out := nfStatus()
		_, listed := st[nfID]
		return !listed, out
	})
}

// parslJSONState is Parsl's reading of qstat -F json:
// json["Jobs"][<id>]["job_state"], the id matched by prefix.
func parslJSONState(t *testing.T, out, id string) string {
	t.Helper()
	var doc struct {
		Jobs map[string]map[string]any
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("qstat -F json is not JSON: %v\n%s", err, out)
	}
	for k, v := range doc.Jobs {
		if strings.HasPrefix(k, strings.Split(id, ".")[0]) {
			s, _ := v["job_state"].(string)
			return s
		}
	}
	return ""
}

// TestClientsTorque: Nextflow's PbsExecutor (qsub -N; status from
// qstat -f -1 through its grep, "Job Id:" byte-identical to qsub's output)
// and Parsl's TorqueProvider (qstat <ids>, lines starting with Job or ---
// skipped, the state in the 5th column, ids matched by prefix).
func TestClientsTorque(t *testing.T) {
	requireRoot(t)
	c := pbsCluster(t, "torque")
	work := c.workDir()
	script := writeScript(t, work, ".command.run", "#!/bin/bash\n#PBS -o "+work+"/.command.log\n#PBS -j oe\n#PBS -l nodes=1:ppn=1\n#PBS -l walltime=00:10:00\nsleep 300\n")
	r := c.run(0, work, "qsub", "-N", "nf-hello", script)
	nfID := strings.TrimSpace(r.stdout)
	if r.code != 0 || nfID == "" || strings.Contains(nfID, "\n") {
		t.Fatalf("qsub: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	nfStatus := func() (string, string) {
		r := c.shell(work, `set -o pipefail; qstat -f -1 | { grep -E '(Job Id:|job_state =)' || true; }`)
		var id, state string
		for _, l := range strings.Split(r.stdout, "\n") {
			l = strings.TrimSpace(l)
			if v, ok := strings.CutPrefix(l, "Job Id: "); ok {
				id = v
			} else if v, ok := strings.CutPrefix(l, "job_state = "); ok && id == nfID {
				state = map[string]string{"C": "DONE", "R": "RUNNING", "Q": "PENDING", "H": "HOLD", "S": "HOLD"}[v]
			}
		}
		return state, r.stdout + r.stderr
	}
	pollUntil(t, "Nextflow's Torque status", func() (bool, string) {
		st, out := nfStatus()
		return st == "RUNNING", out
	})
	// Parsl: qstat <id>; skip "Job"/"---" lines; parts[4] is the state.
	parslState := func() (string, string) {
		r := c.run(0, work, "qstat", nfID)
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(l, "Job") || strings.HasPrefix(l, "---") || strings.TrimSpace(l) == "" {
				continue
			}
			parts := strings.Fields(l)
			if len(parts) < 5 {
				t.Fatalf("qstat line %q: Parsl wants a 5th column", l)
			}
			if strings.HasPrefix(nfID, strings.TrimRight(parts[0], "*")) || strings.HasPrefix(parts[0], strings.Split(nfID, ".")[0]) {
				return parts[4], r.stdout
			}
		}
		return "", r.stdout
	}
	if st, out := parslState(); st != "R" {
		t.Errorf("Parsl reads state %q from:\n%s", st, out)
	}
	if r := c.run(0, work, "qdel", nfID); r.code != 0 {
		t.Errorf("qdel %s: exit %d %q", nfID, r.code, r.stderr)
	}
	pollUntil(t, "Nextflow sees the job done", func() (bool, string) {
		st, out := nfStatus()
		return st == "DONE", out
	})
	if st, out := parslState(); st != "C" {
		t.Errorf("after qdel Parsl reads %q from:\n%s", st, out)
	}
}
