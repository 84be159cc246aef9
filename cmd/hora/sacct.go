package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"hora/api"
	"hora/cmd/hora/listing"
	"hora/sbatch"
)

var sacctOpts = []sbatch.Opt{
	{Short: 'a', Long: "allusers", Arg: sbatch.NoArg, Key: "allusers"},
	{Short: 'A', Long: "accounts", Arg: sbatch.RequiredArg, Key: "accounts"},
	{Long: "array", Arg: sbatch.NoArg, Key: "array"},
	{Short: 'b', Long: "brief", Arg: sbatch.NoArg, Key: "brief"},
	{Short: 'D', Long: "duplicates", Arg: sbatch.NoArg, Key: "duplicates"},
	{Long: "delimiter", Arg: sbatch.RequiredArg, Key: "delimiter"},
	{Short: 'e', Long: "helpformat", Arg: sbatch.NoArg, Key: "helpformat"},
	{Short: 'E', Long: "endtime", Arg: sbatch.RequiredArg, Key: "endtime"},
	{Short: 'j', Long: "jobs", Arg: sbatch.RequiredArg, Key: "jobs"},
	{Short: 'L', Long: "allclusters", Arg: sbatch.NoArg, Key: "allclusters"},
	{Short: 'l', Long: "long", Arg: sbatch.NoArg, Key: "long"},
	{Short: 'M', Long: "clusters", Arg: sbatch.RequiredArg, Key: "clusters"},
	{Short: 'n', Long: "noheader", Arg: sbatch.NoArg, Key: "noheader"},
	{Long: "name", Arg: sbatch.RequiredArg, Key: "name"},
	{Short: 'o', Long: "format", Arg: sbatch.RequiredArg, Key: "format"},
	{Short: 'p', Long: "parsable", Arg: sbatch.NoArg, Key: "parsable"},
	{Short: 'P', Long: "parsable2", Arg: sbatch.NoArg, Key: "parsable2"},
	{Short: 'r', Long: "partition", Arg: sbatch.RequiredArg, Key: "partition"},
	{Short: 's', Long: "state", Arg: sbatch.RequiredArg, Key: "state"},
	{Short: 'S', Long: "starttime", Arg: sbatch.RequiredArg, Key: "starttime"},
	{Short: 'u', Long: "user", Arg: sbatch.RequiredArg, Key: "user"},
	{Long: "uid", Arg: sbatch.RequiredArg, Key: "user"},
	{Short: 'v', Long: "verbose", Arg: sbatch.NoArg, Key: "verbose"},
	{Short: 'V', Long: "version", Arg: sbatch.NoArg, Key: "version"},
	{Short: 'X', Long: "allocations", Arg: sbatch.NoArg, Key: "allocations"},
	{Long: "help", Arg: sbatch.NoArg, Key: "help"},
	{Long: "usage", Arg: sbatch.NoArg, Key: "usage"},
	{Long: "units", Arg: sbatch.RequiredArg, Key: "units"},
}

const (
	sacctDefaultFields = "jobid,jobname,partition,account,alloccpus,state,exitcode"
	sacctBriefFields   = "jobid,state,exitcode"
	// sacctLongFields is the part of Slurm's -l list that horad can fill.
	sacctLongFields = "jobid,jobidraw,jobname,partition,maxvmsize,maxrss,averss,avecpu,ntasks,alloccpus,elapsed,state,exitcode,reqmem,reqcpus,nnodes,nodelist"
)

// saRow is one sacct line: a job, its batch step, or one of its steps.
type saRow struct {
	job   *api.Job
	kind  byte // 'j' job, 'b' batch step, 's' step
	step  *api.Step
	now   time.Time
	tfmt  string
	idTxt string
	// cluster is horad's cluster_name (Slurm's ClusterName), asked of
	// horad only when a Cluster column is shown.
	cluster string
	// units is --units: the unit (K M G T P) sizes are shown in; 0 = each
	// in its own.
	units byte
}

