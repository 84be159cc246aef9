package sbatch

import (
	"slices"
	"testing"
)

func TestParseArray(t *testing.T) {
	cases := []struct {
		in       string
		tasks    []int64
		throttle int
		ok       bool
	}{
		{"0-3", []int64{0, 1, 2, 3}, 0, true},
		{"1,3,5-9:2", []int64{1, 3, 5, 7, 9}, 0, true},
		{"0-15%4", nil, 4, true},
		{"1-3%0", []int64{1, 2, 3}, 0, true},
		{"3,1,3", []int64{1, 3}, 0, true},
		{"0-1000", nil, 0, true},
		// Slurm refuses all of these with "Invalid job array specification".
		{"5-1", nil, 0, false},
		{"0-1001", nil, 0, false},
		{"abc", nil, 0, false},
		{"1-5:0", nil, 0, false},
		{"", nil, 0, false},
		{"1-", nil, 0, false},
		{"1,,2", nil, 0, false},
		{"1%x", nil, 0, false},
		{"-1", nil, 0, false},
	}
	for _, c := range cases {
		a, ok := ParseArray(c.in, DefaultMaxArraySize)
		if ok != c.ok {
			t.Errorf("ParseArray(%q) ok=%v, want %v", c.in, ok, c.ok)
			continue
		}
		if c.tasks != nil && !slices.Equal(a.Tasks, c.tasks) {
			t.Errorf("ParseArray(%q) tasks %v, want %v", c.in, a.Tasks, c.tasks)
		}
		if ok && a.Throttle != c.throttle {
			t.Errorf("ParseArray(%q) throttle %d, want %d", c.in, a.Throttle, c.throttle)
		}
	}
	if a, _ := ParseArray("0-15%4", DefaultMaxArraySize); len(a.Tasks) != 16 {
		t.Errorf("0-15 has %d tasks", len(a.Tasks))
	}
	if _, ok := ParseArray("0-9", 10); !ok {
		t.Error("0-9 refused under MaxArraySize 10")
	}
	if _, ok := ParseArray("0-10", 10); ok {
		t.Error("0-10 accepted under MaxArraySize 10")
	}
}

func TestArrayStepAndFormat(t *testing.T) {
	if s := ArrayStep([]int64{1, 3, 5, 7, 9}); s != 2 {
		t.Errorf("step %d, want 2", s)
	}
	if s := ArrayStep([]int64{1, 2, 5}); s != 1 {
		t.Errorf("uneven step %d, want 1", s)
	}
	if f := FormatArrayTasks([]int64{3, 4, 5, 7, 9, 10}); f != "3-5,7,9-10" {
		t.Errorf("format %q", f)
	}
	for in, want := range map[string][]int64{"3": {3}, "[1-3]": {1, 2, 3}, "[1,5-6]": {1, 5, 6}} {
		got, ok := ParseTaskSelector(in)
		if !ok || !slices.Equal(got, want) {
			t.Errorf("ParseTaskSelector(%q) = %v %v", in, got, ok)
		}
	}
	for _, bad := range []string{"[1-", "[]", "x", "[3-1]", "1-3", ""} {
		if _, ok := ParseTaskSelector(bad); ok {
			t.Errorf("ParseTaskSelector(%q) accepted", bad)
		}
	}
}

func TestParseDependency(t *testing.T) {
	ok := []struct{ in, text string }{
		{"afterok:7", "afterok:7"},
		{"afterok:7:8", "afterok:7,afterok:8"},
		{"after:7+5,afterany:9_*", "after:7+5,afterany:9_*"},
		{"afternotok:7?aftercorr:8_3", "afternotok:7?aftercorr:8_3"},
		{"singleton", "singleton"},
		{"afterok:5,singleton", "afterok:5,singleton"},
		{"afterok:1,afterany:2?after:3", "afterok:1?afterany:2?after:3"},
	}
	for _, c := range ok {
		d, good := ParseDependency(c.in)
		if !good {
			t.Errorf("ParseDependency(%q) refused", c.in)
			continue
		}
		var text string
		for i, term := range d.Terms {
			if i > 0 {
				text += d.Separator()
			}
			text += term.TermText()
		}
		if text != c.text {
			t.Errorf("ParseDependency(%q) = %q, want %q", c.in, text, c.text)
		}
	}
	// Slurm: "Job dependency problem".
	for _, bad := range []string{"afterok:abc", "bogus:1", "afterok", "afterok:", "after:7+abc",
		"singleton:5", "afterok:0", "afterok:7_x"} {
		if _, good := ParseDependency(bad); good {
			t.Errorf("ParseDependency(%q) accepted", bad)
		}
	}
}

// --signal as sbatch 22.05 takes it (each case measured on it).
func TestParseSignalSpec(t *testing.T) {
	good := map[string]SignalSpec{
		"USR1@30": {10, 30, false}, "B:USR1@30": {10, 30, true}, "B:10@5": {10, 5, true},
		"R:USR1@5": {10, 5, false}, "SIGUSR1": {10, 60, false}, "usr1@5": {10, 5, false},
		"USR1@0": {10, 0, false}, "65@5": {65, 5, false},
	}
	for in, want := range good {
		if got, ok := ParseSignalSpec(in); !ok || got != want {
			t.Errorf("ParseSignalSpec(%q) = %+v %v, want %+v", in, got, ok, want)
		}
	}
	for _, bad := range []string{"FOO", "USR1@abc", "R:B:10@5", "B:R:USR1@5", "USR1@70000", "0", ""} {
		if _, ok := ParseSignalSpec(bad); ok {
			t.Errorf("ParseSignalSpec(%q) accepted", bad)
		}
	}
}
