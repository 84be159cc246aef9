package main

// Helpers shared by the query commands (squeue, sinfo, scontrol, sacct,
// scancel): column layout, time stamps, error printing, id and user parsing.
// Everything here is free of I/O so that the golden tests can drive the
// formatters with fixed jobs and a fixed clock.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"hora/api"
	"hora/sbatch"
)

// nowFunc is the clock of the query commands; tests replace it so that
// elapsed times and "relative" time stamps are reproducible.
var nowFunc = time.Now

// dialFunc finds horad; tests may replace it, but they normally point
// HORA_SOCKET at a fake daemon so the real client code runs.
var dialFunc = func() (*api.Client, error) { return api.Dial() }

// dial connects to horad or prints Dial's error (it names every socket path
// tried) behind the Slurm-style "<prog>: error: " prefix.
func dial(env *Env) *api.Client {
	cl, err := dialFunc()
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: error: %v\n", env.Prog, err)
		return nil
	}
	return cl
}

// apiErrText returns the Slurm strerror text of a daemon answer, so that
// messages read exactly as Slurm's ("Invalid job id specified").
func apiErrText(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Message
	}
	return err.Error()
}

// usageError prints a getopt complaint the way every Slurm client does:
// "<prog>: <glibc text>" then the --help hint; Slurm's query commands exit 1.
func usageError(env *Env, err error) int {
	var ue *sbatch.UsageError
	if errors.As(err, &ue) {
		fmt.Fprintf(env.Stderr, "%s: %s\n", env.Prog, ue.Msg)
	} else {
		fmt.Fprintf(env.Stderr, "%s: error: %v\n", env.Prog, err)
	}
	fmt.Fprintf(env.Stderr, "Try \"%s --help\" for more information\n", env.Prog)
	return 1
}

// printVersion answers --version/-V for every command. We print hora's own
// version rather than pretending to be "slurm 22.05.8": the line still
// contains "slurm 22.05" for the tools that grep a Slurm version out of it,
// while an administrator can tell which program really answered. The text
// comes from versionLine (sbatch.go) so all commands of the binary agree.
func printVersion(env *Env) int {
	fmt.Fprintln(env.Stdout, versionLine())
	return 0
}

// timeFormat is $SLURM_TIME_FORMAT, which every Slurm client honours for
// printed time stamps (COMPAT.md §1.5).
func timeFormat(env *Env) string { return env.Getenv("SLURM_TIME_FORMAT") }

// fmtTime prints a time stamp; 0 prints "Unknown" (sbatch.FormatTimestamp).
func fmtTime(unix int64, format string, now time.Time) string {
	return sbatch.FormatTimestamp(unix, format, now)
}

// ctimeLine is the date line that -l (squeue, sinfo) prints before the
// header, in ctime(3) style.
func ctimeLine(now time.Time) string { return now.Format("Mon Jan _2 15:04:05 2006") }

// hostlist compresses a node list the Slurm way ("n[1-3]").
func hostlist(nodes []string) string {
	if len(nodes) == 0 {
		return ""
	}
	if len(nodes) == 1 {
		return nodes[0]
	}
	return sbatch.CompressHostlist(nodes)
}

// jobNodeCount is squeue's %D: allocated nodes, or the requested minimum
// while the job has none.
func jobNodeCount(j *api.Job) int {
	if len(j.Nodes) > 0 {
		return len(j.Nodes)
	}
	return max(j.Spec.Nodes, 1)
}

// jobCPUs is the CPU count of a job: tasks times CPUs per task, with Slurm's
// defaults of one task per node and one CPU per task.
// TODO(api): use an allocated-CPU count from api.Job once horad reports it.
func jobCPUs(j *api.Job) int {
	if len(j.Alloc) > 0 {
		n := 0
		for _, a := range j.Alloc {
			n += len(a.CPUs)
		}
		return n
	}
	tasks := j.Spec.NTasks
	if tasks <= 0 {
		tasks = jobNodeCount(j)
	}
	return tasks * max(j.Spec.CPUsPerTask, 1)
}

