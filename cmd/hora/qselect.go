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

func init() { register("qselect", qselectMain) }

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
		ids, err := s.cl.JobIDs(ctxOrBackground(ctx), f, states, s.torque())
		if err != nil {
			fmt.Fprintf(env.Stderr, "qselect: %s\n", apiErrText(err))
			return 1
		}
		return writeQselectIDs(env.Stdout, s, ids)
	}
	f.Brief = true
	jobs, err := s.cl.Jobs(ctxOrBackground(ctx), f)
	if err != nil {
		fmt.Fprintf(env.Stderr, "qselect: %s\n", apiErrText(err))
		return 1
	}
	return writeQselect(env.Stdout, s, jobs, states, lims, hist, p, nowFunc())
}

// writeQselectIDs prints ids one a line, <seq>.<server>.
func writeQselectIDs(out io.Writer, s *pbsSession, ids []int64) int {
	w := bufio.NewWriterSize(out, 64<<10)
	defer w.Flush()
	suffix := "." + s.server
	var b []byte
	for _, id := range ids {
		b = strconv.AppendInt(b, id, 10)
		b = append(b, suffix...)
		b = append(b, '\n')
		if len(b) > 32<<10 {
			w.Write(b)
			b = b[:0]
		}
	}
	w.Write(b)
	return 0
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
	suffix := "." + s.server
	for i := range jobs {
		j := &jobs[i]
		st := pbsState(j, torque, nowU)
		if j.State.Finished() && !hist && !(torque && nowU-j.EndTime < int64(pbsKeepCompleted)) {
			continue
		}
		if states != "" && !strings.Contains(states, st) {
			continue
		}
		if hasAcct && j.Spec.Account != acct {
			continue
		}
		if !matchLimits(&pbsRow{j, s}, c, lims) {
			continue
		}
		b = strconv.AppendInt(b, j.ID, 10)
		b = append(b, suffix...)
		b = append(b, '\n')
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
