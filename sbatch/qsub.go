package sbatch

// qsub's language (COMPAT.md §6.1): its options, #PBS directives read as
// qsub reads them (up to the first executable line, -C/PBS_DPREFIX prefix,
// backslash continuation, command line over directives), -l resources, and
// the texts and exit statuses of OpenPBS and Torque for bad input. Pure:
// BuildQsubSpec does no I/O but through its Input.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"hora/api"
)

// PBS flavours (hora.toml [pbs] flavour).
const (
	FlavourOpenPBS = "openpbs"
	FlavourTorque  = "torque"
)

// PBS error numbers (OP:src/include/pbs_error.h, the same in Torque). A PBS
// client exits with the number, which the kernel truncates to 8 bits.
const (
	PBSEUnkJobID  = 15001
	PBSEPerm      = 15007
	PBSESystem    = 15010
	PBSEBadAtVal  = 15014
	PBSEBadState  = 15016
	PBSEUnkQue    = 15018
	PBSEUnkResc   = 15035
	PBSEExcQResc  = 15036
	PBSEHistJobID = 15139
)

// PBSExit is the exit status a PBS client's exit(pbs_errno) gives.
func PBSExit(errno int) int { return errno & 0xff }

// PBSError is a PBS client's refusal: Text is everything it prints on
// stderr (whole lines, with their "qsub: " prefixes), Exit its status.
type PBSError struct {
	Text string
	Exit int
}

func (e *PBSError) Error() string { return strings.TrimRight(e.Text, "\n") }

// QsubInput is everything BuildQsubSpec may look at.
type QsubInput struct {
	Argv     []string // without the program name
	Env      []string // the submitting environment
	Cwd      string
	Stdin    io.Reader
	ReadFile func(string) ([]byte, error)
	IsDir    func(string) bool // for -o/-e naming a directory; nil = never
	Now      time.Time
	Hostname string
	Home     string // the submitting user's home: the job starts there
	User     string
	Flavour  string // FlavourOpenPBS or FlavourTorque
	Server   string // job ids read <seq>.<Server>
}

// QsubFlags change what the qsub command does rather than the job.
type QsubFlags struct {
	NoID  bool // -z: print no job id
	Block bool // -W block=true: wait, exit with the job's exit status
	// Interactive is -I: the job is an allocation (api.JobSpec.Alloc) and
	// qsub runs the user's shell in it over a pty; X11 is -X.
	Interactive, X11 bool
}

// qsubOptionLetters are the options each flavour's getopt takes, and which
// take a value (OP:src/cmds/qsub_sup.c GETOPT_ARGS; TQ:src/cmds/qsub_functions.c).
var qsubOptionLetters = map[string]string{
	FlavourOpenPBS: "a:A:c:C:e:fhIj:J:k:l:m:M:N:o:p:q:r:R:S:u:v:VW:XzP:",
	FlavourTorque:  "a:A:b:c:C:d:D:e:fhIj:J:k:K:l:m:M:nN:o:p:P:q:r:S:t:T:u:v:Vw:W:xXzF:L:",
}

// QsubOptions is qsub's getopt table in a flavour (its man page is built
// from it).
func QsubOptions(flavour string) []Opt { return qsubOpts(flavour) }

func qsubOpts(flavour string) []Opt { return LetterOpts(qsubOptionLetters[flavour]) }

// LetterOpts reads a getopt(3) option string ("ab:c": a letter followed by
// ':' takes a value) into a table of short options keyed by their letter,
// the form the PBS commands' tables are written in.
func LetterOpts(spec string) []Opt {
	var o []Opt
	for i := 0; i < len(spec); i++ {
		op := Opt{Short: rune(spec[i]), Arg: NoArg, Key: string(spec[i])}
		if i+1 < len(spec) && spec[i+1] == ':' {
			op.Arg = RequiredArg
			i++
		}
		o = append(o, op)
	}
	return o
}

// QsubUsage is qsub's usage text in a flavour.
func QsubUsage(flavour string) string { return qsubUsage(flavour) }