// timeUsed is the run time so far (or in total once ended).
func timeUsed(j *api.Job, now int64) int64 {
	if j.StartTime == 0 {
		return 0
	}
	end := j.EndTime
	if end == 0 {
		end = now
	}
	// Suspended time is not run time (Slurm's squeue TIME stops while a
	// job is suspended).
	if j.State == api.StateSuspended && j.SuspendTime > 0 {
		end = min(end, j.SuspendTime)
	}
	return max(end-j.StartTime-j.SuspendedSecs, 0)
}

// endTime is the end to show: the real one once ended, the expected one
// (start + limit) while running, 0 when unknown.
func endTime(j *api.Job) int64 {
	if j.EndTime != 0 {
		return j.EndTime
	}
	if j.StartTime != 0 && j.Spec.TimeLimit > 0 {
		// The limit moves by the time spent suspended.
		return j.StartTime + j.Spec.TimeLimit + j.SuspendedSecs
	}
	return 0
}

// parseJobID reads one job id as Slurm clients accept it: "123",
// "123_4" / "123_[1-3]" (array forms) and "123.batch" / "123.0" (steps).
// horad has no arrays or addressable steps yet, so only the base id
// is used to select the job; the rest is kept for messages.
func parseJobID(s string) (int64, bool) {
	base := s
	if i := strings.IndexAny(base, "_."); i >= 0 {
		base = base[:i]
	}
	id, err := strconv.ParseInt(base, 10, 64)
	if err != nil || id <= 0 {
		return 0, false
	}
	return id, true
}

// jobRef is a job id as a user gives it: a plain id (an array's id names
// all its tasks), or tasks of an array ("7_3", "7_[1-3,5]"), with any
// ".step" suffix ignored.
type jobRef struct {
	id      int64
	tasks   []int64 // nil: the whole job or array
	spelled string
}

// parseJobRef reads one id; ok is false for anything Slurm would call an
// invalid job id ("7_[1-", "abc").
func parseJobRef(s string) (jobRef, bool) {
	r := jobRef{spelled: s}
	base := s
	if i := strings.IndexByte(base, '.'); i >= 0 && !strings.Contains(base[:i], "[") {
		base = base[:i]
	}
	head, tail, isTask := strings.Cut(base, "_")
	id, err := strconv.ParseInt(head, 10, 64)
	if err != nil || id <= 0 {
		return r, false
	}
	r.id = id
	if isTask {
		tasks, ok := sbatch.ParseTaskSelector(tail)
		if !ok {
			return r, false
		}
		r.tasks = tasks
	}
	return r, true
}

// splitJobIDs splits a comma list of job ids, keeping "7_[1,3]" whole.
func splitJobIDs(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			switch s[i] {
			case '[':
				depth++
				continue
			case ']':
				depth--
				continue
			case ',':
				if depth > 0 {
					continue
				}
			default:
				continue
			}
		}
		if p := strings.TrimSpace(s[start:i]); p != "" {
			out = append(out, p)
		}
		start = i + 1
	}
	return out
}

// controlRequest collects job references into the ids and task selectors
// of a request.
func controlRequest(refs []jobRef) api.ControlRequest {
	var req api.ControlRequest
	for _, r := range refs {
		if r.tasks == nil {
			req.IDs = append(req.IDs, r.id)
		} else {
			req.Tasks = append(req.Tasks, api.TaskSel{Array: r.id, Tasks: r.tasks})
		}
	}
	return req
}

// splitList splits a comma list, dropping empty elements ("a,,b").
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// lookupUser validates a -u value: a known user name or a numeric uid.
// It returns the form horad's filter takes (the name or the uid digits).
var lookupUser = func(u string) (string, bool) {
	if _, err := strconv.ParseUint(u, 10, 32); err == nil {
		return u, true
	}
	if _, err := user.Lookup(u); err == nil {
		return u, true
	}
	return "", false
}

