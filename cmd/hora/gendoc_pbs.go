package main

import (
	"fmt"
	"sort"
	"strings"

	"hora/sbatch"
	"hora/sbatch/gendoc"
)

// The PBS commands' pages. Their options are the getopt tables the commands
// parse with (pbsOpts, qstatOpts, sbatch.QsubOptions), in each flavour; the
// text of an option is written here once, and for qsub an option that is the
// PBS spelling of an sbatch option (the PBS field of sbatch's registry) also
// names it, so that the two front ends are seen to share one table. An option
// of a table without a text here is an error: the page would not describe it.

// pbsDoc describes one PBS command's page.
type pbsDoc struct {
	name, summary string
	description   []string
	// opts is the command's getopt table in a flavour.
	opts func(flavour string) []sbatch.Opt
	// usage is the command's usage text in a flavour (the synopsis).
	usage func(flavour string) string
	// text is each option's description by letter; "x/torque" or
	// "x/openpbs" overrides "x" in that flavour.
	text map[string]string
	// ignored are the letters hora accepts and does nothing with.
	ignored string
}

var pbsFlavours = []string{sbatch.FlavourOpenPBS, sbatch.FlavourTorque}

func bothFlavours(prog string) func(string) []sbatch.Opt {
	return func(string) []sbatch.Opt { return pbsFixedOpts(prog) }
}

func sameUsage(u string) func(string) string { return func(string) string { return u } }