// saField is a sacct field: canonical name (the header), default width
// (negative = left-justified, COMPAT.md §5.4) and its value.
type saField struct {
	name  string
	width int
	value func(r *saRow) string
}

func (r *saRow) start() int64 {
	if r.kind == 's' {
		return r.step.StartTime
	}
	return r.job.StartTime
}

func (r *saRow) end() int64 {
	if r.kind == 's' {
		return r.step.EndTime
	}
	return r.job.EndTime
}

func (r *saRow) elapsed() int64 {
	s, e := r.start(), r.end()
	if s == 0 {
		return 0
	}
	if e == 0 {
		e = r.now.Unix()
	}
	if r.kind != 's' {
		// The job and its batch step: suspended time is not elapsed time.
		return timeUsed(&api.Job{StartTime: s, EndTime: e, State: r.job.State,
			SuspendTime: r.job.SuspendTime, SuspendedSecs: r.job.SuspendedSecs}, e)
	}
	return max(e-s, 0)
}

func (r *saRow) jobOnly(s string) string {
	if r.kind == 'j' {
		return s
	}
	return ""
}

func (r *saRow) state() string {
	j := r.job
	switch r.kind {
	case 's':
		return string(r.step.State)
	case 'b':
		// The batch step of a job killed for its limit or by scancel was
		// itself cancelled; it carries no "by <uid>".
		if j.State == api.StateTimeout {
			return string(api.StateCancelled)
		}
		return string(j.State)
	}
	if j.State == api.StateCancelled && j.CancelledBy >= 0 {
		return "CANCELLED by " + strconv.FormatInt(j.CancelledBy, 10)
	}
	return string(j.State)
}

func (r *saRow) exitCode() string {
	if r.kind == 's' {
		return strconv.Itoa(r.step.ExitCode) + ":" + strconv.Itoa(r.step.Signal)
	}
	return strconv.Itoa(r.job.ExitCode) + ":" + strconv.Itoa(r.job.Signal)
}

// sacctUnit reads --units as Slurm's get_unit_type: the first character,
// one of K M G T P in either case.
func sacctUnit(v string) (byte, bool) {
	if v == "" {
		return 0, false
	}
	u := v[0] &^ 0x20 // upper case
	return u, strings.IndexByte("KMGTP", u) >= 0
}

// inUnit shows a size given in unit from in unit to, as Slurm's
// convert_num_unit with a unit asked for: whole numbers without decimals,
// others with two.
func inUnit(v float64, from, to byte) string {
	const order = "KMGTP"
	for d := strings.IndexByte(order, to) - strings.IndexByte(order, from); d != 0; {
		if d > 0 {
			v, d = v/1024, d-1
		} else {
			v, d = v*1024, d+1
		}
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d%c", int64(v), to)
	}
	return fmt.Sprintf("%.2f%c", v, to)
}

// derivedExitCode is Slurm's DerivedExitCode: the highest exit code of the
// job's steps, the batch step not counted, so 0:0 for a batch job without
// steps (measured on 22.05.8: a job that exits 3 shows 3:0 and 0:0).
func (r *saRow) derivedExitCode() string {
	code, sig := 0, 0
	for _, st := range r.job.Steps {
		if st.ExitCode > code || st.ExitCode == code && st.Signal > sig {
			code, sig = st.ExitCode, st.Signal
		}
	}
	return strconv.Itoa(code) + ":" + strconv.Itoa(sig)
}

func (r *saRow) nodeList() string {
	if r.kind == 's' {
		return orDefault(r.step.Node, "None assigned")
	}
	if len(r.job.Nodes) == 0 {
		return "None assigned"
	}
	if r.kind == 'b' {
		return r.job.Nodes[0]
	}
	return hostlist(r.job.Nodes)
}

func (r *saRow) nodes() int {
	if r.kind == 's' && r.step.NTasks > 0 {
		if hosts, err := sbatch.ExpandHostlist(r.step.Node); err == nil && len(hosts) > 0 {
			return len(hosts) // an srun step on several nodes
		}
	}
	if r.kind != 'j' {
		return 1
	}
	return jobNodeCount(r.job)
}

