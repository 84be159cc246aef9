package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"hora/nodes/cgmix"
	"hora/scheduler/mix"
)

// hora mix shows the configured ratio and mode and, on local nodes, the
// class groups' weights, freezer states and processes.
func TestHoraMix(t *testing.T) {
	name := fmt.Sprintf("climix%d", rand.Uint32())
	g, err := cgmix.Open(cgmix.DefaultRoot, "hora-"+name)
	if err != nil {
		t.Fatalf("%v (needs root and cgroup v1, as CI has)", err)
	}
	t.Cleanup(func() { g.Close() })
	if err := g.SetRatio(mix.Ratio{X: 2, Y: 1}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// thawed first: a frozen process cannot die, and Wait would hang
	t.Cleanup(func() { g.Freeze(mix.BE, false); cmd.Process.Kill(); cmd.Wait() })
	if err := g.AddStep(mix.BE, "42_local3", cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := g.Freeze(mix.BE, true); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hora.toml")
	os.WriteFile(path, []byte("cluster_name = \""+name+"\"\n[mix]\nratio = \"2:1\"\nmode = \"tdm\"\nperiod = 6\n"), 0o644)
	var out, errb bytes.Buffer
	if st := mixMain(t.Context(), []string{"--config", path, "--sample", "0.1"}, &out, &errb); st != 0 {
		t.Fatalf("exit %d: %s", st, errb.String())
	}
	o := out.String()
	for _, want := range []string{"ratio 2:1 (RT share 0.667), mode tdm, enforced on local nodes", "tdm: period 6 s: RT 4 s, then BE 2 s"} {
		if !strings.Contains(o, want) {
			t.Errorf("output lacks %q:\n%s", want, o)
		}
	}
	var rtLine, beLine string
	for _, l := range strings.Split(o, "\n") {
		f := strings.Fields(l)
		if len(f) > 3 && f[3] == "rt" {
			rtLine = l
		}
		if len(f) > 3 && f[3] == "be" {
			beLine = l
		}
	}
	if f := strings.Fields(rtLine); len(f) < 7 || f[4] != "1365" || f[5] != "THAWED" || f[6] != "0" {
		t.Errorf("rt line %q", rtLine)
	}
	if f := strings.Fields(beLine); len(f) < 7 || f[4] != "683" || (f[5] != "FROZEN" && f[5] != "FREEZING") || f[6] != "1" {
		t.Errorf("be line %q", beLine)
	}
	if !strings.Contains(o, "JOBID  NODE    CLASS  FREEZER") || !regexp.MustCompile(`(?m)^42\s+local3\s+be\s+(FROZEN|FREEZING)\s+1$`).MatchString(o) {
		t.Errorf("no line for job 42 on local3 (be, frozen with its class, 1 process):\n%s", o)
	}
	out.Reset()
	if st := mixMain(t.Context(), []string{"--sample", "-1"}, &out, &errb); st != 1 || !strings.Contains(errb.String(), "--sample") {
		t.Errorf("--sample -1: exit %d, %q", st, errb.String())
	}
}