// qsubUsage is the usage text each flavour prints after a bad option.
func qsubUsage(flavour string) string {
	if flavour == FlavourTorque {
		// TQ print_qsub_usage_exit: "[<message>]\n\n" then usage and usage2.
		return "usage: qsub [-a date_time] [-A account_string] [-b secs]\n" +
			"    [-c [ none | { enabled | periodic | shutdown |\n" +
			"    depth=<int> | dir=<path> | interval=<minutes>}... ]\n" +
			"    [-C directive_prefix] [-d path] [-D path]\n" +
			"    [-e path] [-h] [-I] [-j oe|eo|n] [-k {oe}] [-K <kill delay seconds>] \n" +
			"    [-l resource_list] [-m n|{abe}] [-M user_list] [-N jobname] [-o path] \n" +
			"    [-p priority] [-P proxy_user [-J <jobid]] [-q queue] [-r y|n] \n" +
			"    [-S path] [-t number_to_submit] [-T type]  [-u user_list] [-w] path\n" +
			"    [-W additional_attributes] [-v variable_list] [-V ] [-x] [-X] [-z] [script]\n"
	}
	return "usage: qsub [-a date_time] [-A account_string] [-c interval]\n" +
		"\t[-C directive_prefix] [-e path] [-f ] [-h ] [-I [-X]] [-j oe|eo] [-J X-Y[:Z]]\n" +
		"\t[-k keep] [-l resource_list] [-m mail_options] [-M user_list]\n" +
		"\t[-N jobname] [-o path] [-p priority] [-P project] [-q queue] [-r y|n]\n" +
		"\t[-R o|e|oe] [-S path] [-u user_list] [-W otherattributes=value...]\n" +
		"\t[-v variable_list] [-V ] [-z] [script | -- command [arg1 ...]]\n" +
		"       qsub --version\n"
}

// usageErr is a command-line refusal: getopt's complaint (or ""), the
// illegal-value line (or ""), then the usage, exit 2 (OP: print_usage +
// exit_qsub(2); TQ: print_qsub_usage_exit puts the line in brackets,
// "exiting" when there is none).
func usageErr(flavour, getoptMsg, illegal string) *PBSError {
	if flavour == FlavourTorque {
		bracket := strings.TrimSuffix(illegal, "\n")
		if bracket == "" {
			bracket = "exiting"
		}
		return &PBSError{Text: getoptMsg + "[" + bracket + "]\n\n" + qsubUsage(flavour) + "\n", Exit: 2}
	}
	return &PBSError{Text: getoptMsg + illegal + qsubUsage(flavour), Exit: 2}
}

// badValue is a refused attribute value, as each flavour's server or
// client library phrases it: OpenPBS's ecl check prints the bare text,
// a server-side check appends the attribute; Torque's qsub wraps the
// server's text in "submit error (...)".
func badValue(flavour string, errno int, attr string, serverSide bool) *PBSError {
	if flavour == FlavourTorque {
		text := "Illegal attribute or resource value for"
		if errno == PBSEUnkResc {
			text = "Unknown resource type "
		}
		return &PBSError{Text: "qsub: submit error (" + text + " " + attr + ")\n", Exit: PBSExit(errno)}
	}
	text := "Illegal attribute or resource value"
	if errno == PBSEUnkResc {
		text, serverSide = "Unknown resource", true
	}
	if serverSide {
		text += " " + attr
	}
	return &PBSError{Text: "qsub: " + text + "\n", Exit: PBSExit(errno)}
}

// qsubSetting is one option occurrence, from a directive (line > 0) or
// the command line (line 0).
type qsubSetting struct {
	key, val string
	line     int
}

