package main

// qstat (COMPAT.md §6.2): every hora job seen as a PBS job (pbsjob.go), in
// the default and alternate tables, -f attribute blocks, -F json/dsv, and
// the queue (-Q) and server (-B) tables of each flavour.

import (
	"bufio"
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

// qstatOpts are qstat's options (OP GETOPT_ARGS "ainpqrstwxu:fGHJMQEBW:T1F:D:",
// TQ "acCeE:filn1pqrstu:xGMQRBW:").
func qstatOpts(torque bool) []sbatch.Opt {
	if torque {
		return sbatch.LetterOpts("acCeE:filn1pqrstu:xGMQRBW:")
	}
	return sbatch.LetterOpts("ainpqrstwxu:fGHJMQEBW:T1F:D:")
}

const openpbsQstatUsage = "usage: \n" +
	"qstat [-f] [-J] [-p] [-t] [-x] [-E] [-F format | -w] [-D delim] [ job_identifier... | destination... ]\n" +
	"qstat [-a|-i|-r|-H|-T] [-J] [-t] [-u user] [-n] [-s] [-G|-M] [-1] [-w]\n" +
	"\t[ job_identifier... | destination... ]\n" +
	"qstat -Q [-f] [-F format] [-D delim] [ destination... ]\n" +
	"qstat -q [-G|-M] [ destination... ]\n" +
	"qstat -B [-f] [-F format] [-D delim] [ server_name... ]\n" +
	"       qstat --version\n"

const torqueQstatUsage = "usage: \n" +
	"                          qstat [-f [-1]] [-W site_specific] [-x] [ job_identifier... | destination... ]\n" +
	"                          qstat [-a|-i|-r|-e] [-u user] [-n [-1]] [-s] [-t] [-G|-M] [-R] [job_id... | destination...]\n" +
	"                          qstat -Q [-f [-1]] [-W site_specific] [ destination... ]\n" +
	"                          qstat -q [-G|-M] [ destination... ]\n" +
	"                          qstat -B [-f [-1]] [-W site_specific] [ server_name... ]\n" +
	"                          qstat -t\n"

// qstatMain lists jobs, queues or the server as the flavour's qstat does.
func qstatMain(ctx context.Context, env *Env, args []string) int {
	for _, a := range args {
		if a == "--version" {
			fmt.Fprintln(env.Stdout, "pbs_version = "+pbsVersion)
			return 0
		}
	}
	s, code := pbsConnect(ctx, env)
	if s == nil {
		return code
	}
	torque := s.torque()
	usage := openpbsQstatUsage
	if torque {
		usage = torqueQstatUsage
	}
	p, err := sbatch.Getopt(qstatOpts(torque), args, false)
	if err != nil {
		var ue *sbatch.UsageError
		if errors.As(err, &ue) {
			fmt.Fprintf(env.Stderr, "qstat: %s\n", ue.Msg)
		}
		fmt.Fprint(env.Stderr, usage)
		return 2
	}
	has := func(k string) bool { _, ok := p.Last(k); return ok }
	format := ""
	if v, ok := p.Last("F"); ok {
		format = strings.ToLower(v.Val)
		if format != "json" && format != "dsv" {
			fmt.Fprintf(env.Stderr, "qstat: invalid output format\n")
			fmt.Fprint(env.Stderr, usage)
			return 2
		}
	}
	if torque && has("x") {
		fmt.Fprintln(env.Stderr, "qstat: hora does not produce Torque's XML output (-x)")
		return 2
	}
	ctx = ctxOrBackground(ctx)
	w := bufio.NewWriterSize(env.Stdout, 64<<10)
	defer w.Flush()
	switch {
	case has("Q") || has("q"):
		return qstatQueues(ctx, env, w, s, p.Args, has("f"))
	case has("B"):
		return qstatServer(ctx, env, w, s, has("f"))
	}

	history := !torque && (has("x") || has("H"))
	var users []string
	if v, ok := p.Last("u"); ok {
		users = splitList(v.Val)
	}
	// Operands: job ids (they start with a digit) or destinations.
	var ids []int64
	var queues []string
	type operand struct {
		text string
		ref  pbsRef
	}
	var named []operand
	for _, a := range p.Args {
		if a != "" && a[0] >= '0' && a[0] <= '9' {
			ref, ok := parsePBSRef(a)
			if !ok {
				fmt.Fprintf(env.Stderr, "qstat: illegally formed job identifier: %s\n", a)
				w.Flush()
				return 1
			}
			ids = append(ids, ref.seq)
			named = append(named, operand{a, ref})
			continue
		}
		q, _, _ := strings.Cut(a, "@")
		if q != "" {
			queues = append(queues, q)
		}
	}
	// Finished tasks come too (All): an array's state counts them.
	filter := api.JobFilter{IDs: ids, Users: users, Partitions: queues, All: true,
		History: history || len(ids) > 0, Full: has("f")}
	jobs, err := s.cl.Jobs(ctx, filter)
	if err != nil {
		fmt.Fprintf(env.Stderr, "qstat: %s\n", apiErrText(err))
		return 1
	}
	now := nowFunc()
	s.now = now
	c := newPBSCtx()
	status := 0
	// Which jobs show: active ones; finished ones under -x/-H (OpenPBS) or
	// while remembered (Torque's C, kept keep_completed = min_job_age_s).
	shown := func(j *api.Job) bool {
		if has("H") && !j.State.Finished() {
			return false
		}
		if has("i") && (j.State == api.StateRunning || j.State == api.StateSuspended) {
			return false
		}
		if has("r") && j.State != api.StateRunning && j.State != api.StateSuspended {
			return false
		}
		if !j.State.Finished() {
			return true
		}
		if torque {
			return j.EndTime == 0 || now.Unix()-j.EndTime < int64(pbsKeepCompleted)
		}
		return history
	}
	mode := qstatArrayMode(torque, has("t"), has("J"))
	var rows []pbsRow
	errno := 0
	if len(named) > 0 {
		all := pbsArrayRows(s, jobs, arrayRowsMode{plain: true, arrays: true, subjobs: true}, func(*api.Job) bool { return true })
		for _, o := range named {
			// The rows the id names: a job; an array (by <seq>[] or its
			// bare number) with its subjobs under -t; one subjob.
			var match []pbsRow
			for i := range all {
				r := &all[i]
				switch {
				case r.array != nil && r.ID == o.ref.seq && o.ref.task < 0,
					r.array == nil && r.ArrayJobID == 0 && r.ID == o.ref.seq && !o.ref.array,
					r.array == nil && r.ArrayJobID == o.ref.seq && r.ArrayTaskID == o.ref.task,
					r.array == nil && r.ArrayJobID != 0 && r.ArrayJobID != o.ref.seq && r.ID == o.ref.seq && !o.ref.array:
					match = append(match, *r)
				case r.array == nil && r.ArrayJobID == o.ref.seq && o.ref.task < 0 && mode.subjobs:
					match = append(match, *r)
				}
			}
			full := s.jobID(o.ref.seq)
			if o.ref.array {
				full = o.text
				if !strings.Contains(full, ".") {
					full += "." + s.server
				}
			}
			if len(match) == 0 {
				fmt.Fprint(env.Stderr, "qstat: "+pbsErrText(s.flavour, sbatch.PBSEUnkJobID)+" "+full+"\n")
				errno = sbatch.PBSEUnkJobID
				continue
			}
			head := &match[0]
			finished := head.State.Finished()
			switch {
			case torque && finished && !shown(head.Job):
				fmt.Fprint(env.Stderr, "qstat: "+pbsErrText(s.flavour, sbatch.PBSEUnkJobID)+" "+full+"\n")
				errno = sbatch.PBSEUnkJobID
			case !torque && finished && !history:
				fmt.Fprintf(env.Stderr, "qstat: %s Job has finished, use -x or -H to obtain historical job information\n", full)
				errno = sbatch.PBSEHistJobID
			default:
				for _, r := range match {
					if r.array != nil || shown(r.Job) {
						rows = append(rows, r)
					}
				}
			}
		}
	} else {
		rows = pbsArrayRows(s, jobs, mode, shown)
	}
	if errno != 0 {
		status = sbatch.PBSExit(errno)
	}
	alt := has("a") || has("n") || has("s") || has("i") || has("r") || has("H") || has("u") || has("G") || has("M") || has("T")
	switch {
	case has("f") && format == "json":
		writeQstatJSON(w, s, rows, c, now)
	case has("f"):
		writeQstatFull(w, s, rows, c, format == "dsv", delimiter(p), has("w") || (torque && has("1")))
	case alt:
		writeQstatAlt(w, s, rows, c, has("w"), has("n"), has("s"), has("1"))
	default:
		writeQstatDefault(w, s, rows, c, has("w"), has("p"))
	}
	return status
}

// newPBSCtx is the listing context of the PBS commands: the clock and
// PBS's HH:MM:SS durations.
func newPBSCtx() *listing.Ctx { return listing.NewCtx(nowFunc(), "", pbsDuration) }

// pbsKeepCompleted is how long Torque's qstat shows a finished job (C):
// horad remembers finished jobs for min_job_age_s (300 s by default),
// which plays keep_completed's part.
var pbsKeepCompleted = 300

func delimiter(p *sbatch.Parsed) string {
	if v, ok := p.Last("D"); ok {
		return v.Val
	}
	return "|"
}

// writeQstatDefault is the default table (OP display_statjob,
// "%-17s %-16s %-16s  %8s %1s %-16s"; TQ "%-26s %-16s %-15s %8s %1s %-15s").
func writeQstatDefault(w io.Writer, s *pbsSession, rows []pbsRow, c *listing.Ctx, wide, percent bool) {
	var b []byte
	if len(rows) > 0 || s.torque() {
		if s.torque() {
			if len(rows) > 0 {
				b = append(b, "Job ID                    Name             User            Time Use S Queue\n"+
					"------------------------- ---------------- --------------- -------- - -----\n"...)
			}
		} else {
			switch {
			case wide && percent:
				b = append(b, "Job id                         Name            User             % done  S Queue\n"+
					"-----------------------------  --------------- ---------------  -------- - ---------------\n"...)
			case wide:
				b = append(b, "Job id                         Name            User             Time Use S Queue\n"+
					"-----------------------------  --------------- ---------------  -------- - ---------------\n"...)
			case percent:
				b = append(b, "Job id            Name             User               % done  S Queue\n"+
					"----------------  ---------------- ----------------  -------- - -----\n"...)
			default:
				b = append(b, "Job id            Name             User              Time Use S Queue\n"+
					"----------------  ---------------- ----------------  -------- - -----\n"...)
			}
		}
	}
	for i := range rows {
		r := &rows[i]
		id := r.pbsID()
		name := r.Spec.Name
		timeu := pbsTimeUse(r)
		if percent {
			timeu = pbsPercent(r, c)
		}
		st := r.stateLetter(c.NowUnix)
		if s.torque() {
			if len(name) > 16 {
				name = torqueShortName(name)
			}
			b = listing.AppendCol(b, id, listing.Column{Width: 26})
			b = append(b, ' ')
			b = listing.AppendCol(b, name, listing.Column{Width: 16})
			b = append(b, ' ')
			b = listing.AppendCol(b, r.User, listing.Column{Width: 15, Trunc: true})
			b = append(b, ' ')
			b = listing.AppendCol(b, timeu, listing.Column{Width: 8, Right: true, Trunc: true})
			b = append(b, ' ')
			b = append(b, st...)
			b = append(b, ' ')
			b = listing.AppendCol(b, r.Spec.Partition, listing.Column{Width: 15, Trunc: true})
			b = append(b, '\n')
			continue
		}
		idW, nameW, userW, queueW := 17, 16, 16, 16
		if wide {
			idW, nameW, userW, queueW = 30, 15, 15, 15
		}
		// OP cuts the id after the first part of the server name.
		if k := strings.IndexByte(id, '.'); k >= 0 {
			if k2 := strings.IndexByte(id[k+1:], '.'); k2 >= 0 {
				id = id[:k+1+k2]
			}
		}
		if len(name) >= nameW {
			name = name[:nameW-1] + "*"
		}
		b = listing.AppendCol(b, id, listing.Column{Width: idW, Trunc: true, Mark: '*'})
		b = append(b, ' ')
		b = listing.AppendCol(b, name, listing.Column{Width: nameW})
		b = append(b, ' ')
		b = listing.AppendCol(b, r.User, listing.Column{Width: userW, Trunc: true, Mark: '*'})
		b = append(b, ' ', ' ')
		b = listing.AppendCol(b, timeu, listing.Column{Width: 8, Right: true, Trunc: true, Mark: '*'})
		b = append(b, ' ')
		b = append(b, st...)
		b = append(b, ' ')
		b = listing.AppendCol(b, r.Spec.Partition, listing.Column{Width: queueW, Trunc: true, Mark: '*'})
		b = append(b, '\n')
	}
	w.Write(b)
}

// torqueShortName is Torque's cut of a long job name: "..." and its tail,
// from a '/' when there is one (TQ get_summary_attributes).
func torqueShortName(name string) string {
	cut := len(name) - 16 + 3
	tail := name[cut:]
	if k := strings.IndexByte(tail, '/'); k >= 0 {
		tail = tail[k:]
	}
	out := "..." + tail
	if len(out) > 16 {
		out = out[:16]
	}
	return out
}

// pbsPercent is qstat -p: the share of the walltime used.
func pbsPercent(r *pbsRow, c *listing.Ctx) string {
	if !r.started() || r.Spec.TimeLimit <= 0 {
		return "--"
	}
	return strconv.FormatInt(min(timeUsed(r.Job, c.NowUnix)*100/r.Spec.TimeLimit, 100), 10)
}

// writeQstatAlt is the alternate table of -a -n -s -u -i -r -H
// (OP altdsp_statjob).
func writeQstatAlt(w io.Writer, s *pbsSession, rows []pbsRow, c *listing.Ctx, wide, nodes, comments, oneLine bool) {
	var b []byte
	if s.torque() {
		b = append(b, "\n"+s.server+": \n"...)
		b = append(b, "                                                                                  Req'd       Req'd       Elap\n"+
			"Job ID                  Username    Queue    Jobname          SessID  NDS   TSK   Memory      Time    S   Time\n"+
			"----------------------- ----------- -------- ---------------- ------ ----- ------ --------- --------- - ---------\n"...)
	} else if len(rows) > 0 {
		b = append(b, "\n"+s.server+": \n"...)
		if wide {
			b = listing.AppendSpaces(b, 30+1+15+1+15+1+15+1+8+1+4+1+5+1)
			b = append(b, "Req'd  Req'd   Elap\n"...)
			b = append(b, "Job ID                         Username        Queue           Jobname         SessID   NDS  TSK   Memory Time  S Time\n"...)
			b = append(b, "------------------------------ --------------- --------------- --------------- -------- ---- ----- ------ ----- - -----\n"...)
		} else {
			b = listing.AppendSpaces(b, 60)
			b = append(b, "Req'd  Req'd   Elap\n"...)
			b = append(b, "Job ID          Username Queue    Jobname    SessID NDS TSK Memory Time  S Time\n"+
				"--------------- -------- -------- ---------- ------ --- --- ------ ----- - -----\n"...)
		}
	}
	for i := range rows {
		r := &rows[i]
		st := r.stateLetter(c.NowUnix)
		mem := pbsMemText(r.Spec.MemMB * int64(r.nodect()))
		if mem == "" {
			mem = "--"
		}
		req := pbsWalltimeReq(c, r)
		if req == "" {
			req = "--"
		}
		elap := r.walltimeUsed(c)
		if elap == "" {
			elap = "--"
		}
		if s.torque() {
			b = listing.AppendCol(b, r.pbsID(), listing.Column{Width: 23, Trunc: true})
			b = append(b, ' ')
			b = listing.AppendCol(b, r.User, listing.Column{Width: 11, Trunc: true})
			b = append(b, ' ')
			b = listing.AppendCol(b, r.Spec.Partition, listing.Column{Width: 8, Trunc: true})
			b = append(b, ' ')
			b = listing.AppendCol(b, r.Spec.Name, listing.Column{Width: 16, Trunc: true})
			b = append(b, ' ')
			b = listing.AppendCol(b, "--", listing.Column{Width: 6, Right: true})
			b = append(b, ' ')
			b = listing.AppendCol(b, strconv.Itoa(r.nodect()), listing.Column{Width: 5, Right: true, Trunc: true})
			b = append(b, ' ')
			b = listing.AppendCol(b, strconv.Itoa(r.ncpus()), listing.Column{Width: 5, Right: true, Trunc: true})
			b = append(b, ' ')
			b = listing.AppendCol(b, mem, listing.Column{Width: 9, Right: true, Trunc: true})
			b = append(b, ' ')
			b = listing.AppendCol(b, req, listing.Column{Width: 9, Right: true, Trunc: true})
			b = append(b, ' ')
			b = append(b, st...)
			b = append(b, ' ')
			b = listing.AppendCol(b, elap, listing.Column{Width: 9, Right: true, Trunc: true})
		} else {
			idW, userW, queueW, nameW, sessW, ndsW, tskW := 15, 8, 8, 10, 6, 3, 3
			if wide {
				idW, userW, queueW, nameW, sessW, ndsW, tskW = 30, 15, 15, 15, 8, 4, 5
			}
			mark := listing.Column{Trunc: true, Mark: '*'}
			col := func(v string, width int, right bool) {
				cc := mark
				cc.Width, cc.Right = width, right
				// "%-*.*s": cut by printf's precision after trunc_value's mark
				b = listing.AppendCol(b, v, cc)
				b = append(b, ' ')
			}
			col(r.pbsID(), idW, false)
			col(r.User, userW, false)
			col(r.Spec.Partition, queueW, false)
			col(r.Spec.Name, nameW, false)
			col("--", sessW, true)
			col(strconv.Itoa(r.nodect()), ndsW, true)
			col(strconv.Itoa(r.ncpus()), tskW, true)
			b = listing.AppendCol(b, mem, listing.Column{Width: 6, Right: true, Trunc: true})
			b = append(b, ' ')
			b = listing.AppendCol(b, req, listing.Column{Width: 5, Right: true, Trunc: true})
			b = append(b, ' ')
			b = append(b, st...)
			b = append(b, ' ')
			b = listing.AppendCol(b, elap, listing.Column{Width: 5, Right: true, Trunc: true})
		}
		if oneLine && nodes {
			b = append(b, ' ')
		} else {
			b = append(b, '\n')
		}
		if nodes {
			hosts := pbsExecHost(c, r)
			switch {
			case oneLine && hosts == "":
				b = append(b, '\n')
			case oneLine:
				b = append(b, hosts+"\n"...)
			case hosts != "":
				b = append(b, "   "+hosts+"\n"...)
			}
		}
		if comments {
			if cm := pbsComment(c, r); cm != "" {
				b = append(b, "   "+cm+"\n"...)
			}
		}
	}
	w.Write(b)
}

// writeQstatFull is -f: "Job Id: <id>", then "    name = value" lines,
// long values folded at commas (OP/TQ prt_attr), a blank line after each
// job; -F dsv prints name=value pairs joined by the delimiter.
func writeQstatFull(w io.Writer, s *pbsSession, rows []pbsRow, c *listing.Ctx, dsv bool, delim string, oneLine bool) {
	table, limit := openpbsJobAttrs.Get(), 78
	if s.torque() {
		table, limit = torqueJobAttrs.Get(), 77
	}
	var b []byte
	var attrs []listing.Attr
	for i := range rows {
		r := &rows[i]
		attrs = table.AppendAttrs(attrs[:0], c, r)
		if dsv {
			b = append(b, "Job Id: "+r.pbsID()+delim...)
			for k, a := range attrs {
				if k > 0 {
					b = append(b, delim...)
				}
				b = append(b, a.Name+"="+escapeDelim(a.Value, delim)...)
			}
			b = append(b, '\n')
			continue
		}
		b = append(b, "Job Id: "+r.pbsID()+"\n"...)
		for _, a := range attrs {
			v := a.Value
			if oneLine {
				b = append(b, "    "+a.Name+" = "+v+"\n"...)
			} else {
				b = foldAttr(b, a.Name, v, limit)
			}
		}
		b = append(b, '\n')
		if len(b) > 32<<10 {
			w.Write(b)
			b = b[:0]
		}
	}
	w.Write(b)
}

func escapeDelim(v, delim string) string {
	if delim == "" {
		return v
	}
	return strings.ReplaceAll(v, delim, "\\"+delim)
}

// foldAttr appends "    name = value", folding the value as prt_attr does:
// comma-separated pieces are kept on the line while they fit under the
// limit; a piece that does not fit starts a tab-indented line (unless it is
// the first) and is itself cut every limit characters.
func foldAttr(b []byte, name, value string, limit int) []byte {
	b = append(b, "    "...)
	b = append(b, name...)
	b = append(b, " = "...)
	start := len(name) + 7
	if start+len(value) < limit && !strings.Contains(value, ",,") &&
		(value == "" || value[0] != ',' && value[len(value)-1] != ',') {
		// Every piece fits: the value as it is (the common case).
		b = append(b, value...)
		return append(b, '\n')
	}
	first := true
	rest := value
	for rest != "" {
		var piece string
		piece, rest, _ = strings.Cut(rest, ",")
		if piece == "" {
			continue // strtok skips empty pieces
		}
		if len(piece)+start < limit {
			b = append(b, piece...)
			start += len(piece)
		} else {
			if !first {
				b = append(b, "\n\t"...)
				start = 9
			}
			for k := 0; k < len(piece); k++ {
				b = append(b, piece[k])
				start++
				if start > limit {
					start = 8
					b = append(b, "\n\t"...)
				}
			}
		}
		if strings.Trim(rest, ",") != "" {
			first = false
			b = append(b, ',')
		}
	}
	return append(b, '\n')
}

// writeQstatJSON is OpenPBS's -f -F json: {"timestamp", "pbs_version",
// "pbs_server", "Jobs": {id: {attributes}}}, in cJSON's layout.
func writeQstatJSON(w io.Writer, s *pbsSession, rows []pbsRow, c *listing.Ctx, now time.Time) {
	j := &listing.CJSON{}
	j.Open()
	j.Num("timestamp", strconv.FormatInt(now.Unix(), 10))
	j.Str("pbs_version", pbsVersion)
	j.Str("pbs_server", s.server)
	if len(rows) > 0 {
		j.Key("Jobs")
		j.Open()
		var attrs []listing.Attr
		for i := range rows {
			r := &rows[i]
			attrs = openpbsJobAttrs.Get().AppendAttrs(attrs[:0], c, r)
			j.Key(r.pbsID())
			j.Attrs(attrs)
			if len(j.B) > 32<<10 {
				w.Write(j.B)
				j.B = j.B[:0]
			}
		}
		j.Close()
	}
	j.Close()
	j.B = append(j.B, '\n')
	w.Write(j.B)
}

// qstatQueues is -Q (and -q): each hora partition is a PBS queue.
func qstatQueues(ctx context.Context, env *Env, w *bufio.Writer, s *pbsSession, names []string, full bool) int {
	parts, err := s.cl.Partitions(ctx)
	if err != nil {
		fmt.Fprintf(env.Stderr, "qstat: %s\n", apiErrText(err))
		return 1
	}
	jobs, err := s.cl.Jobs(ctx, api.JobFilter{})
	if err != nil {
		fmt.Fprintf(env.Stderr, "qstat: %s\n", apiErrText(err))
		return 1
	}
	status := 0
	var shown []api.Partition
	if len(names) == 0 {
		shown = parts
	}
	for _, n := range names {
		q, _, _ := strings.Cut(n, "@")
		k := slices.IndexFunc(parts, func(p api.Partition) bool { return p.Name == q })
		if k < 0 {
			fmt.Fprintf(env.Stderr, "qstat: Unknown queue %s\n", n)
			status = sbatch.PBSExit(sbatch.PBSEUnkQue)
			continue
		}
		shown = append(shown, parts[k])
	}
	now := nowFunc().Unix()
	count := func(p string) map[string]int {
		m := map[string]int{}
		for i := range jobs {
			if jobs[i].Spec.Partition == p {
				m[pbsState(&jobs[i], false, now)]++
				m["tot"]++
			}
		}
		return m
	}
	var b []byte
	if full {
		for _, p := range shown {
			m := count(p.Name)
			b = append(b, "Queue: "+p.Name+"\n"...)
			b = append(b, "    queue_type = Execution\n"...)
			b = append(b, fmt.Sprintf("    total_jobs = %d\n", m["tot"])...)
			b = append(b, fmt.Sprintf("    state_count = Transit:0 Queued:%d Held:%d Waiting:%d Running:%d Exiting:%d Begun:0 \n",
				m["Q"], m["H"], m["W"], m["R"]+m["S"], m["E"])...)
			if p.MaxTime > 0 {
				b = append(b, "    resources_max.walltime = "+pbsDuration(p.MaxTime)+"\n"...)
			}
			if p.DefaultTime > 0 {
				b = append(b, "    resources_default.walltime = "+pbsDuration(p.DefaultTime)+"\n"...)
			}
			b = append(b, "    enabled = "+pyBool(p.State != "down")+"\n"...)
			b = append(b, "    started = "+pyBool(p.State != "down")+"\n\n"...)
		}
		w.Write(b)
		return status
	}
	yes := func(up bool) string {
		if up {
			return "yes"
		}
		return "no"
	}
	if s.torque() {
		b = append(b, "Queue            Max   Tot   Ena   Str   Que   Run   Hld   Wat   Trn   Ext T   Cpt\n"+
			"---------------- --- ---- -- -- --- --- --- --- --- --- - ---\n"...)
		for _, p := range shown {
			m := count(p.Name)
			b = append(b, fmt.Sprintf("%-16s %3s %4d %3s %3s %3d %3d %3d %3d %3d %3d %-1s %3d\n",
				p.Name, "0", m["tot"], yes(p.State != "down"), yes(p.State != "down"),
				m["Q"], m["R"]+m["S"], m["H"], m["W"], 0, m["E"], "E", 0)...)
		}
	} else if len(shown) > 0 {
		b = append(b, "Queue              Max   Tot Ena Str   Que   Run   Hld   Wat   Trn   Ext Type\n"+
			"---------------- ----- ----- --- --- ----- ----- ----- ----- ----- ----- ----\n"...)
		for _, p := range shown {
			m := count(p.Name)
			name := p.Name
			if len(name) > 16 {
				name = name[:15] + "*"
			}
			b = append(b, fmt.Sprintf("%-16s %5s %5d %3s %3s %5d %5d %5d %5d %5d %5d %-4s\n",
				name, "0", m["tot"], yes(p.State != "down"), yes(p.State != "down"),
				m["Q"], m["R"]+m["S"], m["H"], m["W"], 0, m["E"], "Exec")...)
		}
	}
	w.Write(b)
	return status
}

func pyBool(v bool) string {
	if v {
		return "True"
	}
	return "False"
}

// qstatServer is -B: the one server.
func qstatServer(ctx context.Context, env *Env, w *bufio.Writer, s *pbsSession, full bool) int {
	jobs, err := s.cl.Jobs(ctx, api.JobFilter{})
	if err != nil {
		fmt.Fprintf(env.Stderr, "qstat: %s\n", apiErrText(err))
		return 1
	}
	now := nowFunc().Unix()
	m := map[string]int{}
	for i := range jobs {
		m[pbsState(&jobs[i], false, now)]++
	}
	if full {
		fmt.Fprintf(w, "Server: %s\n    server_state = Active\n    server_host = %s\n    total_jobs = %d\n"+
			"    state_count = Transit:0 Queued:%d Held:%d Waiting:%d Running:%d Exiting:%d Begun:0 \n"+
			"    pbs_version = %s\n\n", s.server, s.server, len(jobs), m["Q"], m["H"], m["W"], m["R"]+m["S"], m["E"], pbsVersion)
		return 0
	}
	fmt.Fprint(w, "Server             Max   Tot   Que   Run   Hld   Wat   Trn   Ext Status\n"+
		"---------------- ----- ----- ----- ----- ----- ----- ----- ----- -----------\n")
	fmt.Fprintf(w, "%-16s %5s %5d %5d %5d %5d %5d %5d %5d %-10s\n", s.server, "0", len(jobs),
		m["Q"], m["R"]+m["S"], m["H"], m["W"], 0, m["E"], "Active")
	return 0
}
