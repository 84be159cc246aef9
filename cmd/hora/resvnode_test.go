package main

import (
	"slices"
	"strings"
	"time"

	"testing"

	"hora/api"
)

// Nodes in an active reservation print as Slurm 22.05 prints NODE_STATE_RES
// and NODE_STATE_MAINT (node_state_string, node_state_string_compact):
// sinfo resv/reserved for an idle node; scontrol show node RESERVED, with
// +DRAIN when drained; "not responding" is tested first (IDLE*), and
// allocated, draining and down nodes keep their own state.
func TestReservedNodeTexts(t *testing.T) {
	cases := []struct {
		node             api.Node
		short, long, scn string
	}{
		{api.Node{State: "reserved", Reserved: true}, "resv", "reserved", "RESERVED"},
		{api.Node{State: "idle"}, "idle", "idle", "IDLE"},
		{api.Node{State: "drained", Drain: true, Reserved: true}, "drain", "drained", "RESERVED+DRAIN"},
		{api.Node{State: "idle", NotResponding: true, Reserved: true}, "idle*", "idle*", "IDLE*"},
		{api.Node{State: "allocated", Reserved: true}, "alloc", "allocated", "ALLOCATED"},
		{api.Node{State: "draining", Drain: true, Reserved: true}, "drng", "draining", "ALLOCATED+DRAIN"},
		{api.Node{State: "down", Drain: true, Reserved: true}, "down", "down", "DOWN+DRAIN"},
		// A MAINT reservation: tested before drain and "not responding".
		{api.Node{State: "maint", Reserved: true, Maint: true}, "maint", "maint", "MAINT"},
		{api.Node{State: "maint", Reserved: true, Maint: true, NotResponding: true}, "maint*", "maint*", "MAINT*"},
		{api.Node{State: "drained", Drain: true, Reserved: true, Maint: true}, "drain$", "drained$", "MAINT+DRAIN"},
		{api.Node{State: "allocated", Reserved: true, Maint: true, NotResponding: true}, "alloc$", "allocated$", "ALLOCATED$"},
		{api.Node{State: "down", Reserved: true, Maint: true}, "down$", "down$", "DOWN$"},
	}
	v := &sinfoView{}
	for _, c := range cases {
		n := c.node
		if got := v.nodeValue('t', nil, &n); got != c.short {
			t.Errorf("%+v: %%t %q, want %q", n, got, c.short)
		}
		if got := v.nodeValue('T', nil, &n); got != c.long {
			t.Errorf("%+v: %%T %q, want %q", n, got, c.long)
		}
		if got := nodeStateLong(&n); got != c.scn {
			t.Errorf("%+v: scontrol State=%q, want %q", n, got, c.scn)
		}
	}
	// sinfo -s counts a reserved node as idle (its base state).
	g := siGroup{nodes: []*api.Node{{State: "reserved"}, {State: "allocated"}, {State: "drained"}, {State: "maint"}}}
	if got := v.aggValue('F', &g); got != "1/2/1/4" {
		t.Errorf("NODES(A/I/O/T) = %q, want 1/2/1/4", got)
	}
}

// State= at the boundaries of the window, as reservation_info.c decides
// it: ACTIVE from StartTime through EndTime inclusive.
func TestResvStateAtBoundaries(t *testing.T) {
	const start, end = 1_000_000, 1_000_600
	rs := []api.Reservation{{Name: "w", StartTime: start, EndTime: end, Nodes: []string{"n1"}, Users: []string{"root"}}}
	for _, c := range []struct {
		at   int64
		want string
	}{{start - 1, "INACTIVE"}, {start, "ACTIVE"}, {end - 1, "ACTIVE"}, {end, "ACTIVE"}, {end + 1, "INACTIVE"}} {
		var b strings.Builder
		writeReservations(&b, rs, nil, time.Unix(c.at, 0), "", true)
		if !strings.Contains(b.String(), " State="+c.want+" ") {
			t.Errorf("at start%+d: %s, want State=%s", c.at-start, b.String(), c.want)
		}
	}
}

// Nodes+= and Nodes-= reach horad as lists to add and remove (update only).
func TestParseResvNodesPlusMinus(t *testing.T) {
	got, err := parseResvArgs(strings.Fields("ReservationName=r Nodes+=n[1-2] Nodes-=n3 NodeCnt=4"), true, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.AddNodes, []string{"n1", "n2"}) || !slices.Equal(got.RemoveNodes, []string{"n3"}) ||
		got.Nodes != nil || got.NodeCount != 4 || !slices.Equal(got.Set, []string{"nodecnt"}) {
		t.Fatalf("update: %+v", got)
	}
	if _, err := parseResvArgs(strings.Fields("ReservationName=r StartTime=now Duration=10 Users=root Nodes+=n1"), false, testNow); err == nil ||
		!strings.Contains(err.Error(), "Unknown parameter Nodes+=n1.") {
		t.Fatalf("create with Nodes+=: %v", err)
	}
	if _, err := parseResvArgs(strings.Fields("ReservationName=r Nodes-=n[1-"), true, testNow); err == nil ||
		!strings.Contains(err.Error(), "Invalid node list Nodes-=n[1-.") {
		t.Fatalf("bad list: %v", err)
	}
}
