package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// OverSubscribe through the real daemon (issue 11): on one 2-CPU local
// node, four 1-CPU jobs all run at once under OverSubscribe=FORCE:2, each
// CPU held by two of them, and two at a time under NO. Counted from the
// jobs' own start log while a gate holds them, never from timing.
// scontrol prints the partition's setting and each job's OverSubscribe.
func TestOverSubscribeEndToEnd(t *testing.T) {
	requireRoot(t)
	for _, tc := range []struct {
		over    string
		running int
		part    string // scontrol show partition
		job     string // scontrol show job of a job without -s
	}{
		{"force:2", 4, "OverSubscribe=FORCE:2", "OverSubscribe=YES"},
		{"NO", 2, "OverSubscribe=NO", "OverSubscribe=OK"},
	} {
		t.Run(tc.over, func(t *testing.T) {
			c := newClusterWith(t, `
[[node]]
name = "duo"
cpus = 2
memory_mb = 1000

[[partition]]
name = "batch"
nodes = "duo"
default = true
oversubscribe = "`+tc.over+`"
`)
			work := c.workDir()
			logf := filepath.Join(work, "runs.log")
			gate := filepath.Join(work, "gate")
			var ids []string
			for k := 0; k < 4; k++ {
				ids = append(ids, c.submit(work, "-n", "1", "-o", "/dev/null", "--wrap",
					"echo start $SLURM_JOB_ID $SLURM_CPUS_ON_NODE >> "+logf+"; while [ ! -e "+gate+" ]; do sleep 0.05; done"))
			}
			starts := func() int {
				b, _ := os.ReadFile(logf)
				return strings.Count(string(b), "start ")
			}
			waitFor(t, "jobs running", func() bool { return starts() == tc.running })
			waitFor(t, "squeue agrees", func() bool {
				r := c.run(0, work, "squeue", "-h", "-o", "%t")
				return strings.Count(r.stdout, "R") == tc.running && strings.Count(r.stdout, "PD") == 4-tc.running
			})
			if got := starts(); got != tc.running {
				t.Fatalf("%d jobs started, want %d", got, tc.running)
			}
			if b, _ := os.ReadFile(logf); strings.Count(string(b), " 1\n") != tc.running {
				t.Errorf("SLURM_CPUS_ON_NODE of the jobs:\n%s", b)
			}
			node := c.run(0, work, "scontrol", "show", "node", "duo").stdout
			if !strings.Contains(node, "CPUAlloc=2 ") {
				t.Errorf("scontrol show node: CPUAlloc is not the 2 CPUs held:\n%s", node)
			}
			if p := c.run(0, work, "scontrol", "show", "partition", "batch").stdout; !strings.Contains(p, " "+tc.part+"\n") {
				t.Errorf("scontrol show partition lacks %q:\n%s", tc.part, p)
			}
			if r := c.run(0, work, "sinfo", "-h", "-o", "%h"); strings.TrimSpace(r.stdout) != strings.TrimPrefix(tc.part, "OverSubscribe=") {
				t.Errorf("sinfo %%h %q, want %s", r.stdout, tc.part)
			}
			if j := c.run(0, work, "scontrol", "show", "job", ids[0]).stdout; !strings.Contains(j, " "+tc.job+" ") {
				t.Errorf("scontrol show job lacks %q:\n%s", tc.job, j)
			}
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				c.waitState(id, "COMPLETED")
			}
			// -s and --exclusive show as Slurm prints them.
			s := c.submit(work, "-s", "-n", "1", "-o", "/dev/null", "--wrap", "true")
			x := c.submit(work, "--exclusive", "-o", "/dev/null", "--wrap", "true")
			c.waitState(s, "COMPLETED")
			c.waitState(x, "COMPLETED")
			if j := c.run(0, work, "scontrol", "show", "job", s).stdout; !strings.Contains(j, " OverSubscribe=YES ") {
				t.Errorf("-s job:\n%s", j)
			}
			if j := c.run(0, work, "scontrol", "show", "job", x).stdout; !strings.Contains(j, " OverSubscribe=NO ") {
				t.Errorf("--exclusive job:\n%s", j)
			}
		})
	}
}