func (r *saRow) cpus() int {
	switch r.kind {
	case 's':
		if r.step.CPUs > 0 {
			return r.step.CPUs // an srun step: the CPUs it held
		}
		return max(r.job.Spec.CPUsPerTask, 1)
	case 'b':
		return max(jobCPUs(r.job)/r.nodes(), 1)
	}
	return jobCPUs(r.job)
}

func (r *saRow) ts(u int64) string { return fmtTime(u, r.tfmt, r.now) }

// rawTxt is JobIDRaw: the job's own id (an array task's too) and the step.
func (r *saRow) rawTxt() string {
	if r.job.ArrayJobID == 0 {
		return r.idTxt
	}
	raw := strconv.FormatInt(r.job.ID, 10)
	if _, step, ok := strings.Cut(r.idTxt, "."); ok {
		raw += "." + step
	}
	return raw
}

// sacctFields lists the supported fields in the order abbreviations are
// resolved (an abbreviation picks the first name it prefixes).
var sacctFields = []saField{
	{"JobID", -12, func(r *saRow) string { return r.idTxt }},
	{"JobIDRaw", -12, func(r *saRow) string { return r.rawTxt() }},
	{"JobName", 10, func(r *saRow) string {
		if r.kind == 'b' {
			return "batch"
		}
		if r.kind == 's' && r.step.Name != "" {
			return r.step.Name // an srun step: its command
		}
		return r.job.Spec.Name
	}},
	{"Partition", 10, func(r *saRow) string { return r.jobOnly(r.job.Spec.Partition) }},
	{"Account", 10, func(r *saRow) string { return r.job.Spec.Account }},
	{"AllocCPUS", 10, func(r *saRow) string { return strconv.Itoa(r.cpus()) }},
	{"AllocNodes", 10, func(r *saRow) string { return strconv.Itoa(r.nodes()) }},
	{"AllocTRES", 10, func(r *saRow) string { return allocTRES(r.job) }},
	{"RTFrame", 10, func(r *saRow) string { return r.jobOnly(rtFrameText(&r.job.Spec)) }},
	{"RTMisses", 8, func(r *saRow) string { return r.jobOnly(rtMissesText(&r.job.Spec)) }},
	{"State", 10, (*saRow).state},
	{"ExitCode", 8, (*saRow).exitCode},
	{"DerivedExitCode", 15, func(r *saRow) string { return r.jobOnly(r.derivedExitCode()) }},
	{"Elapsed", 10, func(r *saRow) string { return sbatch.FormatLongDuration(r.elapsed()) }},
	{"ElapsedRaw", 10, func(r *saRow) string { return strconv.FormatInt(r.elapsed(), 10) }},
	{"CPUTime", 10, func(r *saRow) string { return sbatch.FormatLongDuration(r.elapsed() * int64(r.cpus())) }},
	{"CPUTimeRAW", 10, func(r *saRow) string { return strconv.FormatInt(r.elapsed()*int64(r.cpus()), 10) }},
	{"Start", 19, func(r *saRow) string { return r.ts(r.start()) }},
	{"End", 19, func(r *saRow) string { return r.ts(r.end()) }},
	{"Submit", 19, func(r *saRow) string {
		if r.kind == 'j' {
			return r.ts(r.job.SubmitTime)
		}
		return r.ts(r.start())
	}},
	{"Eligible", 19, func(r *saRow) string {
		if r.kind != 'j' {
			return "Unknown"
		}
		return r.ts(orInt(r.job.EligibleTime, r.job.SubmitTime))
	}},
	{"NodeList", 15, (*saRow).nodeList},
	{"NNodes", 8, func(r *saRow) string { return strconv.Itoa(r.nodes()) }},
	{"NCPUS", 10, func(r *saRow) string { return strconv.Itoa(r.cpus()) }},
	{"NTasks", 8, func(r *saRow) string {
		if r.kind == 'j' {
			return ""
		}
		if r.kind == 's' && r.step.NTasks > 0 {
			return strconv.Itoa(r.step.NTasks)
		}
		return "1"
	}},
	{"ReqCPUS", 8, func(r *saRow) string { return strconv.Itoa(jobCPUs(r.job)) }},
	{"ReqTRES", 10, func(r *saRow) string { return reqTRES(r.job) }},
	{"ReqMem", 10, func(r *saRow) string {
		v := reqMem(r.job, "0")
		if n, err := strconv.ParseInt(strings.TrimSuffix(v, "M"), 10, 64); r.units != 0 && err == nil && n > 0 {
			return inUnit(float64(n), 'M', r.units)
		}
		return v
	}},
	{"ReqNodes", 8, func(r *saRow) string { return strconv.Itoa(max(r.job.Spec.Nodes, 1)) }},
	{"Timelimit", 10, func(r *saRow) string { return r.jobOnly(timeLimitText(r.job.Spec.TimeLimit, true)) }},
	{"TimelimitRaw", 10, func(r *saRow) string {
		switch lim := r.job.Spec.TimeLimit; {
		case r.kind != 'j':
			return ""
		case lim == api.NoLimit:
			return "UNLIMITED"
		case lim == 0:
			return "Partition_Limit"
		default:
			return strconv.FormatInt((lim+59)/60, 10)
		}
	}},
	{"User", 9, func(r *saRow) string { return r.jobOnly(r.job.User) }},
	{"UID", 6, func(r *saRow) string { return r.jobOnly(strconv.FormatUint(uint64(r.job.UID), 10)) }},
	{"Group", 9, func(r *saRow) string { return r.jobOnly(r.job.Group) }},
	{"GID", 6, func(r *saRow) string { return r.jobOnly(strconv.FormatUint(uint64(r.job.GID), 10)) }},
	{"WorkDir", 20, func(r *saRow) string { return r.jobOnly(r.job.Spec.WorkDir) }},
	{"Reservation", 20, func(r *saRow) string { return r.jobOnly(r.job.Spec.Reservation) }},
	{"QOS", 10, func(r *saRow) string { return r.jobOnly(r.job.Spec.QOS) }},
	{"Priority", 10, func(r *saRow) string { return r.jobOnly(strconv.FormatInt(r.job.Priority, 10)) }},
	{"Comment", 15, func(r *saRow) string { return r.jobOnly(r.job.Spec.Comment) }},
	{"Reason", 20, func(r *saRow) string { return r.jobOnly(reasonText(r.job)) }},
	{"Restarts", 8, func(r *saRow) string { return r.jobOnly(strconv.Itoa(r.job.Restarts)) }},
	{"Cluster", 10, func(r *saRow) string { return orDefault(r.cluster, "hora") }},
	// Usage: the batch step's peak RSS (on its .batch row, as Slurm's
	// step accounting) and CPU time (job and .batch rows), measured by
	// local nodes; empty where nothing was measured, as Slurm prints rows
	// without accounting data.
	{"MaxRSS", 10, func(r *saRow) string {
		if r.kind != 'b' || r.job.MaxRSSKB <= 0 {
			return ""
		}
		if r.units != 0 {
			return inUnit(float64(r.job.MaxRSSKB), 'K', r.units)
		}
		return strconv.FormatInt(r.job.MaxRSSKB, 10) + "K"
	}},
	{"MaxVMSize", 10, func(r *saRow) string { return "" }},
	{"AveRSS", 10, func(r *saRow) string { return "" }},
	{"AveCPU", 10, func(r *saRow) string { return "" }},
	{"TotalCPU", 10, func(r *saRow) string {
		if r.kind == 's' || r.job.EndTime == 0 || r.job.TotalCPUMs == 0 {
			return ""
		}
		return cpuTimeText(r.job.TotalCPUMs)
	}},
}

