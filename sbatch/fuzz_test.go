package sbatch

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"hora/api"
)

// Seeds come from testdata/fuzz/<name>/ (the corpus format of go test)
// plus the golden vectors, so that every known tricky input is replayed by
// a plain `go test`.

func FuzzParseSlurmDuration(f *testing.F) {
	for _, s := range []string{"10", "1:30", "1-2:03:04", "INFINITE", "-1", "0", "1-", "::", "99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		secs, err := ParseSlurmDuration(s)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %T, want *SyntaxError", s, err)
			}
			return
		}
		if secs == api.NoLimit {
			return
		}
		if secs <= 0 || secs%60 != 0 {
			t.Fatalf("%q = %d: not a positive whole number of minutes", s, secs)
		}
		// What scontrol prints for it reads back to the same limit.
		back, err := ParseSlurmDuration(FormatLongDuration(secs))
		if err != nil || back != secs {
			t.Fatalf("%q = %d, printed %q, read back %d, %v", s, secs, FormatLongDuration(secs), back, err)
		}
	})
}

func FuzzParseSlurmTime(f *testing.F) {
	for _, s := range []string{"now+1hour", "10:00 PM", "12/25/27-10:00:30", "2027-03-04T05:06:07",
		"tomorrow18:00", "teatime 12/25", "1122-10:00", "0101", "now-", "02/30"} {
		f.Add(s)
	}
	zone := time.FixedZone("X", -5*3600)
	now := testNow.In(zone)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSlurmTime(s, now)
		if err != nil {
			return
		}
		if got.Location() != zone {
			t.Fatalf("%q: location %v, want now's", s, got.Location())
		}
		// A bare clock time is the next such minute: after now, and at
		// most a day (plus the seconds of the current minute) ahead.
		if isClockOnly(s) && (!got.After(now) || got.After(now.Add(24*time.Hour+time.Minute))) {
			t.Fatalf("%q = %v, not within a day after %v", s, got, now)
		}
	})
}

// clockOnly matches a lone clock such as "9:05", "21:30:59" or "12:00 am".
var clockOnly = regexp.MustCompile(`(?i)^[0-9]{1,2}:[0-9]{2}(:[0-9]{2})?[ \t]*([ap]m)?$`)

func isClockOnly(s string) bool { return clockOnly.MatchString(s) }

func FuzzHostlist(f *testing.F) {
	for _, s := range []string{"n[01-03,7]", "r[1-2]n[1-2]", "a,b c", "n[9-010]", "n[1-3]x", "[1-2]", "n]", "x[1-2]y[3]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := ExpandHostlist(s)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %T, want *SyntaxError", s, err)
			}
			return
		}
		c := CompressHostlist(names)
		back, err := ExpandHostlist(c)
		if err != nil || !slices.Equal(back, names) {
			t.Fatalf("%q → %q → %q (%v), want %q", s, c, back, err, names)
		}
	})
}

func FuzzScanDirectives(f *testing.F) {
	for _, s := range []string{"#!/bin/sh\n#SBATCH -J x -t 5 # c\necho\n", "#SBATCH 'a\n", "#SLURM \"x\\\"y\"\n",
		"#!/bin/sh\n#PBS -l walltime=1:00:00,nodes=2:ppn=4 -j oe\n", "\n\n  #SBATCH x\n#SBATCH\\\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		dirs, _, err := ScanDirectives(script, "f")
		nlines := strings.Count(string(script), "\n") + 1
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Exit != 1 || !strings.Contains(e.Msg, "Unmatched") && !strings.Contains(e.Msg, "Unexpected `:`") {
				t.Fatalf("error %v, want a fatal *Error (unmatched quote, leading ':')", err)
			}
		}
		last := 0
		for _, d := range dirs {
			if d.Line <= last || d.Line > nlines || len(d.Words) == 0 {
				t.Fatalf("bad directive %+v after line %d of %d", d, last, nlines)
			}
			last = d.Line
		}
		pbs, err := TranslatePBS(script, "f")
		if err == nil {
			// The translator writes only options BuildSpec knows.
			for _, d := range pbs {
				if _, err := Getopt(GetoptTable(Sbatch), d.Words, false); err != nil {
					t.Fatalf("translated %q: %v", d.Words, err)
				}
			}
		}
	})
}
