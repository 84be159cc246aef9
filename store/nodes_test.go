package store

import (
	"reflect"
	"strings"
	"testing"
)

// A node's administrative state survives closing and reopening the file,
// a node back in service leaves no row, and a down node must say why.
func TestNodeAdminDurable(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := openStore(t, dir)
	drained := NodeAdmin{Name: "n2", Drain: true, Reason: "disk swap", UID: 0, User: "root", Time: 1700000100}
	down := NodeAdmin{Name: "n1", Down: true, DownCause: "noresp", Reason: "Not responding", User: "root", Time: 1700000200}
	for _, n := range []NodeAdmin{drained, down, {Name: "n3", Drain: true, Reason: "x", Time: 1}} {
		if err := s.PutNodeAdmin(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	// n3 returns to service: its row goes.
	if err := s.PutNodeAdmin(ctx, NodeAdmin{Name: "n3"}); err != nil {
		t.Fatal(err)
	}
	err := s.PutNodeAdmin(ctx, NodeAdmin{Name: "n4", Down: true, DownCause: "bogus"})
	if err == nil || !strings.Contains(err.Error(), "n4") {
		t.Fatalf("down without a valid cause: %v", err)
	}
	s.Close()

	s = openStore(t, dir)
	defer s.Close()
	got, err := s.NodeAdmins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []NodeAdmin{down, drained}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after reopen:\n got %+v\nwant %+v", got, want)
	}
	// Updating a row replaces it (drain added to a down node, new reason).
	down.Drain, down.Reason = true, "replace dimm"
	if err := s.PutNodeAdmin(ctx, down); err != nil {
		t.Fatal(err)
	}
	got, _ = s.NodeAdmins(ctx)
	if len(got) != 2 || !reflect.DeepEqual(got[0], down) {
		t.Fatalf("after update: %+v", got)
	}
}
