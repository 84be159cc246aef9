package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const rtConfig = localBatch + `
[[partition]]
name = "rt"
nodes = "local[1-4]"
policy = "dlt"
[partition.params]
cms = "0.0001"
cps = "0.002"
`

// A divisible real-time job end to end: admitted at submit, split into
// chunks that run on nodes with HORA_CHUNK_*, shown as steps in sacct; an
// impossible deadline is refused with the earliest deadline that could be
// guaranteed, and nothing is queued.
func TestRealTimeDivisibleEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, rtConfig)
	work := c.workDir()

	// 2,000 units at cps 0.002 s/unit: 4 s of work on one node, so a 60 s
	// deadline is easy; the chunks must cover the load exactly.
	id := c.submit(work, "-p", "rt", "--deadline=now+60", "--load=2k", "-o", "rt-%j.out",
		"--wrap", `echo "chunk $HORA_CHUNK_INDEX $HORA_CHUNK_OFFSET $HORA_CHUNK_SIZE $SLURM_JOB_ID"`)
	c.waitState(id, "COMPLETED")
	out, err := os.ReadFile(filepath.Join(work, "rt-"+id+".out"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	sort.Strings(lines)
	var total float64
	re := regexp.MustCompile(`^chunk (\d+) ([0-9.e+]+) ([0-9.e+]+) ` + id + `$`)
	for _, l := range lines {
		m := re.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("chunk output line %q", l)
		}
		var size float64
		if _, err := fmtSscan(m[3], &size); err != nil {
			t.Fatal(err)
		}
		total += size
	}
	if total < 1999.999 || total > 2000.001 {
		t.Errorf("chunks cover %g units, want 2000 (%q)", total, lines)
	}
	r := c.run(0, work, "sacct", "-j", id, "-P", "-n", "-o", "JobID,State")
	rows := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(rows) != 1+len(lines) || rows[0] != id+"|COMPLETED" || !strings.HasPrefix(rows[1], id+".0|COMPLETED") {
		t.Errorf("sacct rows %q for %d chunks", rows, len(lines))
	}

	// 10^9 units need ~2·10^6 s: refused, with the earliest guaranteed
	// deadline named, exit 1, and no job created.
	r = c.run(0, work, "sbatch", "-p", "rt", "--deadline=now+60", "--load=1G", "--wrap", "true")
	if r.code != 1 || !regexp.MustCompile(`^sbatch: error: Batch job submission failed: Requested deadline cannot be guaranteed \(earliest guaranteed deadline \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\)\n$`).MatchString(r.stderr) || r.stdout != "" {
		t.Errorf("impossible deadline: %+v", r)
	}
	r = c.run(0, work, "squeue", "-h", "-t", "all", "-o", "%i")
	if strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("queue after a refusal: %q", r.stdout)
	}
}

func fmtSscan(s string, f *float64) (int, error) { return fmt.Sscan(s, f) }
