package store

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"hora/api"
)

// A history through every kind, with the job expected after it: the fold
// rules of README.md as a test vector.
func TestFoldVector(t *testing.T) {
	sub := testJob(1)
	sub.ID = 1
	evs := []Event{
		{JobID: 1, Time: 10, Kind: KindSubmit, Job: sub},
		{JobID: 1, Time: 11, Kind: KindHold},
		{JobID: 1, Time: 12, Kind: KindRelease},
		{JobID: 1, Time: 13, Kind: KindReason, Reason: "Resources"},
		{JobID: 1, Time: 20, Kind: KindStart, Nodes: []string{"n1", "n2"}, StdoutPath: "/o", StderrPath: "/e"},
		{JobID: 1, Time: 21, Kind: KindStepStart, Step: &api.Step{Index: 1, Node: "n2", Offset: 5, Size: 5}},
		{JobID: 1, Time: 21, Kind: KindStepStart, Step: &api.Step{Index: 0, Node: "n1", Offset: 0, Size: 5}},
		{JobID: 1, Time: 25, Kind: KindStepEnd, Step: &api.Step{Index: 0, ExitCode: 3}},
		{JobID: 1, Time: 25, Kind: KindSuspend},
		{JobID: 1, Time: 26, Kind: KindRequeue}, // from SUSPENDED; forgets the suspension
		{JobID: 1, Time: 30, Kind: KindStart, Nodes: []string{"n3"}, StdoutPath: "/o2"},
		{JobID: 1, Time: 31, Kind: KindStepStart, Step: &api.Step{Index: 0, Node: "n3", Size: 10}},
		{JobID: 1, Time: 31, Kind: KindSuspend},
		{JobID: 1, Time: 33, Kind: KindResume},
		{JobID: 1, Time: 33, Kind: KindSuspend},
		{JobID: 1, Time: 34, Kind: KindResume},
		{JobID: 1, Time: 32, Kind: KindCancel, By: 0},
		{JobID: 1, Time: 35, Kind: KindEnd, State: api.StateCancelled, Signal: 15},
	}
	got, err := Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	want := *testJob(1)
	want.ID = 1
	want.State, want.Reason = api.StateCancelled, "None"
	want.Nodes = []string{"n3"}
	want.StartTime, want.EndTime, want.Signal = 30, 35, 15
	want.StdoutPath, want.StderrPath = "/o2", ""
	want.CancelledBy, want.Restarts = 0, 1
	want.SuspendTime, want.SuspendedSecs = 34, 3
	want.Steps = []api.Step{{Index: 0, Node: "n3", State: api.StateCancelled, Size: 10, StartTime: 31, EndTime: 35}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fold:\n got %+v\nwant %+v", got, want)
	}

	// Before the requeue: steps sorted by index, the failed chunk FAILED.
	mid, err := Fold(evs[:8])
	if err != nil {
		t.Fatal(err)
	}
	wantSteps := []api.Step{
		{Index: 0, Node: "n1", State: api.StateFailed, Size: 5, StartTime: 21, EndTime: 25, ExitCode: 3},
		{Index: 1, Node: "n2", State: api.StateRunning, Offset: 5, Size: 5, StartTime: 21},
	}
	if !reflect.DeepEqual(mid.Steps, wantSteps) || mid.Reason != "None" || mid.State != api.StateRunning {
		t.Fatalf("mid-history job: %+v", mid)
	}
	// The caller's events are not aliased by the folded job.
	evs[4].Nodes[0] = "changed"
	if again, _ := Fold(evs[:5]); again.Nodes[0] != "changed" || mid.Nodes[0] != "n1" {
		t.Fatalf("fold aliases event slices: %v %v", again.Nodes, mid.Nodes)
	}
}

