package swf

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dataDir holds the Parallel Workloads Archive logs shared by the project.
var dataDir = SharedDataDir()

func logPath(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(dataDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("shared log missing: %v", err)
	}
	return p
}

// TestRealLogs checks the counts stated in data/swf/README.md.
func TestRealLogs(t *testing.T) {
	cases := []struct {
		file     string
		records  int
		maxProcs int64
		check    func(t *testing.T, s *Stats)
	}{
		{"KTH-SP2-1996-2.1-cln.swf.gz", 28476, 100, func(t *testing.T, s *Stats) {
			want(t, "run over request", s.Found[RunOverRequest], 475)
			// One line has neither allocated nor requested processors.
			want(t, "skipped no procs", s.SkippedBy[NoProcs], 1)
			want(t, "run zero", s.Found[RunZero], 8)
		}},
		{"CTC-SP2-1996-3.1-cln.swf.gz", 77222, 338, func(t *testing.T, s *Stats) {
			want(t, "field 8 = -1", s.Found[ReqProcsUnknown], 77222)
			want(t, "repaired field 8", s.Repaired[ReqProcsUnknown], 77222-17)
			want(t, "run over request", s.Found[RunOverRequest], 7174)
			want(t, "requested time unknown", s.Found[ReqTimeUnknown], 6)
		}},
		{"SDSC-SP2-1998-4.2-cln.swf.gz", 59715, 128, func(t *testing.T, s *Stats) {
			want(t, "allocated <= 0", s.Found[AllocUnknown], 5669)
			want(t, "run <= 0", s.Found[RunUnknown]+s.Found[RunZero], 5681)
			want(t, "skipped", s.Skipped, 5681)
			want(t, "run over request", s.Found[RunOverRequest], 4134)
		}},
		{"HPC2N-2002-2.2-cln.swf.gz", 202871, 240, func(t *testing.T, s *Stats) {
			want(t, "run over request", s.Found[RunOverRequest], 14817)
			want(t, "skipped", s.Skipped, 0)
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			lg, err := ReadFile(logPath(t, c.file), Lenient)
			if err != nil {
				t.Fatal(err)
			}
			s := &lg.Stats
			want(t, "records", s.Records, c.records)
			want(t, "kept+skipped", s.Kept+s.Skipped, s.Records)
			want(t, "len(Records)", len(lg.Records), s.Kept)
			if got := lg.MaxProcs(); got != c.maxProcs {
				t.Errorf("MaxProcs = %d, want %d", got, c.maxProcs)
			}
			if v, _ := lg.Header.Get("Version"); v != "2.2" {
				t.Errorf("Version = %q", v)
			}
			c.check(t, s)
			seen := map[int64]bool{}
			for i := range lg.Records {
				r := &lg.Records[i]
				if r.Alloc <= 0 || r.ReqProcs <= 0 || r.Run <= 0 || r.ReqTime <= 0 || r.Submit < 0 {
					t.Fatalf("kept record not repaired: %+v", *r)
				}
				if seen[r.Job] {
					t.Fatalf("duplicate job number %d", r.Job)
				}
				seen[r.Job] = true
			}
			// Strict mode refuses every real log, naming a line and a field.
			_, err = ReadFile(logPath(t, c.file), Strict)
			var le *LineError
			if !errors.As(err, &le) || le.Field == 0 || !strings.HasPrefix(err.Error(), logPath(t, c.file)+":") {
				t.Errorf("strict: got %v, want a field error", err)
			}
			raw, err := ReadFile(logPath(t, c.file), Raw)
			if err != nil {
				t.Fatal(err)
			}
			want(t, "raw records", len(raw.Records), c.records)
		})
	}
}

func want(t *testing.T, what string, got, w int) {
	t.Helper()
	if got != w {
		t.Errorf("%s = %d, want %d", what, got, w)
	}
}

