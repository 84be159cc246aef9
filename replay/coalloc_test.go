package replay

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// coallocWorkload: two servers; Δt = 900 s, l_q = 900 s, H = 3600 s, so
// Q = 4 and maxRet = 2. Logged schedule: job 1 on both servers in [0,1000),
// job 2 on one in [2100,2600), job 3 on both in [3000,3300); job 4's start
// is not logged; job 5 asks for more than the machine; job 6 overflows the
// machine as logged.
func coallocWorkload() *Workload {
	return &Workload{Name: "hand", Procs: 2, Jobs: []Job{
		{ID: 1, Submit: 0, Run: 1000, Limit: 1000, Procs: 2, RecordedWait: 0},
		{ID: 2, Submit: 100, Run: 500, Limit: 500, Procs: 1, RecordedWait: 2000},
		{ID: 3, Submit: 200, Run: 300, Limit: 300, Procs: 2, RecordedWait: 2800},
		{ID: 4, Submit: 300, Run: 3000, Limit: 3000, Procs: 1, RecordedWait: -1},
		{ID: 6, Submit: 400, Run: 100, Limit: 100, Procs: 2, RecordedWait: 0},
		{ID: 5, Submit: 450, Run: 10, Limit: 10, Procs: 3, RecordedWait: 0},
	}}
}

var coallocHand = CoallocOptions{DeltaT: 900, Quantum: 900, Horizon: 3600}

type placed struct {
	start   float64
	retries int
}

func checkPlaced(t *testing.T, o *Outcome, want map[int]placed) {
	t.Helper()
	for i, j := range o.Workload.Jobs {
		r := o.Results[i]
		if j.Procs > o.Nodes {
			if !r.Rejected || r.Started || !strings.Contains(r.Reason, "3 nodes") {
				t.Errorf("job %d (%d procs on %d): %+v, want rejected naming the size", j.ID, j.Procs, o.Nodes, r)
			}
			continue
		}
		w := want[int(j.ID)]
		if !r.Started || r.Start != w.start || r.Retries != w.retries || r.End != w.start+j.Run {
			t.Errorf("job %d: start %v, end %v, retries %d; want start %v, %d retries", j.ID, r.Start, r.End, r.Retries, w.start, w.retries)
		}
	}
}

// TestCoallocLogged: each request against the logged schedule of the jobs
// submitted before it, on the Δt grid, with a hold to q + H after maxRet.
func TestCoallocLogged(t *testing.T) {
	o, err := Coallocate(t.Context(), coallocWorkload(), coallocHand)
	if err != nil {
		t.Fatal(err)
	}
	checkPlaced(t, o, map[int]placed{
		1: {0, 0},
		2: {1000, 1}, // 100 busy (job 1), 1000 free: its own logged slot is not booked yet
		3: {1100, 1}, // 200, then 1100: server 0 idle in [1000,2100), server 1 from 1000
		// 300, 1200, 2100 fail (no 3000 s gap before job 3's logged [3000,3300));
		// held to 300 + H = 3900, placed at once: 2 retries.
		4: {3900, 2},
		6: {1300, 1}, // job 4 is booked nowhere (no logged start)
	})
	if o.Unbooked != 2 {
		t.Errorf("unbooked %d, want 2 (job 4: no logged start; job 6: overflows the logged machine)", o.Unbooked)
	}
	s := Summarize(o, 0, "co-allocated")
	if s.AvgRetries == nil || *s.AvgRetries != 1 || s.MaxWait != 3600 {
		t.Errorf("avg retries %v, max wait %v; want 1 and 3600", s.AvgRetries, s.MaxWait)
	}
	again, err := Coallocate(t.Context(), coallocWorkload(), coallocHand)
	if err != nil || !reflect.DeepEqual(again.Results, o.Results) {
		t.Errorf("a second run differs: %v", err)
	}
}

// TestCoallocOnline: every request booked where it was placed, for its run.
func TestCoallocOnline(t *testing.T) {
	opt := coallocHand
	opt.Online = true
	o, err := Coallocate(t.Context(), coallocWorkload(), opt)
	if err != nil {
		t.Fatal(err)
	}
	checkPlaced(t, o, map[int]placed{
		1: {0, 0},
		2: {1000, 1},
		3: {2000, 2}, // 1100 fails: job 2 holds a server in [1000,1500)
		4: {3900, 2}, // 1200: only [1000,2000) on one server; 2100: job 3; held
		// 400, 1300 (job 2's server), 2200 (job 3) fail; held to 4000: 4000,
		// 4900, 5800 fail (job 4 holds a server until 6900); held to 7600.
		6: {7600, 4},
	})
}

func TestCoallocRefuses(t *testing.T) {
	w := coallocWorkload()
	w.Jobs[1].Submit = -5
	if _, err := Coallocate(t.Context(), w, coallocHand); err == nil || !strings.Contains(err.Error(), "job 2") {
		t.Errorf("out of order workload: %v, want an error naming job 2", err)
	}
	for _, bad := range []CoallocOptions{{DeltaT: 0.5}, {Quantum: 100}, {Horizon: 900, Quantum: 900}, {Procs: -1}} {
		if _, err := Coallocate(t.Context(), coallocWorkload(), bad); err == nil {
			t.Errorf("options %+v accepted", bad)
		}
	}
}

// TestCoallocCLI: `hora replay --coalloc` on KTH prints the retries and the
// penalties; bad flags exit 2 naming the flag, with nothing written.
func TestCoallocCLI(t *testing.T) {
	log := filepath.Join(dataDir, "KTH-SP2-1996-2.1-cln.swf.gz")
	var stdout, stderr bytes.Buffer
	if code := Main(t.Context(), []string{"--coalloc", "online", "--json", log}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var s Summary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	// The thesis' Figure 5.4: 75 h at most online on KTH, against 272.5 h
	// as logged; hora's index on the same log, 100 servers.
	if s.Policy != "coalloc/online" || s.AvgRetries == nil || s.MaxWait < 60*3600 || s.MaxWait > 90*3600 || s.Rejected != 0 {
		t.Errorf("policy %q, retries %v, max wait %.1f h, rejected %d; want coalloc/online, counted, 60–90 h, 0",
			s.Policy, s.AvgRetries, s.MaxWait/3600, s.Rejected)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--coalloc", "batch", log}, `--coalloc "batch"`},
		{[]string{"--dt", "60", log}, "--dt belongs to --coalloc"},
		{[]string{"--coalloc", "online", "--quantum", "100", log}, "quantum 100"},
		{[]string{"--coalloc", "logged", "--as-recorded", log}, "--coalloc replays a log"},
	} {
		stdout.Reset()
		stderr.Reset()
		if code := Main(t.Context(), c.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.msg) || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %d bytes; want 2, %q, nothing", c.args, code, stderr.String(), stdout.Len(), c.msg)
		}
	}
}