func orInt(a, b int64) int64 {
	if a != 0 {
		return a
	}
	return b
}

// saCol is a requested field with its effective width.
type saCol struct {
	f     *saField
	width int
}

// parseSacctFormat resolves "-o name[%W],..." (names case-insensitive and
// abbreviable). It returns the offending name on error.
func parseSacctFormat(s string) ([]saCol, string) {
	var cols []saCol
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, w, hasW := strings.Cut(item, "%")
		f := findSacctField(name)
		if f == nil {
			return nil, name
		}
		c := saCol{f: f, width: f.width}
		if hasW {
			n, err := strconv.Atoi(w)
			if err != nil {
				return nil, item
			}
			c.width = n
		}
		cols = append(cols, c)
	}
	return cols, ""
}

func findSacctField(name string) *saField {
	if name == "" {
		return nil
	}
	for i := range sacctFields {
		if strings.EqualFold(sacctFields[i].name, name) {
			return &sacctFields[i]
		}
	}
	for i := range sacctFields {
		if len(name) <= len(sacctFields[i].name) && strings.EqualFold(sacctFields[i].name[:len(name)], name) {
			return &sacctFields[i]
		}
	}
	return nil
}

// sacctOut says how rows are laid out.
type sacctOut struct {
	cols      []saCol
	header    bool
	parsable  bool   // -p or -P
	trailing  bool   // -p: delimiter after the last field too
	delimiter string // default "|"
}

