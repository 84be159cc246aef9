package sbatch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	"hora/api"
)

// Input is everything BuildSpec may look at; it does no other I/O, so the
// command and the tests drive it the same way.
type Input struct {
	Argv     []string // without the program name
	Env      []string // KEY=VAL, the submitting environment
	Cwd      string   // absolute
	Stdin    io.Reader
	ReadFile func(string) ([]byte, error)
	Now      time.Time
	Hostname string
}

// Flags are the options that change what the sbatch command does rather
// than what the job is.
type Flags struct {
	Parsable, TestOnly, Wait, Quiet bool
	// Warnings are lines for stderr, each printed after "sbatch: "
	// (they carry their own "error: "/"warning: " prefix).
	Warnings []string
}

// Error is a submission-side error in Slurm's words: Msg is the text sbatch
// prints after "sbatch: " (several lines when Slurm prints several; lines
// that do not start with "error: "/"fatal: " are printed bare, like the
// "Try ..." hint), Exit the process exit status.
type Error struct {
	Msg  string
	Exit int
}

func (e *Error) Error() string { return e.Msg }

// ErrHelp, ErrUsage and ErrVersion are returned when --help, --usage or
// --version appear among other arguments: the command prints the text and
// exits 0, submitting nothing, as sbatch does.
var (
	ErrHelp    = errors.New("--help requested")
	ErrUsage   = errors.New("--usage requested")
	ErrVersion = errors.New("--version requested")
)

// Exit statuses: sbatch exits with error_exit (1) for file and script
// problems and with -1 (255) for option errors — measured on Slurm 22.05,
// which wins over the man page (COMPAT.md "Measured").
const (
	exitFile   = 1
	exitOption = 255
)

func usageError(msg string) *Error {
	return &Error{Msg: msg + "\nTry \"sbatch --help\" for more information", Exit: exitOption}
}

// wrapHeader is the script sbatch writes around --wrap (COMPAT.md §1.1).
const wrapHeader = "#!/bin/sh\n# This script was created by sbatch --wrap.\n\n"

// setting is one option value with where it came from, so that an error
// can name the place.
type setting struct {
	key, name, val string
	where          string // "" for the command line
}

