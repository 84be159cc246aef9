package sbatch

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"hora/api"
)

// The setters of the option registry (Option.Set). #SBATCH lines, #PBS
// lines, input environment variables and the command line all reach the
// job through them, in that order, so the last value wins (COMPAT.md §1.2).

// optError is a bad option value: msg is Slurm's text without "error: ",
// exit the status to leave with (0 = exitOption, 255).
type optError struct {
	msg  string
	exit int
	pre  string // a bare line before it (Slurm's time parser's own)
}

func (e *optError) Error() string { return e.msg }

// invalidSpec is Slurm's usual complaint about a value: "Invalid --time
// specification".
func invalidSpec(o *Option) error {
	return &optError{msg: "Invalid --" + o.Long + " specification"}
}

// The put* setters fill one field of the state, whose address a table
// entry passes: `Set: func(st *state, o *Option, v string) error { return
// putString(st, &st.spec.Account, o, v) }`. An entry is then a function
// literal that the compiler lays out in the binary, with the rest of the
// table; a setter made by a call (setString(accessor)) was made at init,
// which wrote to, and so copied, every page of Options in every client
// process (docs/scale.md, "Client start-up").

func putString(_ *state, p *string, _ *Option, v string) error {
	*p = v
	return nil
}

func putFlag(_ *state, p *bool, _ *Option, _ string) error {
	*p = true
	return nil
}

// putCount reads a positive integer as Slurm's parse_int does, which
// exits with 1 (not 255) on a bad value.
func putCount(_ *state, p *int, o *Option, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return &optError{msg: fmt.Sprintf("Invalid numeric value %q for --%s.", v, o.Long), exit: exitFile}
	}
	*p = n
	return nil
}

func putDuration(_ *state, p *int64, o *Option, v string) error {
	secs, err := ParseSlurmDuration(v)
	if err != nil {
		return invalidSpec(o)
	}
	*p = secs
	return nil
}

// putAbsTime reads --begin/--deadline against Input.Now.
func putAbsTime(st *state, p *int64, o *Option, v string) error {
	t, err := ParseSlurmTime(v, st.in.Now)
	if err != nil {
		// Slurm's parse_time complains first, naming where it
		// stopped: the start of the word it could not read.
		pos := 0
		var se *SyntaxError
		if errors.As(err, &se) && se.Pos > 0 && se.Pos <= len(v) {
			pos = se.Pos
			for pos > 0 && isLetter(v[pos-1]) && (pos == len(v) || isLetter(v[pos])) {
				pos--
			}
		}
		return &optError{msg: "Invalid --" + o.Long + " specification",
			pre: fmt.Sprintf("Invalid time specification (pos=%d): %s", pos, v)}
	}
	*p = t.Unix()
	return nil
}

func setOutput(st *state, _ *Option, v string) error {
	st.spec.Stdout = devNullIfNone(v)
	return nil
}

func setError(st *state, _ *Option, v string) error {
	st.spec.Stderr = devNullIfNone(v)
	return nil
}

// setInput sets standard input and remembers the name for --load, whose
// input data it is.
func setInput(st *state, _ *Option, v string) error {
	st.spec.Stdin = devNullIfNone(v)
	st.input = v
	return nil
}

func setChdir(st *state, _ *Option, v string) error {
	st.spec.WorkDir = absPath(st.in.Cwd, v)
	return nil
}

func setHold(st *state, _ *Option, _ string) error {
	st.spec.Hold = true
	return nil
}

// Neither --requeue nor --no-requeue leaves the choice to the cluster's
// JobRequeue default.
func setRequeue(st *state, _ *Option, _ string) error {
	st.spec.Requeue, st.spec.NoRequeue = true, false
	return nil
}

func setNoRequeue(st *state, _ *Option, _ string) error {
	st.spec.Requeue, st.spec.NoRequeue = false, true
	return nil
}