// BuildQsubSpec turns a qsub invocation into a job spec.
func BuildQsubSpec(in QsubInput) (*api.JobSpec, *QsubFlags, error) {
	fl := in.Flavour
	if fl == "" {
		fl = FlavourOpenPBS
	}
	opts := qsubOpts(fl)
	argv, command := splitDoubleDash(opts, in.Argv)
	p, err := Getopt(opts, argv, true)
	if err != nil {
		msg := err.Error()
		if ue, ok := err.(*UsageError); ok {
			msg = ue.Msg
		}
		return nil, nil, usageErr(fl, "qsub: "+msg+"\n", "")
	}
	if command != nil && len(p.Args) > 0 || len(p.Args) > 1 {
		// OP: a script and "-- command", or words after the script.
		return nil, nil, usageErr(fl, "", "")
	}
	if command != nil && len(command) == 0 {
		return nil, nil, usageErr(fl, "", "")
	}
	envMap := map[string]string{}
	for _, kv := range in.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			envMap[k] = v
		}
	}

	spec := &api.JobSpec{SubmitHost: in.Hostname, PBS: &api.PBSSpec{Server: in.Server, Flavour: fl}}
	flags := &QsubFlags{}

	// The script: a file, stdin, or "-- command args".
	var script []byte
	name := "STDIN"
	switch {
	case command != nil:
		var b strings.Builder
		b.WriteString("#!/bin/sh\nexec")
		for _, w := range command {
			b.WriteString(" '" + strings.ReplaceAll(w, "'", `'\''`) + "'")
		}
		b.WriteString("\n")
		script = []byte(b.String())
	case len(p.Args) == 1 && p.Args[0] != "-":
		file := p.Args[0]
		abs := file
		if !path.IsAbs(abs) {
			abs = path.Join(in.Cwd, file)
		}
		if in.IsDir != nil && in.IsDir(abs) {
			return nil, nil, &PBSError{Text: "qsub: script not a file\n", Exit: 1}
		}
		b, err := in.ReadFile(abs)
		if err != nil {
			reason := "No such file or directory"
			if !errors.Is(err, fs.ErrNotExist) {
				reason = "Permission denied"
			}
			if fl == FlavourTorque {
				return nil, nil, &PBSError{Text: fmt.Sprintf("qsub: script file '%s' cannot be loaded - %s\n", file, reason), Exit: 1}
			}
			return nil, nil, &PBSError{Text: "qsub: script file:: " + reason + "\n", Exit: 1}
		}
		script = b
		name = path.Base(file)
		spec.Command = abs
	default:
		// -I without a script reads no script: stdin is the terminal
		// the job will use (OP qsub.c get_script only when !Interact_opt).
		if _, interactive := p.Last("I"); in.Stdin != nil && !interactive {
			b, err := io.ReadAll(in.Stdin)
			if err != nil {
				return nil, nil, &PBSError{Text: "qsub: error reading script file\n", Exit: 5}
			}
			script = b
		}
	}

	// Directives, then the command line over them.
	prefix := "#PBS"
	if v, ok := envMap["PBS_DPREFIX"]; ok {
		prefix = v
	}
	if v, ok := p.Last("C"); ok {
		prefix = v.Val
	}
	var all []qsubSetting
	if command == nil {
		body, dirs, perr := scanQsubDirectives(script, prefix, fl, opts)
		if perr != nil {
			return nil, nil, perr
		}
		script = body
		all = dirs
	}
	for _, v := range p.Values {
		all = append(all, qsubSetting{v.Key, v.Val, 0})
	}
	spec.Script = string(script)
	spec.Name = name

	st := &qsubState{in: in, fl: fl, spec: spec, flags: flags, res: map[string]string{}, env: envMap,
		reg: &state{cmd: Sbatch, spec: spec, flags: &Flags{}}}
	for _, s := range all {
		if err := st.apply(s); err != nil {
			return nil, nil, err
		}
	}
	if err := st.finish(); err != nil {
		return nil, nil, err
	}
	return spec, flags, nil
}

// splitDoubleDash finds qsub's "--" (the executable form), skipping the
// values of options, and returns the options before it and the command
// after it (nil when there is none).
func splitDoubleDash(opts []Opt, argv []string) ([]string, []string) {
	takes := map[byte]bool{}
	for _, o := range opts {
		takes[byte(o.Short)] = o.Arg == RequiredArg
	}
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			return argv[:i], append([]string{}, argv[i+1:]...)
		}
		if len(a) < 2 || a[0] != '-' {
			return argv, nil // the script: what follows is not qsub's
		}
		for k := 1; k < len(a); k++ {
			if takes[a[k]] {
				if k == len(a)-1 {
					i++ // the value is the next word
				}
				break
			}
		}
	}
	return argv, nil
}

// scanQsubDirectives reads the directives of script as qsub's get_script
// does (OP:src/cmds/qsub_sup.c): each line whose first non-blank text is
// the prefix, until the first executable line (not blank, not starting
// with '#', ':' or "#!"); a trailing backslash continues a directive. An
// empty prefix reads none. It returns the script as the job will get it
// (Torque turns CRLF into LF; OpenPBS refuses it) and the settings.
func scanQsubDirectives(script []byte, prefix, fl string, opts []Opt) ([]byte, []qsubSetting, *PBSError) {
	var out []qsubSetting
	exec := false
	var body bytes.Buffer
	rest := script
	n := 0
	for len(rest) > 0 {
		n++
		var line []byte
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			line, rest = rest, nil
		}
		if bytes.HasSuffix(line, []byte("\r\n")) {
			if fl != FlavourTorque {
				return nil, nil, &PBSError{Text: "qsub: script contains cr, lf\n", Exit: 1}
			}
			line = append(line[:len(line)-2:len(line)-2], '\n')
		}
		body.Write(line)
		if exec {
			continue
		}
		text := strings.TrimRight(string(line), "\n")
		trimmed := strings.TrimLeft(text, " \t")
		if prefix != "" && strings.HasPrefix(trimmed, prefix) {
			dir := trimmed[len(prefix):]
			first := n
			for strings.HasSuffix(dir, "\\") && len(rest) > 0 {
				var next []byte
				if i := bytes.IndexByte(rest, '\n'); i >= 0 {
					next, rest = rest[:i+1], rest[i+1:]
				} else {
					next, rest = rest, nil
				}
				n++
				body.Write(next)
				dir = dir[:len(dir)-1] + strings.TrimRight(string(next), "\r\n")
			}
			words := qsubWords(dir)
			dp, err := Getopt(opts, words, true)
			if err != nil || len(dp.Args) > 0 {
				msg := ""
				if ue, ok := err.(*UsageError); ok {
					msg = "qsub: " + ue.Msg + "\n"
				}
				if fl == FlavourTorque {
					return nil, nil, usageErr(fl, msg, "")
				}
				// OP do_dir: "qsub: directive error: " and every word
				// followed by a blank.
				return nil, nil, &PBSError{Text: msg + "qsub: directive error: " + strings.Join(words, " ") + " \n", Exit: 1}
			}
			for _, v := range dp.Values {
				if v.Key == "C" {
					continue // the prefix is chosen before the script is read
				}
				out = append(out, qsubSetting{v.Key, v.Val, first})
			}
			continue
		}
		if !(strings.HasPrefix(text, ":") || strings.HasPrefix(text, "#!")) && trimmed != "" && trimmed[0] != '#' {
			exec = true
		}
	}
	return body.Bytes(), out, nil
}

