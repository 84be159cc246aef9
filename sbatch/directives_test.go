package sbatch

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// renderDirectives prints a scan result in the .want format: "LINE: w|w",
// "W: warning", "ERR: message".
func renderDirectives(dirs []Directive, warns []string, err error) string {
	var b strings.Builder
	if err != nil {
		b.WriteString("ERR: " + err.Error() + "\n")
		return b.String()
	}
	for _, d := range dirs {
		b.WriteString(strconv.Itoa(d.Line) + ": " + strings.Join(d.Words, "|") + "\n")
	}
	for _, w := range warns {
		b.WriteString("W: " + w + "\n")
	}
	return b.String()
}

func TestDirectivesGolden(t *testing.T) {
	scripts, err := filepath.Glob("testdata/directives/*.sh")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, sc := range scripts {
		body, err := os.ReadFile(sc)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(sc)
		var got string
		if strings.HasPrefix(name, "pbs") {
			dirs, err := TranslatePBS(body, name)
			got = renderDirectives(dirs, nil, err)
		} else {
			got = renderDirectives(ScanDirectives(body, name))
		}
		wantFile := strings.TrimSuffix(sc, ".sh") + ".want"
		if *update {
			if err := os.WriteFile(wantFile, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(wantFile)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s:\n got:\n%s\nwant:\n%s", name, got, want)
		}
	}
}

func TestUnmatchedQuoteIsFatal(t *testing.T) {
	_, _, err := ScanDirectives([]byte("#!/bin/sh\n#SBATCH -J 'x\n"), "job.sh")
	var e *Error
	if !errors.As(err, &e) || e.Exit != 1 {
		t.Fatalf("err = %v, want *Error with exit 1", err)
	}
}

func TestTranslatePBSErrors(t *testing.T) {
	cases := []struct{ script, want string }{
		{"#!/bin/sh\n#PBS -l walltime=1h\n", "error: job.sh: line 2: invalid -l value"},
		{"#!/bin/sh\n#PBS -l nodes=n1+n2\n", "error: job.sh: line 2: invalid -l value"},
		{"#!/bin/sh\n\n#PBS -j xx\n", "error: job.sh: line 3: invalid -j value"},
		{"#!/bin/sh\n#PBS -a 151830\n", "error: job.sh: line 2: invalid -a value"},
		{"#!/bin/sh\n#PBS -Y\n", "error: job.sh: line 2: invalid #PBS directive"},
		{"#!/bin/sh\n#PBS -l mem=12x\n", "error: job.sh: line 2: invalid -l value"},
	}
	for _, c := range cases {
		_, err := TranslatePBS([]byte(c.script), "job.sh")
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want prefix %q", c.script, err, c.want)
		}
	}
}

func TestPBSDateTime(t *testing.T) {
	cases := map[string]string{
		"1830":         "18:30:00",
		"1830.15":      "18:30:15",
		"12251830":     "12/25-18:30:00",
		"2612251830":   "12/25/26-18:30:00",
		"202612251830": "2026-12-25T18:30:00",
	}
	for in, want := range cases {
		got, err := pbsDateTime(in)
		if err != nil || got != want {
			t.Errorf("pbsDateTime(%q) = %q, %v; want %q", in, got, err, want)
		}
		// Whatever the translator writes, --begin must accept.
		if _, err := ParseSlurmTime(got, testNow); err != nil {
			t.Errorf("ParseSlurmTime(%q): %v", got, err)
		}
	}
}

func TestPBSSizeMB(t *testing.T) {
	cases := map[string]int64{"1": 1, "1048576": 1, "1048577": 2, "1kb": 1, "1024kb": 1, "1025kb": 2,
		"500mb": 500, "2gb": 2048, "2GB": 2048, "1t": 1 << 20, "3w": 1, "2mw": 16, "1gw": 8192}
	for in, want := range cases {
		if got, err := pbsSizeMB(in); err != nil || got != want {
			t.Errorf("pbsSizeMB(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "gb", "1.5gb", "-1", "99999999999999999pb"} {
		if _, err := pbsSizeMB(in); err == nil {
			t.Errorf("pbsSizeMB(%q) accepted", in)
		}
	}
}

// #PBS lines are read past commands until more than 100 lines not starting
// with '#' have gone by.
func TestTranslatePBSLineLimit(t *testing.T) {
	for _, c := range []struct {
		commands int
		found    bool
	}{{0, true}, {50, true}, {100, true}, {101, false}} {
		script := "#!/bin/sh\n" + strings.Repeat("echo\n", c.commands) + "#PBS -N late\n"
		dirs, err := TranslatePBS([]byte(script), "f")
		if err != nil {
			t.Fatal(err)
		}
		if got := len(dirs) == 1; got != c.found {
			t.Errorf("after %d commands: found=%v, want %v", c.commands, got, c.found)
		}
	}
}