// BuildSpec turns an sbatch invocation into a job spec: it reads the
// script (file, stdin or --wrap), checks it as sbatch does, reads its
// #SBATCH and #PBS directives, and applies script < #PBS < SBATCH_*
// environment < command line (COMPAT.md §1.2). Errors are *Error values
// with Slurm's text and exit status.
func BuildSpec(in Input) (*api.JobSpec, *Flags, error) {
	p, err := Getopt(SbatchOptions, in.Argv, true)
	if err != nil {
		var ue *UsageError
		if errors.As(err, &ue) {
			return nil, nil, usageError(ue.Msg)
		}
		return nil, nil, err
	}
	for _, v := range p.Values {
		switch v.Key {
		case "help":
			return nil, nil, ErrHelp
		case "usage":
			return nil, nil, ErrUsage
		case "version":
			return nil, nil, ErrVersion
		}
	}
	envMap := map[string]string{}
	for _, kv := range in.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			envMap[k] = v
		}
	}

	spec := &api.JobSpec{WorkDir: in.Cwd, SubmitHost: in.Hostname}
	flags := &Flags{}

	// The script.
	var script []byte
	file := "stdin"
	wrap, isWrap := p.Last("wrap")
	switch {
	case isWrap:
		if len(p.Args) > 0 {
			return nil, nil, &Error{Msg: "error: Script arguments not permitted with --wrap option", Exit: exitFile}
		}
		script = []byte(wrapHeader + wrap.Val + "\n")
		spec.Name = "wrap"
	case len(p.Args) > 0:
		name := p.Args[0]
		abs, body, err := readScript(in, envMap, name)
		if err != nil {
			return nil, nil, &Error{Msg: "error: Unable to open file " + name, Exit: exitFile}
		}
		// Slurm names the script by its basename in directive errors
		// ("stdin" otherwise).
		script, file = body, path.Base(name)
		spec.Command = abs
		spec.Args = append([]string(nil), p.Args[1:]...)
		spec.Name = path.Base(name)
	default:
		if in.Stdin != nil {
			b, err := io.ReadAll(in.Stdin)
			if err != nil {
				return nil, nil, &Error{Msg: "error: Unable to read batch script from stdin", Exit: exitFile}
			}
			script = b
		}
		spec.Name = "sbatch"
	}
	if err := checkScript(script); err != nil {
		return nil, nil, err
	}
	spec.Script = string(script)

	// Collect settings in increasing precedence.
	var all []setting
	dirs, warns, err := ScanDirectives(script, file)
	if err != nil {
		return nil, nil, err
	}
	flags.Warnings = append(flags.Warnings, warns...)
	ignorePBS := false
	for _, d := range dirs {
		for _, w := range d.Words {
			if w == "hetjob" || w == "packjob" {
				return nil, nil, &Error{Msg: fmt.Sprintf("error: %s:%d: hora does not support heterogeneous jobs (#SBATCH %s)", file, d.Line, w), Exit: exitOption}
			}
		}
		dp, err := Getopt(SbatchOptions, d.Words, false)
		if err != nil || len(dp.Args) > 0 {
			return nil, nil, &Error{Msg: "error: Invalid directive found in batch script: " + badWord(d.Words, dp), Exit: exitOption}
		}
		for _, v := range dp.Values {
			switch v.Key {
			case "wrap", "help", "usage", "version":
				return nil, nil, &Error{Msg: "error: Invalid directive found in batch script: " + v.Name, Exit: exitOption}
			case "ignore-pbs":
				ignorePBS = true
			}
			all = append(all, setting{v.Key, v.Name, v.Val, fmt.Sprintf("%s:%d", file, d.Line)})
		}
	}
	// Slurm skips #PBS whenever SBATCH_IGNORE_PBS exists, whatever its
	// value (opt.c _opt_wrpr_batch_script).
	if _, ok := envMap["SBATCH_IGNORE_PBS"]; ok {
		ignorePBS = true
	}
	var envSettings []setting
	for _, e := range sbatchEnv {
		val, ok := envMap[e.Var]
		if !ok {
			continue
		}
		if e.Flag {
			if !envFlagSet(val) {
				continue
			}
			val = ""
		}
		envSettings = append(envSettings, setting{e.Key, "--" + e.Key, val, "environment variable " + e.Var})
	}
	if _, ok := p.Last("ignore-pbs"); ok {
		ignorePBS = true
	}
	if !ignorePBS {
		pbs, err := TranslatePBS(script, file)
		if err != nil {
			return nil, nil, err
		}
		for _, d := range pbs {
			dp, err := Getopt(SbatchOptions, d.Words, false)
			if err != nil {
				// The translator only writes options of the table.
				return nil, nil, fmt.Errorf("sbatch: internal: translated #PBS words %q: %w", d.Words, err)
			}
			for _, v := range dp.Values {
				all = append(all, setting{v.Key, v.Name, v.Val, fmt.Sprintf("%s:%d (#PBS)", file, d.Line)})
			}
		}
	}
	all = append(all, envSettings...)
	for _, v := range p.Values {
		all = append(all, setting{v.Key, v.Name, v.Val, ""})
	}

	st := &state{spec: spec, flags: flags, in: in}
	for _, s := range all {
		if msg := st.apply(s); msg != "" {
			e := &Error{Msg: "error: " + msg, Exit: exitOption}
			if st.exit != 0 {
				e.Exit = st.exit
			}
			if s.where != "" {
				// Slurm names no place; hora adds one so that a bad
				// value in a long script can be found.
				sep := "="
				if !strings.HasPrefix(s.name, "--") {
					sep = " "
				}
				e.Msg += "\nerror: at " + s.where + ": " + s.name + sep + s.val
			}
			return nil, nil, e
		}
	}
	if err := st.finish(); err != nil {
		return nil, nil, err
	}
	return spec, flags, nil
}

