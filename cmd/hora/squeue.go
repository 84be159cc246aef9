package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"hora/api"
	"hora/cmd/hora/listing"
	"hora/sbatch"
)

// Formats of squeue's fixed layouts (COMPAT.md §3.1, measured on 22.05.8).
const (
	squeueDefaultFormat = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
	squeueLongFormat    = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
	squeueStartFormat   = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
	squeueDefaultSort   = "P,t,-p"
)

var squeueOpts = []sbatch.Opt{
	{Short: 'A', Long: "account", Arg: sbatch.RequiredArg, Key: "account"},
	{Short: 'a', Long: "all", Arg: sbatch.NoArg, Key: "all"},
	{Short: 'h', Long: "noheader", Arg: sbatch.NoArg, Key: "noheader"},
	{Short: 'i', Long: "iterate", Arg: sbatch.RequiredArg, Key: "iterate"},
	{Short: 'j', Long: "jobs", Arg: sbatch.OptionalArg, Key: "jobs"},
	{Short: 'l', Long: "long", Arg: sbatch.NoArg, Key: "long"},
	{Short: 'M', Long: "clusters", Arg: sbatch.RequiredArg, Key: "clusters"},
	{Long: "me", Arg: sbatch.NoArg, Key: "me"},
	{Short: 'n', Long: "name", Arg: sbatch.RequiredArg, Key: "name"},
	{Long: "noconvert", Arg: sbatch.NoArg, Key: "noconvert"},
	{Short: 'o', Long: "format", Arg: sbatch.RequiredArg, Key: "format"},
	{Short: 'O', Long: "Format", Arg: sbatch.RequiredArg, Key: "Format"},
	{Short: 'p', Long: "partition", Arg: sbatch.RequiredArg, Key: "partition"},
	{Short: 'q', Long: "qos", Arg: sbatch.RequiredArg, Key: "qos"},
	{Short: 'R', Long: "reservation", Arg: sbatch.RequiredArg, Key: "reservation"},
	{Short: 'r', Long: "array", Arg: sbatch.NoArg, Key: "array"},
	{Short: 'S', Long: "sort", Arg: sbatch.RequiredArg, Key: "sort"},
	{Short: 's', Long: "steps", Arg: sbatch.OptionalArg, Key: "steps"},
	{Long: "start", Arg: sbatch.NoArg, Key: "start"},
	{Short: 't', Long: "states", Arg: sbatch.RequiredArg, Key: "states"},
	{Short: 'u', Long: "user", Arg: sbatch.RequiredArg, Key: "user"},
	{Short: 'v', Long: "verbose", Arg: sbatch.NoArg, Key: "verbose"},
	{Short: 'V', Long: "version", Arg: sbatch.NoArg, Key: "version"},
	{Short: 'w', Long: "nodelist", Arg: sbatch.RequiredArg, Key: "nodelist"},
	{Long: "help", Arg: sbatch.NoArg, Key: "help"},
	{Long: "usage", Arg: sbatch.NoArg, Key: "usage"},
}