// setOpenMode looks at the first letter only, as Slurm does.
func setOpenMode(st *state, o *Option, v string) error {
	switch {
	case v != "" && (v[0] == 'a' || v[0] == 'A'):
		st.spec.OpenAppend = true
	case v != "" && (v[0] == 't' || v[0] == 'T'):
		st.spec.OpenAppend = false
	default:
		return invalidSpec(o)
	}
	return nil
}

// isZeroCount: a node count of zero, as verify_node_count reads it.
func isZeroCount(v string) bool {
	n, ok := nodeCount(v)
	return ok && n == 0
}

func setNodes(st *state, _ *Option, v string) error {
	lo, hi, msg := parseNodeRange(v)
	if msg != "" && st.cmd == Sbatch && isZeroCount(v) {
		// sbatch 22.05 sends -N 0 and slurmctld refuses it (measured).
		return &optError{msg: "Batch job submission failed: Node count specification invalid", exit: exitFile}
	}
	if msg != "" {
		return &optError{msg: msg}
	}
	st.spec.Nodes, st.spec.NodesMax = lo, hi
	return nil
}

// setMem reads --mem, --mem-per-cpu and --mem-per-gpu, which exclude
// each other in Slurm: the last one given counts. --mem=0 is all of each
// node's memory.
func setMem(st *state, o *Option, v string) error {
	mb, err := ParseMemMB(v)
	if err != nil {
		return invalidSpec(o)
	}
	sp := st.spec
	sp.MemMB, sp.MemAll, sp.MemPerCPU, sp.MemPerGPU = 0, false, 0, 0
	switch {
	case o.Long == "mem" && mb == 0:
		sp.MemAll = true
	case o.Long == "mem":
		sp.MemMB = mb
	case o.Long == "mem-per-cpu":
		sp.MemPerCPU = mb
	default:
		sp.MemPerGPU = mb
	}
	return nil
}

// errGres is how Slurm answers a gres it cannot read: the controller
// refuses the job (sbatch exits 1).
var errGres = &optError{msg: "Batch job submission failed: " + MsgInvalidGres, exit: exitFile}

func setGres(st *state, _ *Option, v string) error {
	gs, err := ParseGres(v)
	if err != nil {
		return errGres
	}
	st.spec.Gres = FormatGres(gs)
	return nil
}

// putTypedCount reads --gpus, --gpus-per-node and --gpus-per-task:
// [type:]count.
func putTypedCount(_ *state, p *string, _ *Option, v string) error {
	if _, _, err := ParseTypedCount(v); err != nil {
		return errGres
	}
	*p = v
	return nil
}

// setExclusive is Slurm's arg_set_exclusive.
func setExclusive(st *state, o *Option, v string) error {
	switch strings.ToLower(v) {
	case "", "exclusive":
		st.spec.Exclusive = "node"
	case "user":
		st.spec.Exclusive = "user"
	case "oversubscribe":
		st.spec.Exclusive, st.spec.Oversubscribe = "", true
	default:
		return invalidSpec(o)
	}
	return nil
}

func setOversubscribe(st *state, _ *Option, _ string) error {
	st.spec.Oversubscribe = true
	if st.spec.Exclusive == "node" {
		st.spec.Exclusive = ""
	}
	return nil
}

// putHosts reads -w/-x hostlists, kept compressed.
func putHosts(_ *state, p *string, _ *Option, v string) error {
	names, err := ExpandHostlist(v)
	if err != nil || len(names) == 0 {
		return &optError{msg: "Invalid hostlist: " + v}
	}
	*p = CompressHostlist(names)
	return nil
}

func setConstraint(st *state, _ *Option, v string) error {
	if _, _, err := ParseConstraint(v); err != nil {
		return &optError{msg: "Batch job submission failed: Invalid feature specification", exit: exitFile}
	}
	st.spec.Constraint = v
	return nil
}

