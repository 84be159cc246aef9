package sbatch

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// --rt-frame, --rt-buffer and --rt-work make a periodic job: one work value
// is every -n process's, a list gives one per process; bad values are
// refused with exit 1 and the option named, from the command line and from
// #SBATCH lines (with file:line).
func TestPeriodicOptions(t *testing.T) {
	sp, _, err := submit([]string{"--rt-frame=100ms", "--rt-buffer=10", "--rt-work=40ms", "-n", "3", "--wrap=x"}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if sp.RTFrame != 0.1 || sp.RTBuffer != 10 || !slices.Equal(sp.RTWork, []float64{0.04, 0.04, 0.04}) || sp.NTasks != 3 {
		t.Fatalf("spec %+v", sp)
	}
	sp, _, err = submit([]string{"--rt-frame=0.5", "--rt-work=200us,0.1s", "--wrap=x"}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if sp.RTFrame != 0.5 || sp.RTBuffer != 1 || !slices.Equal(sp.RTWork, []float64{0.0002, 0.1}) || sp.NTasks != 2 {
		t.Fatalf("spec %+v", sp)
	}
	files := map[string]string{"/home/u/rt.sh": "#!/bin/sh\n#SBATCH --rt-frame=0\ntrue\n"}
	for _, c := range []struct {
		argv []string
		msg  string
	}{
		{[]string{"--rt-frame=0", "--rt-work=1ms", "--wrap=x"},
			`error: Invalid --rt-frame specification "0": want a time longer than 0 (seconds, or with an ms, us or s suffix)`},
		{[]string{"--rt-frame=-1s", "--wrap=x"},
			`error: Invalid --rt-frame specification "-1s": want a time longer than 0 (seconds, or with an ms, us or s suffix)`},
		{[]string{"--rt-frame=10ms", "--rt-work=20ms", "--wrap=x"},
			"error: Invalid --rt-work specification: process 0 needs 0.02s per frame, longer than the --rt-frame of 0.01s"},
		{[]string{"--rt-frame=10ms", "--rt-work=1ms,1ms", "-n", "3", "--wrap=x"},
			"error: Invalid --rt-work specification: 2 values for -n 3 processes: give one for all or one per process"},
		{[]string{"--rt-frame=10ms", "--wrap=x"},
			"error: Invalid --rt-work specification: --rt-frame needs the work per frame of the processes (--rt-work)"},
		{[]string{"--rt-work=1ms", "--wrap=x"},
			"error: Invalid --rt-frame specification: --rt-work and --rt-buffer need --rt-frame"},
		{[]string{"--rt-frame=1", "--rt-buffer=0", "--rt-work=1ms", "--wrap=x"},
			`error: Invalid --rt-buffer specification "0": want a whole number of frames, at least 1`},
		{[]string{"--rt-frame=1", "--rt-work=1ms,,2ms", "--wrap=x"},
			`error: Invalid --rt-work specification "1ms,,2ms": "" is not a time longer than 0`},
		{[]string{"rt.sh"},
			"error: Invalid --rt-frame specification \"0\": want a time longer than 0 (seconds, or with an ms, us or s suffix)\nerror: at rt.sh:2: --rt-frame=0"},
	} {
		_, _, err := submit(c.argv, nil, files, "")
		var e *Error
		if !errors.As(err, &e) || e.Msg != c.msg || e.Exit != 1 {
			t.Errorf("%q: got %v, want %q exit 1", c.argv, err, c.msg)
		}
	}
}

// rtCompanions are the options a periodic-job option needs beside it, for
// the tests that submit each option alone.
var rtCompanions = map[string][]string{
	"rt-frame":  {"--rt-work=1ms"},
	"rt-buffer": {"--rt-frame=1", "--rt-work=1ms"},
	"rt-work":   {"--rt-frame=1"},
}

// Options that choose nodes or ask for resources would be ignored by a
// periodic job (the RT admission places it): refused, exit 1, naming them.
func TestPeriodicRefusesPlacementOptions(t *testing.T) {
	for _, opt := range [][]string{{"-w", "n1"}, {"-N", "2"}, {"-x", "n2"}, {"--mem=1G"}, {"--gres=gpu:1"}, {"-c", "2"}, {"-H"}, {"--begin=now+1hour"}, {"--deadline=now+1hour"}} {
		argv := append([]string{"--rt-frame=10ms", "--rt-work=1ms", "--wrap=x"}, opt...)
		_, _, err := submit(argv, nil, nil, "")
		var e *Error
		if !errors.As(err, &e) || e.Exit != 1 || !strings.Contains(e.Msg, "cannot be used with a periodic job") {
			t.Errorf("%q: %v, want a refusal with exit 1", opt, err)
		}
	}
}
