package sbatch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// vector is one line of a golden file in testdata/: tab-separated fields,
// '#' lines are comments. The README quotes the same files.
type vector struct {
	line   int
	fields []string
}

func loadVectors(t *testing.T, name string, nfields int) []vector {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []vector
	for i, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) != nfields {
			t.Fatalf("%s:%d: %d fields, want %d", name, i+1, len(f), nfields)
		}
		out = append(out, vector{i + 1, f})
	}
	if len(out) == 0 {
		t.Fatalf("%s: no vectors", name)
	}
	return out
}

// The README quotes the golden files in ```vectors FILE blocks (tab shown
// as " → "); this keeps the written spec and the tests the same.
func TestREADMEVectors(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := 0
	for _, part := range strings.Split(string(b), "```vectors ")[1:] {
		name, body, _ := strings.Cut(part, "\n")
		body, _, ok := strings.Cut(body, "```")
		if !ok {
			t.Fatalf("README: unterminated block %s", name)
		}
		file, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatalf("README names %s: %v", name, err)
		}
		var want []string
		for _, l := range strings.Split(strings.TrimRight(string(file), "\n"), "\n") {
			if !strings.HasPrefix(l, "#") {
				want = append(want, strings.ReplaceAll(l, "\t", " → "))
			}
		}
		if got := strings.TrimRight(body, "\n"); got != strings.Join(want, "\n") {
			t.Errorf("README block %s differs from testdata/%s", name, name)
		}
		blocks++
	}
	if blocks < 8 {
		t.Errorf("README has %d vector blocks, want every golden file", blocks)
	}
}
