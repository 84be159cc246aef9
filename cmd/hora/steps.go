package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"hora/api"
	"hora/sbatch"
)

// Job steps as squeue -s and scontrol show step list them: the running
// steps of running jobs, the batch step first (squeue.c, job_step_info.c).

// stepRow is one running step: an srun step, a chunk, or a batch step.
type stepRow struct {
	job   *api.Job
	step  *api.Step // nil for the batch step
	idTxt string
}

func (r stepRow) start() int64 {
	if r.step != nil {
		return r.step.StartTime
	}
	return r.job.StartTime
}

func (r stepRow) nodes() string {
	if r.step != nil {
		return r.step.Node
	}
	if len(r.job.Nodes) > 0 {
		return r.job.Nodes[0]
	}
	return ""
}

func (r stepRow) name() string {
	switch {
	case r.step == nil:
		return "batch"
	case r.step.Name != "":
		return r.step.Name
	}
	return r.job.Spec.Name
}

func (r stepRow) cpus() int {
	if r.step != nil && r.step.CPUs > 0 {
		return r.step.CPUs
	}
	return max(r.tasks()*max(r.job.Spec.CPUsPerTask, 1), 1)
}

func (r stepRow) tasks() int {
	if r.step != nil && r.step.NTasks > 0 {
		return r.step.NTasks
	}
	return 1
}

// runningSteps lists the running steps of jobs, selected by want (job or
// job.step ids as spelled; empty = all).
func runningSteps(jobs []api.Job, want []string) []stepRow {
	var rows []stepRow
	match := func(id string) bool {
		if len(want) == 0 {
			return true
		}
		for _, w := range want {
			if w == id || (!strings.Contains(w, ".") && strings.HasPrefix(id, w+".")) {
				return true
			}
		}
		return false
	}
	for i := range jobs {
		j := &jobs[i]
		if j.State != api.StateRunning && j.State != api.StateSuspended {
			continue
		}
		id := strconv.FormatInt(j.ID, 10)
		if j.Spec.Load == 0 && !j.Spec.Alloc && match(id+".batch") {
			rows = append(rows, stepRow{job: j, idTxt: id + ".batch"})
		}
		for k := range j.Steps {
			st := &j.Steps[k]
			sid := id + "." + strconv.Itoa(st.Index)
			if st.State == api.StateRunning && match(sid) {
				rows = append(rows, stepRow{job: j, step: st, idTxt: sid})
			}
		}
	}
	return rows
}

const squeueStepFormat = "%.15i %.8j %.9P %.8u %.9M %N"

