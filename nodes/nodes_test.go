package nodes

import "testing"

func TestStepNames(t *testing.T) {
	for _, tc := range []struct {
		k    StepKey
		name string
	}{
		{StepKey{Job: 1, Step: -1}, "1.batch.r0"},
		{StepKey{Job: 42, Step: -1, Run: 1}, "42.batch.r1"},
		{StepKey{Job: 123456789012, Step: 0, Run: 12}, "123456789012.0.r12"},
		{StepKey{Job: 5, Step: 17, Run: LegacyRun}, "5.17"},
		{StepKey{Job: 9, Step: -1, Run: LegacyRun}, "9.batch"},
	} {
		if got := tc.k.Name(); got != tc.name {
			t.Errorf("%+v named %q, want %q", tc.k, got, tc.name)
		}
		if got, ok := ParseStepName(tc.name); !ok || got != tc.k {
			t.Errorf("%q parsed as %+v %v, want %+v", tc.name, got, ok, tc.k)
		}
	}
	for _, bad := range []string{"9", "x.batch", "9.-2", "-9.batch", "9.batch.tmp", "9.batch.r", "9.batch.r-1",
		"9.batch.r01", "9.batch.r+1", "9.batch.r1.tmp", "09.batch.r1", "9.batch.1", "staged", ""} {
		if k, ok := ParseStepName(bad); ok {
			t.Errorf("%q parsed as the step %+v", bad, k)
		}
	}
}