// sacctRows expands jobs to their rows: the job, then unless -X its batch
// step (once started) and its steps (chunks of divisible jobs).
func sacctRows(jobs []api.Job, allocations bool, now time.Time, tfmt string) []saRow {
	var rows []saRow
	for i := range jobs {
		j := &jobs[i]
		id := strconv.FormatInt(j.ID, 10)
		if j.ArrayJobID != 0 {
			id = strconv.FormatInt(j.ArrayJobID, 10) + "_" + strconv.FormatInt(j.ArrayTaskID, 10)
		}
		rows = append(rows, saRow{job: j, kind: 'j', now: now, tfmt: tfmt, idTxt: id})
		if allocations {
			continue
		}
		// A divisible job has no batch step: its work runs as chunks,
		// which are its steps (JOBID.0, JOBID.1, ...).
		// An allocation (salloc, srun) runs no batch script either.
		if j.StartTime != 0 && j.Spec.Load == 0 && !j.Spec.Alloc {
			rows = append(rows, saRow{job: j, kind: 'b', now: now, tfmt: tfmt, idTxt: id + ".batch"})
		}
		for k := range j.Steps {
			st := &j.Steps[k]
			rows = append(rows, saRow{job: j, kind: 's', step: st, now: now, tfmt: tfmt,
				idTxt: id + "." + strconv.Itoa(st.Index)})
		}
	}
	return rows
}

// writeSacct prints the rows. Fixed-width mode follows print_fields.c: each
// field padded to its width and followed by a space, a dashes line under the
// header, and values too long cut with a trailing '+' (COMPAT.md §5.4).
func writeSacct(w io.Writer, o *sacctOut, rows []saRow) error {
	bw := bufio.NewWriter(w)
	var line []byte
	emit := func(val func(c saCol) string) {
		line = line[:0]
		for i, c := range o.cols {
			v := val(c)
			if o.parsable {
				line = append(line, v...)
				if o.trailing || i < len(o.cols)-1 {
					line = append(line, o.delimiter...)
				}
				continue
			}
			wd, right := c.width, c.width > 0
			if wd < 0 {
				wd = -wd
			}
			// A value too long is cut with a '+' in its last column.
			line = listing.AppendCol(line, v, listing.Column{Width: wd, Right: right, Trunc: true, Mark: '+'})
			line = append(line, ' ')
		}
		line = append(line, '\n')
		bw.Write(line)
	}
	if o.header {
		emit(func(c saCol) string { return c.f.name })
		if !o.parsable {
			emit(func(c saCol) string { return strings.Repeat("-", max(c.width, -c.width)) })
		}
	}
	for i := range rows {
		r := &rows[i]
		emit(func(c saCol) string { return c.f.value(r) })
	}
	return bw.Flush()
}