// squeueFields is squeue's field table: one line per field with its -o
// letter, its -O names, its header (HEAD table in opts.c, COMPAT.md §3.3
// and §3.4) and its value. Keep marks the fields squeue pads but never cuts
// (time columns and node lists, §3.1). A new field is one more line. Built
// on first use: other commands do not pay for it at start.
var squeueFields = listing.Lazy[api.Job]{Build: func() *listing.Table[api.Job] {
	return listing.NewTable([]listing.Field[api.Job]{
		{Letter: 'i', Names: []string{"jobarrayid"}, Header: "JOBID", Value: sqJobArrayID},
		{Letter: 'A', Names: []string{"jobid"}, Header: "JOBID", Value: sqJobID},
		{Letter: 'F', Names: []string{"arrayjobid"}, Header: "ARRAY_JOB_ID", Value: sqArrayJobID},
		{Letter: 'K', Names: []string{"arraytaskid"}, Header: "ARRAY_TASK_ID", Value: sqArrayTaskID},
		{Letter: 'j', Names: []string{"name"}, Header: "NAME", Value: func(_ *listing.Ctx, j *api.Job) string { return j.Spec.Name }},
		{Letter: 'u', Names: []string{"username"}, Header: "USER", Value: func(_ *listing.Ctx, j *api.Job) string { return j.User }},
		{Letter: 'U', Names: []string{"userid"}, Header: "UID", Value: func(_ *listing.Ctx, j *api.Job) string { return strconv.FormatUint(uint64(j.UID), 10) }},
		{Letter: 'g', Names: []string{"groupname"}, Header: "GROUP", Value: func(_ *listing.Ctx, j *api.Job) string { return j.Group }},
		{Letter: 'G', Names: []string{"groupid"}, Header: "GID", Value: func(_ *listing.Ctx, j *api.Job) string { return strconv.FormatUint(uint64(j.GID), 10) }},
		{Letter: 't', Names: []string{"statecompact"}, Header: "ST", Value: func(_ *listing.Ctx, j *api.Job) string { return j.State.Compact() }},
		{Letter: 'T', Names: []string{"state"}, Header: "STATE", Value: func(_ *listing.Ctx, j *api.Job) string { return string(j.State) }},
		{Letter: 'M', Names: []string{"timeused"}, Header: "TIME", Keep: true, Value: func(c *listing.Ctx, j *api.Job) string { return c.Duration(timeUsed(j, c.NowUnix)) }},
		{Letter: 'l', Names: []string{"timelimit"}, Header: "TIME_LIMIT", Keep: true, Value: func(_ *listing.Ctx, j *api.Job) string { return timeLimitText(j.Spec.TimeLimit, false) }},
		{Letter: 'L', Names: []string{"timeleft"}, Header: "TIME_LEFT", Keep: true, Value: sqTimeLeft},
		{Letter: 'D', Names: []string{"numnodes"}, Header: "NODES", Value: func(_ *listing.Ctx, j *api.Job) string { return strconv.Itoa(jobNodeCount(j)) }},
		{Letter: 'C', Names: []string{"numcpus"}, Header: "CPUS", Value: func(_ *listing.Ctx, j *api.Job) string { return strconv.Itoa(jobCPUs(j)) }},
		{Letter: 'R', Names: []string{"reasonlist"}, Header: "NODELIST(REASON)", Keep: true, Value: sqReasonList},
		{Letter: 'r', Names: []string{"reason"}, Header: "REASON", Value: func(_ *listing.Ctx, j *api.Job) string { return reasonText(j) }},
		{Letter: 'N', Names: []string{"nodelist"}, Header: "NODELIST", Keep: true, Value: func(_ *listing.Ctx, j *api.Job) string { return hostlist(j.Nodes) }},
		{Letter: 'P', Names: []string{"partition"}, Header: "PARTITION", Value: func(_ *listing.Ctx, j *api.Job) string { return j.Spec.Partition }},
		{Letter: 'S', Names: []string{"starttime"}, Header: "START_TIME", Keep: true, Value: func(c *listing.Ctx, j *api.Job) string { return sqTime(c, shownStart(j)) }},
		{Letter: 'e', Names: []string{"endtime"}, Header: "END_TIME", Keep: true, Value: sqEndTime},
		{Letter: 'V', Names: []string{"submittime"}, Header: "SUBMIT_TIME", Keep: true, Value: func(c *listing.Ctx, j *api.Job) string { return sqTime(c, j.SubmitTime) }},
		{Names: []string{"rtframe"}, Header: "RT_FRAME", Value: func(_ *listing.Ctx, j *api.Job) string { return rtFrameText(&j.Spec) }},
		{Names: []string{"rtmisses"}, Header: "RT_MISSES", Value: func(_ *listing.Ctx, j *api.Job) string { return rtMissesText(&j.Spec) }},
		{Names: []string{"deadline"}, Header: "DEADLINE", Keep: true, Value: func(c *listing.Ctx, j *api.Job) string { return sqTime(c, j.Spec.Deadline) }},
		{Letter: 'Q', Names: []string{"prioritylong"}, Header: "PRIORITY", Value: func(_ *listing.Ctx, j *api.Job) string { return strconv.FormatInt(j.Priority, 10) }},
		{Letter: 'p', Names: []string{"priority"}, Header: "PRIORITY", Value: func(_ *listing.Ctx, j *api.Job) string {
			// squeue prints the normalised priority with %.14f (print.c).
			return strconv.FormatFloat(float64(j.Priority)/4294967295, 'f', 14, 64)
		}},
		{Letter: 'q', Names: []string{"qos"}, Header: "QOS", Value: func(_ *listing.Ctx, j *api.Job) string { return orNull(j.Spec.QOS) }},
		{Letter: 'a', Names: []string{"account"}, Header: "ACCOUNT", Value: func(_ *listing.Ctx, j *api.Job) string { return orNull(j.Spec.Account) }},
		{Letter: 'v', Names: []string{"reservation"}, Header: "RESERVATION", Value: func(_ *listing.Ctx, j *api.Job) string { return orNull(j.Spec.Reservation) }},
		{Letter: 'Z', Names: []string{"workdir"}, Header: "WORK_DIR", Value: func(_ *listing.Ctx, j *api.Job) string { return j.Spec.WorkDir }},
		{Names: []string{"stdout"}, Header: "STDOUT", Value: func(_ *listing.Ctx, j *api.Job) string { return j.StdoutPath }},
		{Names: []string{"stderr"}, Header: "STDERR", Value: sqStderr},
		{Names: []string{"stdin"}, Header: "STDIN", Value: sqStdin},
		{Letter: 'E', Names: []string{"dependency"}, Header: "DEPENDENCY", Value: func(_ *listing.Ctx, j *api.Job) string { return orNull(j.Dependency) }},
		{Names: []string{"exit_code"}, Header: "EXIT_CODE", Value: func(_ *listing.Ctx, j *api.Job) string {
			return strconv.Itoa(j.ExitCode) + ":" + strconv.Itoa(j.Signal)
		}},
		{Names: []string{"cpus-per-task"}, Header: "CPUS_PER_TASK", Value: sqCPUsPerTask},
		{Names: []string{"numtasks"}, Header: "TASKS", Value: func(_ *listing.Ctx, j *api.Job) string { return strconv.Itoa(max(j.Spec.NTasks, 1)) }},
		{Letter: 'o', Names: []string{"command"}, Header: "COMMAND", Value: func(_ *listing.Ctx, j *api.Job) string { return orNull(j.Spec.Command) }},
		{Letter: 'k', Names: []string{"comment"}, Header: "COMMENT", Value: func(_ *listing.Ctx, j *api.Job) string { return orNull(j.Spec.Comment) }},
		{Letter: 'm', Names: []string{"minmemory"}, Header: "MIN_MEMORY", Value: func(_ *listing.Ctx, j *api.Job) string { return reqMem(j, "0") }},
		{Letter: 'b', Names: []string{"tres-per-node"}, Header: "TRES_PER_NODE", Value: func(_ *listing.Ctx, j *api.Job) string { return tresPerNode(j) }},
		{Letter: 'c', Names: []string{"mincpus"}, Header: "MIN_CPUS", Value: sqCPUsPerTask},
		{Letter: 'd', Names: []string{"mintmpdisk"}, Header: "MIN_TMP_DISK", Value: sqConst("0")},
		{Letter: 'f', Names: []string{"feature"}, Header: "FEATURES", Value: sqConst("(null)")},
		{Letter: 'B', Names: []string{"batchhost"}, Header: "EXEC_HOST", Value: sqBatchHost},
		{Letter: 'Y', Names: []string{"schednodes"}, Header: "SCHEDNODES", Value: sqConst("(null)")},
		{Letter: 'y', Names: []string{"nice"}, Header: "NICE", Value: func(_ *listing.Ctx, j *api.Job) string { return strconv.Itoa(j.Spec.Nice) }},
		{Letter: 'h', Names: []string{"oversubscribe"}, Header: "OVER_SUBSCRIBE", Value: func(_ *listing.Ctx, j *api.Job) string { return api.JobOverSubscribe("", &j.Spec) }},
		{Letter: 'x', Names: []string{"excnodes"}, Header: "EXC_NODES", Value: sqConst("")},
		{Letter: 'n', Names: []string{"reqnodes"}, Header: "REQ_NODES", Value: sqConst("")},
		{Letter: 'w', Names: []string{"wckey"}, Header: "WCKEY", Value: sqConst("(null)")},
		{Letter: 'W', Names: []string{"licenses"}, Header: "LICENSES", Value: sqConst("(null)")},
	})
}}

