package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"hora/sbatch"
	"hora/sbatch/gendoc"
)

// hora gendoc DIR (hidden): writes the man pages (DIR/man/*.1) and the
// shell completions (DIR/contrib/completions/) from the option registry of
// package sbatch and the option tables of the other commands, so that no
// option is described twice. `make man` runs it on the checkout;
// TestGeneratedDocsUpToDate checks that the committed files are its output.

// manDate is the date in the pages' title lines. It is fixed (not the
// clock) so that regenerating gives the same bytes; bump it when the pages
// change in substance.
const manDate = "November 27, 2026"

func gendocMain(_ context.Context, env *Env, args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(env.Stderr, "usage: hora gendoc DIR   (writes DIR/man and DIR/contrib/completions)")
		return 2
	}
	files, err := generatedDocs()
	if err != nil {
		fmt.Fprintf(env.Stderr, "hora gendoc: %v\n", err)
		return 1
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(args[0], n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Fprintf(env.Stderr, "hora gendoc: %v\n", err)
			return 1
		}
		if err := os.WriteFile(p, files[n], 0o644); err != nil {
			fmt.Fprintf(env.Stderr, "hora gendoc: %v\n", err)
			return 1
		}
	}
	return 0
}

// generatedDocs returns every generated file by its path in the checkout.
func generatedDocs() (map[string][]byte, error) {
	files := map[string][]byte{}
	var comps []gendoc.Completion
	for _, c := range []sbatch.Command{sbatch.Sbatch, sbatch.Srun, sbatch.Salloc} {
		files["man/"+c.String()+".1"] = gendoc.Roff(jobCommandPage(c))
		comps = append(comps, jobCommandCompletion(c))
	}
	for _, t := range toolDocs() {
		page, comp, err := toolPage(t)
		if err != nil {
			return nil, err
		}
		files["man/"+t.name+".1"] = gendoc.Roff(page)
		comps = append(comps, comp)
	}
	for _, d := range pbsDocs() {
		page, comp, err := pbsPage(d)
		if err != nil {
			return nil, err
		}
		files["man/"+d.name+".1"] = gendoc.Roff(page)
		comps = append(comps, comp)
	}
	files["man/hora.1"] = gendoc.Roff(horaPage())
	files["contrib/completions/hora.bash"] = gendoc.Bash(comps)
	files["contrib/completions/_hora"] = gendoc.Zsh(comps)
	files["contrib/completions/hora.fish"] = gendoc.Fish(comps)
	return files, nil
}

func argKind(a sbatch.ArgKind) int {
	switch a {
	case sbatch.RequiredArg:
		return 1
	case sbatch.OptionalArg:
		return 2
	}
	return 0
}

// jobCommandPage builds sbatch.1, srun.1 or salloc.1 from the registry.
func jobCommandPage(c sbatch.Command) gendoc.Page {
	d := jobDocs()[c]
	var opts []gendoc.Item
	var inputEnv []gendoc.Item
	for _, o := range sbatch.OptionsOf(c) {
		tag := gendoc.Option(o.Short, o.Long, o.ArgName, argKind(o.Arg))
		for _, a := range o.Aliases {
			tag += ", " + gendoc.Option(0, a, o.ArgName, argKind(o.Arg))
		}
		text := o.Man
		if o.Ignored() {
			text += " hora accepts this option for compatibility and ignores it."
		}
		if vars := o.Env.For(c); len(vars) > 0 {
			text += " Also set by *" + strings.Join(vars, "* or *") + "*."
			for _, v := range vars {
				inputEnv = append(inputEnv, gendoc.Item{Tag: "*" + v + "*", Text: "Same as *--" + o.Long + "*."})
			}
		}
		opts = append(opts, gendoc.Item{Tag: tag, Text: text})
	}
	inputEnv = append(inputEnv, d.extraInputEnv...)
	sort.Slice(inputEnv, func(i, j int) bool { return inputEnv[i].Tag < inputEnv[j].Tag })
	secs := []gendoc.Section{
		{Title: "DESCRIPTION", Paras: d.description},
		{Title: "OPTIONS", Paras: []string{"Long options may be abbreviated to any unambiguous prefix; short options may be grouped (*-HN2*). The last value of an option wins. " + d.precedence}, Items: opts},
	}
	secs = append(secs, d.extra...)
	secs = append(secs,
		gendoc.Section{Title: "INPUT ENVIRONMENT VARIABLES", Paras: []string{d.inputEnvIntro}, Items: inputEnv},
		gendoc.Section{Title: "OUTPUT ENVIRONMENT VARIABLES", Paras: []string{d.outputEnvIntro}, Items: outputEnv()},
		gendoc.Section{Title: "EXIT STATUS", Items: d.exit},
		gendoc.Section{Title: "EXAMPLES", Paras: d.examples},
		gendoc.Section{Title: "SEE ALSO", Paras: []string{d.seeAlso}},
	)
	return gendoc.Page{Name: c.String(), Section: "1", Date: manDate, Source: "hora", Manual: "hora manual",
		Summary: d.summary, Synopsis: d.synopsis, Sections: secs}
}

