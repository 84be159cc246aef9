package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// Every file the README's tour names (examples/..., contrib/..., docs/...,
// scripts/...) exists in the repository, so a newcomer can type it.
func TestReadmeNamesOnlyExistingFiles(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	paths := regexp.MustCompile(`\b(?:examples|contrib|docs|scripts|man|packaging)/[A-Za-z0-9_./-]*[A-Za-z0-9_]`).FindAllString(string(b), -1)
	if len(paths) < 5 {
		t.Fatalf("found only %d file names in README.md: %v", len(paths), paths)
	}
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("README.md names %s: %v", p, err)
		}
	}
}
