package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// srun's command line: input variables first, the command line wins;
// Slurm's texts and exit codes for bad input; no request without a command.
func TestParseSrun(t *testing.T) {
	env := func(vars ...string) *Env {
		return &Env{Environ: func() []string { return vars }, Getenv: func(string) string { return "" }}
	}
	o, err := parseSrun(env("SLURM_NTASKS=8", "SLURM_JOB_NUM_NODES=2", "SLURM_JOB_ID=12", "SLURM_LABELIO=1"), []string{"-n3", "-m", "cyclic", "hostname", "-l"})
	if err != nil {
		t.Fatal(err)
	}
	if o.ntasks != 3 || !o.ntasksFromCmd || o.nodes != 2 || o.nodesFromCmd || o.jobID != 12 || !o.label || !o.cyclic ||
		!slices.Equal(o.args, []string{"hostname", "-l"}) {
		t.Errorf("parsed %+v", o)
	}
	for _, tc := range []struct {
		args  []string
		lines []string
		exit  int
	}{
		{[]string{"--bogus", "x"}, []string{"unrecognized option '--bogus'", `Try "srun --help" for more information`}, 255},
		{[]string{"-n", "abc", "x"}, []string{`error: Invalid numeric value "abc" for --ntasks.`}, 1},
		{[]string{"-n", "2"}, []string{"fatal: No command given to execute."}, 1},
		{[]string{"-m", "diagonal", "x"}, []string{"error: Invalid --distribution specification"}, 1},
	} {
		_, err := parseSrun(env(), tc.args)
		f, ok := err.(*srunFail)
		if !ok || f.exit != tc.exit || !slices.Equal(f.lines, tc.lines) {
			t.Errorf("%q: %#v", tc.args, err)
		}
	}
}

func TestMultiProg(t *testing.T) {
	p := filepath.Join(t.TempDir(), "conf")
	os.WriteFile(p, []byte("# comment\n0 a %t\n1-2,4 b %t %o\n* c\n"), 0o644)
	got, err := multiProg(p, 5)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"a", "0"}, {"b", "1", "0"}, {"b", "2", "1"}, {"c"}, {"b", "4", "2"}}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("task %d: %q, want %q", i, got[i], want[i])
		}
	}
	os.WriteFile(p, []byte("0-7 a\n"), 0o644)
	if _, err := multiProg(p, 2); err == nil || !strings.Contains(err.Error(), ":1: task 2 is not in the step") {
		t.Errorf("task outside the step: %v", err)
	}
}

func TestStepListFormats(t *testing.T) {
	if got := compressCounts([]int{2, 2, 2, 1}); got != "2(x3),1" {
		t.Errorf("compressCounts = %q", got)
	}
	if got := rangeList([]int{5, 0, 1, 2, 7, 8}); got != "0-2,5,7-8" {
		t.Errorf("rangeList = %q", got)
	}
	env := mergeEnv([]string{"A=1", "SLURM_NTASKS=9", "A=2"}, map[string]string{"SLURM_NTASKS": "4"})
	if !slices.Equal(env, []string{"A=2", "SLURM_NTASKS=4"}) {
		t.Errorf("mergeEnv = %q", env)
	}
}
