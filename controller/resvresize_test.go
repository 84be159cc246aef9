package controller

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"hora/api"
)

// scontrol update ReservationName=X Nodes+= / Nodes-= / NodeCnt=: the list
// changes as Slurm changes it, a node that is not free for the window is
// refused with Slurm's text, and a refusal changes nothing (memory, store,
// the partition's bookings).
func TestReservationResize(t *testing.T) {
	f := resvFixture(t, "")
	c := f.controller(t)
	now := time.Now().Unix()
	mk := func(name string, nodes ...string) {
		t.Helper()
		req := api.ReservationRequest{Name: name, StartTime: now + 100, Duration: 600, Nodes: nodes, Users: []string{"root"}}
		if _, err := c.createReservation(t.Context(), root, req); err != nil {
			t.Fatal(err)
		}
	}
	mk("r", "local1")
	mk("o", "local3") // keeps local3 busy through r's window
	update := func(req api.ReservationRequest) ([]string, error) {
		req.Name = "r"
		resp, err := c.updateReservation(t.Context(), root, req)
		if err != nil {
			return nil, err
		}
		return resp.Reservation.Nodes, nil
	}
	state := func() string {
		stored, err := f.st.Reservations(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, r := range stored {
			b.WriteString(r.Name + ":" + strings.Join(r.Nodes, ",") + ";")
		}
		b.WriteString(" mem:" + strings.Join(c.resvs["r"].Nodes, ","))
		b.WriteString(" free:" + strings.Join(c.freeNames(t, now+100, now+700), ","))
		return b.String()
	}
	ok := func(req api.ReservationRequest, want ...string) {
		t.Helper()
		got, err := update(req)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("%+v: nodes %v err %v, want %v", req, got, err, want)
		}
		if mem := c.resvs["r"].Nodes; !slices.Equal(mem, want) {
			t.Fatalf("%+v: memory %v, want %v", req, mem, want)
		}
	}
	refused := func(req api.ReservationRequest, msg string) {
		t.Helper()
		before := state()
		_, err := update(req)
		var ae *api.Error
		if !errors.As(err, &ae) || !strings.Contains(ae.Message, msg) {
			t.Fatalf("%+v: error %v, want %q", req, err, msg)
		}
		if after := state(); after != before {
			t.Fatalf("%+v refused but state changed:\n before %s\n after  %s", req, before, after)
		}
	}

	ok(api.ReservationRequest{AddNodes: []string{"local2"}}, "local1", "local2")
	ok(api.ReservationRequest{AddNodes: []string{"local2"}}, "local1", "local2") // already in
	refused(api.ReservationRequest{AddNodes: []string{"local3"}}, "Requested nodes are busy")
	refused(api.ReservationRequest{AddNodes: []string{"local9"}}, "Invalid node name specified: local9")
	ok(api.ReservationRequest{RemoveNodes: []string{"local1"}}, "local2")
	refused(api.ReservationRequest{RemoveNodes: []string{"local2"}}, "Requested node configuration is not available")
	// Growing keeps local2 and adds the lowest free nodes; local3 is o's.
	ok(api.ReservationRequest{Set: []string{"nodecnt"}, NodeCount: 3}, "local1", "local2", "local4")
	refused(api.ReservationRequest{Set: []string{"nodecnt"}, NodeCount: 4}, "Requested nodes are busy")
	refused(api.ReservationRequest{Set: []string{"nodecnt"}, NodeCount: 5}, "Requested node configuration is not available")
	// Shrinking keeps the lowest-numbered nodes.
	ok(api.ReservationRequest{Set: []string{"nodecnt"}, NodeCount: 2}, "local1", "local2")
	if got := c.freeNames(t, now+100, now+700); !slices.Equal(got, []string{"local4"}) {
		t.Fatalf("free through the window after the resize: %v, want [local4]", got)
	}
	// Once o is gone local3 can be added.
	if _, err := c.deleteReservation(t.Context(), root, "o"); err != nil {
		t.Fatal(err)
	}
	ok(api.ReservationRequest{AddNodes: []string{"local3"}, RemoveNodes: []string{"local1"}}, "local2", "local3")
	stored, err := f.st.Reservations(t.Context())
	if err != nil || len(stored) != 1 || !slices.Equal(stored[0].Nodes, []string{"local2", "local3"}) {
		t.Fatalf("stored %+v %v", stored, err)
	}
}
