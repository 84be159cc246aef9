package sbatch

import (
	"errors"
	"strconv"
	"testing"
	"time"
)

// testNow is the clock of every golden time vector: Sunday 2026-11-22 21:30 UTC.
var testNow = time.Date(2026, 11, 22, 21, 30, 0, 0, time.UTC)

func TestParseSlurmDurationVectors(t *testing.T) {
	for _, v := range loadVectors(t, "slurm_duration.txt", 2) {
		in, want := v.fields[0], v.fields[1]
		got, err := ParseSlurmDuration(in)
		if want == "ERROR" {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Errorf("line %d: ParseSlurmDuration(%q) = %d, %v; want *SyntaxError", v.line, in, got, err)
			}
			continue
		}
		if err != nil || strconv.FormatInt(got, 10) != want {
			t.Errorf("line %d: ParseSlurmDuration(%q) = %d, %v; want %s", v.line, in, got, err, want)
		}
	}
}

func TestParsePBSDurationVectors(t *testing.T) {
	for _, v := range loadVectors(t, "pbs_duration.txt", 2) {
		in, want := v.fields[0], v.fields[1]
		got, err := ParsePBSDuration(in)
		if want == "ERROR" {
			if err == nil {
				t.Errorf("line %d: ParsePBSDuration(%q) = %d, want error", v.line, in, got)
			}
			continue
		}
		if err != nil || strconv.FormatInt(got, 10) != want {
			t.Errorf("line %d: ParsePBSDuration(%q) = %d, %v; want %s", v.line, in, got, err, want)
		}
	}
}

func TestParseSlurmTimeVectors(t *testing.T) {
	for _, v := range loadVectors(t, "slurm_time.txt", 2) {
		in, want := v.fields[0], v.fields[1]
		got, err := ParseSlurmTime(in, testNow)
		if want == "ERROR" {
			if err == nil {
				t.Errorf("line %d: ParseSlurmTime(%q) = %v, want error", v.line, in, got)
			}
			continue
		}
		if err != nil || got.Format("2006-01-02T15:04:05") != want {
			t.Errorf("line %d: ParseSlurmTime(%q) = %v, %v; want %s", v.line, in, got, err, want)
		}
	}
}

// The result is in now's location, and "today or tomorrow" is decided by the
// local wall clock, not UTC.
func TestParseSlurmTimeLocation(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	now := time.Date(2026, 11, 23, 6, 30, 0, 0, tokyo) // = testNow
	got, err := ParseSlurmTime("07:00", now)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 11, 23, 7, 0, 0, 0, tokyo); !got.Equal(want) || got.Location() != tokyo {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestFormatDurationVectors(t *testing.T) {
	for _, v := range loadVectors(t, "format_duration.txt", 3) {
		secs, err := strconv.ParseInt(v.fields[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatSqueueDuration(secs); got != v.fields[1] {
			t.Errorf("line %d: FormatSqueueDuration(%d) = %q, want %q", v.line, secs, got, v.fields[1])
		}
		if got := FormatLongDuration(secs); got != v.fields[2] {
			t.Errorf("line %d: FormatLongDuration(%d) = %q, want %q", v.line, secs, got, v.fields[2])
		}
	}
}

func TestFormatTimeLimit(t *testing.T) {
	cases := []struct {
		secs int64
		long bool
		want string
	}{
		{-1, false, "UNLIMITED"}, {-1, true, "UNLIMITED"},
		{3600, false, "1:00:00"}, {3600, true, "01:00:00"},
		{600, false, "10:00"}, {600, true, "00:10:00"},
		{2 * 86400, false, "2-00:00:00"},
	}
	for _, c := range cases {
		if got := FormatTimeLimit(c.secs, c.long); got != c.want {
			t.Errorf("FormatTimeLimit(%d, %v) = %q, want %q", c.secs, c.long, got, c.want)
		}
	}
}

func TestFormatTimestampVectors(t *testing.T) {
	for _, v := range loadVectors(t, "timestamp.txt", 3) {
		unix, err := strconv.ParseInt(v.fields[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatTimestamp(unix, v.fields[1], testNow); got != v.fields[2] {
			t.Errorf("line %d: FormatTimestamp(%d, %q) = %q, want %q", v.line, unix, v.fields[1], got, v.fields[2])
		}
	}
}

// Round trip: what FormatLongDuration prints for whole minutes, the
// days-hours:minutes:seconds grammar reads back.
func TestDurationRoundTrip(t *testing.T) {
	for _, mins := range []int64{1, 59, 60, 61, 1439, 1440, 1441, 100000} {
		s := FormatLongDuration(mins * 60)
		got, err := ParseSlurmDuration(s)
		if err != nil || got != mins*60 {
			t.Errorf("%d min: %q parsed as %d, %v", mins, s, got, err)
		}
	}
}

func TestStrftime(t *testing.T) {
	tm := time.Date(2026, 3, 5, 7, 8, 9, 0, time.FixedZone("CET", 3600)) // a Thursday
	cases := map[string]string{
		"%z %Z":       "+0100 CET",
		"%k|%l|%I|%P": " 7| 7|07|am",
		"%u %w":       "4 4",
		"%C%y":        "2026",
		"%-d/%-m/%-H": "5/3/7",
		"%c":          "Thu Mar  5 07:08:09 2026",
		"a%nb%tc":     "a\nb\tc",
		"%h %B %A":    "Mar March Thursday",
		"%Q%-":        "%Q%-",
		"%":           "%",
		"%s":          "1772690889",
	}
	for f, want := range cases {
		if got := Strftime(f, tm); got != want {
			t.Errorf("Strftime(%q) = %q, want %q", f, got, want)
		}
	}
}

func TestSyntaxErrorText(t *testing.T) {
	_, err := ParseSlurmDuration("1:2x")
	if err == nil || err.Error() != `invalid duration "1:2x" at position 3: unexpected character 'x'` {
		t.Errorf("error text %q", err)
	}
}
