package config

import (
	"errors"
	"strings"
	"testing"

	"hora/scheduler"
	_ "hora/scheduler/policies" // the policies horad registers
)

// FuzzParse loads hora.toml text. Any text gives a config or Problems —
// never a panic — and every problem names the file (and, where the key's
// line is known, a line of the text). An accepted config validates again,
// expands its nodes, and builds a scheduler configuration the engine takes.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		"cluster_name = \"c\"\n[[node]]\nname = \"n[1-4]\"\ncpus = 8\n[[partition]]\nname = \"p\"\nnodes = \"n[1-4]\"\ndefault = true\n",
		"[limits]\nmax_job_count = 3\nrate_limit_bucket = 30\nrate_limit_refill = 2\nmax_connections = 64\n",
		"[[node]]\nname = \"n[1-\"\n",
		"[[partition]]\nname = \"p\"\nnodes = \"nope\"\npolicy = \"dlt\"\n",
		"[mix]\nratio = \"1:3\"\nmode = \"tdm\"\nperiod = -1\n",
		"nodez = 1\n",
		"[ssh]\nuser = \"x\"\nport = 70000\n",
		"min_job_age_s = 1e400\n",
		"[[node]]\nname = \"a\"\n[[node]]\nname = \"a\"\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c, err := Parse([]byte(text), "f.toml")
		if err != nil {
			var ps Problems
			if !errors.As(err, &ps) || len(ps) == 0 {
				t.Fatalf("%q: error %T %v, want Problems", text, err, err)
			}
			lines := strings.Count(text, "\n") + 1
			for _, p := range ps {
				if p.File != "f.toml" || strings.TrimSpace(p.Msg) == "" || p.Line < 0 || p.Line > lines {
					t.Fatalf("%q: problem %+v does not name f.toml and a line of its %d", text, p, lines)
				}
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("%q accepted, then invalid: %v", text, err)
		}
		if len(c.ExpandedNodes()) > 0 {
			if _, err := scheduler.New(c.Scheduler()); err != nil {
				t.Fatalf("%q accepted, but the scheduler refuses it: %v", text, err)
			}
		}
	})
}
