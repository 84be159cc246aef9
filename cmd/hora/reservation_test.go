package main

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"hora/api"
)

// resvFake records the reservation requests that reach it.
type resvFake struct {
	mu   sync.Mutex
	reqs []string
	fail *api.Error
}

func (f *resvFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, r.Method+" "+r.URL.Path)
	if f.fail != nil {
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(f.fail)
		return
	}
	var req api.ReservationRequest
	if r.Method == http.MethodPost {
		json.NewDecoder(r.Body).Decode(&req)
	}
	switch r.URL.Path {
	case api.PathReservationCreate, api.PathReservationUpdate, api.PathReservationDelete:
		json.NewEncoder(w).Encode(api.ReservationResponse{Reservation: api.Reservation{Name: req.Name}})
	case api.PathNodes:
		json.NewEncoder(w).Encode(api.NodesResponse{Nodes: []api.Node{{Name: "n1", CPUs: 4}, {Name: "n2", CPUs: 4}}})
	case api.PathReservations:
		json.NewEncoder(w).Encode(api.ReservationsResponse{Reservations: []api.Reservation{}})
	case api.PathFree:
		q := r.URL.Query()
		from, _ := strconv.ParseInt(q.Get("from"), 10, 64)
		to, _ := strconv.ParseInt(q.Get("to"), 10, 64)
		json.NewEncoder(w).Encode(api.FreeResponse{Partition: "res", From: from, To: to, Nodes: []string{"n3", "n4"}, Total: 4})
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func startResvFake(t *testing.T) *resvFake {
	t.Helper()
	f := &resvFake{}
	serveFake(t, f)
	return f
}

func TestParseResvArgs(t *testing.T) {
	now := testNow.Unix()
	got, err := parseResvArgs(strings.Fields("res=maint StartTime=now+10minutes Duration=1:00:00 NodeCnt=2 Users=alice,bob PartitionName=res Flags=maint"), false, testNow)
	if err != nil {
		t.Fatal(err)
	}
	want := &api.ReservationRequest{Name: "maint", StartTime: now + 600, Duration: 3600, NodeCount: 2,
		Users: []string{"alice", "bob"}, Partition: "res", Flags: []string{"MAINT"},
		Set: []string{"starttime", "duration", "nodecnt", "users", "partitionname", "flags"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("create:\n got %+v\nwant %+v", got, want)
	}
	got, err = parseResvArgs(strings.Fields("ReservationName=maint EndTime=2026-11-22T14:00:00 Nodes=n[1-2] Users+=carol Users-=bob"), true, testNow)
	if err != nil {
		t.Fatal(err)
	}
	want = &api.ReservationRequest{Name: "maint", EndTime: now + 7200, Nodes: []string{"n1", "n2"},
		AddUsers: []string{"carol"}, RemoveUsers: []string{"bob"}, Set: []string{"endtime", "nodes"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("update:\n got %+v\nwant %+v", got, want)
	}
}

// Bad input: scontrol's message naming the key or value, exit 1, and no
// request reaches horad (nothing changes).
func TestResvBadInputChangesNothing(t *testing.T) {
	f := startResvFake(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"create", "reservation", "Duration=10", "Nodes=n1", "Users=alice"}, "scontrol: error: A start time must be given.  No reservation created.\n"},
		{[]string{"create", "reservation", "StartTime=now", "Nodes=n1", "Users=alice"}, "scontrol: error: An end time or duration must be given.  No reservation created.\n"},
		{[]string{"create", "reservation", "StartTime=now", "Duration=10", "Users=alice"}, "scontrol: error: CoreCnt, Nodes, NodeCnt, TRES or Watts must be specified.  No reservation created.\n"},
		{[]string{"create", "reservation", "StartTime=now", "Duration=10", "Nodes=n1"}, "scontrol: error: Either Users/Groups, AllowedPartitions, QOS and/or Accounts must be specified.  No reservation created.\n"},
		{[]string{"create", "res", "StartTime=someday", "Duration=10", "Nodes=n1", "Users=alice"}, "scontrol: error: Invalid start time StartTime=someday.  No reservation created.\n"},
		{[]string{"create", "res", "StartTime=now", "Duration=ten", "Nodes=n1", "Users=alice"}, "scontrol: error: Invalid duration Duration=ten.  No reservation created.\n"},
		{[]string{"create", "res", "StartTime=now", "Duration=UNLIMITED", "Nodes=n1", "Users=alice"}, "scontrol: error: Invalid duration Duration=UNLIMITED.  No reservation created.\n"},
		{[]string{"create", "res", "StartTime=now", "Duration=10", "NodeCnt=-2", "Users=alice"}, "scontrol: error: Invalid node count NodeCnt=-2.  No reservation created.\n"},
		{[]string{"create", "res", "StartTime=now", "Duration=10", "Nodes=n[1-", "Users=alice"}, "scontrol: error: Invalid node list Nodes=n[1-.  No reservation created.\n"},
		{[]string{"create", "res", "StartTime=now", "Duration=10", "Nodes=n1", "Users=alice", "Colour=red"}, "scontrol: error: Unknown parameter Colour=red.  No reservation created.\n"},
		{[]string{"create", "res", "StartTime=now", "Duration=10", "Nodes=n1", "Users=alice", "Flags=DAILY"}, "scontrol: error: Flag DAILY is not supported by hora (reservations never overlap, float or repeat).  No reservation created.\n"},
		{[]string{"create", "res", "StartTime=now", "Duration=10", "Nodes=n1", "Users=alice", "Flags=bogus"}, "scontrol: error: Error parsing flags bogus.  No reservation created.\n"},
		{[]string{"create", "res", "StartTime=now+1hour", "EndTime=now", "Nodes=n1", "Users=alice"}, "scontrol: error: Start time cannot be after end time.  No reservation created.\n"},
		{[]string{"create", "res", "StartTime=now", "EndTime=now+1hour", "Duration=10", "Nodes=n1", "Users=alice"}, "scontrol: error: StartTime + Duration does not equal EndTime.  No reservation created.\n"},
		{[]string{"create", "res", "StartTime=now", "Duration=10", "Nodes=n1", "Users+=alice"}, "scontrol: error: Unknown parameter Users+=alice.  No reservation created.\n"},
		{[]string{"update", "ReservationName=x", "Duration=abc"}, "scontrol: error: Invalid duration Duration=abc.  No reservation update.\n"},
		{[]string{"update", "ReservationName=x", "Accounts=a"}, "scontrol: error: Accounts is not supported by hora; use Users= and Nodes= or NodeCnt=.  No reservation update.\n"},
		{[]string{"update", "ReservationName=x", "Node=local1"}, "scontrol: error: Unknown parameter Node=local1.  No reservation update.\n"},
		{[]string{"create", "bogus"}, "invalid entity:bogus for keyword:create \n"},
		{[]string{"delete", "frob"}, "invalid entity:frob for keyword:delete \n"},
	}
	for _, c := range cases {
		out, errs, code := runCmd(t, scontrolMain, "scontrol", nil, c.args...)
		if code != 1 || out != "" || errs != c.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", c.args, code, out, errs, c.want)
		}
	}
	if len(f.reqs) != 0 {
		t.Fatalf("bad input reached horad: %v", f.reqs)
	}
}