// badWord names the offending word of a directive line as sbatch does:
// the option getopt could not take, else the first non-option word.
func badWord(words []string, p *Parsed) string {
	if p != nil && len(p.Args) > 0 {
		return p.Args[0]
	}
	for _, w := range words {
		if !strings.HasPrefix(w, "-") {
			continue
		}
		if _, err := Getopt(SbatchOptions, []string{w}, false); err != nil {
			return w
		}
	}
	return strings.Join(words, " ")
}

// devNullIfNone maps Slurm's "none" file name (any case) to /dev/null.
func devNullIfNone(v string) string {
	if strings.EqualFold(v, "none") {
		return "/dev/null"
	}
	return v
}

func envFlagSet(v string) bool {
	if v == "" || strings.EqualFold(v, "yes") {
		return true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return err == nil && n != 0
}

// readScript resolves the script argument as sbatch does: a name starting
// with '.' or '/' is taken relative to the cwd (or absolute); any other
// name is tried in the cwd, then, if it has no '/', along $PATH.
func readScript(in Input, env map[string]string, name string) (string, []byte, error) {
	if in.ReadFile == nil {
		return "", nil, errors.New("no ReadFile")
	}
	cand := []string{absPath(in.Cwd, name)}
	if !strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "/") && !strings.Contains(name, "/") {
		for _, dir := range strings.Split(env["PATH"], ":") {
			if dir != "" {
				cand = append(cand, absPath(in.Cwd, path.Join(dir, name)))
			}
		}
	}
	var err error
	for _, c := range cand {
		var b []byte
		if b, err = in.ReadFile(c); err == nil {
			return c, b, nil
		}
	}
	return "", nil, err
}

func absPath(cwd, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(cwd, p)
}

// checkScript runs sbatch's sanity checks on the script body (COMPAT.md
// §1.1), in Slurm's order, with its texts.
func checkScript(b []byte) error {
	fail := func(lines ...string) error {
		return &Error{Msg: "error: " + strings.Join(lines, "\nerror: "), Exit: exitFile}
	}
	switch {
	case len(b) == 0:
		return fail("Batch script is empty!")
	case len(bytes.TrimSpace(b)) == 0:
		return fail("Batch script contains only whitespace!")
	case !bytes.HasPrefix(b, []byte("#!")):
		return fail("This does not look like a batch script.  The first",
			"line must start with #! followed by the path to an interpreter.",
			"For instance: #!/bin/sh")
	case bytes.IndexByte(b, 0) >= 0:
		return fail("The Slurm controller does not allow scripts that",
			"contain a NULL character '\\0'.")
	case bytes.Contains(b, []byte("\r\n")):
		return fail("Batch script contains DOS line breaks (\\r\\n)",
			"instead of expected UNIX line breaks (\\n).")
	}
	return nil
}

// state accumulates settings; later settings override earlier ones.
type state struct {
	spec  *api.JobSpec
	flags *Flags
	in    Input

	export        string
	exportSet     bool
	memSet        bool   // --mem given (beats --mem-per-cpu given earlier)
	memPerCPU     int64  // MiB, from --mem-per-cpu
	ntasksPerNode int    // --ntasks-per-node
	input         string // --input, kept for --load
	exit          int    // exit status of the error apply reported, 0 = exitOption
}