// currentUID is the uid --me selects; tests replace it.
var currentUID = func() string { return strconv.Itoa(os.Getuid()) }

// ctxOrBackground keeps a nil context from tests harmless.
func ctxOrBackground(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}

// timeLimitText is a job's limit for squeue: UNLIMITED, or NOT_SET when the
// job took the partition default and horad did not resolve it.
func timeLimitText(secs int64, long bool) string {
	if secs == 0 {
		if long {
			return "Partition_Limit"
		}
		return "NOT_SET"
	}
	return sbatch.FormatTimeLimit(secs, long)
}

// orNull prints Slurm's "(null)" for unset strings (scontrol, squeue).
func orNull(s string) string {
	if s == "" {
		return "(null)"
	}
	return s
}

// reqMem is the memory a job asked for as squeue %m and sacct ReqMem show
// it: per node, or per CPU/GPU when asked so; none (or all of the node)
// is none, which squeue prints 0M and sacct 0.
func reqMem(j *api.Job, none string) string {
	switch {
	case j.Spec.MemPerCPU > 0:
		return strconv.FormatInt(j.Spec.MemPerCPU, 10) + "M"
	case j.Spec.MemPerGPU > 0:
		return strconv.FormatInt(j.Spec.MemPerGPU, 10) + "M"
	case j.Spec.MemMB > 0:
		return strconv.FormatInt(j.Spec.MemMB, 10) + "M"
	}
	return none
}

// tresPerNode is squeue %b: the generic resources asked per node
// ("gres:gpu:2"), or N/A.
func tresPerNode(j *api.Job) string {
	var parts []string
	if j.Spec.Gres != "" {
		for _, g := range strings.Split(j.Spec.Gres, ",") {
			parts = append(parts, "gres:"+g)
		}
	}
	if j.Spec.GPUsPerNode != "" {
		parts = append(parts, "gres:gpu:"+j.Spec.GPUsPerNode)
	}
	if len(parts) == 0 {
		return "N/A"
	}
	return strings.Join(parts, ",")
}

// allocTRES is sacct's AllocTRES of a started job: billing, cpu, mem,
// node and gres, in Slurm's order; "" before it starts.
func allocTRES(j *api.Job) string {
	if j.StartTime == 0 {
		return ""
	}
	cpus := jobCPUs(j)
	s := fmt.Sprintf("billing=%d,cpu=%d", cpus, cpus)
	var mem int64
	gpus := 0
	for _, a := range j.Alloc {
		mem += a.MemMB
		gpus += len(a.GPUs)
	}
	if mem > 0 {
		s += ",mem=" + strconv.FormatInt(mem, 10) + "M"
	}
	s += fmt.Sprintf(",node=%d", jobNodeCount(j))
	if gpus > 0 {
		s += fmt.Sprintf(",gres/gpu=%d", gpus)
	}
	return s
}

// reqTRES is sacct's ReqTRES: what the job asked for in all, in Slurm's
// order (billing, cpu, mem, node).
func reqTRES(j *api.Job) string {
	nodes := max(j.Spec.Nodes, 1)
	cpus := max(j.Spec.NTasks, nodes) * max(j.Spec.CPUsPerTask, 1)
	s := fmt.Sprintf("billing=%d,cpu=%d", cpus, cpus)
	switch {
	case j.Spec.MemMB > 0:
		s += ",mem=" + strconv.FormatInt(j.Spec.MemMB*int64(nodes), 10) + "M"
	case j.Spec.MemPerCPU > 0:
		s += ",mem=" + strconv.FormatInt(j.Spec.MemPerCPU*int64(cpus), 10) + "M"
	}
	return s + fmt.Sprintf(",node=%d", nodes)
}
