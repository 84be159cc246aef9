package main

// qselect (OP qselect.1B): the ids of the jobs that match, one a line.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"hora/api"
	"hora/cmd/hora/listing"
	"hora/sbatch"
)

// qselectMain prints the ids of the jobs that match (OP qselect.1B): -u
// users, -s states, -N name, -q queue, -l resource comparisons, -x for
// finished ones; one id a line.
func qselectMain(ctx context.Context, env *Env, args []string) int {
	opts := pbsFixedOpts("qselect")
	for _, a := range args {
		if a == "--version" {
			fmt.Fprintln(env.Stdout, "pbs_version = "+pbsVersion)
			return 0
		}
	}
	p, err := sbatch.Getopt(opts, args, false)
	usage := qselectUsage
	if err != nil || len(p.Args) > 0 {
		var ue *sbatch.UsageError
		if errors.As(err, &ue) {
			fmt.Fprintf(env.Stderr, "qselect: %s\n", ue.Msg)
		}
		fmt.Fprint(env.Stderr, usage)
		return 2
	}
	states := ""
	if v, ok := p.Last("s"); ok {
		for _, ch := range v.Val {
			if !strings.ContainsRune("BEFHMQRSTUWXC", ch) {
				fmt.Fprintln(env.Stderr, "qselect: illegal -s value")
				fmt.Fprint(env.Stderr, usage)
				return 2
			}
		}
		states = v.Val
	}
	var lims []resLimit
	if v, ok := p.Last("l"); ok {
		l, ok := parseSelectResources(v.Val)
		if !ok {
			fmt.Fprintln(env.Stderr, "qselect: illegal -l value")
			fmt.Fprint(env.Stderr, usage)
			return 2
		}
		lims = l
	}
	s, code := pbsConnect(ctx, env)
	if s == nil {
		return code
	}
	f := api.JobFilter{}
	if v, ok := p.Last("u"); ok {
		f.Users = splitList(v.Val)
	}
	if v, ok := p.Last("N"); ok {
		f.Names = []string{v.Val}
	}
	if v, ok := p.Last("q"); ok {
		q, _, _ := strings.Cut(v.Val, "@")
		f.Partitions = []string{q}
	}
	_, hist := p.Last("x")
	if _, ok := p.Last("H"); ok {
		hist = true
	}
	f.All, f.History = hist || s.torque(), hist
	_, byAccount := p.Last("A")
	if len(lims) == 0 && !byAccount && !hist {
		// The common case: horad selects by owner, queue, name and PBS
		// state and answers with the ids alone (100,000 jobs: a list of
		// numbers, not of jobs).
		if states == "" && s.torque() {
			states = "QHWRSEC" // finished jobs only while Torque keeps them
		}
		f.All = s.torque()
		names := newQselectNamer(s, p)
		resp, err := s.cl.JobIDsArrays(ctxOrBackground(ctx), f, states, s.torque(), names.arraysMode(s))
		if err != nil {
			fmt.Fprintf(env.Stderr, "qselect: %s\n", apiErrText(err))
			return 1
		}
		return writeQselectIDs(env.Stdout, s, resp, names)
	}
	f.Brief = true
	// OpenPBS judges an array by all its tasks, finished ones included.
	f.All = f.All || !s.torque()
	jobs, err := s.cl.Jobs(ctxOrBackground(ctx), f)
	if err != nil {
		fmt.Fprintf(env.Stderr, "qselect: %s\n", apiErrText(err))
		return 1
	}
	return writeQselect(env.Stdout, s, jobs, states, lims, hist, p, nowFunc())
}

// writeQselectIDs prints ids one a line, as n names them.
func writeQselectIDs(out io.Writer, s *pbsSession, resp *api.JobIDsResponse, n *qselectNamer) int {
	w := bufio.NewWriterSize(out, 64<<10)
	defer w.Flush()
	tasks := map[int64]api.ArrayTaskRef{}
	for _, t := range resp.Tasks {
		tasks[t.ID] = t
	}
	var b []byte
	for _, id := range resp.IDs {
		t := tasks[id]
		b = n.appendID(b, id, t.Array, t.Index)
		if len(b) > 32<<10 {
			w.Write(b)
			b = b[:0]
		}
	}
	w.Write(b)
	return 0
}

// qselectNamer names the selected jobs as qselect prints them (OP
// qselect.1B): a plain job <seq>.server; a task of an array as the array,
// <seq>[].server, once (jobs and arrays, the default), or as the subjob
// <seq>[i].server under -T and in Torque, whose server lists subjobs; -J
// (OpenPBS) lists arrays only.
type qselectNamer struct {
	server              string
	subjobs, arraysOnly bool
	seen                map[int64]bool
}

func newQselectNamer(s *pbsSession, p *sbatch.Parsed) *qselectNamer {
	n := &qselectNamer{server: s.server, subjobs: s.torque(), seen: map[int64]bool{}}
	if p != nil {
		if _, ok := p.Last("T"); ok {
			n.subjobs = true
		}
		if _, ok := p.Last("J"); ok && !s.torque() {
			n.arraysOnly, n.subjobs = true, false
		}
	}
	return n
}

