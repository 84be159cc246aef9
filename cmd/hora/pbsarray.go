package main

// Job arrays as the PBS commands show them. horad keeps an array as one
// job per task (Slurm's model: the array's id is its first task's job id);
// PBS shows the array as one job, <seq>[].server, and its tasks as subjobs
// <seq>[<index>].server (OP qstat.1B "Job array"/"Subjob"; TQ job_clone
// "%s[%d].%s"). Torque names a subjob <name>-<index> (TQ job_clone
// "%s-%d").

import (
	"slices"
	"strconv"
	"strings"

	"hora/api"
	"hora/cmd/hora/listing"
)

// pbsRef is a job id as typed: <seq>, <seq>[] (the array) or <seq>[i]
// (one subjob), with an optional .server.
type pbsRef struct {
	seq   int64
	array bool  // "[]" or "[i]" given
	task  int64 // the index of "[i]"; -1 for none
}

// parsePBSRef reads a job id as the PBS clients accept it: "123",
// "123.server[.domain]", "123[]", "123[4].server". The server part is not
// checked: horad is the only server. ok is false for a malformed id.
func parsePBSRef(id string) (pbsRef, bool) {
	ref := pbsRef{task: -1}
	i := 0
	for i < len(id) && id[i] >= '0' && id[i] <= '9' {
		i++
	}
	if i == 0 || i > 18 {
		return ref, false
	}
	rest := id[i:]
	if rest != "" && rest[0] == '[' {
		j := strings.IndexByte(rest, ']')
		if j < 0 {
			return ref, false
		}
		ref.array = true
		if idx := rest[1:j]; idx != "" {
			n, err := strconv.ParseInt(idx, 10, 64)
			if err != nil || n < 0 {
				return ref, false
			}
			ref.task = n
		}
		rest = rest[j+1:]
	}
	if rest != "" && (rest[0] != '.' || len(rest) == 1) {
		return ref, false
	}
	n, err := strconv.ParseInt(id[:i], 10, 64)
	ref.seq = n
	return ref, err == nil && n > 0
}

// parsePBSJobID is parsePBSRef's sequence number alone.
func parsePBSJobID(id string) (int64, bool) {
	r, ok := parsePBSRef(id)
	return r.seq, ok
}

// arrayID is an array's PBS id, <seq>[].server.
func (s *pbsSession) arrayID(seq int64) string {
	return strconv.FormatInt(seq, 10) + "[]." + s.server
}

// subjobID is a subjob's PBS id, <seq>[<index>].server.
func (s *pbsSession) subjobID(array, task int64) string {
	return strconv.FormatInt(array, 10) + "[" + strconv.FormatInt(task, 10) + "]." + s.server
}

// pbsArray is what an array's summary row knows of its tasks.
type pbsArray struct {
	tasks []*api.Job
}

// counts is OpenPBS's array_state_count: tasks queued, running, exiting
// and expired (finished).
func (a *pbsArray) counts() (queued, running, exiting, expired int) {
	for _, t := range a.tasks {
		switch {
		case t.State == api.StatePending:
			queued++
		case t.State == api.StateRunning || t.State == api.StateSuspended:
			running++
		case t.State == api.StateCompleting:
			exiting++
		default:
			expired++
		}
	}
	return
}

// summaryState is the array's state letter (api.PBSArrayState).
func (a *pbsArray) summaryState(torque bool, now int64) string {
	return api.PBSArrayState(a.tasks, torque, now)
}

// arrayRowsMode says which rows qstat lists: plain jobs, arrays (one
// summary row each) and subjobs.
type arrayRowsMode struct{ plain, arrays, subjobs bool }

// qstatArrayMode is qstat's choice of rows: OpenPBS lists jobs and arrays,
// -t adds the subjobs, -J keeps arrays only, -J -t subjobs only (qstat.1B);
// Torque lists arrays summarised, -t expands them into subjobs (qstat.1).
func qstatArrayMode(torque, t, J bool) arrayRowsMode {
	if torque {
		return arrayRowsMode{plain: true, arrays: !t, subjobs: t}
	}
	switch {
	case J && t:
		return arrayRowsMode{subjobs: true}
	case J:
		return arrayRowsMode{arrays: true}
	}
	return arrayRowsMode{plain: true, arrays: true, subjobs: t}
}