func pbsDocs() []pbsDoc {
	return []pbsDoc{
		{name: "qsub", summary: "submit a batch job to hora, as PBS does",
			description: []string{
				"*qsub* submits a job script (a file, standard input, or *--* _command_ [_arguments_...]) to horad. The *#PBS* lines at the top of the script, up to its first executable line, are read as options; the command line wins over them. The job is an ordinary hora job: *squeue*(1) and *scancel*(1) see it as they see a job from *sbatch*(1).",
				"qsub prints the job's id, _sequence_._server_ (the server name is [pbs] server in *hora.toml*(5), by default the host name). PBS resources (*-l*) map onto the same CPU, memory and generic-resource request as sbatch's options."},
			opts:  sbatch.QsubOptions,
			usage: func(fl string) string { return sbatch.QsubUsage(fl) },
			text: map[string]string{
				"a": "Makes the job eligible to run only after _date_time_ ([[[[CC]YY]MM]DD]hhmm[.SS]); until then it is in state W.",
				"A": "Charges the job to _account_string_.",
				"b": "Seconds to retry reaching the server (Torque).",
				"c": "Checkpoint interval or policy.",
				"C": "The prefix of directive lines in the script instead of *#PBS* (also *PBS_DPREFIX*); an empty prefix reads no directives.",
				"d": "The working directory of the job (Torque; *PBS_O_INITDIR*).",
				"D": "The root directory of the job (Torque).",
				"e": "Path (or directory) of the job's standard error; by default the job's name, *.e* and its sequence number, in the submission directory.",
				"f": "Runs qsub in the foreground (OpenPBS).",
				"F": "Arguments passed to the script (Torque).",
				"h": "Submits the job with a user hold (state H); *qrls*(1) releases it.",
				"I": "Interactive job: qsub waits for the job to start, then runs your shell in it on the first node over a terminal of its own, and the job ends with the shell; its exit status is the job's.",
				"j": "Joins the output streams: *oe* into the output file, *eo* into the error file, *n* keeps them apart.",
				"J": "Job array (OpenPBS): _X-Y_[:_Z_][%_N_], subjobs _id_[_index_]; with Torque, the job id a proxy user submits for.",
				"k": "Which output files are kept on the execution host.",
				"K": "Kill delay in seconds (Torque).",
				"l": "Resource list, comma-separated: *walltime*, *cput* (a bare number is seconds), *mem*, *vmem* (a bare number is bytes), *ncpus*, *ngpus*, *nodes=*_N_[:*ppn=*_P_] (Torque), *select=*_N_:*ncpus=*_C_:*mem=*_M_:*ngpus=*_G_ with *place=scatter*|*pack*|*excl* (OpenPBS).",
				"L": "NUMA resource request (Torque).",
				"m": "When mail is sent: any of *a* (abort: Slurm's FAIL), *b* (begin), *e* (end), or *n* (none); horad hands it to the local sendmail (mail_prog in *hora.toml*(5)).",
				"M": "Whom mail is sent to.",
				"n": "Exclusive use of the nodes (Torque).",
				"N": "The job's name (at most 236 characters, not starting with a digit); by default the script's file name, or STDIN.",
				"o": "Path (or directory) of the job's standard output; by default the job's name, *.o* and its sequence number, in the submission directory.",
				"p": "Priority, from -1024 to 1023.",
				"P": "Project (OpenPBS); with Torque, the user the job runs for (proxy user).",
				"q": "The queue: a hora partition.",
				"r": "Whether the job may be rerun (requeued): *y* or *n*.",
				"R": "Which output files are removed (OpenPBS).",
				"S": "The shell that runs the script.",
				"t": "Job array (Torque): _list_[%_N_], subjobs _id_[_index_].",
				"T": "The prologue and epilogue type (Torque).",
				"u": "User list.",
				"v": "Exports the listed variables (_VAR_[=_value_],...) to the job.",
				"V": "Exports qsub's whole environment to the job.",
				"w": "The working directory of the job (Torque; *PBS_O_WORKDIR*).",
				"W": "Further attributes _name_=_value_: *depend=*_type_:_id_[:_id_]... (*after*, *afterok*, *afternotok*, *afterany*), *block=true* (wait for the job and exit with its exit status), *umask=*, *group_list=*.",
				"x": "Runs the script of an interactive job as a batch job (Torque).",
				"X": "With *-I*: the job gets your *DISPLAY* (hora forwards no X11 connection, so this serves nodes that share your display); refused without *DISPLAY* or without *-I*.",
				"z": "Prints no job id.",
			},
			ignored: "kcuRfFLTKbDxn"},
		{name: "qstat", summary: "show the status of hora's jobs, queues and server, as PBS does",
			description: []string{
				"*qstat* lists the jobs horad knows in the layout of OpenPBS or Torque, as [pbs] flavour in *hora.toml*(5) says. Each hora partition is a queue. Jobs from sbatch and from qsub are listed alike."},
			opts:  func(fl string) []sbatch.Opt { return qstatOpts(fl == sbatch.FlavourTorque) },
			usage: qstatUsage,
			text: map[string]string{
				"a": "The alternative table: session, nodes, tasks, memory and times of each job.",
				"B": "The server's status.",
				"c": "Completed jobs (Torque).",
				"C": "Accepted as Torque accepts it.",
				"D": "The delimiter of *-F dsv* (OpenPBS).",
				"e": "Jobs in execution queues only (Torque).",
				"E": "Groups the jobs by server (OpenPBS); with Torque, takes an argument and is accepted.",
				"f": "Every attribute of each job, one *name = value* a line (long values folded; Torque's *-1* unfolds them).",
				"F": "The format of *-f*: *json* or *dsv* (OpenPBS).",
				"G": "Sizes in gigabytes.",
				"H": "Finished jobs only (history; OpenPBS).",
				"i": "Queued, held and waiting jobs only, in the alternative table.",
				"J": "Job arrays only, one line each (OpenPBS); with *-t*, their subjobs only.",
				"l": "Accepted as Torque accepts it.",
				"M": "Sizes in megawords.",
				"n": "Also the hosts each job runs on.",
				"p": "The percentage of the job done instead of its CPU time (OpenPBS).",
				"q": "The queue table (limits and job counts per queue).",
				"Q": "The queues' status.",
				"r": "Running jobs only, in the alternative table.",
				"R": "Disk reservation data (Torque).",
				"s": "Also each job's comment.",
				"t": "Also the subjobs of job arrays (Torque: the subjobs instead of the array's line).",
				"T": "Estimated start times (OpenPBS).",
				"u": "Jobs of the listed users only.",
				"w": "The wide table (OpenPBS).",
				"W": "Site-specific options (Torque).",
				"x": "Finished jobs too (OpenPBS); with Torque, the output in XML.",
				"1": "One line per job, also with *-n* and *-s*.",
			},
			ignored: "CEelRWT"},
		{name: "qdel", summary: "delete hora jobs, as PBS does",
			description: []string{"*qdel* deletes the given jobs: pending jobs are removed, running jobs are signalled (SIGTERM, then SIGKILL after the kill delay). A user deletes only their own jobs."},
			opts:        bothFlavours("qdel"), usage: sameUsage(pbsControlUsage["qdel"]),
			text: map[string]string{
				"W": "*force* deletes the job at once; *suppress_email=*_N_ is accepted.",
				"x": "Also deletes finished jobs from the history (OpenPBS).",
				"p": "Purges the job (Torque).",
				"m": "A message for the job's owner (Torque).",
				"t": "The subjobs of an array to delete (Torque).",
			}, ignored: "pmx"},
		{name: "qhold", summary: "hold hora jobs, as PBS does",
			description: []string{"*qhold* puts holds on pending jobs; a held job does not start until every hold is released (*qrls*(1))."},
			opts:        bothFlavours("qhold"), usage: sameUsage(pbsControlUsage["qhold"]),
			text: map[string]string{
				"h": "The holds: *u* (user, the default), *o* (operator), *s* (system); an operator or system hold needs root or an operator of hora.toml.",
				"t": "The subjobs of an array (Torque).",
			}, ignored: "t"},
		{name: "qrls", summary: "release holds on hora jobs, as PBS does",
			description: []string{"*qrls* releases holds of pending jobs; a job with no hold left becomes eligible to run."},
			opts:        bothFlavours("qrls"), usage: sameUsage(pbsControlUsage["qrls"]),
			text: map[string]string{
				"h": "The holds to release: *u* (user, the default), *o*, *s*.",
				"t": "The subjobs of an array (Torque).",
			}, ignored: "t"},
		{name: "qsig", summary: "send a signal to hora jobs, as PBS does",
			description: []string{"*qsig* sends a signal to the processes of running jobs. *suspend* and *resume* stop and continue a job as *scontrol*(1) *suspend* and *resume* do."},
			opts:        bothFlavours("qsig"), usage: sameUsage(pbsControlUsage["qsig"]),
			text: map[string]string{
				"s": "The signal, by name (*TERM*, *SIGTERM*) or number, or *suspend* or *resume*; SIGTERM by default.",
				"a": "Sends the signal to every process of the job (Torque).",
			}, ignored: "a"},
		{name: "qrerun", summary: "requeue running hora jobs, as PBS does",
			description: []string{"*qrerun* ends running jobs and queues them again; they keep their id and run again when resources allow."},
			opts:        bothFlavours("qrerun"), usage: sameUsage(pbsControlUsage["qrerun"]),
			text:    map[string]string{"W": "*force* requeues the job even when its node does not answer."},
			ignored: "W"},
		{name: "qalter", summary: "change queued hora jobs, as PBS does",
			description: []string{"*qalter* changes jobs through the same request as *scontrol*(1) *update*: of a pending job the name, the wall time, the eligible time, the dependencies and holds; of a running job the wall time (shortened by its owner, lengthened by an operator). Other attributes are refused by name and nothing changes."},
			opts:        bothFlavours("qalter"), usage: sameUsage(qalterUsage),
			text: map[string]string{
				"a": "The new eligible time.",
				"A": "The account.",
				"c": "The checkpoint interval.",
				"e": "The standard error path.",
				"E": "Accepted as PBS accepts it.",
				"h": "Holds to set (*u*, *o*, *s*) or *n* to release them all.",
				"j": "Joining of the output streams.",
				"k": "Which output files are kept.",
				"l": "New resources; *walltime* is changed.",
				"m": "When mail is sent.",
				"M": "Whom mail is sent to.",
				"N": "The new job name.",
				"o": "The standard output path.",
				"p": "The priority.",
				"P": "The project.",
				"r": "Whether the job may be rerun.",
				"R": "Which output files are removed.",
				"S": "The shell.",
				"u": "The user list.",
				"W": "Further attributes: *depend=*_type_:_id_[:_id_]... replaces the job's dependencies.",
			}, ignored: "AceEjkmMoprRSuP"},
		{name: "qselect", summary: "select hora jobs by their attributes, as PBS does",
			description: []string{"*qselect* prints the ids of the jobs that match every given criterion, one a line, for use in other commands (*qdel $(qselect -u alice -s Q)*)."},
			opts:        bothFlavours("qselect"), usage: sameUsage(qselectUsage),
			text: map[string]string{
				"A": "Jobs charged to the account.",
				"h": "Jobs with the holds given.",
				"H": "Finished jobs only (OpenPBS).",
				"J": "Job arrays only, each once as _seq_*[]* (OpenPBS).",
				"l": "Jobs whose resources compare to the values given (_res_._op_._value_).",
				"N": "Jobs with this name.",
				"q": "Jobs in this queue (partition).",
				"r": "Jobs that may (*y*) or may not (*n*) be rerun.",
				"s": "Jobs in the given states (letters of *qstat*(1): *Q*, *R*, *H*, *W*, *E*, *F*, ...). An OpenPBS array is tested by its own state (*B* once a subjob has begun, never *R*), and under *-T* each subjob by its own (*X* once finished); Torque's subjobs are jobs of their own.",
				"t": "Subjobs of arrays too.",
				"T": "Jobs and subjobs, _seq_*[*_index_*]*, instead of arrays (always so in the Torque flavour).",
				"u": "Jobs of the listed users.",
				"x": "Finished jobs too (OpenPBS).",
			}, ignored: "hrt"},
		{name: "pbsnodes", summary: "show and mark hora's nodes, as PBS does",
			description: []string{"*pbsnodes* lists the nodes of the cluster with their state, CPUs, memory and jobs, in the layout of the flavour; root and the operators of hora.toml mark nodes offline (*-o*) and clear the mark (*-c*, *-r*), as *scontrol*(1) *update NodeName=* does."},
			opts:        bothFlavours("pbsnodes"), usage: sameUsage(pbsnodesUsage),
			text: map[string]string{
				"a": "Every node with every attribute.",
				"l": "The nodes that are down, offline or unknown, one a line with the reason.",
				"o": "Marks the named nodes offline (no new jobs; running jobs continue).",
				"c": "Clears the offline mark of the named nodes.",
				"r": "Clears the offline mark of the named nodes (Torque's spelling).",
				"C": "The comment to record with *-o* (the reason).",
				"N": "The note to record with *-o* (Torque).",
				"F": "The output format: *json* (OpenPBS).",
				"v": "Verbose: also the jobs on each node.",
				"S": "The single-line summary table.",
				"j": "The jobs' view of the nodes.",
				"L": "A long table.",
				"q": "Suppresses error messages.",
				"x": "The output in XML (Torque).",
				"s": "The server to ask.",
			}, ignored: "vSjLqxs"},
	}
}