func setHint(st *state, _ *Option, v string) error {
	switch strings.ToLower(v) {
	case "nomultithread":
		st.spec.NoMultithread = true
	case "multithread", "compute_bound", "memory_bound":
		st.spec.NoMultithread = false
	default:
		return &optError{msg: fmt.Sprintf("unrecognized --hint argument \"%s\", see --hint=help", v)}
	}
	return nil
}

func setExport(st *state, _ *Option, v string) error {
	st.export, st.exportSet = v, true
	return nil
}

func setLoad(st *state, o *Option, v string) error {
	f, err := ParseSize(v)
	if err != nil || f <= 0 {
		return invalidSpec(o)
	}
	st.spec.Load = f
	return nil
}

// --array and --dependency are checked by horad, as slurmctld checks them:
// against its MaxArraySize and the jobs it knows. Every refusal of an array
// is "Invalid job array specification", of a dependency "Job dependency
// problem" (an empty --dependency clears one from the script).
func setArray(st *state, _ *Option, v string) error {
	st.spec.Array = v
	return nil
}

func setDependency(st *state, _ *Option, v string) error {
	st.spec.Dependency = v
	return nil
}

func setKillOnInvalidDep(st *state, o *Option, v string) error {
	switch strings.ToLower(v) {
	case "yes", "kill":
		st.spec.KillOnInvalidDep = "yes"
	case "no", "nokill":
		st.spec.KillOnInvalidDep = "no"
	default:
		return invalidSpec(o)
	}
	return nil
}

func setSignal(st *state, o *Option, v string) error {
	if _, ok := ParseSignalSpec(v); !ok {
		return invalidSpec(o)
	}
	st.spec.Signal = v
	return nil
}

// parseSeconds reads a frame or work time of a periodic job: seconds, or a
// number with an s, ms or us suffix.
func parseSeconds(v string) (float64, bool) {
	v = strings.TrimSpace(v)
	exp := "" // the unit as a decimal exponent: "20ms" reads as 20e-3, exactly rounded
	switch {
	case strings.HasSuffix(v, "ms"):
		v, exp = strings.TrimSuffix(v, "ms"), "e-3"
	case strings.HasSuffix(v, "us"):
		v, exp = strings.TrimSuffix(v, "us"), "e-6"
	case strings.HasSuffix(v, "s"):
		v = strings.TrimSuffix(v, "s")
	}
	if v == "" || strings.ContainsAny(v, "eEpPxX_") {
		return 0, false
	}
	f, err := strconv.ParseFloat(v+exp, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e9 {
		return 0, false
	}
	return f, true
}

// rtError is a bad periodic-job value: hora's own option, exit 1.
func rtError(o *Option, v, why string) error {
	return &optError{msg: fmt.Sprintf("Invalid --%s specification %q: %s", o.Long, v, why), exit: exitFile}
}

func setRTFrame(st *state, o *Option, v string) error {
	f, ok := parseSeconds(v)
	if !ok || f == 0 {
		return rtError(o, v, "want a time longer than 0 (seconds, or with an ms, us or s suffix)")
	}
	st.spec.RTFrame = f
	return nil
}

func setRTBuffer(st *state, o *Option, v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return rtError(o, v, "want a whole number of frames, at least 1")
	}
	st.spec.RTBuffer = n
	return nil
}

func setRTWork(st *state, o *Option, v string) error {
	var work []float64
	for _, f := range strings.Split(v, ",") {
		w, ok := parseSeconds(f)
		if !ok || w == 0 {
			return rtError(o, v, fmt.Sprintf("%q is not a time longer than 0", f))
		}
		work = append(work, w)
	}
	st.spec.RTWork = work
	return nil
}