func jobCommandCompletion(c sbatch.Command) gendoc.Completion {
	comp := gendoc.Completion{Command: c.String()}
	for _, o := range sbatch.OptionsOf(c) {
		comp.Options = append(comp.Options, gendoc.CompOption{Short: o.Short, Long: o.Long,
			Arg: argKind(o.Arg), Help: o.Help, Values: o.Values})
	}
	return comp
}

// toolDoc describes a command whose options live in cmd/hora: its getopt
// table and its --help text, from which each option's description is read.
type toolDoc struct {
	name, summary string
	opts          []sbatch.Opt
	help          string
	synopsis      []string
	description   []string
	exit          []gendoc.Item
}

// toolDocs is a function, not a variable, so that no client process pays
// for building it at start-up (the same for the other tables of gendoc).
func toolDocs() []toolDoc {
	return []toolDoc{
		{name: "squeue", summary: "list hora's jobs", opts: squeueOpts, help: squeueHelp,
			synopsis:    []string{"*squeue* [_OPTIONS_...]"},
			description: []string{"*squeue* lists the jobs that horad knows, pending and running by default, in Slurm's layout and with Slurm's format fields (*-o*, *-O*), so that tools that read squeue's output work unchanged."}},
		{name: "scancel", summary: "cancel or signal hora jobs", opts: scancelOpts, help: scancelHelp,
			synopsis:    []string{"*scancel* [_OPTIONS_...] [_job_id_...]"},
			description: []string{"*scancel* cancels the given jobs, or the jobs that match the filters, or sends them a signal. A user can cancel only their own jobs; root and the operators of hora.toml any."}},
		{name: "sinfo", summary: "show hora's partitions and nodes", opts: sinfoOpts, help: sinfoHelp,
			synopsis:    []string{"*sinfo* [_OPTIONS_...]"},
			description: []string{"*sinfo* shows the partitions and nodes of the cluster and their states, in Slurm's layout."}},
		{name: "scontrol", summary: "show and change hora's jobs, nodes, partitions and reservations", opts: scontrolOpts, help: scontrolHelp,
			synopsis:    []string{"*scontrol* [_OPTIONS_...] _command_ [_arguments_...]"},
			description: []string{"*scontrol* shows jobs, nodes, partitions and reservations, holds and releases jobs, and creates, updates and deletes advance reservations. The commands are listed under COMMANDS."}},
		{name: "sacct", summary: "show accounting data of hora jobs", opts: sacctOpts, help: sacctHelp,
			synopsis:    []string{"*sacct* [_OPTIONS_...]"},
			description: []string{"*sacct* lists finished and running jobs from horad's store, with Slurm's fields (*--format*) and layout."}},
	}
}

const undescribed = "Accepted as Slurm accepts it; not described by this command's --help"

func toolExit() []gendoc.Item {
	return []gendoc.Item{
		{Tag: "*0*", Text: "Success."},
		{Tag: "*1*", Text: "An error: a bad option or value, an unknown job, or horad cannot be reached. *SLURM_EXIT_ERROR* overrides the value, as in Slurm."},
	}
}

