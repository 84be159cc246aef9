package replay

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompareLog: EASY and FCFS side by side on KTH, EASY far better.
func TestCompareLog(t *testing.T) {
	log := filepath.Join(dataDir, "KTH-SP2-1996-2.1-cln.swf.gz")
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := CompareMain(t.Context(), []string{"--policies", "easy,fcfs", log, "--out", dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	t.Log("\n" + stdout.String())
	f, err := os.Open(filepath.Join(dir, "compare.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 3 || rows[1][0] != "easy" || rows[2][0] != "fcfs" {
		t.Fatalf("compare.csv: %v %v", rows, err)
	}
	wait := func(row []string) string { return row[slices_index(rows[0], "avg wait (min)")] }
	if len(wait(rows[1])) >= len(wait(rows[2])) {
		t.Errorf("EASY wait %s min not far below FCFS %s", wait(rows[1]), wait(rows[2]))
	}
	for _, svg := range []string{"utilization.svg", "avg-wait.svg"} {
		if b, err := os.ReadFile(filepath.Join(dir, svg)); err != nil || !bytes.Contains(b, []byte("</svg>")) {
			t.Errorf("%s: %v", svg, err)
		}
	}
}

func slices_index(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}

// TestCompareSweep: reservation strategies against the load on the §3.4
// workload; the output is the same on every run (parallel runs, fixed
// order) and LACT loses more than min-LIP at high load (thesis Fig. 3.4).
func TestCompareSweep(t *testing.T) {
	args := []string{"--synthetic", "castillo-ch3", "--jobs", "3000", "--strategy", "min-lip,lact",
		"--loads", "0.3,0.9", "--seed", "2"}
	var outs [2]string
	for i := range outs {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		if code := CompareMain(t.Context(), append(args, "--out", dir), &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		svg, err := os.ReadFile(filepath.Join(dir, "job-loss.svg"))
		if err != nil || bytes.Count(svg, []byte("<polyline")) != 2 {
			t.Fatalf("job-loss.svg: %v\n%s", err, svg)
		}
		outs[i] = stdout.String() + string(svg)
	}
	if outs[0] != outs[1] {
		t.Error("two runs differ")
	}
	t.Log("\n" + outs[0][:strings.Index(outs[0], "<svg")])
	lines := strings.Split(outs[0], "\n")
	var lip, lact float64
	for _, l := range lines {
		cells := strings.Split(l, "|")
		if len(cells) < 7 || strings.TrimSpace(cells[2]) != "0.9" {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(strings.TrimSpace(cells[6]), &v); err != nil {
			t.Fatal(err)
		}
		switch strings.TrimSpace(cells[1]) {
		case "reserve/min-lip":
			lip = v
		case "reserve/lact":
			lact = v
		}
	}
	if !(lact > 2*lip) || lact == 0 {
		t.Errorf("job loss at ρ = 0.9: lact %g, min-lip %g; want lact > 2× min-lip", lact, lip)
	}
}

func TestCompareErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--loads", "0.1", "x.swf"}, 2, "--loads sweeps a --synthetic workload"},
		{[]string{"--synthetic", "castillo-ch3", "--loads", "a"}, 2, `"a" is not a number`},
		{[]string{"--synthetic", "castillo-ch3", "--jobs", "50", "--policies", "sjf"}, 1, `unknown policy "sjf"`},
	} {
		var stdout, stderr bytes.Buffer
		if code := CompareMain(t.Context(), c.args, &stdout, &stderr); code != c.code || !strings.Contains(stderr.String(), c.msg) {
			t.Errorf("%v: exit %d %q; want %d %q", c.args, code, stderr.String(), c.code, c.msg)
		}
	}
}