// apply applies one setting and returns Slurm's error text for a bad value
// (without "error: "), or "".
func (st *state) apply(s setting) string {
	sp := st.spec
	v := s.val
	switch s.key {
	case "job-name":
		sp.Name = v
	case "output":
		sp.Stdout = devNullIfNone(v)
	case "error":
		sp.Stderr = devNullIfNone(v)
	case "input":
		sp.Stdin = devNullIfNone(v)
		st.input = v
	case "chdir":
		sp.WorkDir = absPath(st.in.Cwd, v)
	case "partition":
		sp.Partition = v
	case "reservation":
		sp.Reservation = v
	case "qos":
		sp.QOS = v
	case "account":
		sp.Account = v
	case "comment":
		sp.Comment = v
	case "hold":
		sp.Hold = true
	case "requeue":
		// Neither flag leaves the choice to the cluster (job_requeue).
		sp.Requeue, sp.NoRequeue = true, false
	case "no-requeue":
		sp.Requeue, sp.NoRequeue = false, true
	case "parsable":
		st.flags.Parsable = true
	case "test-only":
		st.flags.TestOnly = true
	case "wait":
		st.flags.Wait = true
	case "quiet":
		st.flags.Quiet = true
	case "open-mode":
		// Slurm looks at the first letter only.
		switch {
		case v != "" && (v[0] == 'a' || v[0] == 'A'):
			sp.OpenAppend = true
		case v != "" && (v[0] == 't' || v[0] == 'T'):
			sp.OpenAppend = false
		default:
			return "Invalid --open-mode specification"
		}
	case "time", "time-min":
		secs, err := ParseSlurmDuration(v)
		if err != nil {
			return "Invalid --" + s.key + " specification"
		}
		if s.key == "time" {
			sp.TimeLimit = secs
		} else {
			sp.TimeMin = secs
		}
	case "begin", "deadline":
		t, err := ParseSlurmTime(v, st.in.Now)
		if err != nil {
			return "Invalid --" + s.key + " specification"
		}
		if s.key == "begin" {
			sp.Begin = t.Unix()
		} else {
			sp.Deadline = t.Unix()
		}
	case "nodes":
		lo, hi, msg := parseNodeRange(v)
		if msg != "" {
			return msg
		}
		sp.Nodes, sp.NodesMax = lo, hi
	case "ntasks", "cpus-per-task", "ntasks-per-node":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			st.exit = exitFile // Slurm's parse_int exits with 1
			return fmt.Sprintf("Invalid numeric value %q for --%s.", v, s.key)
		}
		switch s.key {
		case "ntasks":
			sp.NTasks = n
		case "cpus-per-task":
			sp.CPUsPerTask = n
		default:
			st.ntasksPerNode = n
		}
	case "mem":
		mb, err := ParseMemMB(v)
		if err != nil {
			return "Invalid --mem specification"
		}
		sp.MemMB, st.memSet, st.memPerCPU = mb, true, 0
	case "mem-per-cpu":
		mb, err := ParseMemMB(v)
		if err != nil {
			return "Invalid --mem-per-cpu specification"
		}
		st.memPerCPU, st.memSet = mb, false
	case "export":
		st.export, st.exportSet = v, true
	case "load":
		f, err := ParseSize(v)
		if err != nil || f <= 0 {
			return "Invalid --load specification"
		}
		sp.Load = f
	case "array":
		// Checked by horad against its MaxArraySize, as slurmctld does:
		// every refusal is "Invalid job array specification".
		sp.Array = v
	case "dependency":
		// Also checked by horad, which knows the jobs it names.
		sp.Dependency = v
	case "kill-on-invalid-dep":
		switch strings.ToLower(v) {
		case "yes", "kill":
			sp.KillOnInvalidDep = "yes"
		case "no", "nokill":
			sp.KillOnInvalidDep = "no"
		default:
			return "Invalid --kill-on-invalid-dep specification"
		}
	case "ignore-pbs", "wrap":
		// Handled before the settings are applied.
	default:
		if !passThrough[s.key] {
			return "internal: option --" + s.key + " has no handler"
		}
	}
	return ""
}

// finish derives what depends on several options.
func (st *state) finish() error {
	sp := st.spec
	if st.ntasksPerNode > 0 && sp.NTasks == 0 {
		sp.NTasks = st.ntasksPerNode * max(sp.Nodes, 1)
	}
	if st.memPerCPU > 0 && !st.memSet {
		// Per node: CPUs per task times the tasks that share a node.
		tasksPerNode := 1
		if sp.NTasks > 0 {
			n := max(sp.Nodes, 1)
			tasksPerNode = (sp.NTasks + n - 1) / n
		}
		sp.MemMB = st.memPerCPU * int64(max(sp.CPUsPerTask, 1)) * int64(tasksPerNode)
	}
	if sp.Load > 0 && st.input != "" {
		// hora's divisible jobs read their load from --input (DESIGN.md
		// §1); relative paths are relative to the job's directory.
		sp.Input = absPath(sp.WorkDir, st.input)
	}
	if st.exportSet {
		sp.Export = st.export
	}
	env, err := exportEnv(st.in.Env, st.export, st.exportSet)
	if err != nil {
		return err
	}
	sp.Env = env
	return nil
}