// pbsOptionText is the description of letter c in flavour fl.
func (d pbsDoc) optionText(c rune, fl string) string {
	if t, ok := d.text[string(c)+"/"+fl]; ok {
		return t
	}
	return d.text[string(c)]
}

// pbsPage builds the page and completion of a PBS command: the union of the
// flavours' letters, each marked with the flavour when only one takes it.
func pbsPage(d pbsDoc) (gendoc.Page, gendoc.Completion, error) {
	type letter struct {
		arg      sbatch.ArgKind
		flavours []string
	}
	letters := map[rune]*letter{}
	for _, fl := range pbsFlavours {
		for _, o := range d.opts(fl) {
			l := letters[o.Short]
			if l == nil {
				l = &letter{arg: o.Arg}
				letters[o.Short] = l
			}
			l.flavours = append(l.flavours, fl)
		}
	}
	keys := make([]rune, 0, len(letters))
	for c := range letters {
		keys = append(keys, c)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := strings.ToLower(string(keys[i])), strings.ToLower(string(keys[j]))
		if a != b {
			return a < b
		}
		return keys[i] > keys[j] // lower case first
	})
	// For qsub: which sbatch options each letter spells (the PBS field of
	// sbatch's registry: "-N" is --job-name, "-l mem" --mem).
	slurm := map[rune][]string{}
	if d.name == "qsub" {
		for _, o := range sbatch.OptionsOf(sbatch.Sbatch) {
			if len(o.PBS) < 2 || o.PBS[0] != '-' {
				continue
			}
			c := rune(o.PBS[1])
			if sub := strings.TrimSpace(o.PBS[2:]); sub != "" {
				slurm[c] = append(slurm[c], "*"+sub+"* is *--"+o.Long+"*")
			} else {
				slurm[c] = append(slurm[c], "*--"+o.Long+"*")
			}
		}
	}
	comp := gendoc.Completion{Command: d.name}
	var items []gendoc.Item
	for _, c := range keys {
		l := letters[c]
		text := d.optionText(c, l.flavours[0])
		if text == "" {
			return gendoc.Page{}, comp, fmt.Errorf("%s: option -%c has no description in gendoc_pbs.go", d.name, c)
		}
		if len(l.flavours) == 1 {
			for _, tag := range []string{" (Torque)", " (OpenPBS)", "Torque; ", "OpenPBS; "} {
				text = strings.Replace(text, tag, "", 1)
			}
			text += " Only in the " + map[string]string{sbatch.FlavourOpenPBS: "OpenPBS", sbatch.FlavourTorque: "Torque"}[l.flavours[0]] + " flavour."
		}
		if same := slurm[c]; len(same) > 0 {
			text += " The same request as *sbatch*(1): " + strings.Join(same, ", ") + "."
		}
		if strings.ContainsRune(d.ignored, c) {
			text += " hora accepts this option and does not act on it."
		}
		tag := gendoc.Option(c, "", "", 0)
		if l.arg == sbatch.RequiredArg {
			tag += " _value_"
		}
		items = append(items, gendoc.Item{Tag: tag, Text: text})
		comp.Options = append(comp.Options, gendoc.CompOption{Short: c, Arg: argKind(l.arg), Help: firstWords(text, 49)})
	}
	// Each invocation of the usage texts is one synopsis line (the
	// texts break them for a terminal; the page reflows them).
	var syn []string
	for _, fl := range pbsFlavours {
		var cur []string
		flush := func() {
			if l := strings.Join(cur, " "); l != "" && !containsLine(syn, l) {
				syn = append(syn, l)
			}
			cur = nil
		}
		for _, l := range strings.Split(d.usage(fl), "\n") {
			l = strings.Join(strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "usage:")), " ")
			if strings.HasPrefix(l, d.name+" ") {
				flush()
			}
			if l != "" {
				cur = append(cur, l)
			}
		}
		flush()
	}
	secs := []gendoc.Section{
		{Title: "DESCRIPTION", Paras: append(append([]string{}, d.description...),
			"The texts, layouts and exit statuses are those of OpenPBS or of Torque, as [pbs] flavour in *hora.toml*(5) says (openpbs by default); an option that only one of them has is marked so. hora's docs/pbs.md lists what each command does and does not do.")},
		{Title: "OPTIONS", Items: items},
		{Title: "EXIT STATUS", Items: []gendoc.Item{
			{Tag: "*0*", Text: "Success."},
			{Tag: "*2*", Text: "A bad option or missing argument: the usage is printed."},
			{Tag: "_other_", Text: "The PBS error number of the last failure, truncated to 8 bits as PBS clients exit with it (15001 unknown job id: 153; 15007 permission denied: 159)."}}},
		{Title: "SEE ALSO", Paras: []string{seeAlso(d.name)}},
	}
	return gendoc.Page{Name: d.name, Section: "1", Date: manDate, Source: "hora", Manual: "hora manual",
		Summary: d.summary, Synopsis: syn, Sections: secs}, comp, nil
}

func containsLine(lines []string, l string) bool {
	for _, x := range lines {
		if x == l {
			return true
		}
	}
	return false
}