// squeueAllLetters is the order of the fields in `-o %all`.
const squeueAllLetters = "ABCDEFGKLMNPQRSTUVWYZacdefgijklmnopqrtuvwxy"

func sqConst(s string) func(*listing.Ctx, *api.Job) string {
	return func(*listing.Ctx, *api.Job) string { return s }
}

// sqJobID is %A: the job's own id; for a folded row of pending array
// tasks the array's id, as Slurm shows its meta record's.
func sqJobID(_ *listing.Ctx, j *api.Job) string {
	if j.ArrayJobID != 0 && len(j.ArrayPending) > 1 {
		return strconv.FormatInt(j.ArrayJobID, 10)
	}
	return strconv.FormatInt(j.ID, 10)
}

// sqJobArrayID is %i: "7_3" for a task, "7_[3-15%4]" for folded tasks.
func sqJobArrayID(_ *listing.Ctx, j *api.Job) string {
	if j.ArrayJobID == 0 {
		return strconv.FormatInt(j.ID, 10)
	}
	return strconv.FormatInt(j.ArrayJobID, 10) + "_" + arrayTaskText(j, true)
}

func sqArrayJobID(_ *listing.Ctx, j *api.Job) string {
	if j.ArrayJobID != 0 {
		return strconv.FormatInt(j.ArrayJobID, 10)
	}
	return strconv.FormatInt(j.ID, 10)
}

func sqArrayTaskID(_ *listing.Ctx, j *api.Job) string {
	if j.ArrayJobID == 0 {
		return "N/A"
	}
	return arrayTaskText(j, false)
}

func sqTimeLeft(c *listing.Ctx, j *api.Job) string {
	switch lim := j.Spec.TimeLimit; {
	case lim == api.NoLimit:
		return "UNLIMITED"
	case lim == 0:
		return "NOT_SET"
	default:
		return c.Duration(lim - timeUsed(j, c.NowUnix))
	}
}

// sqReasonList is the %R rule of print.c (COMPAT.md §3.3).
func sqReasonList(_ *listing.Ctx, j *api.Job) string {
	if showsReason(j.State) {
		return "(" + reasonText(j) + ")"
	}
	return hostlist(j.Nodes)
}

func sqEndTime(c *listing.Ctx, j *api.Job) string {
	if j.EndTime == 0 && j.StartTime != 0 && j.Spec.TimeLimit == api.NoLimit {
		return "NONE"
	}
	return sqTime(c, endTime(j))
}

func sqStderr(_ *listing.Ctx, j *api.Job) string {
	if j.StderrPath == "" {
		return j.StdoutPath
	}
	return j.StderrPath
}

func sqStdin(_ *listing.Ctx, j *api.Job) string {
	if j.Spec.Stdin == "" {
		return "/dev/null"
	}
	return j.Spec.Stdin
}

func sqCPUsPerTask(_ *listing.Ctx, j *api.Job) string {
	return strconv.Itoa(max(j.Spec.CPUsPerTask, 1))
}

func sqBatchHost(_ *listing.Ctx, j *api.Job) string {
	if len(j.Nodes) > 0 {
		return j.Nodes[0]
	}
	return "n/a"
}

// parseSqueueFormat parses an -o string (listing.ParsePercent), with
// squeue's `%all`.
func parseSqueueFormat(f string) (listing.Format[api.Job], []string) {
	if f == "%all" {
		var b strings.Builder
		for i, k := range squeueAllLetters {
			if i > 0 {
				b.WriteByte('|')
			}
			b.WriteByte('%')
			b.WriteRune(k)
		}
		f = b.String()
	}
	return squeueFields.Get().ParsePercent(f)
}

// parseSqueueFormat2 parses an -O list, default width 20 (COMPAT.md §3.4).
func parseSqueueFormat2(f string) (listing.Format[api.Job], []string) {
	return squeueFields.Get().ParseNames(f, 20)
}

// sqTime prints a squeue time stamp: N/A when unset (unlike scontrol's
// Unknown, COMPAT.md §3.3).
func sqTime(c *listing.Ctx, u int64) string {
	if u == 0 {
		return "N/A"
	}
	return fmtTime(u, c.TimeFormat, c.Now)
}