// sacctWindow is the time window of COMPAT.md §5.4: with -j from the epoch,
// with -s (and no -j) from now, otherwise from today's midnight; to now.
func sacctWindow(startArg, endArg string, haveJobs, haveStates bool, now time.Time) (int64, int64, error) {
	var start, end int64
	switch {
	case startArg != "":
		t, err := sbatch.ParseSlurmTime(startArg, now)
		if err != nil {
			return 0, 0, fmt.Errorf("Invalid time specification (pos=0): %s", startArg)
		}
		start = t.Unix()
	case haveJobs:
		start = 0
	case haveStates:
		start = now.Unix()
	default:
		y, m, d := now.Date()
		start = time.Date(y, m, d, 0, 0, 0, 0, now.Location()).Unix()
	}
	end = now.Unix()
	if endArg != "" {
		t, err := sbatch.ParseSlurmTime(endArg, now)
		if err != nil {
			return 0, 0, fmt.Errorf("Invalid time specification (pos=0): %s", endArg)
		}
		end = t.Unix()
	}
	return start, end, nil
}

// inWindow keeps jobs that existed during [start, end]; with a state list
// a finished job must also have ended inside the window, as in Slurm.
func inWindow(j *api.Job, start, end int64, states map[api.JobState]bool) bool {
	if j.SubmitTime > end {
		return false
	}
	if j.EndTime != 0 && j.EndTime < start {
		return false
	}
	if states != nil {
		if !states[j.State] {
			return false
		}
		if j.State.Finished() && (j.EndTime < start || j.EndTime > end) {
			return false
		}
	}
	return true
}