// qsubWords splits a directive as qsub's make_argv does: blanks separate
// words, quotes group (and are removed), a backslash takes the next byte.
func qsubWords(s string) []string {
	var words []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\'':
			in = true
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				cur.WriteString(s[i+1:])
				i = len(s)
				break
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '\\' && i+1 < len(s):
			in = true
			i++
			cur.WriteByte(s[i])
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			in = true
			cur.WriteByte(c)
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// qsubState accumulates settings: directives first, then the command line,
// the later occurrence of an option (or of one -l resource) winning.
type qsubState struct {
	in    QsubInput
	fl    string
	spec  *api.JobSpec
	flags *QsubFlags
	env   map[string]string

	// reg is the registry's state over the same spec: the qsub options
	// whose value reads as the Slurm option's go through its setter.
	reg *state

	res      map[string]string // -l name → value, the later winning
	resOrder []string
	vars     []string // -v VAR[=val], in order
	exportV  bool
	join     string
	out, err string
	workdir  string // Torque -w: PBS_O_WORKDIR
	initdir  string // Torque -d
	depend   string
	array    string
}

func (st *qsubState) illegal(opt string) *PBSError {
	return usageErr(st.fl, "", "qsub: illegal -"+opt+" value\n")
}

func (st *qsubState) apply(s qsubSetting) *PBSError {
	sp, v := st.spec, s.val
	switch s.key {
	case "N":
		if v == "" {
			return st.illegal("N")
		}
		return st.viaRegistry("-N", v)
	case "q":
		q, _, _ := strings.Cut(v, "@")
		sp.PBS.Queue = q
		return st.viaRegistry("-q", q)
	case "A":
		return st.viaRegistry("-A", v)
	case "h":
		return st.viaRegistry("-h", "")
	case "z":
		st.flags.NoID = true
	case "r":
		switch v {
		case "y", "n":
			return st.viaRegistry("-r "+v, "")
		default:
			return st.illegal("r")
		}
	case "p":
		n, err := strconv.Atoi(v)
		if err != nil || n < -1024 || n > 1023 {
			return st.illegal("p")
		}
	case "j":
		switch v {
		case "oe", "eo", "n":
			st.join = v
		default:
			return st.illegal("j")
		}
	case "o":
		st.out = v
	case "e":
		st.err = v
	case "m":
		// a (abort), b (begin), e (end) are Slurm's FAIL, BEGIN, END;
		// n is none (j, OpenPBS's subjob mail, adds nothing here).
		var types []string
		for _, c := range v {
			if !strings.ContainsRune("abenj", c) {
				return st.illegal("m")
			}
			if t := map[rune]string{'a': "FAIL", 'b': "BEGIN", 'e': "END"}[c]; t != "" {
				types = append(types, t)
			}
		}
		st.spec.MailType = strings.Join(types, ",")
	case "M":
		st.spec.MailUser = v
	case "X":
		st.flags.X11 = true
	case "k", "c", "u", "R", "f", "F", "L", "T", "K", "b", "D", "x", "n":
		// Keep, checkpoint, user list, remove files, foreground
		// and Torque's extras: nothing of them changes how hora runs
		// the job (output is written in place).
	case "P":
		if st.fl == FlavourTorque {
			return &PBSError{Text: "qsub: hora does not run jobs as a proxy user (-P " + v + ")\n", Exit: 2}
		}
		// OpenPBS project: recorded nowhere hora shows yet.
	case "S":
		sp.PBS.Shell = v
	case "a":
		t, ok := ParsePBSDateTime(v, st.in.Now)
		if !ok {
			return st.illegal("a")
		}
		sp.Begin = t.Unix()
	case "l":
		for _, r := range splitResources(v) {
			name, val, ok := strings.Cut(r, "=")
			if !ok || name == "" {
				return st.illegal("l")
			}
			if _, seen := st.res[name]; !seen {
				st.resOrder = append(st.resOrder, name)
			}
			st.res[name] = val
		}
	case "V":
		st.exportV = true
	case "v":
		st.vars = append(st.vars, splitVarList(v)...)
	case "W":
		for _, attr := range splitResources(v) {
			k, val, ok := strings.Cut(attr, "=")
			if !ok {
				return st.illegal("W")
			}
			switch k {
			case "depend":
				st.depend = val
			case "block":
				switch strings.ToLower(val) {
				case "true", "t", "y", "1":
					st.flags.Block = true
				case "false", "f", "n", "0":
					st.flags.Block = false
				default:
					return st.illegal("W")
				}
			case "umask":
				if _, err := strconv.ParseUint(val, 8, 16); err != nil {
					return st.illegal("W")
				}
			case "group_list", "stagein", "stageout", "sandbox", "run_count", "release_nodes_on_stageout",
				"tolerate_node_failures", "x", "pwd", "cred", "interactive":
			default:
				return st.illegal("W")
			}
		}
	case "J", "t":
		st.array = "-" + s.key + " " + v
	case "I":
		st.flags.Interactive = true
	case "d":
		st.initdir = v
	case "w":
		st.workdir = v
	}
	return nil
}

// viaRegistry applies a qsub option through the registry record that
// carries its PBS spelling (sbatch/options.go, Option.PBS), with the
// record's own setter: qsub and sbatch set the job the same way.
func (st *qsubState) viaRegistry(pbs, val string) *PBSError {
	o := OptionByPBS(pbs)
	if o == nil || o.Set == nil {
		return &PBSError{Text: "qsub: internal error: no option record for " + pbs + "\n", Exit: 1}
	}
	if err := o.Set(st.reg, o, val); err != nil {
		return &PBSError{Text: "qsub: illegal " + pbs + " value\n", Exit: 2}
	}
	return nil
}

// OptionByPBS returns the registry record whose PBS spelling is pbs
// ("-N", "-l walltime", "-r n").
func OptionByPBS(pbs string) *Option {
	for i := range Options {
		if Options[i].PBS == pbs {
			return &Options[i]
		}
	}
	return nil
}

// pbsDependency turns PBS's depend=type:id[:id...][,type:...] into Slurm's
// --dependency: the same types (after, afterok, afternotok, afterany) with
// the ids' server parts dropped. PBS's before* and on: have no Slurm form.
func pbsDependency(v string) (string, bool) {
	var out []string
	for _, cond := range strings.Split(v, ",") {
		parts := strings.Split(cond, ":")
		switch parts[0] {
		case "after", "afterok", "afternotok", "afterany":
		default:
			return "", false
		}
		if len(parts) < 2 {
			return "", false
		}
		ids := []string{parts[0]}
		for _, id := range parts[1:] {
			seq, _, _ := strings.Cut(id, ".")
			if seq == "" || !allDigits(strings.TrimSuffix(seq, "[]")) {
				return "", false
			}
			ids = append(ids, seq)
		}
		out = append(out, strings.Join(ids, ":"))
	}
	return strings.Join(out, ","), true
}

// interactive checks -I and -X (OP qsub.c: INTER_ARRAY, "DISPLAY not
// set", "X11 Forwarding possible only for interactive jobs") and makes an
// interactive job an allocation: horad runs no script, qsub runs the shell
// as a step of it. -X hands the job the caller's DISPLAY; hora forwards no
// X11 connection, so this serves nodes that share the caller's display
// (the local executor).
func (st *qsubState) interactive() *PBSError {
	fl, flags := st.fl, st.flags
	if flags.X11 && st.env["DISPLAY"] == "" {
		return usageErr(fl, "", "qsub: DISPLAY not set\n")
	}
	if flags.X11 && !flags.Interactive {
		return &PBSError{Text: "qsub: X11 Forwarding possible only for interactive jobs\n", Exit: 1}
	}
	if !flags.Interactive {
		return nil
	}
	if st.array != "" {
		return usageErr(fl, "", "qsub: interactive and array job submission cannot be used together\n")
	}
	flags.Block = false // OP: "-I" sets block itself
	sp := st.spec
	sp.Alloc, sp.NoRequeue, sp.Script = true, true, ""
	return nil
}

// PBSDependency is pbsDependency for qalter -W depend=.
func PBSDependency(v string) (string, bool) { return pbsDependency(v) }

// splitResources splits a -l or -W list on commas outside quotes.
func splitResources(s string) []string {
	var out []string
	start, q := 0, byte(0)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case q != 0 && c == q:
			q = 0
		case q == 0 && (c == '"' || c == '\''):
			q = c
		case q == 0 && c == ',':
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// splitVarList reads -v: VAR or VAR=value, comma separated, a value
// possibly quoted (toil quotes them with shlex).
func splitVarList(s string) []string {
	var out []string
	for _, item := range splitResources(s) {
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		if ok && len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		if ok {
			out = append(out, k+"="+v)
		} else {
			out = append(out, k)
		}
	}
	return out
}

// finish checks and maps the resources, and derives paths and the
// environment.
func (st *qsubState) finish() *PBSError {
	sp, fl := st.spec, st.fl
	if err := st.interactive(); err != nil {
		return err
	}
	// Arrays and dependencies go through the registry's --array and
	// --dependency setters (PBS spellings -J and -W depend; Torque's -t
	// has --array's syntax too); horad checks them as for sbatch.
	if st.array != "" {
		if err := st.viaRegistry("-J", st.array[3:]); err != nil {
			return err
		}
	}
	if st.depend != "" {
		dep, ok := pbsDependency(st.depend)
		if !ok {
			return st.illegal("W")
		}
		if err := st.viaRegistry("-W depend", dep); err != nil {
			return err
		}
	}
	if err := st.resources(); err != nil {
		return err
	}
	if len(bytes.TrimSpace([]byte(sp.Script))) == 0 && sp.Command == "" && !strings.HasPrefix(sp.Script, "#!") && !sp.Alloc {
		// OpenPBS submits an empty stdin script; it would do nothing.
		sp.Script = "#!/bin/sh\n"
	}

	cwd := st.in.Cwd
	oworkdir := cwd
	if st.workdir != "" {
		oworkdir = absPath(cwd, st.workdir)
	}
	// The job starts in $HOME as PBS's do (Torque: -d sets it).
	sp.WorkDir = st.in.Home
	if sp.WorkDir == "" {
		sp.WorkDir = "/"
	}
	if st.initdir != "" {
		sp.WorkDir = absPath(cwd, st.initdir)
	}

	// Output: NAME.oSEQ / NAME.eSEQ in the submit directory, -o/-e a path
	// or a directory (<seq>.<server>.OU/.ER), -j joins.
	lit := func(s string) string { return strings.ReplaceAll(s, "%", "%%") }
	// A subjob's own files: OpenPBS NAME.oSEQ.INDEX, Torque
	// NAME.oSEQ-INDEX (TQ job_clone appends "-%d" to the paths).
	seq := "%j"
	if st.array != "" {
		seq = "%A.%a"
		if fl == FlavourTorque {
			seq = "%A-%a"
		}
	}
	std := func(given, suffix, dirSuffix string) string {
		if given == "" {
			return path.Join(lit(cwd), lit(sp.Name)+"."+suffix+seq)
		}
		p := pbsOutPath(given, fl, sp.Name, sp.PBS.Server)
		if !path.IsAbs(p) {
			p = path.Join(lit(cwd), p)
		}
		if strings.HasSuffix(given, "/") || (st.in.IsDir != nil && st.in.IsDir(strings.ReplaceAll(p, "%%", "%"))) {
			return path.Join(p, "%j."+lit(sp.PBS.Server)+"."+dirSuffix)
		}
		return p
	}
	outPath, errPath := std(st.out, "o", "OU"), std(st.err, "e", "ER")
	switch st.join {
	case "oe":
		sp.Stdout, sp.Stderr = outPath, ""
	case "eo":
		sp.Stdout, sp.Stderr = errPath, ""
	default:
		sp.Stdout, sp.Stderr = outPath, errPath
	}

	// The environment (OP qsub.1B ENVIRONMENT): PBS_O_* from here, the
	// rest of the submitting environment only with -V, -v variables.
	env := st.env
	var out []string
	if st.exportV {
		out = append(out, st.in.Env...)
	} else {
		out = append(out, "HOME="+st.in.Home, "LOGNAME="+st.in.User, "USER="+st.in.User,
			"PATH=/usr/local/bin:/usr/bin:/bin")
		if sh := env["SHELL"]; sh != "" {
			out = append(out, "SHELL="+sh)
		}
		for _, k := range []string{"LANG", "TZ", "MAIL"} {
			if v, ok := env[k]; ok {
				out = append(out, k+"="+v)
			}
		}
	}
	setO := func(k, v string) { out = append(out, k+"="+v) }
	setO("PBS_O_HOME", st.in.Home)
	setO("PBS_O_HOST", st.in.Hostname)
	logname := env["LOGNAME"]
	if logname == "" {
		logname = st.in.User
	}
	setO("PBS_O_LOGNAME", logname)
	setO("PBS_O_PATH", env["PATH"])
	setO("PBS_O_SHELL", env["SHELL"])
	setO("PBS_O_SYSTEM", "Linux")
	setO("PBS_O_WORKDIR", oworkdir)
	for _, k := range []string{"LANG", "MAIL", "TZ"} {
		if v, ok := env[k]; ok {
			setO("PBS_O_"+k, v)
		}
	}
	if st.initdir != "" {
		setO("PBS_O_INITDIR", sp.WorkDir)
	}
	for _, v := range st.vars {
		if strings.Contains(v, "=") {
			out = append(out, v)
		} else if val, ok := env[v]; ok {
			out = append(out, v+"="+val)
		}
	}
	if st.flags.Interactive {
		// The terminal's type for the shell; the display for -X.
		if v, ok := env["TERM"]; ok {
			out = append(out, "TERM="+v)
		}
		if st.flags.X11 {
			out = append(out, "DISPLAY="+env["DISPLAY"])
		}
	}
	sp.Env = out
	return nil
}

// pbsOutPath drops qsub's "host:" part of an -o/-e path, keeps '%' literal,
// and (Torque) expands $PBS_JOBID and $PBS_JOBNAME, which Torque's server
// substitutes in output paths and toil relies on.
func pbsOutPath(p, fl, name, server string) string {
	if i := strings.IndexByte(p, ':'); i > 0 && !strings.Contains(p[:i], "/") {
		p = p[i+1:]
	}
	p = strings.ReplaceAll(p, "%", "%%")
	if fl == FlavourTorque {
		for _, f := range []struct{ from, to string }{
			{"${PBS_JOBID}", "%j." + strings.ReplaceAll(server, "%", "%%")},
			{"$PBS_JOBID", "%j." + strings.ReplaceAll(server, "%", "%%")},
			{"${PBS_JOBNAME}", strings.ReplaceAll(name, "%", "%%")},
			{"$PBS_JOBNAME", strings.ReplaceAll(name, "%", "%%")},
		} {
			p = strings.ReplaceAll(p, f.from, f.to)
		}
	}
	return p
}

// pbsResourceNames are the -l names hora accepts; others are unknown
// resources, as on a server that has not defined them.
var pbsResourceNames = map[string]bool{
	"walltime": true, "cput": true, "pcput": true, "mem": true, "vmem": true, "pmem": true, "pvmem": true,
	"ncpus": true, "nodes": true, "select": true, "place": true, "ngpus": true, "gpus": true,
	"nodect": true, "mpiprocs": true, "ompthreads": true, "procs": true, "host": true, "arch": true,
	"software": true, "file": true, "naccelerators": true, "other": true,
}

// resources maps -l onto the job's CPUs, memory, nodes and time limit.
func (st *qsubState) resources() *PBSError {
	sp, fl := st.spec, st.fl
	bad := func(name string, serverSide bool) *PBSError {
		return badValue(fl, PBSEBadAtVal, "Resource_List."+name, serverSide)
	}
	count := func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= 0 && allDigits(v)
	}
	var memMB int64
	for _, name := range st.resOrder {
		v := st.res[name]
		if !pbsResourceNames[name] {
			return badValue(fl, PBSEUnkResc, "Resource_List."+name, true)
		}
		switch name {
		case "walltime":
			secs, err := ParsePBSDuration(v)
			if err != nil {
				return bad(name, false)
			}
			if err := st.viaRegistry("-l walltime", FormatLongDuration(secs)); err != nil {
				return err
			}
		case "cput", "pcput":
			if _, err := ParsePBSDuration(v); err != nil {
				return bad(name, false)
			}
		case "mem", "vmem", "pmem", "pvmem":
			mb, err := pbsSizeMB(v)
			if err != nil {
				return bad(name, false)
			}
			if name == "mem" {
				memMB = mb
			}
		case "ncpus", "mpiprocs", "ompthreads", "ngpus", "gpus", "nodect", "procs", "naccelerators":
			n, ok := count(v)
			if !ok {
				return bad(name, false)
			}
			switch name {
			case "ncpus":
				if err := st.viaRegistry("-l ncpus", strconv.Itoa(max(n, 1))); err != nil {
					return err
				}
			case "procs":
				sp.NTasks = n
			case "ngpus", "gpus":
				if n > 0 {
					return &PBSError{Text: "qsub: hora: -l " + name + "=" + v + ": GPUs cannot be requested yet\n", Exit: 2}
				}
			}
		case "nodes":
			// Torque: spec[+spec...], spec = {N | host}[:ppn=P][:property]
			// (TQ qsub.1 "-l nodes"): counts add up, hosts become the
			// job's node list (sbatch -w), one ppn for the whole job.
			nodes, ppn := 0, 0
			var hosts []string
			for _, spec := range strings.Split(v, "+") {
				parts := strings.Split(spec, ":")
				n, isCount := count(parts[0])
				switch {
				case isCount && n == 0, parts[0] == "":
					return bad(name, true)
				case isCount:
					nodes += n
				default:
					h, err := ExpandHostlist(parts[0])
					if err != nil || len(h) != 1 || h[0] != parts[0] {
						return bad(name, true)
					}
					if slices.Contains(hosts, parts[0]) {
						return &PBSError{Text: "qsub: hora: -l nodes=" + v + ": host " + parts[0] + " named twice\n", Exit: 2}
					}
					hosts = append(hosts, parts[0])
					nodes++
				}
				p := 1
				for _, q := range parts[1:] {
					if pv, isPPN := strings.CutPrefix(q, "ppn="); isPPN {
						if p, isCount = count(pv); !isCount || p == 0 {
							return bad(name, true)
						}
					}
				}
				if ppn != 0 && p != ppn {
					return &PBSError{Text: "qsub: hora: -l nodes=" + v + ": every part must ask for the same ppn\n", Exit: 2}
				}
				ppn = p
			}
			sp.Nodes = nodes
			if len(hosts) > 0 {
				sp.NodeList = CompressHostlist(hosts)
			}
			sp.NTasks, sp.CPUsPerTask, sp.PBS.PPN = nodes*ppn, 1, ppn
		case "select":
			// OpenPBS: [N:]chunk[+[N:]chunk...], chunk res=value:...;
			// hora places one chunk per node.
			if strings.Contains(v, "+") {
				return &PBSError{Text: "qsub: hora: -l select with several kinds of chunk (" + v + ") is not supported\n", Exit: 2}
			}
			parts := strings.Split(v, ":")
			n := 1
			if parts[0] != "" && parts[0][0] >= '0' && parts[0][0] <= '9' {
				var ok bool
				if n, ok = count(parts[0]); !ok {
					return bad(name, false)
				}
				parts = parts[1:]
			}
			if n == 0 {
				return bad(name, true)
			}
			ncpus, mpi := 1, 0
			for _, q := range parts {
				k, cv, ok := strings.Cut(q, "=")
				if !ok || k == "" {
					return bad(name, false)
				}
				switch k {
				case "ncpus", "mpiprocs", "ngpus", "ompthreads":
					c, ok := count(cv)
					if !ok {
						return bad(name, false)
					}
					switch k {
					case "ncpus":
						ncpus = c
					case "mpiprocs":
						mpi = c
					case "ngpus":
						if c > 0 {
							return &PBSError{Text: "qsub: hora: -l select=...:ngpus=" + cv + ": GPUs cannot be requested yet\n", Exit: 2}
						}
					}
				case "mem", "vmem":
					mb, err := pbsSizeMB(cv)
					if err != nil {
						return bad(name, false)
					}
					if k == "mem" {
						memMB = mb * int64(n) // per chunk; held as the job's total below
					}
				default:
					if !pbsResourceNames[k] && k != "host" && k != "vnode" && k != "arch" {
						return badValue(fl, PBSEUnkResc, "Resource_List."+k, true)
					}
				}
			}
			if ncpus == 0 {
				return bad(name, true)
			}
			tasks := max(mpi, 1)
			sp.Nodes, sp.NTasks, sp.CPUsPerTask = n, n*tasks, max(ncpus/tasks, 1)
		case "place":
			arr, _, _ := strings.Cut(v, ":")
			switch arr {
			case "free", "pack", "scatter", "vscatter", "excl", "shared", "exclhost":
			default:
				return bad(name, false)
			}
		}
	}
	if memMB > 0 {
		// PBS's mem is the job's; Slurm's --mem (api MemMB) is per node.
		n := int64(max(sp.Nodes, 1))
		if err := st.viaRegistry("-l mem", strconv.FormatInt((memMB+n-1)/n, 10)+"M"); err != nil {
			return err
		}
	}
	return nil
}

// ParsePBSDateTime reads qsub -a [[[[CC]YY]MM]DD]hhmm[.SS] in local time.
// Fields left out are taken from now; a time that has passed today, with
// no day given, is tomorrow's (OP:src/lib/Libcmds/parse_at.c cvtdate).
func ParsePBSDateTime(s string, now time.Time) (time.Time, bool) {
	main, sec, hasSec := strings.Cut(s, ".")
	if hasSec && (len(sec) != 2 || !allDigits(sec)) || !allDigits(main) {
		return time.Time{}, false
	}
	n := len(main)
	if n < 4 || n > 12 || n%2 != 0 {
		return time.Time{}, false
	}
	num := func(a, b int) int { v, _ := strconv.Atoi(main[a:b]); return v }
	ss := 0
	if hasSec {
		ss, _ = strconv.Atoi(sec)
	}
	hh, mm := num(n-4, n-2), num(n-2, n)
	y, mo, d := now.Date()
	day, month, year := d, int(mo), y
	if n >= 6 {
		day = num(n-6, n-4)
	}
	if n >= 8 {
		month = num(n-8, n-6)
	}
	switch n {
	case 10:
		year = 2000 + num(0, 2)
	case 12:
		year = num(0, 4)
	}
	if hh > 23 || mm > 59 || ss > 61 || month < 1 || month > 12 || day < 1 || day > 31 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hh, mm, ss, 0, now.Location())
	if t.Day() != day {
		return time.Time{}, false // 31 of a 30-day month
	}
	if n == 4 && t.Before(now) {
		t = t.AddDate(0, 0, 1)
	}
	return t, true
}
