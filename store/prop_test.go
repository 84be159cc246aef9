package store

import (
	"context"
	"os"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"hora/api"
)

// modelJob is what the generator knows of a job, enough to choose only
// events that are valid for it and to predict its state independently of apply.
type modelJob struct {
	state   api.JobState
	held    bool
	steps   map[int]bool // index → still running, for the current run
	nextIdx int
	// partition is the job's: an alter keeps it.
	partition string
}

var finalStates = []api.JobState{api.StateCompleted, api.StateCancelled, api.StateFailed,
	api.StateTimeout, api.StateNodeFail, api.StateDeadline, api.StateOOM}

// op is one generated call: a submit (job != nil) or an event.
type op struct {
	job *api.Job
	ev  Event
}

func genSpec(t *rapid.T) api.JobSpec {
	return api.JobSpec{
		Name:      rapid.StringMatching(`[a-z]{0,8}`).Draw(t, "name"),
		Script:    rapid.String().Draw(t, "script"),
		Args:      rapid.SliceOfN(rapid.String(), 0, 3).Draw(t, "args"),
		WorkDir:   "/w",
		Env:       rapid.SliceOfN(rapid.StringMatching(`[A-Z]{1,3}=[a-z]*`), 0, 3).Draw(t, "env"),
		Partition: rapid.SampledFrom([]string{"", "batch", "rt"}).Draw(t, "partition"),
		Nodes:     rapid.IntRange(0, 4).Draw(t, "nodes"),
		TimeLimit: rapid.SampledFrom([]int64{0, api.NoLimit, 60, 3600}).Draw(t, "limit"),
		Deadline:  rapid.Int64Range(0, 2e9).Draw(t, "deadline"),
		Load:      rapid.Float64Range(0, 1e6).Draw(t, "load"),
		Hold:      rapid.Bool().Draw(t, "hold"),
	}
}

// genHistory draws operations over up to a dozen jobs, interleaved, each
// event valid for its job's state at that point.
func genHistory(t *rapid.T) []op {
	var ops []op
	var jobs []*modelJob
	now := int64(1_700_000_000)
	n := rapid.IntRange(1, 80).Draw(t, "ops")
	for range n {
		now += rapid.Int64Range(0, 100).Draw(t, "dt")
		if len(jobs) == 0 || (len(jobs) < 12 && rapid.IntRange(0, 4).Draw(t, "new") == 0) {
			spec := genSpec(t)
			m := &modelJob{state: api.StatePending, held: spec.Hold, steps: map[int]bool{}, partition: spec.Partition}
			reason := "None"
			if spec.Hold {
				reason = ReasonHeldUser
			}
			jobs = append(jobs, m)
			ops = append(ops, op{job: &api.Job{Spec: spec, UID: uint32(rapid.IntRange(0, 3).Draw(t, "uid")),
				User: "u", Group: "g", State: api.StatePending, Reason: reason, SubmitTime: now,
				EligibleTime: now, Priority: rapid.Int64Range(0, 1000).Draw(t, "prio"), CancelledBy: -1}})
			continue
		}
		k := rapid.IntRange(0, len(jobs)-1).Draw(t, "job")
		m := jobs[k]
		ev := Event{JobID: int64(k + 1), Time: now}
		var kinds []Kind
		switch {
		case m.state == api.StatePending && m.held:
			kinds = []Kind{KindRelease, KindCancel, KindEnd, KindAlter}
		case m.state == api.StatePending:
			kinds = []Kind{KindHold, KindReason, KindStart, KindStart, KindCancel, KindEnd, KindAlter}
		case m.state == api.StateRunning:
			kinds = []Kind{KindStepStart, KindStepStart, KindStepEnd, KindCancel, KindEnd, KindRequeue, KindSuspend,
				KindRequeueRequest, KindNodeFail}
		case m.state == api.StateSuspended:
			kinds = []Kind{KindResume, KindCancel, KindEnd, KindRequeue, KindRequeueRequest, KindNodeFail}
		default:
			kinds = []Kind{KindRequeue}
		}
		ev.Kind = rapid.SampledFrom(kinds).Draw(t, "kind")
		switch ev.Kind {
		case KindHold:
			ev.Reason = rapid.SampledFrom([]string{"", ReasonHeldUser, ReasonHeldAdmin}).Draw(t, "hold")
			m.held = true
		case KindRelease:
			m.held = false
		case KindReason:
			ev.Reason = rapid.SampledFrom([]string{"Priority", "Resources", "BeginTime"}).Draw(t, "reason")
		case KindStart:
			ev.Nodes = rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"n1", "n2", "n3", "n4"}), 1, 3,
				rapid.ID[string]).Draw(t, "nodes")
			ev.StdoutPath = rapid.SampledFrom([]string{"", "/w/slurm.out"}).Draw(t, "stdout")
			m.state = api.StateRunning
		case KindStepStart:
			ev.Step = &api.Step{Index: m.nextIdx, Node: "n1",
				Offset: rapid.Float64Range(0, 100).Draw(t, "off"), Size: rapid.Float64Range(0, 100).Draw(t, "size")}
			m.steps[m.nextIdx] = true
			m.nextIdx += rapid.IntRange(1, 2).Draw(t, "gap") // indices need not be dense
		case KindStepEnd:
			var running []int
			for i, r := range m.steps {
				if r {
					running = append(running, i)
				}
			}
			if len(running) == 0 {
				ev.Kind = KindCancel
				ev.By = 0
				break
			}
			idx := running[0]
			for _, i := range running {
				idx = min(idx, i) // map order must not decide what rapid shrinks
			}
			ev.Step = &api.Step{Index: idx, ExitCode: rapid.IntRange(0, 2).Draw(t, "exit")}
			m.steps[idx] = false
		case KindCancel:
			ev.By = int64(rapid.IntRange(0, 3).Draw(t, "by"))
		case KindAlter:
			spec := genSpec(t)
			spec.Partition = m.partition
			ev.Job = &api.Job{Spec: spec, EligibleTime: now + rapid.Int64Range(0, 100).Draw(t, "eligible")}
		case KindEnd:
			if m.state == api.StatePending {
				ev.State = api.StateCancelled
			} else {
				ev.State = rapid.SampledFrom(finalStates).Draw(t, "final")
			}
			ev.ExitCode = rapid.IntRange(0, 255).Draw(t, "code")
			m.state, m.held = ev.State, false
		case KindRequeue:
			m.state, m.held, m.steps, m.nextIdx = api.StatePending, false, map[int]bool{}, 0
		case KindSuspend:
			m.state = api.StateSuspended
		case KindResume:
			m.state = api.StateRunning
		case KindRequeueRequest:
			ev.By = int64(rapid.IntRange(0, 3).Draw(t, "by"))
		case KindNodeFail:
			ev.Nodes = []string{rapid.SampledFrom([]string{"n1", "n2", "n3", "n4"}).Draw(t, "lost")}
		}
		ops = append(ops, op{ev: ev})
	}
	return ops
}

