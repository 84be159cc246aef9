package sbatch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
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
	// Pre is printed before Msg without the program's name, as
	// Slurm's own parsers print their lines (parse_time).
	Pre string
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

// ParseCommandLine parses the command line of command c (sbatch, srun,
// salloc) with its table from the registry; parsing stops at the first
// argument that is not an option (the script or program). A getopt error
// is an *Error with glibc's line, Slurm's "Try ..." hint and exit 255;
// --help, --usage and --version anywhere give ErrHelp, ErrUsage and
// ErrVersion, which the command answers with Help(c), Usage(c) and its
// version line, exit 0.
func ParseCommandLine(c Command, argv []string) (*Parsed, error) {
	p, err := Getopt(GetoptTable(c), argv, true)
	if err != nil {
		var ue *UsageError
		if errors.As(err, &ue) {
			return nil, &Error{Msg: UsageErrorText(c, ue.Msg), Exit: exitOption}
		}
		return nil, err
	}
	for _, v := range p.Values {
		switch v.Key {
		case "help":
			return nil, ErrHelp
		case "usage":
			return nil, ErrUsage
		case "version":
			return nil, ErrVersion
		}
	}
	return p, nil
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
	p, err := ParseCommandLine(Sbatch, in.Argv)
	if err != nil {
		return nil, nil, err
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
		dp, err := Getopt(GetoptTable(Sbatch), d.Words, false)
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
	envSettings := envSettingsFor(Sbatch, envMap)
	if _, ok := p.Last("ignore-pbs"); ok {
		ignorePBS = true
	}
	if !ignorePBS {
		pbs, err := TranslatePBS(script, file)
		if err != nil {
			return nil, nil, err
		}
		for _, d := range pbs {
			dp, err := Getopt(GetoptTable(Sbatch), d.Words, false)
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

	st := &state{cmd: Sbatch, spec: spec, flags: flags, in: in}
	for _, s := range all {
		o := Lookup(Sbatch, s.key)
		if o == nil || o.Set == nil {
			continue // accepted without effect, or handled above
		}
		if err := o.Set(st, o, s.val); err != nil {
			e := &Error{Msg: "error: " + err.Error(), Exit: exitOption}
			var oe *optError
			if errors.As(err, &oe) && oe.exit != 0 {
				e.Exit = oe.exit
			}
			if oe != nil {
				e.Pre = oe.pre
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
		if _, err := Getopt(GetoptTable(Sbatch), []string{w}, false); err != nil {
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

// envSettingsFor returns the settings command c's input environment
// variables make (each option's EnvNames; the first of several names that
// is set wins), ordered by variable name so that the result does not depend
// on the table's order. A flag option is set when its variable is empty,
// "yes" or a non-zero number.
func envSettingsFor(c Command, env map[string]string) []setting {
	var out []setting
	for _, o := range OptionsOf(c) {
		for _, name := range o.Env.For(c) {
			val, ok := env[name]
			if !ok {
				continue
			}
			if o.Arg == NoArg {
				if !envFlagSet(val) {
					break
				}
				val = ""
			}
			out = append(out, setting{o.Key(), "--" + o.Long, val, "environment variable " + name})
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].where < out[j].where })
	return out
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
	cmd   Command
	spec  *api.JobSpec
	flags *Flags
	in    Input

	export    string
	exportSet bool
	input     string // --input, kept for --load
}

// finish derives what depends on several options.
func (st *state) finish() error {
	sp := st.spec
	if sp.NTasks > 0 && sp.Nodes > sp.NTasks {
		// Slurm (opt.c): fewer tasks than nodes shrinks the node count.
		st.flags.Warnings = append(st.flags.Warnings, fmt.Sprintf(
			"warning: can't run %d processes on %d nodes, setting nnodes to %d", sp.NTasks, sp.Nodes, sp.NTasks))
		sp.Nodes = sp.NTasks
		if sp.NodesMax > 0 {
			sp.NodesMax = max(sp.NTasks, sp.Nodes)
		}
	}
	if err := finishPeriodic(sp); err != nil {
		return err
	}
	if sp.NTasksPerNode > 0 && sp.NTasks == 0 {
		sp.NTasks = sp.NTasksPerNode * max(sp.Nodes, 1)
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

func nodeCount(s string) (int, bool) { return scaledCount(s, "km") }

// scaledCount reads at most nine digits with an optional suffix among
// suffixes (k = 1024, m = 1024², g = 1024³, either case).
func scaledCount(s, suffixes string) (int, bool) {
	mult := 1
	if s != "" {
		c := s[len(s)-1] | 0x20 // lower case
		if k := strings.IndexByte(suffixes, c); k >= 0 && c >= 'a' {
			mult = 1 << (10 * (strings.IndexByte("kmg", c) + 1))
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