// invalidCases are events that must be refused after the given history
// (which always starts with the submit of job 1).
var invalidCases = []struct {
	name    string
	history []Event
	bad     Event
	msg     string
}{
	{"start of a finished job", []Event{{Kind: KindEnd, State: api.StateCancelled}},
		Event{Kind: KindStart, Nodes: []string{"n1"}}, "only a pending job can start"},
	{"start of a held job", []Event{{Kind: KindHold}},
		Event{Kind: KindStart, Nodes: []string{"n1"}}, "held"},
	{"start without nodes", nil, Event{Kind: KindStart}, "no nodes"},
	{"start of a running job", []Event{{Kind: KindStart, Nodes: []string{"n1"}}},
		Event{Kind: KindStart, Nodes: []string{"n1"}}, "only a pending job can start"},
	{"hold of a running job", []Event{{Kind: KindStart, Nodes: []string{"n1"}}},
		Event{Kind: KindHold}, "only a pending job can be held"},
	{"hold with a non-hold reason", nil, Event{Kind: KindHold, Reason: "Priority"}, "not a hold reason"},
	{"release setting a hold", nil, Event{Kind: KindRelease, Reason: ReasonHeldAdmin}, "hold reason"},
	{"release of a finished job", []Event{{Kind: KindEnd, State: api.StateCancelled}},
		Event{Kind: KindRelease}, "only a pending job"},
	{"reason on a held job", []Event{{Kind: KindHold}}, Event{Kind: KindReason, Reason: "Priority"}, "held"},
	{"empty reason", nil, Event{Kind: KindReason}, "empty reason"},
	{"end twice", []Event{{Kind: KindEnd, State: api.StateCancelled}},
		Event{Kind: KindEnd, State: api.StateCompleted}, "already finished"},
	{"end in a non-final state", nil, Event{Kind: KindEnd, State: api.StateRunning}, "not final"},
	{"cancel of a finished job", []Event{{Kind: KindEnd, State: api.StateCancelled}},
		Event{Kind: KindCancel}, "finished"},
	{"cancel by a negative uid", nil, Event{Kind: KindCancel, By: -1}, "negative uid"},
	{"requeue of a pending job", nil, Event{Kind: KindRequeue}, "already pending"},
	{"suspend of a pending job", nil, Event{Kind: KindSuspend}, "only a running job"},
	{"resume of a running job", []Event{{Kind: KindStart, Nodes: []string{"n1"}}}, Event{Kind: KindResume}, "only a suspended job"},
	{"step of a pending job", nil, Event{Kind: KindStepStart, Step: &api.Step{}}, "running job"},
	{"step started twice", []Event{{Kind: KindStart, Nodes: []string{"n1"}}, {Kind: KindStepStart, Step: &api.Step{Index: 2}}},
		Event{Kind: KindStepStart, Step: &api.Step{Index: 2}}, "already exists"},
	{"end of an unknown step", []Event{{Kind: KindStart, Nodes: []string{"n1"}}},
		Event{Kind: KindStepEnd, Step: &api.Step{Index: 0}}, "no such step"},
	{"step ended twice", []Event{{Kind: KindStart, Nodes: []string{"n1"}}, {Kind: KindStepStart, Step: &api.Step{}},
		{Kind: KindStepEnd, Step: &api.Step{}}}, Event{Kind: KindStepEnd, Step: &api.Step{}}, "already ended"},
	{"requeue request of a pending job", nil, Event{Kind: KindRequeueRequest}, "running or suspended"},
	{"requeue request of a finished job", []Event{{Kind: KindStart, Nodes: []string{"n1"}}, {Kind: KindEnd, State: api.StateFailed}},
		Event{Kind: KindRequeueRequest}, "running or suspended"},
	{"requeue request by a negative uid", []Event{{Kind: KindStart, Nodes: []string{"n1"}}},
		Event{Kind: KindRequeueRequest, By: -1}, "negative uid"},
	{"node failure of a pending job", nil, Event{Kind: KindNodeFail, Nodes: []string{"n1"}}, "running or suspended"},
	{"node failure without a node", []Event{{Kind: KindStart, Nodes: []string{"n1"}}},
		Event{Kind: KindNodeFail}, "exactly one node"},
	{"unknown kind", nil, Event{Kind: "explode"}, "unknown event kind"},
	{"second submit", nil, Event{Kind: KindSubmit, Job: &api.Job{ID: 1, State: api.StatePending}}, "already exists"},
}

// The marks belong to the run they were written in: a requeue or an end
// forgets them, and they leave the job's row as it was.
func TestRunMarks(t *testing.T) {
	sub := testJob(1)
	sub.ID = 1
	start := Event{JobID: 1, Kind: KindStart, Nodes: []string{"n1"}}
	rq := Event{JobID: 1, Kind: KindRequeueRequest, By: 3}
	nf := Event{JobID: 1, Kind: KindNodeFail, Nodes: []string{"n1"}}
	evs := []Event{{JobID: 1, Kind: KindSubmit, Job: sub}, start}
	plain, err := Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	marked, err := Fold(append(slices.Clone(evs), rq, nf))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plain, marked) {
		t.Fatalf("marks changed the row:\n%+v\n%+v", plain, marked)
	}
	for _, c := range []struct {
		name         string
		evs          []Event
		requeue, nfl bool
	}{
		{"none", evs, false, false},
		{"requeue", append(slices.Clone(evs), rq), true, false},
		{"node", append(slices.Clone(evs), nf), false, true},
		{"both", append(slices.Clone(evs), nf, rq), true, true},
		{"requeued since", append(slices.Clone(evs), rq, Event{JobID: 1, Kind: KindRequeue}), false, false},
		{"next run", append(slices.Clone(evs), rq, nf, Event{JobID: 1, Kind: KindRequeue}, start), false, false},
		{"ended", append(slices.Clone(evs), nf, Event{JobID: 1, Kind: KindEnd, State: api.StateNodeFail}), false, false},
	} {
		if r, n := RunMarks(c.evs); r != c.requeue || n != c.nfl {
			t.Errorf("%s: RunMarks = %v, %v; want %v, %v", c.name, r, n, c.requeue, c.nfl)
		}
	}
}