// helpDescriptions reads a --help text into long name → description and
// "-x" → description (Slurm's help sometimes spells the long name
// differently from its getopt table: squeue's "--job" for --jobs).
func helpDescriptions(help string) map[string]string {
	out := map[string]string{}
	cur, short := "", ""
	for _, l := range strings.Split(help, "\n") {
		letter, long, text, ok := helpOptionLine(l)
		switch {
		case ok:
			if short != "" && cur != "" {
				out[short] = out[cur]
			}
			cur, short = long, ""
			if letter != "" {
				short = "-" + letter
			}
			if _, seen := out[cur]; seen {
				cur = "" // described twice (sacct -o and -O): keep the first
				continue
			}
			out[cur] = strings.TrimSpace(text)
		case strings.TrimSpace(l) == "":
			if short != "" && cur != "" {
				out[short] = out[cur]
			}
			cur, short = "", ""
		case cur != "" && (strings.HasPrefix(l, "   ") || strings.HasPrefix(l, "\t")):
			out[cur] = strings.TrimSpace(out[cur] + " " + strings.TrimSpace(l))
		default:
			if short != "" && cur != "" {
				out[short] = out[cur]
			}
			cur, short = "", ""
		}
	}
	if short != "" && cur != "" {
		out[short] = out[cur]
	}
	return out
}

// helpOptionLine recognises the first line of an option in the three
// layouts the commands' --help texts use, tried in this order:
// "     -a or --all: text", "     -a, --allusers: text" (sacct) and
// "  -A, --account=name   text". It returns the option's letter (may be
// empty), its long name and the text on that line. (Written out rather
// than as regular expressions: regexp and the Unicode tables it pulls in
// cost every client process their initialisation, docs/scale.md.)
func helpOptionLine(l string) (letter, long, text string, ok bool) {
	rest := strings.TrimLeft(l, helpSpace)
	if len(rest) == len(l) {
		return "", "", "", false // at least one blank first
	}
	// "-a or --all: text"
	if len(rest) >= 2 && rest[0] == '-' && isWordByte(rest[1]) {
		if r, found := strings.CutPrefix(rest[2:], " or --"); found {
			if name, after := cutOptionName(r); name != "" {
				if t, found := strings.CutPrefix(after, ": "); found {
					return rest[1:2], name, t, true
				}
			}
		}
	}
	// "[-a, ]--allusers:[ ]text"
	r := rest
	if len(r) >= 4 && r[0] == '-' && isWordByte(r[1]) && r[2:4] == ", " {
		letter, r = r[1:2], r[4:]
	}
	if r, found := strings.CutPrefix(r, "--"); found {
		if name, after := cutOptionName(r); name != "" && strings.HasPrefix(after, ":") {
			return letter, name, strings.TrimLeft(after[1:], helpSpace), true
		}
	}
	// "[-A,<blanks>]--account[=name][<2+ blanks>text]"
	letter, r = "", rest
	if len(r) >= 3 && r[0] == '-' && isWordByte(r[1]) && r[2] == ',' {
		if after := strings.TrimLeft(r[3:], helpSpace); len(after) < len(r[3:]) {
			letter, r = r[1:2], after
		}
	}
	r, found := strings.CutPrefix(r, "--")
	if !found {
		return "", "", "", false
	}
	name, after := cutOptionName(r)
	if name == "" {
		return "", "", "", false
	}
	for after != "" && strings.IndexByte(helpSpace, after[0]) < 0 {
		after = after[1:] // "=name", "[=when]": not part of the text
	}
	if after == "" {
		return letter, name, "", true
	}
	t := strings.TrimLeft(after, helpSpace)
	if len(after)-len(t) < 2 {
		return "", "", "", false
	}
	return letter, name, t, true
}

// helpSpace is what \s matches in Go's regular expressions.
const helpSpace = "\t\n\f\r "

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// cutOptionName splits s after its leading [A-Za-z0-9_-]+.
func cutOptionName(s string) (name, rest string) {
	i := 0
	for i < len(s) && (isWordByte(s[i]) || s[i] == '-') {
		i++
	}
	return s[:i], s[i:]
}