// The daemon's answers are printed as scontrol prints them.
func TestResvMessages(t *testing.T) {
	f := startResvFake(t)
	run := func(args ...string) (string, string, int) { return runCmd(t, scontrolMain, "scontrol", nil, args...) }
	if out, errs, code := run("create", "reservation", "ReservationName=m", "StartTime=now", "Duration=10", "Nodes=n1", "Users=alice"); code != 0 || out != "Reservation created: m\n" || errs != "" {
		t.Errorf("create: %d %q %q", code, out, errs)
	}
	if out, errs, code := run("update", "ReservationName=m", "Users+=bob"); code != 0 || out != "Reservation updated.\n" || errs != "" {
		t.Errorf("update: %d %q %q", code, out, errs)
	}
	if out, errs, code := run("delete", "ReservationName=m"); code != 0 || out != "" || errs != "" {
		t.Errorf("delete: %d %q %q", code, out, errs)
	}
	if out, _, code := run("show", "reservation"); code != 0 || out != "No reservations in the system\n" {
		t.Errorf("show none: %d %q", code, out)
	}
	if out, _, code := run("show", "ReservationName=zz"); code != 1 || out != "Reservation zz not found\n" {
		t.Errorf("show unknown: %d %q", code, out)
	}
	f.fail = &api.Error{Message: "Requested nodes are busy", EarliestStart: testNow.Unix() + 3600}
	if _, errs, code := run("create", "res", "StartTime=now", "Duration=10", "NodeCnt=1", "Users=alice"); code != 1 ||
		errs != "Error creating the reservation: Requested nodes are busy (earliest feasible start 2026-11-22T13:00:00)\n" {
		t.Errorf("create refused: %d %q", code, errs)
	}
	f.fail = &api.Error{Message: "Requested reservation is in use"}
	if _, errs, code := run("delete", "reservation", "m"); code != 1 || errs != "delete_reservation ReservationName=m: Requested reservation is in use\n" {
		t.Errorf("delete refused: %d %q", code, errs)
	}
	f.fail = &api.Error{Message: "Access/permission denied"}
	if _, errs, code := run("update", "ReservationName=m", "Users=bob"); code != 1 || errs != "Error updating the reservation: Access/permission denied\n" {
		t.Errorf("update refused: %d %q", code, errs)
	}
}