func TestFoldRejectsInvalidTransitions(t *testing.T) {
	for _, c := range invalidCases {
		t.Run(c.name, func(t *testing.T) {
			sub := testJob(1)
			sub.ID = 1
			evs := append([]Event{{JobID: 1, Time: 1, Kind: KindSubmit, Job: sub}}, c.history...)
			for i := range evs {
				evs[i].JobID = 1
			}
			if _, err := Fold(evs); err != nil {
				t.Fatalf("valid history refused: %v", err)
			}
			bad := c.bad
			bad.JobID = 1
			_, err := Fold(append(evs, bad))
			checkEventError(t, err, 1, bad.Kind, c.msg)
		})
	}
}

// The store refuses the same events, and a refused Append changes nothing,
// not even the valid events that came with it in the same call.
func TestAppendRejectsInvalidTransitions(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	ctx := t.Context()
	for _, c := range invalidCases {
		if c.bad.Kind == KindSubmit {
			continue // Append refuses every submit; checked below
		}
		t.Run(c.name, func(t *testing.T) {
			victim, other := testJob(1), testJob(2)
			for _, j := range []*api.Job{victim, other} {
				if err := s.Submit(ctx, j); err != nil {
					t.Fatal(err)
				}
			}
			hist := append([]Event(nil), c.history...)
			for i := range hist {
				hist[i].JobID = victim.ID
			}
			if len(hist) > 0 {
				if err := s.Append(ctx, hist...); err != nil {
					t.Fatalf("valid history refused: %v", err)
				}
			}
			beforeJob, beforeOther := checkFold(t, s, victim.ID), checkFold(t, s, other.ID)
			beforeEvs, _ := s.Events(ctx, victim.ID)
			bad := c.bad
			bad.JobID = victim.ID
			err := s.Append(ctx, Event{JobID: other.ID, Kind: KindHold}, bad)
			checkEventError(t, err, victim.ID, bad.Kind, c.msg)
			if after := checkFold(t, s, victim.ID); !reflect.DeepEqual(after, beforeJob) {
				t.Fatalf("refused event changed the job:\n%+v\n%+v", beforeJob, after)
			}
			if after := checkFold(t, s, other.ID); !reflect.DeepEqual(after, beforeOther) {
				t.Fatal("the valid event of a refused Append was committed")
			}
			if afterEvs, _ := s.Events(ctx, victim.ID); len(afterEvs) != len(beforeEvs) {
				t.Fatalf("%d events before, %d after", len(beforeEvs), len(afterEvs))
			}
		})
	}
	err := s.Append(ctx, Event{JobID: 999, Kind: KindHold})
	if !errors.Is(err, ErrNotFound) || !errors.Is(err, ErrInvalidEvent) || !strings.Contains(err.Error(), "job 999") {
		t.Fatalf("unknown job: %v", err)
	}
	err = s.Append(ctx, Event{JobID: 1, Kind: KindSubmit, Job: testJob(1)})
	checkEventError(t, err, 1, KindSubmit, "use Submit")
}

func checkEventError(t *testing.T, err error, id int64, kind Kind, msg string) {
	t.Helper()
	var ee *EventError
	if !errors.As(err, &ee) || !errors.Is(err, ErrInvalidEvent) {
		t.Fatalf("want an *EventError, got %v", err)
	}
	if ee.JobID != id || ee.Kind != kind {
		t.Fatalf("error names job %d event %s, want job %d event %s", ee.JobID, ee.Kind, id, kind)
	}
	for _, part := range []string{"job " + strconv.FormatInt(id, 10), string(kind), msg} {
		if !strings.Contains(err.Error(), part) {
			t.Fatalf("error %q does not say %q", err, part)
		}
	}
}