// sacctMain reports jobs from horad's accounting (COMPAT.md §5.4).
func sacctMain(ctx context.Context, env *Env, args []string) int {
	p, err := sbatch.Getopt(sacctOpts, args, false)
	if err != nil {
		// sacct 22.05.8 prints glibc's complaint without the --help hint.
		var ue *sbatch.UsageError
		if errors.As(err, &ue) {
			fmt.Fprintf(env.Stderr, "%s: %s\n", env.Prog, ue.Msg)
			return 1
		}
		return usageError(env, err)
	}
	has := func(k string) bool { _, ok := p.Last(k); return ok }
	last := func(k string) string { v, _ := p.Last(k); return v.Val }
	switch {
	case has("help"):
		fmt.Fprint(env.Stdout, sacctHelp)
		return 0
	case has("usage"):
		// --usage is the first two lines of --help (22.05.8).
		lines := strings.SplitAfterN(sacctHelp, "\n", 3)
		fmt.Fprint(env.Stdout, lines[0]+lines[1])
		return 0
	case has("version"):
		return printVersion(env)
	case has("helpformat"):
		return sacctHelpFormat(env)
	}
	if len(p.Args) > 0 {
		fmt.Fprintf(env.Stderr, "%s: error: Unknown arguments: %s\n", env.Prog, strings.Join(p.Args, " "))
		return 1
	}

	format := sacctDefaultFields
	switch {
	case has("format"):
		format = last("format")
	case has("brief"):
		format = sacctBriefFields
	case has("long"):
		format = sacctLongFields
	case env.Getenv("SACCT_FORMAT") != "":
		format = env.Getenv("SACCT_FORMAT")
	}
	cols, bad := parseSacctFormat(format)
	if bad != "" {
		fmt.Fprintf(env.Stderr, "%s: error: Invalid field requested: \"%s\"\n", env.Prog, bad)
		return 1
	}
	out := &sacctOut{cols: cols, header: !has("noheader"), delimiter: "|"}
	if has("parsable") || has("parsable2") {
		out.parsable = true
		// The last of -p / -P given decides the trailing delimiter.
		for _, v := range p.Values {
			switch v.Key {
			case "parsable":
				out.trailing = true
			case "parsable2":
				out.trailing = false
			}
		}
	}
	if has("delimiter") {
		out.delimiter = last("delimiter")
	}

	var ids []int64
	// steps records "-j 12.batch"-style selections: those jobs show only the
	// named steps, unless the bare id was asked for as well.
	steps := map[int64][]string{}
	whole := map[int64]bool{}
	for _, a := range p.All("jobs") {
		for _, s := range splitList(a) {
			id, ok := parseJobID(s)
			if !ok {
				fmt.Fprintf(env.Stderr, "%s: fatal: Bad job/step specified: %s\n", env.Prog, s)
				return 1
			}
			ids = append(ids, id)
			if _, step, ok := strings.Cut(s, "."); ok {
				steps[id] = append(steps[id], strconv.FormatInt(id, 10)+"."+step)
			} else {
				whole[id] = true
			}
		}
	}
	var states map[api.JobState]bool
	if has("state") {
		states = map[api.JobState]bool{}
		for _, s := range splitList(last("state")) {
			st, ok := parseJobState(s)
			if !ok {
				fmt.Fprintf(env.Stderr, "%s: fatal: unrecognized job state value '%s'\n", env.Prog, s)
				return 1
			}
			states[st] = true
		}
	}
	var users []string
	switch {
	case has("user"):
		for _, u := range splitList(last("user")) {
			name, ok := lookupUser(u)
			if !ok {
				fmt.Fprintf(env.Stderr, "%s: error: Invalid user id: %s\n", env.Prog, u)
				return 1
			}
			users = append(users, name)
		}
	case has("allusers"), len(ids) > 0, currentUID() == "0":
	default:
		// Non-root users see their own jobs unless -a (COMPAT.md §5.4).
		users = []string{currentUID()}
	}
	now := nowFunc()
	start, end, err := sacctWindow(last("starttime"), last("endtime"), len(ids) > 0, states != nil, now)
	if err != nil {
		// sacct 22.05.8 prints the time error bare.
		fmt.Fprintln(env.Stderr, err)
		return 1
	}
	var names, parts, accounts []string
	if has("name") {
		names = splitList(last("name"))
	}
	if has("partition") {
		parts = splitList(last("partition"))
	}
	if has("accounts") {
		accounts = splitList(last("accounts"))
	}

	cl := dial(env)
	if cl == nil {
		return 1
	}
	jobs, err := cl.Jobs(ctxOrBackground(ctx), api.JobFilter{IDs: ids, Users: users, Names: names,
		Partitions: parts, All: true, History: true, Since: start})
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: error: %s\n", env.Prog, apiErrText(err))
		return 1
	}
	kept := jobs[:0]
	for i := range jobs {
		j := &jobs[i]
		if !inWindow(j, start, end, states) ||
			(len(ids) > 0 && !slices.Contains(ids, j.ID) && (j.ArrayJobID == 0 || !slices.Contains(ids, j.ArrayJobID))) ||
			(len(names) > 0 && !slices.Contains(names, j.Spec.Name)) ||
			(len(parts) > 0 && !slices.Contains(parts, j.Spec.Partition)) ||
			(len(accounts) > 0 && !slices.Contains(accounts, j.Spec.Account)) ||
			(len(users) > 0 && !slices.Contains(users, j.User) && !slices.Contains(users, strconv.FormatUint(uint64(j.UID), 10))) {
			continue
		}
		kept = append(kept, *j)
	}
	slices.SortStableFunc(kept, func(a, b api.Job) int { return cmp.Compare(a.ID, b.ID) })
	rows := sacctRows(kept, has("allocations") && len(steps) == 0, now, timeFormat(env))
	if has("units") {
		u, ok := sacctUnit(last("units"))
		if !ok {
			// sacct 22.05.8: fatal("Invalid unit type").
			fmt.Fprintf(env.Stderr, "%s: fatal: Invalid unit type\n", env.Prog)
			return 1
		}
		for i := range rows {
			rows[i].units = u
		}
	}
	if slices.ContainsFunc(out.cols, func(c saCol) bool { return c.f.name == "Cluster" }) {
		if pr, err := cl.Ping(ctxOrBackground(ctx)); err == nil {
			for i := range rows {
				rows[i].cluster = pr.ClusterName
			}
		}
	}
	if len(steps) > 0 {
		rows = slices.DeleteFunc(rows, func(r saRow) bool {
			if whole[r.job.ID] {
				return r.kind != 'j' && has("allocations")
			}
			return !slices.Contains(steps[r.job.ID], r.idTxt)
		})
	}
	if err := writeSacct(env.Stdout, out, rows); err != nil {
		return 1
	}
	return 0
}