func TestWriteReservations(t *testing.T) {
	rs := []api.Reservation{{Name: "maint", Partition: "res", StartTime: testNow.Unix() - 60, EndTime: testNow.Unix() + 90000,
		Nodes: []string{"n1", "n2"}, Users: []string{"alice", "bob"}, Flags: []string{"MAINT"}}}
	var b strings.Builder
	writeReservations(&b, rs, []api.Node{{Name: "n1", CPUs: 4}, {Name: "n2", CPUs: 8}}, testNow, "", false)
	want := `ReservationName=maint StartTime=2026-11-22T11:59:00 EndTime=2026-11-23T13:00:00 Duration=1-01:01:00
   Nodes=n[1-2] NodeCnt=2 CoreCnt=12 Features=(null) PartitionName=res Flags=MAINT
   TRES=cpu=12
   AllowedPartitions=(null) QOS=(null)
   Users=alice,bob Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null)
   MaxStartDelay=(null)

`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// hora free: bad times and counts are refused before horad is asked; a good
// query prints one line and -N decides the exit status.
func TestFree(t *testing.T) {
	f := startResvFake(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "now"}, "free: error: --to is required\n"},
		{[]string{"--to", "someday"}, "free: error: Invalid --to specification: "},
		{[]string{"--from", "now+1hour", "--to", "now"}, "free: error: --to (2026-11-22T12:00:00) must be after --from (2026-11-22T13:00:00)\n"},
		{[]string{"-N", "0", "--to", "now+1hour"}, "free: error: Invalid --nodes specification \"0\"\n"},
		{[]string{"--to", "now+1hour", "extra"}, "free: error: unexpected argument \"extra\"\n"},
	} {
		out, errs, code := runCmd(t, freeMain, "free", nil, c.args...)
		if code != 1 || out != "" || !strings.HasPrefix(errs, c.want) {
			t.Errorf("%v: exit %d stdout %q stderr %q, want exit 1 and %q", c.args, code, out, errs, c.want)
		}
	}
	if len(f.reqs) != 0 {
		t.Fatalf("bad input reached horad: %v", f.reqs)
	}
}

func TestFreeOutput(t *testing.T) {
	startResvFake(t)
	out, errs, code := runCmd(t, freeMain, "free", nil, "-p", "res", "--from", "now+1hour", "--to", "now+2hours")
	want := "PARTITION FROM                TO                  FREE/TOTAL NODELIST\n" +
		"res       2026-11-22T13:00:00 2026-11-22T14:00:00 2/4        n[3-4]\n"
	if code != 0 || out != want || errs != "" {
		t.Fatalf("exit %d\n%s\nwant\n%s\nstderr %q", code, out, want, errs)
	}
	out, errs, code = runCmd(t, freeMain, "free", nil, "-h", "-N", "3", "--to", "now+2hours")
	if code != 1 || !strings.HasPrefix(out, "res ") || errs != "free: 3 nodes asked for, 2 free\n" {
		t.Fatalf("-N 3: exit %d stdout %q stderr %q", code, out, errs)
	}
}