// showsReason is the %R rule of print.c (COMPAT.md §3.3): waiting and
// failed jobs show "(reason)", the others their nodes.
func showsReason(s api.JobState) bool {
	switch s {
	case api.StatePending, api.StateTimeout, api.StateOOM, api.StateDeadline, api.StateFailed:
		return true
	}
	return false
}

func reasonText(j *api.Job) string {
	if j.Reason == "" {
		return "None"
	}
	return j.Reason
}

// writeSqueue prints jobs (already filtered and sorted) in the given format.
func writeSqueue(w io.Writer, jobs []*api.Job, fields listing.Format[api.Job], header bool, now time.Time, tfmt string) error {
	return fields.WritePtrs(w, jobs, squeueCtx(now, tfmt), header)
}

func squeueCtx(now time.Time, tfmt string) *listing.Ctx {
	return listing.NewCtx(now, tfmt, sbatch.FormatSqueueDuration)
}

// sortKey is one -S key: a field letter, descending when prefixed by '-'.
type sortKey struct {
	kind byte
	desc bool
}

// parseSort reads an -S list ("P,t,-p"); the first key is the primary one.
func parseSort(s string) ([]sortKey, error) {
	var keys []sortKey
	desc := false
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; ch {
		case ',', '+':
			desc = false
		case '-':
			desc = true
		default:
			if !strings.ContainsRune("iAPtTpQjuUMlSeVDCN", rune(ch)) {
				return nil, fmt.Errorf("Invalid sort specification: %c", ch)
			}
			keys = append(keys, sortKey{ch, desc})
			desc = false
		}
	}
	return keys, nil
}

// selectSqueue reads a listing and keeps the rows the query matches, with
// their sort values and their formatted lines; found says whether the first
// id asked for (-j) is in the listing at all. Each job is decoded once, into
// one api.Job, and its line formatted there and then: squeue over 100,000
// jobs decoded every job a second time to print it once sorted, a quarter
// of its time. The rows are appended to rows, which has room for all of
// the listing's jobs; a row's line is line first+k of the lines, k counted
// in this listing.
func selectSqueue(lr *api.ListingReader, q *squeueQuery, keys []sortKey, fields listing.Format[api.Job], c *listing.Ctx,
	now int64, rows sortRows, first int) (sortRows, lineShare, bool, error) {
	var j api.Job
	lines := lineShare{first: first, end: make([]int, 0, lr.Len())}
	found := false
	for {
		_, err := lr.Next(&j)
		if err == io.EOF {
			return rows, lines, found, lr.End()
		}
		if err != nil {
			return rows, lines, found, err
		}
		found = found || (len(q.ids) > 0 && j.ID == q.ids[0])
		if q.match(&j) {
			lines.b = fields.AppendRow(lines.b, c, &j)
			lines.end = append(lines.end, len(lines.b))
			if len(lines.end) == 1 {
				// Lines of a format are about as long as each other.
				lines.b = slices.Grow(lines.b, (len(lines.b)+8)*(lr.Len()-lr.Index()))
			}
			rows = rows.add(first+len(lines.end)-1, &j, keys, now)
		}
	}
}

// selectSqueueParts is selectSqueue over each part of the listing at once,
// a goroutine each with a context of its own. horad sends a listing of more
// than a few thousand jobs in one part per processor of its own: squeue
// over 100,000 jobs spent 130 ms of CPU decoding and formatting on one
// processor while the other was idle. Each part's rows go to its own
// stretch of one array, which are then moved together; its lines stay
// where they were formatted (copying them, and the rows into another
// array, cost a fifth of the client's time in page faults and copies).
func selectSqueueParts(lr *api.ListingReader, q *squeueQuery, keys []sortKey, fields listing.Format[api.Job],
	newCtx func() *listing.Ctx, now int64) (sortRows, squeueLines, bool, error) {
	all := newSortRows(lr.Len(), len(keys))
	parts := lr.Parts()
	if len(parts) <= 1 {
		rows, share, found, err := selectSqueue(lr, q, keys, fields, newCtx(), now, all, 0)
		return rows, squeueLines{shares: []lineShare{share}}, found, err
	}
	type result struct {
		rows  sortRows
		lines lineShare
		found bool
		err   error
	}
	results := make([]result, len(parts))
	var wg sync.WaitGroup
	next := 0
	for i, p := range parts {
		first, n := next, p.Len()
		next += n
		stretch := all
		stretch.rows = all.rows[first : first : first+n]
		wg.Go(func() {
			r := &results[i]
			r.rows, r.lines, r.found, r.err = selectSqueue(p, q, keys, fields, newCtx(), now, stretch, first)
		})
	}
	wg.Wait()
	rows := all.rows[:0]
	lines := squeueLines{shares: make([]lineShare, 0, len(parts))}
	found := false
	for _, r := range results {
		if r.err != nil {
			return all, lines, found, r.err
		}
		found = found || r.found
		rows = append(rows, r.rows.rows...) // moves down within all.rows
		lines.shares = append(lines.shares, r.lines)
	}
	all.rows = rows
	return all, lines, found, nil
}

// squeueLines are the selected rows' lines in listing order, in one share
// per part of the listing that selectSqueueParts read.
type squeueLines struct{ shares []lineShare }

// lineShare is a part's lines, one after the other: its line first+k ends
// at end[k].
type lineShare struct {
	first int
	b     []byte
	end   []int
}

// line is line k of the lines: in the last share whose first line is at
// most k (a listing has a few parts).
func (l squeueLines) line(k int) []byte {
	i := len(l.shares) - 1
	for l.shares[i].first > k {
		i--
	}
	s := &l.shares[i]
	k -= s.first
	start := 0
	if k > 0 {
		start = s.end[k-1]
	}
	return s.b[start:s.end[k]]
}

