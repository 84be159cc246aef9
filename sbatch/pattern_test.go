package sbatch

import (
	"strconv"
	"testing"
)

func TestExpandPatternVectors(t *testing.T) {
	f := PatternFields{JobID: 128, ArrayTaskID: -1, User: "alice", JobName: "job",
		Node: "node01.cluster", StepID: "batch", Restarts: 2}
	for _, v := range loadVectors(t, "pattern.txt", 2) {
		if got := ExpandPattern(v.fields[0], f); got != v.fields[1] {
			t.Errorf("line %d: ExpandPattern(%q) = %q, want %q", v.line, v.fields[0], got, v.fields[1])
		}
	}
}

func TestExpandPatternArrayAndSteps(t *testing.T) {
	cases := []struct {
		pattern string
		f       PatternFields
		want    string
	}{
		{"slurm-%A_%a.out", PatternFields{JobID: 205, ArrayJobID: 200, ArrayTaskID: 5}, "slurm-200_5.out"},
		{"%b", PatternFields{JobID: 205, ArrayJobID: 200, ArrayTaskID: 17}, "7"},
		{"%4a", PatternFields{JobID: 205, ArrayJobID: 200, ArrayTaskID: 3}, "0003"},
		{"%J", PatternFields{JobID: 9, ArrayTaskID: -1, StepID: "3"}, "9.3"},
		{"%s", PatternFields{JobID: 9, ArrayTaskID: -1}, "batch"},
		{"%N", PatternFields{ArrayTaskID: -1, Node: "gpu7"}, "gpu7"},
		{"%t-%n", PatternFields{ArrayTaskID: -1, TaskID: 3, NodeIndex: 1}, "3-1"},
	}
	for _, c := range cases {
		if got := ExpandPattern(c.pattern, c.f); got != c.want {
			t.Errorf("ExpandPattern(%q, %+v) = %q, want %q", c.pattern, c.f, got, c.want)
		}
	}
}

func TestParseMemMBVectors(t *testing.T) {
	for _, v := range loadVectors(t, "mem.txt", 2) {
		got, err := ParseMemMB(v.fields[0])
		if v.fields[1] == "ERROR" {
			if err == nil {
				t.Errorf("line %d: ParseMemMB(%q) = %d, want error", v.line, v.fields[0], got)
			}
			continue
		}
		if err != nil || strconv.FormatInt(got, 10) != v.fields[1] {
			t.Errorf("line %d: ParseMemMB(%q) = %d, %v; want %s", v.line, v.fields[0], got, err, v.fields[1])
		}
	}
}

func TestParseSizeVectors(t *testing.T) {
	for _, v := range loadVectors(t, "size.txt", 2) {
		got, err := ParseSize(v.fields[0])
		if v.fields[1] == "ERROR" {
			if err == nil {
				t.Errorf("line %d: ParseSize(%q) = %g, want error", v.line, v.fields[0], got)
			}
			continue
		}
		if err != nil || strconv.FormatFloat(got, 'g', -1, 64) != v.fields[1] {
			t.Errorf("line %d: ParseSize(%q) = %g, %v; want %s", v.line, v.fields[0], got, err, v.fields[1])
		}
	}
}
