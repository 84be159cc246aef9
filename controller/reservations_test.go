package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	"hora/api"
	"hora/config"
)

const resvTOML = `
[[node]]
name = "local[1-4]"

[[partition]]
name = "batch"
nodes = "local[1-4]"
default = true

[[partition]]
name = "res"
nodes = "local[1-4]"
policy = "reserve"
`

func resvFixture(t *testing.T, extra string) *fixture {
	t.Helper()
	f := newFixture(t)
	cfg, err := config.Parse([]byte(extra+resvTOML), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.StateDir = f.dir
	f.cfg = cfg
	return f
}

var nobody = &Caller{UID: 65534, GID: 65534, User: "nobody"}

// Bad requests are refused with an error naming what is wrong, and change
// nothing: no reservation in memory, in the policy, or on disk.
func TestReservationBadRequestsChangeNothing(t *testing.T) {
	f := resvFixture(t, "")
	c := f.controller(t)
	now := time.Now().Unix()
	ok := api.ReservationRequest{Name: "r", StartTime: now + 100, Duration: 600, NodeCount: 2, Users: []string{"root"}}
	cases := []struct {
		who  *Caller
		edit func(*api.ReservationRequest)
		want string
	}{
		{root, func(r *api.ReservationRequest) { r.StartTime = 0 }, "A start time must be given"},
		{root, func(r *api.ReservationRequest) { r.Duration = 0 }, "An end time or duration must be given"},
		{root, func(r *api.ReservationRequest) { r.NodeCount = 0 }, "CoreCnt, Nodes, NodeCnt"},
		{root, func(r *api.ReservationRequest) { r.Users = nil }, "Either Users/Groups"},
		{root, func(r *api.ReservationRequest) { r.EndTime = r.StartTime + 1 }, "StartTime + Duration does not equal EndTime"},
		{root, func(r *api.ReservationRequest) { r.StartTime, r.Duration = now-1000, 10 }, "Requested reservation is invalid"},
		{root, func(r *api.ReservationRequest) { r.Users = []string{"no-such-user-zz"} }, "Invalid user id: no-such-user-zz"},
		{root, func(r *api.ReservationRequest) { r.Nodes, r.NodeCount = []string{"local9"}, 0 }, "Invalid node name specified: local9"},
		{root, func(r *api.ReservationRequest) { r.Nodes, r.NodeCount, r.Partition = []string{"local9"}, 0, "res" }, "Invalid node name specified: local9"},
		{root, func(r *api.ReservationRequest) { r.Partition = "batch" }, `Partition batch has policy "batch"`},
		{root, func(r *api.ReservationRequest) { r.Partition = "nope" }, "Invalid partition name specified"},
		{root, func(r *api.ReservationRequest) { r.NodeCount = 5 }, "Requested node configuration is not available"},
		{nobody, func(r *api.ReservationRequest) { r.Users = []string{"nobody"} }, "Access/permission denied"},
	}
	for _, tc := range cases {
		req := ok
		tc.edit(&req)
		_, err := c.createReservation(t.Context(), tc.who, req)
		var ae *api.Error
		if !errors.As(err, &ae) || !strings.Contains(ae.Message, tc.want) {
			t.Errorf("%+v: error %v, want %q", req, err, tc.want)
		}
	}
	stored, err := f.st.Reservations(t.Context())
	if err != nil || len(stored) != 0 || len(c.resvs) != 0 {
		t.Fatalf("refused requests left state: stored %v %v, memory %v", stored, err, c.resvs)
	}
	if free := c.freeNames(t, now+100, now+700); len(free) != 4 {
		t.Fatalf("refused requests booked nodes: free %v", free)
	}
	// The good one is booked and on disk before the answer; a restarted
	// controller has it again, still booked.
	resp, err := c.createReservation(t.Context(), root, ok)
	if err != nil || resp.Reservation.Name != "r" || len(resp.Reservation.Nodes) != 2 {
		t.Fatalf("create: %+v %v", resp, err)
	}
	if stored, _ := f.st.Reservations(t.Context()); len(stored) != 1 || stored[0].Name != "r" {
		t.Fatalf("not on disk after the answer: %+v", stored)
	}
	c2 := f.controller(t)
	if r := c2.resvs["r"]; r == nil || r.StartTime != ok.StartTime || r.EndTime != ok.StartTime+600 {
		t.Fatalf("after restart: %+v", c2.resvs)
	}
	if free := c2.freeNames(t, now+100, now+700); len(free) != 2 {
		t.Fatalf("after restart the window is not booked: free %v", free)
	}
}

// reservation_access = "users": a user may manage reservations for
// themselves alone, never for others.
func TestReservationAccessUsers(t *testing.T) {
	f := resvFixture(t, `reservation_access = "users"`+"\n")
	c := f.controller(t)
	now := time.Now().Unix()
	req := api.ReservationRequest{Name: "mine", StartTime: now + 100, Duration: 600, NodeCount: 1, Users: []string{"nobody"}}
	if _, err := c.createReservation(t.Context(), nobody, req); err != nil {
		t.Fatalf("own reservation refused: %v", err)
	}
	req.Name, req.Users = "theirs", []string{"root"}
	if _, err := c.createReservation(t.Context(), nobody, req); err == nil || !strings.Contains(err.Error(), "Access/permission denied") {
		t.Fatalf("reservation for root by nobody: %v", err)
	}
	if _, err := c.updateReservation(t.Context(), nobody, api.ReservationRequest{Name: "mine", AddUsers: []string{"root"}}); err == nil {
		t.Fatal("nobody added root to a reservation")
	}
	if _, err := c.deleteReservation(t.Context(), nobody, "mine"); err != nil {
		t.Fatalf("own delete: %v", err)
	}
}

func (c *Controller) freeNames(t *testing.T, from, to int64) []string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	pol, err := c.reservePolicy("res")
	if err != nil {
		t.Fatal(err)
	}
	return pol.FreeIn(c.nowSec(), from, to)
}
