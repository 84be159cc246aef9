package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `hora replay` and `hora compare` reach hora-sim beside the client binary,
// with arguments, output and exit status passed through; without hora-sim
// the client says where it looked.
func TestClientVerbsRunHoraSim(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"hora", "hora-sim"} {
		cmd := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", filepath.Join(dir, p), "hora/cmd/"+p)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", p, err, out)
		}
	}
	run := func(env []string, args ...string) (string, int) {
		cmd := exec.Command(filepath.Join(dir, "hora"), args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	out, code := run(nil, "replay", "--synthetic", "castillo-ch3", "--strategy", "min-lip", "--load", "0.5", "--jobs", "50")
	if code != 0 || !strings.Contains(out, "## hora replay: castillo-ch3") {
		t.Fatalf("hora replay: exit %d\n%s", code, out)
	}
	missing := filepath.Join(dir, "no-such.swf")
	out, code = run(nil, "replay", missing)
	if code == 0 || !strings.Contains(out, missing) {
		t.Fatalf("hora replay of a missing log: exit %d, %q", code, out)
	}
	out, code = run([]string{"HORA_SIM=" + filepath.Join(dir, "gone")}, "compare", "--policies", "easy,fcfs", missing)
	if code != 1 || !strings.Contains(out, "hora-sim not found") || !strings.Contains(out, filepath.Join(dir, "gone")) {
		t.Fatalf("hora compare without hora-sim: exit %d, %q", code, out)
	}
}