// toolPage builds a page and a completion from a command's table and
// --help. An option of the table that --help does not describe is an
// error: the page would say nothing about it.
func toolPage(t toolDoc) (gendoc.Page, gendoc.Completion, error) {
	desc := helpDescriptions(t.help)
	comp := gendoc.Completion{Command: t.name}
	type entry struct {
		short   rune
		longs   []string
		arg     sbatch.ArgKind
		key     string
		text    string
		hasLong bool
	}
	var entries []*entry
	byKey := map[string]*entry{}
	for _, o := range t.opts {
		e := byKey[o.Key]
		if e == nil {
			e = &entry{arg: o.Arg, key: o.Key}
			byKey[o.Key] = e
			entries = append(entries, e)
		}
		if o.Short != 0 && e.short == 0 {
			e.short = o.Short
		}
		if o.Long != "" {
			e.longs = append(e.longs, o.Long)
		}
		if e.text == "" {
			e.text = desc[o.Long]
		}
		if e.text == "" && o.Short != 0 {
			e.text = desc["-"+string(o.Short)]
		}
	}
	var items []gendoc.Item
	for _, e := range entries {
		if e.text == "" {
			// Accepted (often from Slurm scripts) but not in --help.
			e.text = undescribed
		}
		var tags []string
		for i, l := range e.longs {
			short := rune(0)
			if i == 0 {
				short = e.short
			}
			tags = append(tags, gendoc.Option(short, l, "value", argKind(e.arg)))
		}
		if len(e.longs) == 0 {
			tags = append(tags, gendoc.Option(e.short, "", "", 0))
		}
		text := strings.ToUpper(e.text[:1]) + e.text[1:]
		if !strings.HasSuffix(text, ".") {
			text += "."
		}
		items = append(items, gendoc.Item{Tag: strings.Join(tags, ", "), Text: text})
		long := ""
		if len(e.longs) > 0 {
			long = e.longs[0]
		}
		comp.Options = append(comp.Options, gendoc.CompOption{Short: e.short, Long: long, Arg: argKind(e.arg),
			Help: firstWords(e.text, 49)})
	}
	secs := []gendoc.Section{
		{Title: "DESCRIPTION", Paras: t.description},
		{Title: "OPTIONS", Items: items},
	}
	if t.name == "scontrol" {
		if _, cmds, ok := strings.Cut(t.help, "Valid <COMMAND> values are:\n"); ok {
			secs = append(secs, gendoc.Section{Title: "COMMANDS", Paras: []string{"$ " + strings.TrimSpace(dedent(cmds))}})
		}
	}
	if i := strings.LastIndex(t.help, "\nhora"); i >= 0 {
		secs = append(secs, gendoc.Section{Title: "NOTES", Paras: []string{strings.Join(strings.Fields(t.help[i+1:]), " ")}})
	}
	exit := t.exit
	if exit == nil {
		exit = toolExit()
	}
	secs = append(secs,
		gendoc.Section{Title: "EXIT STATUS", Items: exit},
		gendoc.Section{Title: "SEE ALSO", Paras: []string{seeAlso(t.name)}})
	return gendoc.Page{Name: t.name, Section: "1", Date: manDate, Source: "hora", Manual: "hora manual",
		Summary: t.summary, Synopsis: t.synopsis, Sections: secs}, comp, nil
}

func dedent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(strings.TrimRight(l, " "), "     ")
	}
	return strings.Join(lines, "\n")
}

// firstWords shortens text to at most n bytes at a word boundary.
func firstWords(text string, n int) string {
	if len(text) <= n {
		return text
	}
	cut := strings.LastIndexByte(text[:n], ' ')
	if cut <= 0 {
		cut = n
	}
	return strings.TrimRight(text[:cut], ",;:")
}

var manCommands = []string{"hora", "sacct", "salloc", "sbatch", "scancel", "scontrol", "sinfo", "squeue", "srun"}

var pbsManCommands = []string{"hora", "pbsnodes", "qalter", "qdel", "qhold", "qrerun", "qrls", "qselect", "qsig", "qstat", "qsub", "sbatch", "squeue"}

