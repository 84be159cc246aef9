package local

import (
	"reflect"
	"testing"

	"hora/nodes"
)

func TestCgroupHelpers(t *testing.T) {
	if got, err := parseCPUList("0-2,5,7-8"); err != nil || !reflect.DeepEqual(got, []int{0, 1, 2, 5, 7, 8}) {
		t.Fatalf("parseCPUList: %v %v", got, err)
	}
	if _, err := parseCPUList("0-x"); err == nil {
		t.Fatal("bad list accepted")
	}
	if got := oomMessage(1, nodes.StepKey{Job: 42, Step: -1}); got != "slurmstepd: error: Detected 1 oom_kill event in StepId=42.batch. Some of the step tasks have been OOM Killed.\n" {
		t.Fatalf("oomMessage %q", got)
	}
	if got := oomMessage(3, nodes.StepKey{Job: 7, Step: 0}); got != "slurmstepd: error: Detected 3 oom_kill events in StepId=7.0. Some of the step tasks have been OOM Killed.\n" {
		t.Fatalf("oomMessage %q", got)
	}
}
