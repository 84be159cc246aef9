package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// goldenLine is one entry of testdata/golden/lines.txt.
type goldenLine struct {
	name, cmd string
	differs   bool // "!": a known difference (docs/compat.md), not compared
}

func readGoldenLines(t *testing.T) []goldenLine {
	t.Helper()
	b, err := os.ReadFile("testdata/golden/lines.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out []goldenLine
	for n, l := range strings.Split(string(b), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		name, cmd, ok := strings.Cut(l, "\t")
		if !ok {
			t.Fatalf("lines.txt:%d: no tab between name and command", n+1)
		}
		g := goldenLine{name: strings.TrimPrefix(name, "!"), cmd: cmd, differs: strings.HasPrefix(name, "!")}
		out = append(out, g)
	}
	return out
}

var (
	loneID    = regexp.MustCompile(`^[0-9]+\n$`)
	digitRun  = regexp.MustCompile(`[0-9]+`)
	goldenOut = regexp.MustCompile(`(?s)^\$ [^\n]*\nexit (\d+)\n--- stdout\n(.*)--- stderr\n(.*)$`)
)

// normalise replaces the job ids a run printed alone (in order) by J1, J2,
// … so that Slurm's and hora's outputs compare.
func normalise(s string, ids []string) string {
	return digitRun.ReplaceAllStringFunc(s, func(d string) string {
		for k, id := range ids {
			if d == id {
				return "J" + strconv.Itoa(k+1)
			}
		}
		return d
	})
}

// TestGoldenAgainstSlurm replays the command lines recorded from the real
// Slurm 22.05 (scripts/golden-record.sh) against a real horad, and compares
// exit status, stdout and stderr after normalising job ids. Lines marked
// "!" are known differences (docs/compat.md): shown with -v, not compared.
func TestGoldenAgainstSlurm(t *testing.T) {
	requireRoot(t)
	lines := readGoldenLines(t)
	// Ids far from every other number of the outputs, as the oracle's are.
	c := newClusterWith(t, "first_job_id = 4000\n"+localBatch)
	work := c.workDir()
	var horaIDs, slurmIDs []string
	last, prev := "", ""
	same := 0
	for _, g := range lines {
		want, err := os.ReadFile(filepath.Join("testdata/golden", g.name+".golden"))
		if err != nil {
			t.Fatalf("%s: %v (run scripts/golden-record.sh)", g.name, err)
		}
		m := goldenOut.FindSubmatch(want)
		if m == nil {
			t.Fatalf("%s.golden: not in the recorder's format", g.name)
		}
		wantCode, wantOut, wantErr := string(m[1]), string(m[2]), string(m[3])
		if loneID.MatchString(wantOut) {
			slurmIDs = append(slurmIDs, strings.TrimSpace(wantOut))
		}

		cmd := exec.Command("sh", "-c", g.cmd)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+c.bin+":"+os.Getenv("PATH"), "HORA_SOCKET="+c.sock, "TZ=UTC",
			"LAST="+last, "PREV="+prev)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		code := 0
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatalf("%s: %v", g.name, err)
			}
			code = ee.ExitCode()
		}
		if loneID.MatchString(o.String()) {
			prev, last = last, strings.TrimSpace(o.String())
			horaIDs = append(horaIDs, last)
		}
		got := fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", code, normalise(o.String(), horaIDs), normalise(e.String(), horaIDs))
		exp := fmt.Sprintf("exit %s\n--- stdout\n%s--- stderr\n%s", wantCode, normalise(wantOut, slurmIDs), normalise(wantErr, slurmIDs))
		switch {
		case got == exp:
			same++
		case g.differs:
			t.Logf("%s (known difference, docs/compat.md):\n--- hora\n%s--- slurm\n%s", g.name, got, exp)
		default:
			t.Errorf("%s: $ %s\n--- hora\n%s--- slurm 22.05\n%s", g.name, g.cmd, got, exp)
		}
	}
	t.Logf("%d of %d lines identical to Slurm 22.05 after normalisation", same, len(lines))
}