// For random interleaved histories appended in random batches, every job's
// row equals the fold of its events, and stays so across Close and Open.
func TestPropertyProjectionIsFold(t *testing.T) {
	root := t.TempDir()
	rapid.Check(t, func(rt *rapid.T) {
		ops := genHistory(rt)
		dir, err := os.MkdirTemp(root, "db")
		if err != nil {
			rt.Fatal(err)
		}
		ctx := context.Background()
		s, err := Open(ctx, dir+"/hora.db")
		if err != nil {
			rt.Fatal(err)
		}
		defer func() { s.Close() }()
		var ids []int64
		states := map[int64]api.JobState{}
		type marks struct{ requeue, nodeFail bool }
		runMarks := map[int64]marks{} // the current run's marks, as recovery must read them
		var pending []Event
		flush := func() {
			if len(pending) > 0 {
				if err := s.Append(ctx, pending...); err != nil {
					rt.Fatalf("append %d events: %v", len(pending), err)
				}
				pending = pending[:0]
			}
		}
		batch := rapid.IntRange(1, 8).Draw(rt, "batch")
		for _, o := range ops {
			if o.job != nil {
				flush()
				if err := s.Submit(ctx, o.job); err != nil {
					rt.Fatal(err)
				}
				if want := int64(len(ids) + 1); o.job.ID != want {
					rt.Fatalf("submit got id %d, want %d", o.job.ID, want)
				}
				ids = append(ids, o.job.ID)
				states[o.job.ID] = api.StatePending
				continue
			}
			pending = append(pending, o.ev)
			m := runMarks[o.ev.JobID]
			switch o.ev.Kind {
			case KindStart:
				states[o.ev.JobID] = api.StateRunning
				m = marks{}
			case KindEnd:
				states[o.ev.JobID] = o.ev.State
				m = marks{}
			case KindRequeue:
				states[o.ev.JobID] = api.StatePending
				m = marks{}
			case KindRequeueRequest:
				m.requeue = true
			case KindNodeFail:
				m.nodeFail = true
			case KindSuspend:
				states[o.ev.JobID] = api.StateSuspended
			case KindResume:
				states[o.ev.JobID] = api.StateRunning
			}
			runMarks[o.ev.JobID] = m
			if len(pending) >= batch {
				flush()
			}
		}
		flush()
		before := map[int64]api.Job{}
		for _, id := range ids {
			j := checkFold(rt, s, id)
			if j.State != states[id] {
				rt.Fatalf("job %d is %s, the model says %s", id, j.State, states[id])
			}
			evs, err := s.Events(ctx, id)
			if err != nil {
				rt.Fatal(err)
			}
			if rq, nf := RunMarks(evs); (marks{rq, nf}) != runMarks[id] {
				rt.Fatalf("job %d: RunMarks requeue=%v nodeFail=%v, the model says %+v", id, rq, nf, runMarks[id])
			}
			before[id] = j
		}
		if err := s.Close(); err != nil {
			rt.Fatal(err)
		}
		s, err = Open(ctx, dir+"/hora.db")
		if err != nil {
			rt.Fatal(err)
		}
		all, err := s.Jobs(ctx, Filter{})
		if err != nil {
			rt.Fatal(err)
		}
		if len(all) != len(ids) {
			rt.Fatalf("%d jobs after reopen, want %d", len(all), len(ids))
		}
		for _, j := range all {
			if !reflect.DeepEqual(j, before[j.ID]) {
				rt.Fatalf("job %d changed across Close/Open:\n%+v\n%+v", j.ID, before[j.ID], j)
			}
			checkFold(rt, s, j.ID)
		}
	})
}
