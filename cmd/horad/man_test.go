package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var updateMan = flag.Bool("update", false, "rewrite man/horad.8")

// TestManPage: man/horad.8 is generated from horad's flags (-update
// rewrites it), names every flag, and mandoc -Tlint -Werror finds nothing.
func TestManPage(t *testing.T) {
	a := app()
	got := manPage(a)
	for _, f := range a.Flags {
		if !bytes.Contains(got, []byte(`\-\-`+strings.ReplaceAll(f.Names()[0], "-", `\-`))) {
			t.Errorf("horad(8) does not describe --%s", f.Names()[0])
		}
	}
	path := filepath.Join("..", "..", "man", "horad.8")
	if *updateMan {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(old, got) {
		t.Errorf("%s is not up to date: run make man-server (go test ./cmd/horad -run TestManPage -update)", path)
	}
	if _, err := exec.LookPath("mandoc"); err != nil {
		t.Fatal("mandoc is missing (scripts/deps.sh installs it)")
	}
	if out, err := exec.Command("mandoc", "-Tlint", "-Werror", path).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("mandoc -Tlint -Werror %s: %v\n%s", path, err, out)
	}
}