// parseNodeRange reads -N min[-max], each count optionally with a k
// (×1024) or m (×1048576) suffix, with Slurm's messages (proc_args.c
// verify_node_count): a single count must be positive, a range's minimum
// of 0 means 1.
func parseNodeRange(v string) (int, int, string) {
	notValid := func(s string) string { return fmt.Sprintf("%q is not a valid node count", s) }
	lo, hi, isRange := strings.Cut(v, "-")
	a, ok := nodeCount(lo)
	if !isRange {
		if !ok || a == 0 {
			return 0, 0, notValid(v)
		}
		return a, 0, ""
	}
	if !ok {
		return 0, 0, notValid(lo)
	}
	a = max(a, 1)
	b, ok := nodeCount(hi)
	if !ok {
		return 0, 0, notValid(hi)
	}
	if b < a {
		return 0, 0, fmt.Sprintf("Maximum node count %d is less than minimum node count %d", b, a)
	}
	return a, b, ""
}

func nodeCount(s string) (int, bool) {
	mult := 1
	if s != "" {
		switch s[len(s)-1] {
		case 'k', 'K':
			mult = 1024
		case 'm', 'M':
			mult = 1024 * 1024
		}
		if mult > 1 {
			s = s[:len(s)-1]
		}
	}
	if s == "" || !allDigits(s) || len(s) > 9 {
		return 0, false
	}
	n, _ := strconv.Atoi(s)
	return n * mult, true
}

// exportEnv computes the job's environment from --export (COMPAT.md §1.3):
// ALL (default) = the whole submit environment; NONE or NIL = only SLURM_*
// variables; a list adds VAR=value entries and VAR names taken from the
// submit environment, on top of everything when ALL is in the list and on
// top of SLURM_* only otherwise.
func exportEnv(env []string, export string, set bool) ([]string, error) {
	if !set || strings.EqualFold(export, "ALL") {
		return append([]string(nil), env...), nil
	}
	slurmOnly := func() []string {
		var out []string
		for _, kv := range env {
			if strings.HasPrefix(kv, "SLURM_") {
				out = append(out, kv)
			}
		}
		return out
	}
	if strings.EqualFold(export, "NONE") || strings.EqualFold(export, "NIL") {
		return slurmOnly(), nil
	}
	parts := strings.Split(export, ",")
	all := false
	for _, p := range parts {
		if strings.EqualFold(p, "ALL") {
			all = true
		}
	}
	out := slurmOnly()
	if all {
		out = append([]string(nil), env...)
	}
	lookup := func(k string) (string, bool) {
		for i := len(env) - 1; i >= 0; i-- {
			if key, val, ok := strings.Cut(env[i], "="); ok && key == k {
				return val, true
			}
		}
		return "", false
	}
	setVar := func(k, v string) {
		for i, kv := range out {
			if key, _, _ := strings.Cut(kv, "="); key == k {
				out[i] = k + "=" + v
				return
			}
		}
		out = append(out, k+"="+v)
	}
	for _, p := range parts {
		if p == "" || strings.EqualFold(p, "ALL") {
			continue
		}
		if strings.EqualFold(p, "NONE") || strings.EqualFold(p, "NIL") {
			return nil, &Error{Msg: "error: Invalid --export specification: " + export, Exit: exitOption}
		}
		if k, v, ok := strings.Cut(p, "="); ok {
			if k == "" {
				return nil, &Error{Msg: "error: Invalid --export specification: " + export, Exit: exitOption}
			}
			setVar(k, v)
		} else if v, ok := lookup(p); ok {
			setVar(p, v)
		}
	}
	return out, nil
}
