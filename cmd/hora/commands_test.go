package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestCommandTable: the table is in order of name (lookup searches it by
// halves), and every name the packages and bin/ install (packaging/commands)
// is a command of it.
func TestCommandTable(t *testing.T) {
	cs := commands()
	if !slices.IsSortedFunc(cs, func(a, b command) int { return strings.Compare(a.name, b.name) }) {
		t.Error("commands() is not in order of name")
	}
	for _, c := range cs {
		if lookup(c.name) == nil {
			t.Errorf("lookup(%q) = nil", c.name)
		}
	}
	if lookup("nosuch") != nil || lookup("") != nil {
		t.Error("lookup found a command that is not in the table")
	}
	b, err := os.ReadFile("../../packaging/commands")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		n++
		if lookup(l) == nil {
			t.Errorf("packaging/commands installs %s, which hora does not know", l)
		}
	}
	if n < 10 {
		t.Errorf("only %d names in packaging/commands", n)
	}
	if slices.Contains(commandNames(), "gendoc") {
		t.Error("`hora` lists the hidden gendoc")
	}
}