func sacctHelpFormat(env *Env) int {
	var b strings.Builder
	for i, f := range sacctFields {
		fmt.Fprintf(&b, "%-20s", f.name)
		if i%4 == 3 || i == len(sacctFields)-1 {
			b.WriteString("\n")
		}
	}
	fmt.Fprint(env.Stdout, b.String())
	return 0
}

const sacctHelp = `Usage: sacct [options]
	Use --help for help
Options:
     -a, --allusers:
	           Display jobs for all users. By default, only the
                   current user's jobs are displayed.
     -A, --accounts:
	           Use this comma separated list of accounts to select jobs
                   to display.
     -b, --brief:
	           Equivalent to '--format=jobstep,state,error'.
     --delimiter:
	           ASCII characters used to separate the fields when
	           specifying the  -p  or  -P options. The default delimiter
	           is a '|'. This options is ignored if -p or -P options
	           are not specified.
     -E, --endtime:
                   Select jobs eligible before this time.
     -e, --helpformat:
	           Print a list of fields that can be specified with the
	           '--format' option
     -j, --jobs:
	           Format is <job(.step)>. Display information about this
                   job or comma-separated list of jobs. The default is all
                   jobs. Adding .step will display the specific job step of
                   that job. (A step id of 'batch' will display the
                   information about the batch step.)
     -l, --long:
	           Equivalent to specifying long format fields.
     --name:
	           Display jobs that have any of these name(s).
     -n, --noheader:
	           No header will be added to the beginning of output.
                   The default is to print a header.
     -o, --format:
	           Comma separated list of fields. (use "--helpformat"
                   for a list of available fields).
     -p, --parsable: output will be '|' delimited with a '|' at the end
     -P, --parsable2: output will be '|' delimited without a '|' at the end
     -r, --partition:
	           Comma separated list of partitions to select jobs and
                   job steps from. The default is all partitions.
     -s, --state:
	           Select jobs based on their current state or the state
                   they were in during the time period given.
     -S, --starttime:
                   Select jobs eligible after this time.  Default is
                   00:00:00 of the current day, unless the '-s' or '-j'
                   options are specified.
     -u, --user:
	           Use this comma separated list of user names to select
                   jobs to display.
     --units=[KMGTP]:
                   Display values in specified unit type.
     -V, --version: Print version.
     -X, --allocations:
	           Only show statistics relevant to the job allocation
	           itself, not taking steps into consideration.
`

// cpuTimeText is sacct's TotalCPU (Slurm's _elapsed_time with
// milliseconds): MM:SS.mmm under an hour, HH:MM:SS, D-HH:MM:SS.
func cpuTimeText(ms int64) string {
	secs := ms / 1000
	d, h, m, sec := secs/86400, secs/3600%24, secs/60%60, secs%60
	switch {
	case d > 0:
		return fmt.Sprintf("%d-%02d:%02d:%02d", d, h, m, sec)
	case h > 0:
		return fmt.Sprintf("%02d:%02d:%02d", h, m, sec)
	}
	return fmt.Sprintf("%02d:%02d.%03d", m, sec, ms%1000)
}
