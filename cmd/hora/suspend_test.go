package main

import (
	"strings"
	"testing"
	"time"

	"hora/api"
)

// Suspended time is neither run time (squeue TIME, scontrol RunTime, sacct
// Elapsed) nor part of the limit (EndTime moves), and scontrol shows when
// the job was last suspended and what it had run before.
func TestSuspendedTime(t *testing.T) {
	cases := []struct {
		name       string
		j          api.Job
		now        int64
		used, end  int64
		preSuspend string
	}{
		{"running, never suspended", api.Job{State: api.StateRunning, StartTime: 100}, 160, 60, 400, "SecsPreSuspend=0"},
		{"suspended at 130", api.Job{State: api.StateSuspended, StartTime: 100, SuspendTime: 130}, 160, 30, 400, "SecsPreSuspend=30"},
		{"resumed at 150 after 20 s", api.Job{State: api.StateRunning, StartTime: 100, SuspendTime: 150, SuspendedSecs: 20}, 160, 40, 420, "SecsPreSuspend=30"},
		{"suspended again at 170", api.Job{State: api.StateSuspended, StartTime: 100, SuspendTime: 170, SuspendedSecs: 20}, 200, 50, 420, "SecsPreSuspend=50"},
		{"ended", api.Job{State: api.StateCompleted, StartTime: 100, EndTime: 200, SuspendTime: 150, SuspendedSecs: 20}, 300, 80, 200, "SecsPreSuspend=30"},
	}
	for _, c := range cases {
		c.j.Spec.TimeLimit = 300
		c.j.Spec.WorkDir = "/w"
		if got := timeUsed(&c.j, c.now); got != c.used {
			t.Errorf("%s: time used %d, want %d", c.name, got, c.used)
		}
		if got := endTime(&c.j); got != c.end {
			t.Errorf("%s: end %d, want %d", c.name, got, c.end)
		}
		rec := strings.Join(jobRecord(&c.j, time.Unix(c.now, 0), "").lines, "\n")
		if !strings.Contains(rec, " "+c.preSuspend+" ") {
			t.Errorf("%s: scontrol record lacks %s:\n%s", c.name, c.preSuspend, rec)
		}
	}
}
