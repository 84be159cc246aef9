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