func TestStrictErrors(t *testing.T) {
	good := "1 0 5 100 4 -1 -1 4 200 -1 1 3 -1 -1 -1 -1 -1 -1"
	cases := []struct{ line, want string }{
		{good, ""},
		{"1 0 5 100 4 -1 -1 4 200 -1 1 3 -1 -1 -1 -1 -1", "in.swf:3: 17 fields, want 18"},
		{good + " 7", "in.swf:3: more than 18 fields"},
		{"1 0 5 x 4 -1 -1 4 200 -1 1 3 -1 -1 -1 -1 -1 -1", `in.swf:3: field 4 (run time): "x" is not a number`},
		{"1 0 5 100 4 -1 -1 4 200 -1 9 3 -1 -1 -1 -1 -1 -1", "in.swf:3: field 11 (status): status 9 outside 0..5 (or -1 unknown)"},
		{"1 0 5 100 4 -1 -1 -1 200 -1 1 3 -1 -1 -1 -1 -1 -1", "in.swf:3: field 8 (requested processors): -1: requested processors unknown"},
		{"1 0 5 300 4 -1 -1 4 200 -1 1 3 -1 -1 -1 -1 -1 -1", "in.swf:3: field 4 (run time): run time 300 above the requested time 200"},
		{"1 0 5 -1 -1 -1 -1 4 200 -1 5 3 -1 -1 -1 -1 -1 -1", "in.swf:3: field 4 (run time): -1: run time unknown (job never ran)"},
		{"1 0 5 100.5 4 -1 -1 4 200 -1 1 3 -1 -1 -1 -1 -1 -1", `in.swf:3: field 4 (run time): "100.5" is not an integer`},
		{"1 -7 5 100 4 -1 -1 4 200 -1 1 3 -1 -1 -1 -1 -1 -1", "in.swf:3: field 2 (submit time): -7 is negative (only -1, unknown, is allowed)"},
	}
	for _, c := range cases {
		in := "; Version: 2.2\n\n" + c.line + "\n"
		_, err := Read(strings.NewReader(in), "in.swf", Strict)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.line, got, c.want)
		}
	}
}

func TestLenientRepairs(t *testing.T) {
	in := strings.Join([]string{
		"; MaxProcs: 64 (note)",
		"; free text",
		"1 0 5 100 8 -1 -1 -1 200 -1 1 3 -1 -1 -1 -1 -1 -1", // req procs → 8
		"2 1 5 100 -1 -1 -1 4 -1 -1 1 3 -1 -1 -1 -1 -1 -1",  // alloc → 4, req time → 100
		"3 2 5 -1 -1 -1 -1 4 200 -1 5 3 -1 -1 -1 -1 -1 -1",  // skip: run unknown
		"4 3 5 0 2 -1 -1 2 200 -1 5 3 -1 -1 -1 -1 -1 -1",    // skip: run zero
		"5 4 5 300 2 -1 -1 2 200 -1 7 3 -1 -1 -1 -1 -1 -1",  // over request (kept), bad status
		"6 5 5 30 -1 -1 -1 -1 200 -1 1 3 -1 -1 -1 -1 -1 -1", // skip: no procs
		"7 6.0 5 30.4 1 1.25 -1 1 200 -1 1 3 -1 -1 -1 -1 -1 -1",
	}, "\n")
	lg, err := Read(strings.NewReader(in), "x", Lenient)
	if err != nil {
		t.Fatal(err)
	}
	s := lg.Stats
	if s.Records != 7 || s.Kept != 4 || s.Skipped != 3 || s.Comments != 2 {
		t.Fatalf("stats %+v", s)
	}
	if s.SkippedBy[RunUnknown] != 1 || s.SkippedBy[RunZero] != 1 || s.SkippedBy[NoProcs] != 1 {
		t.Errorf("skips %v", s.SkippedBy)
	}
	if s.Repaired[ReqProcsUnknown] != 1 || s.Repaired[AllocUnknown] != 1 || s.Repaired[ReqTimeUnknown] != 1 ||
		s.Found[RunOverRequest] != 1 || s.Found[StatusInvalid] != 1 || s.Found[Fractional] != 1 {
		t.Errorf("found %v", s.Found)
	}
	r := lg.Records
	if r[0].ReqProcs != 8 || r[1].Alloc != 4 || r[1].ReqTime != 100 || r[2].Run != 300 || r[2].Status != -1 ||
		r[3].Submit != 6 || r[3].Run != 30 || r[3].AvgCPU != 1.25 {
		t.Errorf("records %+v", r)
	}
	if n, ok := lg.Header.Int("maxprocs"); !ok || n != 64 {
		t.Errorf("MaxProcs header = %d %v", n, ok)
	}
	if lg.Header[1].Key != "" || lg.Header[1].Value != "free text" {
		t.Errorf("header %+v", lg.Header)
	}
}

