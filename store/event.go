package store

import (
	"encoding/json"
	"errors"
	"fmt"

	"hora/api"
)

// Kind names what happened to a job. The strings are stored in job_events.kind
// and must never change meaning once written.
type Kind string

// Event kinds. The fields of Event each kind reads are listed beside it; the
// fold rules are in README.md and in apply.
const (
	KindSubmit    Kind = "submit"     // Job: the whole job as submitted (state PENDING)
	KindHold      Kind = "hold"       // Reason: JobHeldUser (default) or JobHeldAdmin
	KindRelease   Kind = "release"    // Reason: the pending reason afterwards (default None)
	KindStart     Kind = "start"      // Nodes, StdoutPath, StderrPath; Time is the start time
	KindStepStart Kind = "step_start" // Step: Index, Node, Offset, Size
	KindStepEnd   Kind = "step_end"   // Step: Index, State, ExitCode, Signal
	KindEnd       Kind = "end"        // State (final), ExitCode, Signal, Reason; Time is the end time
	KindCancel    Kind = "cancel"     // By: the uid that asked
	KindRequeue   Kind = "requeue"    // Reason: the pending reason afterwards (default None)
	KindReason    Kind = "reason"     // Reason: the new pending reason
	KindSuspend   Kind = "suspend"    // Time is when the job was stopped (RUNNING → SUSPENDED)
	KindResume    Kind = "resume"     // Time is when it was continued (SUSPENDED → RUNNING)
	KindUpdate    Kind = "update"     // Job: the new Spec and Priority (scontrol update)
	KindAlter     Kind = "alter"      // Job: the pending job's new Spec and EligibleTime; written by qalter before it moved onto update, folded still so that older databases recover

	// Marks on the current run, written before the controller answers so
	// that a restart ends the run as asked (DESIGN §5.3). The job's row does
	// not change: recovery reads them from the events after the last start.
	KindRequeueRequest Kind = "requeue_request" // By: the uid that asked (scontrol requeue); Reason: the hold to come back with (requeuehold) or ""
	KindNodeFail       Kind = "node_fail"       // Nodes: the node that went down under the run
)

// Event is one entry of a job's append-only log. Only the fields its Kind
// lists are meaningful; the others stay zero and are not stored.
type Event struct {
	Seq   int64 // assigned by the store, increasing over the whole database
	JobID int64
	Time  int64 // Unix seconds; Append fills in the current time when 0
	Kind  Kind

	Job        *api.Job        // KindSubmit, KindUpdate
	Nodes      []string        // KindStart, KindNodeFail
	Alloc      []api.NodeAlloc // KindStart: per-node allocation of a resource job
	StdoutPath string          // KindStart
	StderrPath string          // KindStart
	Step       *api.Step       // KindStepStart, KindStepEnd
	State      api.JobState    // KindEnd
	ExitCode   int             // KindEnd
	MaxRSSKB   int64           // KindEnd: the batch step's peak RSS, KiB (0 = not measured)
	TotalCPUMs int64           // KindEnd: its user+system CPU time, ms
	Signal     int             // KindEnd
	Reason     string          // KindHold, KindRelease, KindEnd, KindRequeue, KindReason
	By         int64           // KindCancel, KindRequeueRequest: uid (0 is root, so it is always meaningful there)
}

// payload is the JSON stored in job_events.payload: the kind-specific part of
// an Event. Seq, JobID, Time and Kind have their own columns.
type payload struct {
	Job        *api.Job        `json:"job,omitempty"`
	Nodes      []string        `json:"nodes,omitempty"`
	Alloc      []api.NodeAlloc `json:"alloc,omitempty"`
	StdoutPath string          `json:"stdout_path,omitempty"`
	StderrPath string          `json:"stderr_path,omitempty"`
	Step       *api.Step       `json:"step,omitempty"`
	State      api.JobState    `json:"state,omitempty"`
	ExitCode   int             `json:"exit_code,omitempty"`
	MaxRSSKB   int64           `json:"max_rss_kb,omitempty"`
	TotalCPUMs int64           `json:"total_cpu_ms,omitempty"`
	Signal     int             `json:"signal,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	By         int64           `json:"by,omitempty"`
}

func encodePayload(ev *Event) ([]byte, error) {
	return json.Marshal(payload{
		MaxRSSKB: ev.MaxRSSKB, TotalCPUMs: ev.TotalCPUMs,
		Job: ev.Job, Nodes: ev.Nodes, Alloc: ev.Alloc, StdoutPath: ev.StdoutPath, StderrPath: ev.StderrPath,
		Step: ev.Step, State: ev.State, ExitCode: ev.ExitCode, Signal: ev.Signal,
		Reason: ev.Reason, By: ev.By,
	})
}

func decodePayload(ev *Event, b []byte) error {
	var p payload
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("event %d: payload: %w", ev.Seq, err)
	}
	ev.Job, ev.Nodes, ev.StdoutPath, ev.StderrPath = p.Job, p.Nodes, p.StdoutPath, p.StderrPath
	ev.Alloc = p.Alloc
	ev.MaxRSSKB, ev.TotalCPUMs = p.MaxRSSKB, p.TotalCPUMs
	ev.Step, ev.State, ev.ExitCode, ev.Signal = p.Step, p.State, p.ExitCode, p.Signal
	ev.Reason, ev.By = p.Reason, p.By
	return nil
}

// ErrNotFound is returned for an unknown job id or meta key.
var ErrNotFound = errors.New("not found")

// ErrInvalidEvent is what every EventError matches with errors.Is.
var ErrInvalidEvent = errors.New("invalid event")

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("store closed")

// EventError says why an event cannot follow the job's history. It names the
// job and the event so that the message alone locates the problem (DESIGN §5.6).
type EventError struct {
	JobID int64
	Kind  Kind
	State api.JobState // the job's state before the event ("" when the job is unknown)
	Msg   string
	Err   error // a further cause, such as ErrNotFound for an unknown job
}

func (e *EventError) Error() string {
	if e.State == "" {
		return fmt.Sprintf("job %d: %s event: %s", e.JobID, e.Kind, e.Msg)
	}
	return fmt.Sprintf("job %d: %s event in state %s: %s", e.JobID, e.Kind, e.State, e.Msg)
}

func (e *EventError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalidEvent, e.Err}
	}
	return []error{ErrInvalidEvent}
}
