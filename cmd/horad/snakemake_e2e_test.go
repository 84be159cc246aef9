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

// snakemake 7 (Debian's package, installed by scripts/deps.sh) drives a
// real horad with --slurm: it guesses the account with sacct, finds the
// default partition with sinfo, submits each rule with sbatch (-t from
// runtime, --mem from mem_mb, --cpus-per-task from threads, --wrap), runs
// the rule inside the job through `srun -n1 --cpu-bind=q`, and polls sacct
// -P -n --format=JobIdRaw,State. mem_mb is enforced (a cgroup per job),
// and snakemake itself runs inside each job: each rule asks for room for
// its Python process (~200 MB), as it must on Slurm.
const snakefile = `
rule all:
    input: "out/c.txt"

rule a:
    output: "out/a.txt"
    threads: 2
    resources: mem_mb=1000, runtime=5
    shell: "echo a threads={threads} step=$SLURM_STEP_ID tasks=$SLURM_STEP_NUM_TASKS > {output}"

rule b:
    input: "out/a.txt"
    output: "out/b.txt"
    threads: 1
    resources: mem_mb=800, runtime=2
    shell: "cat {input} > {output}; echo b cpus=$SLURM_CPUS_PER_TASK >> {output}"

rule c:
    input: "out/b.txt"
    output: "out/c.txt"
    resources: mem_mb=600, runtime=1
    shell: "cat {input} > {output}; echo c >> {output}"
`

func TestSnakemakeSlurmEndToEnd(t *testing.T) {
	requireRootWaiting(t)
	snk, err := exec.LookPath("snakemake")
	if err != nil {
		t.Fatal("snakemake is not installed: run scripts/deps.sh (Debian's snakemake 7)")
	}
	c := newCluster(t)
	work := c.workDir()
	flow := filepath.Join(work, "flow")
	if err := os.MkdirAll(flow, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(flow, "Snakefile"), []byte(snakefile), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// One status check a second: snakemake's --slurm default is one every
	// 33 s, which would only make the test slow.
	cmd := exec.CommandContext(ctx, snk, "--slurm", "--jobs", "2", "--latency-wait", "5",
		"--max-status-checks-per-second", "1")
	cmd.Dir = flow
	cmd.Env = append(os.Environ(), "HORA_SOCKET="+c.sock, "PATH="+c.bin+":"+os.Getenv("PATH"),
		"USER=root", "HOME="+work, "TZ=UTC")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("snakemake: %v\n%s", err, out)
	}
	want := map[string]string{
		"a.txt": "a threads=2 step=0 tasks=1\n",
		"b.txt": "a threads=2 step=0 tasks=1\nb cpus=1\n",
		"c.txt": "a threads=2 step=0 tasks=1\nb cpus=1\nc\n",
	}
	for name, w := range want {
		b, err := os.ReadFile(filepath.Join(flow, "out", name))
		if err != nil || string(b) != w {
			t.Errorf("out/%s = %q (%v), want %q", name, b, err, w)
		}
	}
	// Each rule was one job with its resources and one srun step.
	r := c.run(0, work, "sacct", "-P", "-n", "-o", "JobID,JobName,Timelimit,ReqMem,State")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	for _, rule := range []struct{ name, limit, mem string }{
		{"a", "00:05:00", "1000M"}, {"b", "00:02:00", "800M"}, {"c", "00:01:00", "600M"},
	} {
		found := false
		for i, l := range lines {
			f := strings.Split(l, "|")
			if len(f) == 5 && strings.HasPrefix(f[1], "snakejob_"+rule.name) {
				found = true
				if f[2] != rule.limit || f[3] != rule.mem || f[4] != "COMPLETED" {
					t.Errorf("rule %s job: %q, want limit %s mem %s COMPLETED", rule.name, l, rule.limit, rule.mem)
				}
				if i+2 >= len(lines) || !strings.HasPrefix(lines[i+2], f[0]+".0|") || !strings.HasSuffix(lines[i+2], "|COMPLETED") {
					t.Errorf("rule %s: no completed step %s.0 in\n%s", rule.name, f[0], r.stdout)
				}
			}
		}
		if !found {
			t.Errorf("no job for rule %s in sacct:\n%s", rule.name, r.stdout)
		}
	}
}