// writeSqueueRows prints the rows (already sorted), header first if asked.
func writeSqueueRows(w io.Writer, rows sortRows, lines squeueLines, fields listing.Format[api.Job], header bool) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if header {
		bw.Write(fields.AppendHeader(nil))
	}
	for i := range rows.rows {
		bw.Write(lines.line(rows.rows[i].at))
	}
	return bw.Flush()
}

// sortJobs orders jobs by the keys (sortRows).
func sortJobs(jobs []*api.Job, keys []sortKey, now int64) {
	rows := newSortRows(len(jobs), len(keys))
	for i, j := range jobs {
		rows = rows.add(i, j, keys, now)
	}
	rows.sort(keys)
	byRow := slices.Clone(jobs)
	for i := range rows.rows {
		jobs[i] = byRow[rows.rows[i].at]
	}
}

// sortRow is a job as squeue sorts it: where it is (an index into the
// jobs, or into the formatted lines), which is also where its values of the
// sort keys are in sortRows' arrays, and its ids. squeue over 100,000 jobs
// keeps these, not the jobs (api.ListingReader): sorting 1 KB jobs by value
// took half of its time, and holding them all 100 MB.
type sortRow struct {
	at              int
	id, array, task int64
}

// sortRows holds the rows and their values of the nk sort keys: key k of
// the row at at is ints[at*nk+k], or strs[at*nk+k] for a text key.
type sortRows struct {
	rows []sortRow
	ints []int64
	strs []string
	nk   int
}

// newSortRows has room for n rows at 0 to n-1.
func newSortRows(n, nk int) sortRows {
	return sortRows{rows: make([]sortRow, 0, n), ints: make([]int64, n*nk), strs: make([]string, n*nk), nk: nk}
}

// add appends job j, found at at, with its key values.
func (r sortRows) add(at int, j *api.Job, keys []sortKey, now int64) sortRows {
	for k, key := range keys {
		r.ints[at*r.nk+k], r.strs[at*r.nk+k] = sortValue(key.kind, j, now)
	}
	r.rows = append(r.rows, sortRow{at: at, id: j.ID, array: j.ArrayJobID, task: j.ArrayTaskID})
	return r
}

// sortValue is job j's value of the sort key kind: a number, or a text
// compared as bytes.
func sortValue(kind byte, j *api.Job, now int64) (int64, string) {
	switch kind {
	case 'i', 'A':
		return j.ID, ""
	case 'P':
		return 0, j.Spec.Partition
	case 't', 'T':
		// squeue 22.05 compares job_state_string alphabetically
		// (src/squeue/sort.c), so with the default sort COMPLETED < FAILED <
		// PENDING < RUNNING; measured by the golden suite.
		return 0, string(j.State)
	case 'p', 'Q':
		return j.Priority, ""
	case 'j':
		return 0, j.Spec.Name
	case 'u':
		return 0, j.User
	case 'U':
		return int64(j.UID), ""
	case 'M':
		return timeUsed(j, now), ""
	case 'l':
		return j.Spec.TimeLimit, ""
	case 'S':
		return startKey(j, now), ""
	case 'e':
		return endTime(j), ""
	case 'V':
		return j.SubmitTime, ""
	case 'D':
		return int64(jobNodeCount(j)), ""
	case 'C':
		return int64(jobCPUs(j)), ""
	case 'N':
		return 0, hostlist(j.Nodes)
	}
	return 0, ""
}

// sort orders the rows by the keys, with the job id as the final
// tie-break so that the output never depends on the order horad sent.
func (r sortRows) sort(keys []sortKey) {
	slices.SortFunc(r.rows, func(a, b sortRow) int {
		ka, kb := a.at*r.nk, b.at*r.nk
		for k := range keys {
			d := cmp.Compare(r.ints[ka+k], r.ints[kb+k])
			if d == 0 {
				d = strings.Compare(r.strs[ka+k], r.strs[kb+k])
			}
			if keys[k].desc {
				d = -d
			}
			if d != 0 {
				return d
			}
		}
		// Equal keys: tasks of one array in task order (squeue -r), else
		// newest first, as squeue 22.05.8 lists two held jobs (both
		// priority 0) of the same partition.
		if a.array != 0 && a.array == b.array {
			if d := cmp.Compare(a.task, b.task); d != 0 {
				return d
			}
		}
		// A total order: the unstable sort gives the one result.
		return cmp.Compare(b.id, a.id)
	})
}

// startKey puts jobs without a start time after all others (squeue sorts
// "unknown" as the future).
// shownStart is the start squeue prints: the actual one, or for a pending
// job booked ahead its planned start (Slurm prints expected starts too).
func shownStart(j *api.Job) int64 {
	if j.StartTime == 0 && j.State == api.StatePending {
		if j.ExpectedStart == 0 && j.Spec.Begin > 0 {
			return j.Spec.Begin // waiting for --begin: Slurm shows that time
		}
		return j.ExpectedStart
	}
	return j.StartTime
}

func startKey(j *api.Job, now int64) int64 {
	if j.StartTime == 0 && j.ExpectedStart != 0 && j.State == api.StatePending {
		return j.ExpectedStart
	}
	if j.StartTime == 0 {
		return now + 100
	}
	return j.StartTime
}

// squeueQuery is the parsed selection of jobs.
type squeueQuery struct {
	ids        []int64
	users      []string
	states     map[api.JobState]bool // nil = the default active states
	partitions []string
	names      []string
	accounts   []string
	qos        []string
	resv       []string
	nodes      map[string]bool
	tasks      map[int64][]int64 // -j 7_3: only these tasks of array 7
	plain      []int64           // ids -j gave without tasks
	noUser     bool              // -u named only unknown users
	expand     bool              // -r: one line per array task
}