func TestRoundTripGzip(t *testing.T) {
	recs := []Record{
		{Job: 1, Submit: 0, Wait: 3, Run: 10, Alloc: 2, AvgCPU: 9.5, UsedMem: -1, ReqProcs: 2, ReqTime: 20, ReqMem: 1024, Status: 1, User: 1, Group: -1, App: -1, Queue: -1, Partition: -1, Preceding: -1, Think: -1},
		{Job: 9, Submit: 7, Wait: -1, Run: 1, Alloc: 1, AvgCPU: 0.1, UsedMem: 3, ReqProcs: 1, ReqTime: 1, ReqMem: -1, Status: 5, User: 2, Group: 2, App: 3, Queue: 4, Partition: 5, Preceding: 1, Think: 60},
	}
	h := Header{{Key: "Version", Value: "2.2"}, {Value: "a note"}}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := Write(zw, h, recs); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	lg, err := Read(&buf, "rt.swf.gz", Raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(lg.Records) != 2 || lg.Records[0] != recs[0] || lg.Records[1] != recs[1] {
		t.Fatalf("round trip: %+v", lg.Records)
	}
	if len(lg.Header) != 2 || lg.Header[0] != h[0] || lg.Header[1] != h[1] {
		t.Fatalf("header: %+v", lg.Header)
	}
}

// FuzzRead checks that no input panics, that the modes agree (strict accepts
// only what lenient keeps unchanged), and that written records read back
// identically.
func FuzzRead(f *testing.F) {
	f.Add([]byte("; Version: 2.2\n1 0 5 100 4 -1 -1 4 200 -1 1 3 -1 -1 -1 -1 -1 -1\n"))
	f.Add([]byte("1 0 5 100 4 1.5 -1 -1 200 -1 1 3 -1 -1 -1 -1 -1 -1\n2 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lax, lerr := Read(bytes.NewReader(data), "f", Lenient)
		strict, serr := Read(bytes.NewReader(data), "f", Strict)
		raw, rerr := Read(bytes.NewReader(data), "f", Raw)
		if serr == nil {
			if lerr != nil || rerr != nil {
				t.Fatalf("strict accepted, lenient %v raw %v", lerr, rerr)
			}
			if len(strict.Records) != len(lax.Records) || len(strict.Records) != len(raw.Records) {
				t.Fatalf("strict kept %d, lenient %d, raw %d", len(strict.Records), len(lax.Records), len(raw.Records))
			}
			for i := range strict.Records {
				if strict.Records[i] != lax.Records[i] {
					t.Fatalf("lenient changed a record strict accepts: %+v vs %+v", strict.Records[i], lax.Records[i])
				}
			}
		}
		if lerr != nil {
			return
		}
		s := lax.Stats
		if s.Kept+s.Skipped != s.Records || len(lax.Records) != s.Kept {
			t.Fatalf("inconsistent stats %+v", s)
		}
		for _, r := range lax.Records {
			if r.Procs() <= 0 || r.Run <= 0 || r.ReqTime <= 0 || r.Submit < 0 {
				t.Fatalf("lenient kept an unusable record %+v", r)
			}
		}
		var buf bytes.Buffer
		if err := Write(&buf, nil, lax.Records); err != nil {
			t.Fatal(err)
		}
		again, err := Read(&buf, "again", Raw)
		if err != nil {
			t.Fatalf("re-read: %v\n%s", err, buf.Bytes())
		}
		for i := range lax.Records {
			if again.Records[i] != lax.Records[i] {
				t.Fatalf("round trip %+v → %+v", lax.Records[i], again.Records[i])
			}
		}
	})
}