// writeSteps prints squeue -s with a step format: %i %j %P %u %M %N %l %S
// %A (tasks), with Slurm's widths and justification.
func writeSteps(w io.Writer, format string, header bool, rows []stepRow, now time.Time) []string {
	type col struct {
		prefix string
		letter byte
		width  int
		right  bool
	}
	var cols []col
	var bad []string
	tail := ""
	for i := 0; i < len(format); {
		j := strings.IndexByte(format[i:], '%')
		if j < 0 {
			tail = format[i:]
			break
		}
		c := col{prefix: format[i : i+j]}
		i += j + 1
		if i < len(format) && format[i] == '.' {
			c.right = true
			i++
		}
		k := i
		for k < len(format) && format[k] >= '0' && format[k] <= '9' {
			k++
		}
		c.width, _ = strconv.Atoi(format[i:k])
		if k >= len(format) {
			break
		}
		c.letter = format[k]
		if !strings.ContainsRune("ijPuMNlSA", rune(c.letter)) {
			bad = append(bad, string(c.letter))
		}
		i = k + 1
		cols = append(cols, c)
	}
	titles := map[byte]string{'i': "STEPID", 'j': "NAME", 'P': "PARTITION", 'u': "USER", 'M': "TIME",
		'N': "NODELIST", 'l': "TIME_LIMIT", 'S': "START_TIME", 'A': "TASKS"}
	value := func(r stepRow, c byte) string {
		switch c {
		case 'i':
			return r.idTxt
		case 'j':
			return r.name()
		case 'P':
			return r.job.Spec.Partition
		case 'u':
			return r.job.User
		case 'M':
			return sbatch.FormatSqueueDuration(max(now.Unix()-r.start(), 0))
		case 'N':
			return r.nodes()
		case 'l':
			return sbatch.FormatTimeLimit(r.job.Spec.TimeLimit, false)
		case 'S':
			return fmtTime(r.start(), "", now)
		case 'A':
			return strconv.Itoa(r.tasks())
		}
		return ""
	}
	line := func(get func(col) string) {
		var b strings.Builder
		for _, c := range cols {
			b.WriteString(c.prefix)
			v := get(c)
			if c.width > 0 && len(v) > c.width && c.letter != 'N' && c.letter != 'M' {
				v = v[:c.width]
			}
			if c.right {
				fmt.Fprintf(&b, "%*s", c.width, v)
			} else {
				fmt.Fprintf(&b, "%-*s", c.width, v)
			}
		}
		b.WriteString(tail)
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	if header {
		line(func(c col) string { return titles[c.letter] })
	}
	for _, r := range rows {
		line(func(c col) string { return value(r, c.letter) })
	}
	return bad
}

// squeueSteps is squeue -s: the running steps, filtered by the listed
// steps (-s list) and the job filters.
func squeueSteps(ctx context.Context, env *Env, cl *api.Client, f api.JobFilter, want []string, format string, header bool) int {
	jobs, err := cl.Jobs(ctx, f)
	if err != nil {
		fmt.Fprintf(env.Stderr, "slurm_load_job_steps error: %s\n", apiErrText(err))
		return 1
	}
	for _, b := range writeSteps(env.Stdout, format, header, runningSteps(jobs, want), time.Now()) {
		fmt.Fprintf(env.Stderr, "%s: error: Invalid job step format specification: %s\n", env.Prog, b)
	}
	return 0
}

// showSteps is scontrol show step [JOBID[.STEP]].
func showSteps(ctx context.Context, env *Env, name string, oneliner bool) int {
	cl := dial(env)
	if cl == nil {
		return 1
	}
	f := api.JobFilter{}
	var want []string
	if name != "" {
		jid, _, _ := strings.Cut(name, ".")
		id, err := strconv.ParseInt(jid, 10, 64)
		if err != nil {
			fmt.Fprintf(env.Stderr, "Invalid job step id: %s\n", name)
			return 1
		}
		f.IDs = []int64{id}
		want = []string{name}
	}
	jobs, err := cl.Jobs(ctx, f)
	if err != nil {
		fmt.Fprintf(env.Stderr, "slurm_get_job_steps error: %s\n", apiErrText(err))
		return 1
	}
	if name != "" && len(jobs) == 0 {
		// As 22.05.8: a job it does not know is an error of the request.
		fmt.Fprintf(env.Stderr, "slurm_get_job_steps error: Invalid job id specified\n")
		return 1
	}
	rows := runningSteps(jobs, want)
	if len(rows) == 0 {
		if name != "" {
			if !strings.Contains(name, ".") {
				name += ".0"
			}
			fmt.Fprintf(env.Stdout, "Job step %s not found\n", name)
			return 1
		}
		fmt.Fprintln(env.Stdout, "No job steps in the system")
		return 0
	}
	sep := "\n   "
	if oneliner {
		sep = " "
	}
	now := time.Now()
	for _, r := range rows {
		limit := "UNLIMITED"
		if r.job.Spec.TimeLimit > 0 {
			limit = sbatch.FormatLongDuration(r.job.Spec.TimeLimit)
		}
		if r.step != nil && r.step.TimeLimit > 0 {
			limit = sbatch.FormatLongDuration(r.step.TimeLimit) // srun -t
		}
		nodes := 1
		if hosts, err := sbatch.ExpandHostlist(r.nodes()); err == nil {
			nodes = len(hosts)
		}
		fmt.Fprintf(env.Stdout, "StepId=%s UserId=%d StartTime=%s TimeLimit=%s", r.idTxt, r.job.UID,
			fmtTime(r.start(), "", now), limit)
		fmt.Fprintf(env.Stdout, "%sState=RUNNING Partition=%s NodeList=%s", sep, r.job.Spec.Partition, r.nodes())
		fmt.Fprintf(env.Stdout, "%sNodes=%d CPUs=%d Tasks=%d Name=%s Network=(null)", sep, nodes,
			r.cpus(), r.tasks(), r.name())
		fmt.Fprintf(env.Stdout, "%sTRES=cpu=%d,node=%d", sep, r.cpus(), nodes)
		fmt.Fprintf(env.Stdout, "%sResvPorts=(null)", sep)
		fmt.Fprintf(env.Stdout, "%sCPUFreqReq=Default", sep)
		fmt.Fprintf(env.Stdout, "%sSrunHost:Pid=(null):0", sep)
		if oneliner {
			fmt.Fprintln(env.Stdout)
		} else {
			fmt.Fprint(env.Stdout, "\n\n")
		}
	}
	return 0
}
