package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

const resConfig = localBatch + `
[[partition]]
name = "res"
nodes = "local[1-4]"
policy = "reserve"
`

// A rigid deadline job is booked at submit into [begin, deadline] and runs
// at its booked time, not before; a job that cannot be booked by its
// deadline is refused with the earliest feasible start and deadline.
func TestReservationEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, resConfig)
	work := c.workDir()
	begin := time.Now().Add(3 * time.Second).Unix()
	id := c.submit(work, "-p", "res", "-N", "4", "-t", "1", "--begin=now+3", "--deadline=now+600",
		"-o", "res-%j.out", "--wrap", "date +%s")
	if got := c.state(id); got != "PENDING" {
		t.Errorf("booked job before its start: %s", got)
	}
	// squeue --start shows the booked start, within [begin, deadline - limit].
	r := c.run(0, work, "squeue", "--start", "-h", "-j", id, "-o", "%S")
	if booked, err := time.ParseInLocation("2006-01-02T15:04:05", strings.TrimSpace(r.stdout), time.UTC); err != nil ||
		booked.Unix() < begin-1 || booked.Unix() > begin+600 {
		t.Errorf("squeue --start for a booked job: %+v", r)
	}
	c.waitState(id, "COMPLETED")
	out, _ := os.ReadFile(filepath.Join(work, "res-"+id+".out"))
	started, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil || started < begin {
		t.Errorf("job ran at %q, booked not before %d", out, begin)
	}

	// All four nodes are booked for exactly [now+60, now+120]; a 2-node job
	// needing one minute inside [now+60, now+150] cannot fit and is refused.
	c.submit(work, "-p", "res", "-N", "4", "-t", "1", "--begin=now+60", "--deadline=now+120", "--wrap", "true")
	r = c.run(0, work, "sbatch", "-p", "res", "-N", "2", "-t", "1", "--begin=now+60", "--deadline=now+150", "--wrap", "true")
	want := regexp.MustCompile(`^sbatch: error: Batch job submission failed: .+ \(earliest feasible start \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d, earliest guaranteed deadline \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\)\n$`)
	if r.code != 1 || !want.MatchString(r.stderr) {
		t.Errorf("unbookable job: %+v", r)
	}
}