// finishPeriodic checks a periodic job once every source has been read:
// work needs a frame, each process's work must be shorter than a frame,
// and one value per -n process or one for all.
func finishPeriodic(sp *api.JobSpec) error {
	bad := func(opt, msg string) error {
		return &Error{Msg: "error: Invalid --" + opt + " specification: " + msg, Exit: exitFile}
	}
	if sp.RTFrame == 0 {
		if len(sp.RTWork) > 0 || sp.RTBuffer > 0 {
			return bad("rt-frame", "--rt-work and --rt-buffer need --rt-frame")
		}
		return nil
	}
	if len(sp.RTWork) == 0 {
		return bad("rt-work", "--rt-frame needs the work per frame of the processes (--rt-work)")
	}
	// The RT admission places a periodic job's processes and it holds a
	// CPU share, not nodes or resources: options that choose nodes or ask
	// for resources would be ignored, so they are refused.
	for _, c := range []struct {
		set  bool
		name string
	}{
		{sp.Nodes > 1 || sp.NodesMax > 1, "--nodes"}, {sp.NodeList != "", "--nodelist"}, {sp.Exclude != "", "--exclude"},
		{sp.Constraint != "", "--constraint"}, {sp.Load > 0, "--load"}, {sp.CPUsPerTask > 0, "--cpus-per-task"},
		{sp.NTasksPerNode > 0, "--ntasks-per-node"}, {sp.MemMB > 0 || sp.MemAll || sp.MemPerCPU > 0 || sp.MemPerGPU > 0, "--mem"},
		{sp.Gres != "" || sp.GPUs != "" || sp.GPUsPerNode != "" || sp.GPUsPerTask != "", "--gres/--gpus"},
		// Admitted means started at submit: nothing may defer it.
		{sp.Hold, "--hold"}, {sp.Begin != 0, "--begin"}, {sp.Deadline != 0, "--deadline"}, {sp.Reservation != "", "--reservation"},
	} {
		if c.set {
			return bad("rt-frame", c.name+" cannot be used with a periodic job: the real-time admission places its processes")
		}
	}
	if sp.RTBuffer == 0 {
		sp.RTBuffer = 1
	}
	switch {
	case len(sp.RTWork) == 1 && sp.NTasks > 1:
		w := sp.RTWork[0]
		sp.RTWork = make([]float64, sp.NTasks)
		for k := range sp.RTWork {
			sp.RTWork[k] = w
		}
	case sp.NTasks > 0 && len(sp.RTWork) != sp.NTasks:
		return bad("rt-work", fmt.Sprintf("%d values for -n %d processes: give one for all or one per process", len(sp.RTWork), sp.NTasks))
	}
	for k, w := range sp.RTWork {
		if w > sp.RTFrame {
			return bad("rt-work", fmt.Sprintf("process %d needs %gs per frame, longer than the --rt-frame of %gs", k, w, sp.RTFrame))
		}
	}
	sp.NTasks = len(sp.RTWork)
	return nil
}

func isLetter(b byte) bool { return (b|0x20) >= 'a' && (b|0x20) <= 'z' }

// mailTypes are the events --mail-type names (Slurm's parse_mail_type).
var mailTypes = map[string]bool{"NONE": true, "BEGIN": true, "END": true, "FAIL": true, "REQUEUE": true,
	"ALL": true, "TIME_LIMIT": true, "TIME_LIMIT_90": true, "TIME_LIMIT_80": true, "TIME_LIMIT_50": true,
	"ARRAY_TASKS": true, "INVALID_DEPEND": true, "STAGE_OUT": true}

// setMailType reads a comma-separated list of events, case-insensitive;
// one unknown event refuses the whole value with Slurm's text. Repeated
// options add up, as in Slurm (opt.mail_type |= ...).
func setMailType(st *state, o *Option, v string) error {
	var events []string
	for _, e := range strings.Split(v, ",") {
		e = strings.ToUpper(strings.TrimSpace(e))
		if !mailTypes[e] {
			return &optError{msg: "--mail-type=" + v + " invalid"}
		}
		events = append(events, e)
	}
	if st.spec.MailType != "" {
		events = append(strings.Split(st.spec.MailType, ","), events...)
	}
	st.spec.MailType = strings.Join(events, ",")
	return nil
}