// match applies the selection client-side too, so a horad that ignores a
// filter parameter cannot make squeue show the wrong jobs.
func (q *squeueQuery) match(j *api.Job) bool {
	if q.noUser {
		return false
	}
	if q.states != nil {
		if !q.states[j.State] {
			return false
		}
	} else if j.State.Finished() {
		// Without -t, finished jobs do not show, even when named by -j
		// (measured on 22.05.8: the golden suite's "squeue -j $C1").
		return false
	}
	if len(q.ids) > 0 && !slices.Contains(q.ids, j.ID) && !slices.Contains(q.ids, j.ArrayJobID) {
		return false
	}
	if sel, ok := q.tasks[j.ArrayJobID]; ok && j.ArrayJobID != 0 && !slices.Contains(q.plain, j.ID) &&
		!slices.Contains(q.plain, j.ArrayJobID) && !slices.Contains(sel, j.ArrayTaskID) {
		return false
	}
	if len(q.users) > 0 && !slices.Contains(q.users, j.User) &&
		!slices.Contains(q.users, strconv.FormatUint(uint64(j.UID), 10)) {
		return false
	}
	if len(q.partitions) > 0 && !slices.Contains(q.partitions, j.Spec.Partition) {
		return false
	}
	if len(q.names) > 0 && !slices.Contains(q.names, j.Spec.Name) {
		return false
	}
	if len(q.accounts) > 0 && !slices.Contains(q.accounts, j.Spec.Account) {
		return false
	}
	if len(q.qos) > 0 && !slices.Contains(q.qos, j.Spec.QOS) {
		return false
	}
	if len(q.resv) > 0 && !slices.Contains(q.resv, j.Spec.Reservation) {
		return false
	}
	if q.nodes != nil {
		hit := false
		for _, n := range j.Nodes {
			hit = hit || q.nodes[n]
		}
		if !hit {
			return false
		}
	}
	return true
}

// filter returns what horad is asked for: finished jobs only when a
// finished state or an id was named.
func (q *squeueQuery) filter() api.JobFilter {
	f := api.JobFilter{IDs: q.ids, Users: q.users, Partitions: q.partitions, Names: q.names,
		Fold: !q.expand && q.tasks == nil}
	if len(q.ids) > 0 {
		// With ids the other filters stay client-side too: a known job
		// that -p, -u or -n hides must not look unknown.
		f = api.JobFilter{IDs: q.ids, All: true, Fold: f.Fold}
	}
	for s := range q.states {
		f.All = f.All || s.Finished()
	}
	// With ids the state filter stays client-side: a known job hidden by -t
	// must not look unknown (header only, exit 0; COMPAT.md §3.2).
	if q.states != nil && len(q.states) < len(api.AllStates) && len(q.ids) == 0 {
		for _, s := range api.AllStates {
			if q.states[s] {
				f.States = append(f.States, s)
			}
		}
	}
	return f
}

// slurmOnlyStates are states Slurm accepts in -t that horad never reports
// (long and compact names); a list naming them is valid and matches nothing.
var slurmOnlyStates = map[string]api.JobState{
	"CF": "CONFIGURING", "RS": "RESIZING", "RD": "RESV_DEL_HOLD", "RQ": "REQUEUED",
	"RF": "REQUEUE_FED", "RH": "REQUEUE_HOLD", "RV": "REVOKED", "SI": "SIGNALING",
	"SE": "SPECIAL_EXIT", "SO": "STAGE_OUT", "ST": "STOPPED",
}

// parseJobState accepts hora's states and the Slurm-only ones.
func parseJobState(s string) (api.JobState, bool) {
	if st, ok := api.ParseState(s); ok {
		return st, true
	}
	u := strings.ToUpper(strings.TrimSpace(s))
	for short, long := range slurmOnlyStates {
		if u == short || u == string(long) {
			return long, true
		}
	}
	return "", false
}

// parseStates reads a -t list. "all" works only as the whole value: inside
// a list Slurm 22.05.8 rejects it (checked with its squeue).
func parseStates(s string) (map[api.JobState]bool, string) {
	m := map[api.JobState]bool{}
	if strings.EqualFold(strings.TrimSpace(s), "all") {
		for _, st := range api.AllStates {
			m[st] = true
		}
		return m, ""
	}
	for _, p := range splitList(s) {
		st, ok := parseJobState(p)
		if !ok {
			return nil, p
		}
		m[st] = true
	}
	return m, ""
}

// squeueValidStates is the list squeue 22.05.8 prints after an invalid -t.
const squeueValidStates = "PENDING,RUNNING,SUSPENDED,COMPLETED,CANCELLED,FAILED,TIMEOUT," +
	"NODE_FAIL,PREEMPTED,BOOT_FAIL,DEADLINE,OUT_OF_MEMORY,COMPLETING,CONFIGURING,RESIZING," +
	"RESV_DEL_HOLD,REQUEUED,REQUEUE_FED,REQUEUE_HOLD,REVOKED,SIGNALING,SPECIAL_EXIT,STAGE_OUT,STOPPED"

