package store

import (
	"errors"
	"reflect"
	"testing"

	"hora/api"
)

// Reservations survive a close and reopen, an update replaces the row, a
// delete removes it, and a window that ends before it starts is refused by
// the schema.
func TestReservationsDurable(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := openStore(t, dir)
	a := api.Reservation{Name: "maint", Partition: "res", StartTime: 100, EndTime: 400,
		Nodes: []string{"n1", "n2"}, Users: []string{"alice"}, Flags: []string{"MAINT"}}
	b := api.Reservation{Name: "alice_1", Partition: "res", StartTime: 500, EndTime: 600,
		Nodes: []string{"n3"}, Users: []string{"alice", "bob"}}
	for _, r := range []api.Reservation{a, b} {
		if err := s.PutReservation(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	a.EndTime, a.Users = 500, []string{"carol"}
	if err := s.PutReservation(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.PutReservation(ctx, api.Reservation{Name: "bad", Partition: "res", StartTime: 10, EndTime: 10}); err == nil {
		t.Fatal("empty window stored")
	}
	s.Close()
	s = openStore(t, dir)
	defer s.Close()
	got, err := s.Reservations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []api.Reservation{b, a}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after reopen:\n got %+v\nwant %+v", got, want)
	}
	if err := s.DeleteReservation(ctx, "maint"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteReservation(ctx, "maint"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if got, _ := s.Reservations(ctx); len(got) != 1 || got[0].Name != "alice_1" {
		t.Fatalf("after delete: %+v", got)
	}
}
