package reserve

import (
	"testing"

	"hora/scheduler"
	"hora/scheduler/schedtest"
)

// With the [mix] share s a rigid job of length LEN is booked for LEN/s
// (DESIGN.md §1): at 2:1 a 60 s job holds its node for 90 s, so a deadline
// that LEN alone would meet is refused with the later earliest deadline.
func TestPolicyShareBooksLenOverS(t *testing.T) {
	cfg := schedtest.Cluster(1).Partition("rt", PolicyName).Default().Param("lmin", "10").Param("share", "0.6666666666666666").Config()
	h := schedtest.New(t, cfg)
	h.Submit(schedtest.Job(1).Nodes(1).Limit(60).Deadline(80).Run(60))
	ae := h.Rejects[1]
	if ae == nil || ae.Verdict != scheduler.NotNow || ae.EarliestDeadline != 90 {
		t.Fatalf("job 1: want NotNow with earliest deadline 90 (60 s / s), got %+v", ae)
	}
	h.Submit(schedtest.Job(2).Nodes(1).Limit(60).Deadline(90).Run(60))
	if ae := h.Rejects[2]; ae != nil {
		t.Fatalf("job 2 refused: %+v", ae)
	}
	h.Advance(1e9)
	if s, ok := h.StartOf(2); !ok || s.Expect != 90 {
		t.Fatalf("job 2: started %v, expected end %v; want 90", ok, s.Expect)
	}
	for _, bad := range []string{"0", "1.5", "x"} {
		cfg := schedtest.Cluster(1).Partition("rt", PolicyName).Default().Param("share", bad).Config()
		if _, err := scheduler.New(cfg); err == nil {
			t.Errorf("share %q accepted", bad)
		}
	}
}