// arraysMode is how horad selects array tasks for this listing
// (api.PBSArraysWhole and so on): Torque's subjobs are jobs; OpenPBS tests
// an array by its own state, or its subjobs one by one under -T.
func (n *qselectNamer) arraysMode(s *pbsSession) string {
	switch {
	case s.torque():
		return api.PBSArraysAsJobs
	case n.subjobs:
		return api.PBSArraysSubjobs
	}
	return api.PBSArraysWhole
}

// appendID appends the line naming job id, task index of array (array 0:
// a plain job), or nothing when it is not listed.
func (n *qselectNamer) appendID(b []byte, id, array, index int64) []byte {
	switch {
	case array == 0 && n.arraysOnly:
		return b
	case array == 0:
		b = strconv.AppendInt(b, id, 10)
	case n.subjobs:
		b = strconv.AppendInt(b, array, 10)
		b = append(b, '[')
		b = strconv.AppendInt(b, index, 10)
		b = append(b, ']')
	case n.seen[array]:
		return b
	default:
		n.seen[array] = true
		b = strconv.AppendInt(b, array, 10)
		b = append(b, "[]"...)
	}
	b = append(b, '.')
	b = append(b, n.server...)
	return append(b, '\n')
}

// writeQselect filters and prints; split out for the benchmark.
func writeQselect(out io.Writer, s *pbsSession, jobs []api.Job, states string, lims []resLimit, hist bool, p *sbatch.Parsed, now time.Time) int {
	w := bufio.NewWriterSize(out, 64<<10)
	defer w.Flush()
	torque := s.torque()
	acct, hasAcct := "", false
	if p != nil {
		if v, ok := p.Last("A"); ok {
			acct, hasAcct = v.Val, true
		}
	}
	c := listing.NewCtx(now, "", pbsDuration)
	nowU := now.Unix()
	var b []byte
	names := newQselectNamer(s, p)
	// OpenPBS judges an array by its own state, from all its tasks
	// (api.PBSArraySel, as horad does for the ids-only listing).
	tasks := map[int64][]*api.Job{}
	mode := names.arraysMode(s)
	if mode != api.PBSArraysAsJobs {
		for i := range jobs {
			if a := jobs[i].ArrayJobID; a != 0 {
				tasks[a] = append(tasks[a], &jobs[i])
			}
		}
	}
	arrays, _ := api.NewPBSArraySel(mode, nowU, func(a int64) []*api.Job { return tasks[a] })
	for i := range jobs {
		j := &jobs[i]
		if j.State.Finished() && !hist && !arrays.Live(j) && !(torque && nowU-j.EndTime < int64(pbsKeepCompleted)) {
			continue
		}
		st := arrays.State(j, torque, nowU)
		if states != "" && !strings.Contains(states, st) {
			continue
		}
		if hasAcct && j.Spec.Account != acct {
			continue
		}
		if !matchLimits(&pbsRow{Job: j, s: s}, c, lims) {
			continue
		}
		b = names.appendID(b, j.ID, j.ArrayJobID, j.ArrayTaskID)
		if len(b) > 32<<10 {
			w.Write(b)
			b = b[:0]
		}
	}
	w.Write(b)
	return 0
}

// resLimit is one qselect -l comparison: resource.op.value with op one of
// eq ne lt le gt ge (OP qselect.1B).
type resLimit struct {
	name, op string
	val      int64
}

func parseSelectResources(s string) ([]resLimit, bool) {
	var out []resLimit
	for _, item := range strings.Split(s, ",") {
		parts := strings.SplitN(item, ".", 3)
		if len(parts) != 3 {
			return nil, false
		}
		switch parts[1] {
		case "eq", "ne", "lt", "le", "gt", "ge":
		default:
			return nil, false
		}
		var v int64
		var err error
		switch parts[0] {
		case "walltime", "cput":
			v, err = sbatch.ParsePBSDuration(parts[2])
		case "ncpus", "nodect":
			v, err = strconv.ParseInt(parts[2], 10, 64)
		default:
			return nil, false
		}
		if err != nil {
			return nil, false
		}
		out = append(out, resLimit{parts[0], parts[1], v})
	}
	return out, true
}

func matchLimits(r *pbsRow, c *listing.Ctx, lims []resLimit) bool {
	for _, l := range lims {
		var have int64
		switch l.name {
		case "walltime", "cput":
			have = r.Spec.TimeLimit
		case "ncpus":
			have = int64(r.ncpus())
		case "nodect":
			have = int64(r.nodect())
		}
		ok := false
		switch l.op {
		case "eq":
			ok = have == l.val
		case "ne":
			ok = have != l.val
		case "lt":
			ok = have < l.val
		case "le":
			ok = have <= l.val
		case "gt":
			ok = have > l.val
		case "ge":
			ok = have >= l.val
		}
		if !ok {
			return false
		}
	}
	return true
}
