package replay

import "testing"

// --swf-dependencies: a job whose SWF record names a preceding job (field
// 17) starts only after that job ended plus the think time (field 18), in
// simulated time; without the option the fields are ignored.
func TestSWFPrecedingJobIsADependency(t *testing.T) {
	jobs := []Job{job(1, 0, 50, 60, 1), job(2, 10, 5, 10, 1)}
	jobs[1].Record.Preceding, jobs[1].Record.Think = 1, 100
	got := starts(t, jobs, Options{Policy: "easy", Dependencies: true})
	if got[2] != 150 {
		t.Fatalf("job 2 started at %v, want 150 (job 1 ends at 50, think 100): %v", got[2], got)
	}
	got = starts(t, jobs, Options{Policy: "easy"})
	if got[2] != 10 {
		t.Fatalf("without --swf-dependencies job 2 started at %v, want 10", got[2])
	}
}