func seeAlso(self string) string {
	var refs []string
	list := manCommands
	if self[0] == 'q' || self == "pbsnodes" {
		list = pbsManCommands
	}
	for _, n := range list {
		if n != self {
			refs = append(refs, "*"+n+"*(1)")
		}
	}
	refs = append(refs, "*horad*(8), *hora.toml*(5)")
	if self == "hora" {
		refs = append(refs, "*qsub*(1), *qstat*(1), *pbsnodes*(1), *hora-replay*(1)")
	}
	return strings.Join(refs, ", ")
}

// horaPage is hora.1: the binary, its command names and its own verbs.
func horaPage() gendoc.Page {
	var verbs []gendoc.Item
	for _, n := range commandNames() {
		text, ok := verbDocs()[n]
		if !ok {
			text = "The Slurm-compatible command, also installed as *" + n + "*; see *" + n + "*(1)."
		}
		verbs = append(verbs, gendoc.Item{Tag: "*" + n + "*", Text: text})
	}
	return gendoc.Page{Name: "hora", Section: "1", Date: manDate, Source: "hora", Manual: "hora manual",
		Summary: "client of the hora batch resource manager",
		Synopsis: []string{"*hora* _command_ [_arguments_...]",
			"*sbatch*|*srun*|*salloc*|*squeue*|*scancel*|*sinfo*|*scontrol*|*sacct* [_arguments_...]"},
		Sections: []gendoc.Section{
			{Title: "DESCRIPTION", Paras: []string{
				"hora is a batch resource manager that passes for Slurm at the command line and adds deadlines guaranteed at submission. *hora* is its one client program: installed under the names of Slurm's commands (symbolic links), it behaves as the command it is called by; called as *hora*, it takes the command as its first argument, which also gives access to hora's own commands.",
				"Every command talks to *horad*(8) over its Unix socket; horad identifies the caller by the kernel's peer credentials."}},
			{Title: "COMMANDS", Items: verbs},
			{Title: "ENVIRONMENT", Items: []gendoc.Item{
				{Tag: "*HORA_SOCKET*", Text: "Path of horad's socket (default /run/hora/horad.sock)."},
				{Tag: "*HORA_MESSAGE_TIMEOUT*", Text: "Seconds a request to horad may take before the command fails with *Socket timed out on send/recv operation* (default 10, as Slurm's MessageTimeout). Within it a command also tries to connect once a second while horad's socket is missing or refuses, as during a restart; 1 or less tries once."},
				{Tag: "*SLURM_EXIT_ERROR*", Text: "Exit status of the Slurm-compatible commands on an error (default 1)."},
				{Tag: "*SLURM_TIME_FORMAT*", Text: "How squeue, sacct and scontrol print times: standard, relative, or a strftime(3) format."}}},
			{Title: "EXIT STATUS", Paras: []string{"As the command run; *hora* without a command prints the list of commands and exits with 2, and an unknown command exits with 2."}},
			{Title: "SEE ALSO", Paras: []string{seeAlso("hora")}},
		}}
}

func verbDocs() map[string]string {
	m := map[string]string{
		"replay":  "Replays a workload (an SWF log or a generated one) through hora's scheduler in simulated time and reports the metrics. *hora replay --help* lists its options.",
		"compare": "Replays one workload under several policies and reports them side by side. *hora compare --help* lists its options.",
		"mix":     "Shows the fairness ratio between real-time and best-effort jobs ([mix] in hora.toml), its mode, and on local nodes the live weights, freezer states and CPU shares of the two classes. *hora mix --help* lists its options.",
		"free":    "The range search of reservation partitions: which nodes are free for a whole time window, without booking anything. *hora free --help* lists its options.",
		"admin":   "*hora admin backup* _FILE_ writes a consistent copy of horad's database to _FILE_ while horad runs (SQLite VACUUM INTO); root and operators only.",
		"stats":   "Prints horad's numbers: jobs by state, nodes down, the last scheduling pass; *--prometheus* prints them in the Prometheus text format.",
	}
	for _, n := range []string{"qsub", "qstat", "qdel", "qhold", "qrls", "qsig", "qselect", "qrerun", "qalter", "pbsnodes"} {
		m[n] = "The PBS command, also installed as *" + n + "*, with the texts and layouts of OpenPBS or Torque as *hora.toml*(5) [pbs] flavour says; see *" + n + "*(1)."
	}
	return m
}
