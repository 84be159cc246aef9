package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A log replayed with a ratio: --rt-class queue=1 makes the jobs of SWF
// queue 1 the RT class, booked in partition rt for LEN/s, beside the
// best-effort rest on the same nodes. With deadlines 3·LEN after
// submission, s = 1 (1:0) and s = 2/3 (2:1) admit RT jobs, while s = 1/4
// (1:3) books 4·LEN, which no deadline allows: every RT job is refused.
// Best-effort jobs are never refused and all complete.
func TestLogRTClassWithRatio(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "mix.swf")
	var b strings.Builder
	b.WriteString("; MaxProcs: 16\n")
	rt := 0
	for i := 1; i <= 120; i++ {
		run := 100 + (i*37)%400
		queue := 1 + i%2
		if queue == 1 {
			rt++
		}
		fmt.Fprintf(&b, "%d %d -1 %d %d -1 -1 %d %d -1 1 %d -1 -1 %d 1 -1 -1\n", i, i*60, run, 2+i%5, 2+i%5, 2*run, 1+i%7, queue)
	}
	if err := os.WriteFile(log, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	type group struct {
		Name     string `json:"name"`
		Jobs     int    `json:"jobs"`
		Rejected int    `json:"rejected"`
	}
	var sum struct {
		Policy         string  `json:"policy"`
		DeadlineJobs   int     `json:"deadline_jobs"`
		Rejected       int     `json:"rejected"`
		Started        int     `json:"started"`
		NeverStarted   int     `json:"never_started"`
		Classes        []group `json:"classes"`
		DeadlineMisses int     `json:"deadline_misses"`
	}
	runAt := func(ratio string) (rtg, beg group) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := Main(t.Context(), []string{log, "--rt-class", "queue=1", "--deadline-factor", "3", "--ratio", ratio, "--json"},
			&stdout, &stderr); code != 0 {
			t.Fatalf("--ratio %s: exit %d: %s", ratio, code, stderr.String())
		}
		sum.Classes = nil
		if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
			t.Fatal(err)
		}
		for _, g := range sum.Classes {
			switch g.Name {
			case "RT":
				rtg = g
			case "BE":
				beg = g
			}
		}
		if sum.DeadlineJobs != rt || rtg.Jobs != rt || beg.Jobs != 120-rt || beg.Rejected != 0 {
			t.Fatalf("--ratio %s: %d deadline jobs, classes %+v; want %d RT (queue 1), %d BE never refused", ratio, sum.DeadlineJobs, sum.Classes, rt, 120-rt)
		}
		if sum.NeverStarted != 0 || sum.Started != 120-sum.Rejected {
			t.Errorf("--ratio %s: %d started, %d never started, %d refused of 120", ratio, sum.Started, sum.NeverStarted, sum.Rejected)
		}
		if !strings.Contains(sum.Policy, "rt: reserve") {
			t.Errorf("--ratio %s: policy %q, want the rt partition named", ratio, sum.Policy)
		}
		return rtg, beg
	}
	for _, ratio := range []string{"1:0", "2:1"} {
		if g, _ := runAt(ratio); g.Rejected == g.Jobs {
			t.Errorf("--ratio %s: every RT job refused (%d), want some admitted at s ≥ 2/3 with deadlines of 3·LEN", ratio, g.Rejected)
		}
		if sum.DeadlineMisses != 0 {
			t.Errorf("--ratio %s: %d admitted RT jobs missed their deadline", ratio, sum.DeadlineMisses)
		}
	}
	if g, _ := runAt("1:3"); g.Rejected != g.Jobs {
		t.Errorf("--ratio 1:3: %d of %d RT jobs refused, want all (booked 4·LEN, deadline 3·LEN)", g.Rejected, g.Jobs)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{log, "--rt-class", "queue=1"}, "--rt-class needs --deadline-factor"},
		{[]string{log, "--rt-class", "queue=x", "--deadline-factor", "2"}, `--rt-class "queue=x": "x" is not a queue number (SWF field 15`},
		{[]string{log, "--rt-class", "fraction=2", "--deadline-factor", "2"}, "want a fraction in [0, 1]"},
		{[]string{log, "--rt-class", "color=red", "--deadline-factor", "2"}, "want deadline, queue=N"},
		{[]string{log, "--rt-class", "queue=1", "--deadline-factor", "2", "--ratio", "0:1"}, "--ratio 0:1 gives the RT class"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(t.Context(), c.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}