// squeueJobsArg implements the optional argument of -j/--jobs (COMPAT.md
// §3.2): squeue also takes the next word as the list when it does not look
// like an option, which getopt_long alone would not.
func squeueJobsArg(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		isJ := a == "-j" || (len(a) > 3 && strings.HasPrefix("--jobs", a) && !strings.Contains(a, "="))
		if isJ && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out = append(out, "--jobs="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

// squeueMain lists jobs as Slurm's squeue does (COMPAT.md §3).
func squeueMain(ctx context.Context, env *Env, args []string) int {
	p, err := sbatch.Getopt(squeueOpts, squeueJobsArg(args), false)
	if err != nil {
		return usageError(env, err)
	}
	if _, ok := p.Last("help"); ok {
		fmt.Fprint(env.Stdout, squeueHelp)
		return 0
	}
	if _, ok := p.Last("usage"); ok {
		fmt.Fprint(env.Stdout, squeueUsage)
		return 0
	}
	if _, ok := p.Last("version"); ok {
		return printVersion(env)
	}
	_, stepsWanted := p.Last("steps")
	if len(p.Args) > 1 || (len(p.Args) == 1 && !stepsWanted) {
		fmt.Fprintf(env.Stderr, "%s: error: Unrecognized option: %s\n", env.Prog, p.Args[len(p.Args)-1])
		fmt.Fprint(env.Stderr, squeueUsage)
		return 1
	}
	has := func(k string) bool { _, ok := p.Last(k); return ok }
	val := func(k, envName string) (string, bool) {
		if v, ok := p.Last(k); ok {
			return v.Val, true
		}
		if envName != "" {
			if v := env.Getenv(envName); v != "" {
				return v, true
			}
		}
		return "", false
	}

	q := &squeueQuery{}
	oneID := false
	if v, ok := p.Last("jobs"); ok && v.Set {
		var spelled []string
		for _, a := range p.All("jobs") {
			spelled = append(spelled, splitJobIDs(a)...)
		}
		for _, s := range spelled {
			r, ok := parseJobRef(s)
			if !ok {
				fmt.Fprintf(env.Stderr, "%s: error: Invalid job id: %s\n", env.Prog, s)
				return 1
			}
			if r.tasks != nil {
				if q.tasks == nil {
					q.tasks = map[int64][]int64{}
				}
				q.tasks[r.id] = append(q.tasks[r.id], r.tasks...)
			} else {
				q.plain = append(q.plain, r.id)
			}
			if !slices.Contains(q.ids, r.id) {
				q.ids = append(q.ids, r.id)
			}
		}
		oneID = len(q.ids) == 1
	}
	q.expand = has("array")
	if has("me") {
		q.users = append(q.users, currentUID())
	} else if v, ok := val("user", "SQUEUE_USERS"); ok {
		// As squeue 22.05.8 does, an unknown user is reported (with a
		// blank line) and left out, and the listing goes on.
		for _, u := range splitList(v) {
			name, ok := lookupUser(u)
			if !ok {
				fmt.Fprintf(env.Stderr, "%s: error: Invalid user: %s\n\n", env.Prog, u)
				continue
			}
			q.users = append(q.users, name)
		}
		// Users were named but none exists: nothing matches (Slurm prints
		// the header alone), not everything.
		q.noUser = len(q.users) == 0
	}
	if v, ok := val("states", "SQUEUE_STATES"); ok {
		st, bad := parseStates(v)
		if st == nil {
			fmt.Fprintf(env.Stderr, "%s: error: Invalid job state specified: %s\n", env.Prog, bad)
			// Slurm's message ends in its own newline, hence the blank line.
			fmt.Fprintf(env.Stderr, "%s: error: Valid job states include: %s\n\n", env.Prog, squeueValidStates)
			return 1
		}
		q.states = st
	}
	if v, ok := val("partition", "SQUEUE_PARTITION"); ok {
		q.partitions = splitList(v)
	}
	if v, ok := val("name", ""); ok {
		q.names = splitList(v)
	}
	if v, ok := val("account", "SQUEUE_ACCOUNT"); ok {
		q.accounts = splitList(v)
	}
	if v, ok := val("qos", "SQUEUE_QOS"); ok {
		q.qos = splitList(v)
	}
	if v, ok := val("reservation", ""); ok {
		q.resv = splitList(v)
	}
	if v, ok := val("nodelist", ""); ok {
		names, err := sbatch.ExpandHostlist(v)
		if err != nil {
			fmt.Fprintf(env.Stderr, "%s: error: Invalid node list: %s\n", env.Prog, v)
			return 1
		}
		q.nodes = map[string]bool{}
		for _, n := range names {
			q.nodes[n] = true
		}
	}

	if stepsWanted {
		// squeue -s [list]: the running steps (steps.go).
		var want []string
		for _, a := range append(p.All("steps"), p.Args...) {
			want = append(want, splitList(a)...)
		}
		format := squeueStepFormat
		if v, ok := p.Last("format"); ok {
			format = v.Val
		}
		cl := dial(env)
		if cl == nil {
			return 1
		}
		return squeueSteps(ctxOrBackground(ctx), env, cl, q.filter(), want, format, !has("noheader"))
	}

	// Output format: -o, -O, -l, --start, then the environment, then the default.
	format, sortSpec := squeueDefaultFormat, squeueDefaultSort
	var fields listing.Format[api.Job]
	var bad []string
	long := has("long")
	switch {
	case has("format"):
		v, _ := p.Last("format")
		fields, bad = parseSqueueFormat(v.Val)
	case has("Format"):
		v, _ := p.Last("Format")
		fields, bad = parseSqueueFormat2(v.Val)
	case has("start"):
		format, sortSpec = squeueStartFormat, "S"
		if q.states == nil {
			q.states = map[api.JobState]bool{api.StatePending: true}
		}
	case long:
		format = squeueLongFormat
	case env.Getenv("SQUEUE_FORMAT") != "":
		fields, bad = parseSqueueFormat(env.Getenv("SQUEUE_FORMAT"))
	case env.Getenv("SQUEUE_FORMAT2") != "":
		fields, bad = parseSqueueFormat2(env.Getenv("SQUEUE_FORMAT2"))
	}
	if fields == nil && bad == nil {
		fields, _ = parseSqueueFormat(format)
	}
	for _, b := range bad {
		// Slurm complains and goes on printing the valid fields.
		fmt.Fprintf(env.Stderr, "%s: error: Invalid job format specification: %s\n", env.Prog, b)
	}
	if v, ok := val("sort", "SQUEUE_SORT"); ok {
		sortSpec = v
	}
	keys, err := parseSort(sortSpec)
	if err != nil {
		// squeue 22.05 prints the header before it reads the sort.
		if !has("noheader") {
			if long {
				fmt.Fprintln(env.Stdout, ctimeLine(nowFunc()))
			}
			writeSqueue(env.Stdout, nil, fields, true, nowFunc(), timeFormat(env))
		}
		fmt.Fprintf(env.Stderr, "%s: error: %v\n", env.Prog, err)
		return 1
	}

	var every time.Duration
	if v, ok := p.Last("iterate"); ok {
		n, err := strconv.Atoi(v.Val)
		if err != nil || n <= 0 {
			fmt.Fprintf(env.Stderr, "%s: error: --iterate=%s\n\n", env.Prog, v.Val)
			return 1
		}
		every = time.Duration(n) * time.Second
	}

	cl := dial(env)
	if cl == nil {
		return 1
	}
	ctx = ctxOrBackground(ctx)
	if every > 0 {
		var stop context.CancelFunc
		ctx, stop = interruptible(ctx)
		defer stop()
	}
	for {
		lr, err := cl.JobListing(ctx, q.filter())
		if err != nil {
			fmt.Fprintf(env.Stderr, "slurm_load_jobs error: %s\n", apiErrText(err))
			return 1
		}
		now := nowFunc()
		tfmt := timeFormat(env)
		rows, lines, found, err := selectSqueueParts(lr, q, keys, fields, func() *listing.Ctx { return squeueCtx(now, tfmt) }, now.Unix())
		if err != nil {
			fmt.Fprintf(env.Stderr, "slurm_load_jobs error: %s\n", apiErrText(err))
			return 1
		}
		// A single unknown id is an error; several ids, or a known job that
		// the state filter hides, just print the header (COMPAT.md §3.2).
		if oneID && !found {
			fmt.Fprintln(env.Stderr, "slurm_load_jobs error: Invalid job id specified")
			return 1
		}
		rows.sort(keys)
		header := !has("noheader")
		if header && (long || every > 0 || has("verbose")) {
			fmt.Fprintln(env.Stdout, ctimeLine(now))
		}
		if err := writeSqueueRows(env.Stdout, rows, lines, fields, header); err != nil {
			return 1
		}
		if every == 0 {
			return 0
		}
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(every):
		}
		fmt.Fprintln(env.Stdout)
	}
}

// squeueUsage is squeue 22.05.8's --usage text (also printed after an
// unexpected operand).
const squeueUsage = `Usage: squeue [-A account] [--clusters names] [-i seconds] [--job jobid]
              [-n name] [-o format] [-p partitions] [--qos qos]
              [--reservation reservation] [--sort fields] [--start]
              [--step step_id] [-t states] [-u user_name] [--usage]
              [-L licenses] [-w nodes] [--federation] [--local] [--sibling]
	      [-ahjlrsv]
`

const squeueHelp = `Usage: squeue [OPTIONS]
  -A, --account=account(s)        comma separated list of accounts
                                  to view, default is all accounts
  -a, --all                       display jobs in hidden partitions
  -h, --noheader                  no headers on output
  -i, --iterate=seconds           specify an interation period
  -j, --job=job(s)                comma separated list of jobs IDs
                                  to view, default is all
  -l, --long                      long report
      --me                        equivalent to --user=<my username>
  -n, --name=job_name(s)          comma separated list of job names to view
  -o, --format=format             format specification
  -O, --Format=format             format specification
  -p, --partition=partition(s)    comma separated list of partitions
                                  to view, default is all partitions
  -q, --qos=qos(s)                comma separated list of qos's
                                  to view, default is all qos's
  -R, --reservation=name          reservation to view, default is all
  -s, --step=step(s)              comma separated list of job steps
				  to view, default is all
  -S, --sort=fields               comma separated list of fields to sort on
      --start                     print expected start times of pending jobs
  -t, --states=states             comma separated list of states to view,
                                  default is pending and running,
                                  '--states=all' reports all states
  -u, --user=user_name(s)         comma separated list of users to view
  -v, --verbose                   verbosity level
  -V, --version                   output version information and exit
  -w, --nodelist=hostlist         list of nodes to view, default is
                                  all nodes

Help options:
  --help                          show this help message
  --usage                         display a brief summary of squeue options

hora: steps (-s), clusters (-M) and --json/--yaml are not supported.
`

// arrayTaskText is an array task's id as squeue prints it: "3", or for a
// folded row of pending tasks the folded list with the throttle, bracketed
// in the JOBID column ("[3-15%4]") and bare in ARRAY_TASK_ID ("3-15%4").
func arrayTaskText(j *api.Job, brackets bool) string {
	if j.ArrayPending == nil || (len(j.ArrayPending) == 1 && j.ArrayThrottle == 0) {
		return strconv.FormatInt(j.ArrayTaskID, 10)
	}
	s := sbatch.FormatArrayTasks(j.ArrayPending)
	if j.ArrayThrottle > 0 {
		s += "%" + strconv.Itoa(j.ArrayThrottle)
	}
	if brackets {
		s = "[" + s + "]"
	}
	return s
}