// pbsArrayRows turns the jobs into qstat's rows: a plain job as it is, an
// array as its summary row followed (when asked) by its subjobs, in id
// order. shown says which jobs a listing shows (finished ones only under
// -x); an array shows while one of its tasks does.
func pbsArrayRows(s *pbsSession, jobs []api.Job, mode arrayRowsMode, shown func(*api.Job) bool) []pbsRow {
	var rows []pbsRow
	arrays := map[int64]int{} // array id → index of its summary in rows (-1: not listed)
	var tasks map[int64][]*api.Job
	for i := range jobs {
		j := &jobs[i]
		if j.ArrayJobID == 0 {
			if mode.plain && shown(j) {
				rows = append(rows, pbsRow{Job: j, s: s})
			}
			continue
		}
		if tasks == nil {
			tasks = map[int64][]*api.Job{}
		}
		tasks[j.ArrayJobID] = append(tasks[j.ArrayJobID], j)
	}
	for id, ts := range tasks {
		slices.SortFunc(ts, func(a, b *api.Job) int { return int(a.ArrayTaskID - b.ArrayTaskID) })
		if !slices.ContainsFunc(ts, shown) {
			continue
		}
		if mode.arrays {
			arrays[id] = len(rows)
			rows = append(rows, summaryRow(s, id, ts))
		}
		if mode.subjobs {
			for _, t := range ts {
				if shown(t) {
					rows = append(rows, subjobRow(s, t))
				}
			}
		}
	}
	slices.SortStableFunc(rows, func(a, b pbsRow) int {
		ka, kb := a.sortKey(), b.sortKey()
		if ka[0] != kb[0] {
			return int(ka[0] - kb[0])
		}
		return int(ka[1] - kb[1])
	})
	return rows
}

// sortKey orders rows by job id, an array's subjobs right after it.
func (r *pbsRow) sortKey() [2]int64 {
	switch {
	case r.array != nil:
		return [2]int64{r.ID, -1}
	case r.ArrayJobID != 0:
		return [2]int64{r.ArrayJobID, r.ArrayTaskID}
	}
	return [2]int64{r.ID, -1}
}

// summaryRow stands for a whole array: the first task's attributes under
// the array's id, its state from all tasks.
func summaryRow(s *pbsSession, id int64, tasks []*api.Job) pbsRow {
	j := *tasks[0]
	j.ID = id
	j.Nodes, j.StartTime, j.EndTime = nil, 0, 0
	for _, t := range tasks {
		if t.StartTime != 0 && (j.StartTime == 0 || t.StartTime < j.StartTime) {
			j.StartTime = t.StartTime
		}
		j.EndTime = max(j.EndTime, t.EndTime)
	}
	a := &pbsArray{tasks: tasks}
	if !slices.ContainsFunc(tasks, func(t *api.Job) bool { return !t.State.Finished() }) {
		j.State = api.StateCompleted
	} else {
		j.EndTime = 0
		if j.State.Finished() {
			j.State = api.StateRunning
		}
	}
	return pbsRow{Job: &j, s: s, disp: s.arrayID(id), array: a, state: a.summaryState(s.torque(), s.now.Unix())}
}

// subjobRow is one task as a PBS subjob.
func subjobRow(s *pbsSession, t *api.Job) pbsRow {
	r := pbsRow{Job: t, s: s, disp: s.subjobID(t.ArrayJobID, t.ArrayTaskID)}
	if s.torque() {
		j := *t
		j.Spec.Name += "-" + strconv.FormatInt(t.ArrayTaskID, 10)
		r.Job = &j
	} else if t.State.Finished() {
		r.state = "X" // OP: a subjob that has finished or was deleted
	}
	return r
}

// arrayIndices is the array's index range as submitted, without the
// throttle (OP array_indices_submitted "1-10:2").
func arrayIndices(spec string) string {
	v, _, _ := strings.Cut(spec, "%")
	return v
}

func pbsArrayFlag(_ *listing.Ctx, r *pbsRow) string {
	if r.array != nil {
		return "True"
	}
	return ""
}

func pbsArrayStateCount(_ *listing.Ctx, r *pbsRow) string {
	if r.array == nil {
		return ""
	}
	q, run, e, x := r.array.counts()
	return "Queued:" + strconv.Itoa(q) + " Running:" + strconv.Itoa(run) + " Exiting:" + strconv.Itoa(e) +
		" Expired:" + strconv.Itoa(x) + " "
}

func pbsArraySubmitted(_ *listing.Ctx, r *pbsRow) string {
	if r.array == nil {
		return ""
	}
	return arrayIndices(r.Spec.Array)
}

func pbsArrayRemaining(_ *listing.Ctx, r *pbsRow) string {
	if r.array == nil {
		return ""
	}
	var left []string
	for _, t := range r.array.tasks {
		if t.State == api.StatePending {
			left = append(left, strconv.FormatInt(t.ArrayTaskID, 10))
		}
	}
	if len(left) == 0 {
		return "-"
	}
	return strings.Join(left, ",")
}

func pbsArrayID(_ *listing.Ctx, r *pbsRow) string {
	if r.array != nil || r.ArrayJobID == 0 {
		return ""
	}
	return r.s.arrayID(r.ArrayJobID)
}

func pbsArrayIndex(_ *listing.Ctx, r *pbsRow) string {
	if r.array != nil || r.ArrayJobID == 0 {
		return ""
	}
	return strconv.FormatInt(r.ArrayTaskID, 10)
}

func pbsArrayRequest(_ *listing.Ctx, r *pbsRow) string {
	if r.ArrayJobID == 0 && r.array == nil {
		return ""
	}
	return arrayIndices(r.Spec.Array)
}
