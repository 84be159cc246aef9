package sbatch

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Command is a set of the commands that accept an option (a bit each).
// The job options of sbatch, srun, salloc and qsub are one registry
// (Options), as in Slurm's src/common/slurm_opt.c: each record says which
// commands take it, and the commands differ only in that.
type Command uint8

const (
	Sbatch Command = 1 << iota
	Srun
	Salloc
	Qsub

	// Slurm is the set of Slurm's three job commands.
	Slurm = Sbatch | Srun | Salloc
)

// Commands lists the single commands in a fixed order (help, man pages).
var Commands = []Command{Sbatch, Srun, Salloc, Qsub}

func (c Command) String() string {
	switch c {
	case Sbatch:
		return "sbatch"
	case Srun:
		return "srun"
	case Salloc:
		return "salloc"
	case Qsub:
		return "qsub"
	}
	var names []string
	for _, one := range Commands {
		if c&one != 0 {
			names = append(names, one.String())
		}
	}
	return strings.Join(names, "|")
}

// CommandNamed returns the command called name ("sbatch", ...).
func CommandNamed(name string) (Command, bool) {
	for _, c := range Commands {
		if c.String() == name {
			return c, true
		}
	}
	return 0, false
}

// EnvNames are the input environment variables that set an option, per
// command (Slurm's names from sbatch.1, srun.1 and salloc.1 "INPUT
// ENVIRONMENT VARIABLES"). A field may hold several names separated by
// blanks (SBATCH_CLUSTERS SLURM_CLUSTERS); the first one set is read.
type EnvNames struct {
	Sbatch, Srun, Salloc string
}

// For returns the variable names command c reads for the option.
func (e EnvNames) For(c Command) []string {
	switch c {
	case Sbatch:
		return strings.Fields(e.Sbatch)
	case Srun:
		return strings.Fields(e.Srun)
	case Salloc:
		return strings.Fields(e.Salloc)
	}
	return nil
}

// Section is the heading of --help an option is listed under (Slurm's
// headings, in Slurm's order).
type Section int

const (
	secRun Section = iota
	secConstraint
	secConsumable
	secAffinity
	secGPU
	secHora
	secHelp
	secOther
)

var sectionTitles = []string{
	secRun:        "Parallel run options:",
	secConstraint: "Constraint options:",
	secConsumable: "Consumable resources related options:",
	secAffinity:   "Affinity/Multi-core options:",
	secGPU:        "GPU scheduling options:",
	secHora:       "Deadline, divisible load and periodic real-time options (hora):",
	secHelp:       "Help options:",
	secOther:      "Other options:",
}

// setFunc applies one value of an option to the job being built. It
// returns nil or the error to print (see optError); o is the record, so
// that one function can serve several options.
type setFunc func(st *state, o *Option, val string) error

// Option is one job option: everything sbatch, srun, salloc and qsub know
// about it, and everything --help, the man pages and the shell completions
// are generated from.
type Option struct {
	Long    string  // long name without "--"
	Short   rune    // short letter, 0 if none
	Arg     ArgKind // NoArg, RequiredArg, OptionalArg
	ArgName string  // argument's name in --help and man pages ("time")
	Cmds    Command // commands that accept it
	// PBS is the qsub spelling of the same request ("-N", "-l walltime"),
	// empty when qsub has none. The PBS front end reads it.
	PBS     string
	Env     EnvNames
	Aliases []string // other long names (getopt-equivalent)
	Section Section
	// Help is the one-line description of --help (hora's words).
	Help string
	// Man is the paragraph of the man page's OPTIONS entry, plain text
	// (the generator escapes it for roff). Sentences, no markup.
	Man string
	// Set applies a value. nil means accepted without effect (the man page
	// says so) unless Command is set.
	Set setFunc
	// Command marks options the command handles itself rather than a
	// setter (--help, --usage, --version, --wrap, --ignore-pbs).
	Command bool
	// Values lists the words the argument may be, for completions.
	Values []string
	// Hidden options are accepted but, as in Slurm, not listed by --help
	// and --usage (the man page still has them).
	Hidden bool
}

// Ignored reports whether hora accepts the option without acting on it.
func (o *Option) Ignored() bool { return o.Set == nil && !o.Command }

// Key is the name the parser reports for the option (Opt.Key).
func (o *Option) Key() string { return o.Long }

// Lookup returns the record of the option called long (or one of its
// aliases) that command c accepts, or nil.
func Lookup(c Command, long string) *Option {
	for i := range Options {
		o := &Options[i]
		if o.Cmds&c == 0 {
			continue
		}
		if o.Long == long || slices.Contains(o.Aliases, long) {
			return o
		}
	}
	return nil
}

// OptionsOf returns the records command c accepts, in the registry's order.
func OptionsOf(c Command) []*Option {
	n := 0
	for i := range Options {
		if Options[i].Cmds&c != 0 {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]*Option, 0, n)
	for i := range Options {
		if Options[i].Cmds&c != 0 {
			out = append(out, &Options[i])
		}
	}
	return out
}

// GetoptTable returns the getopt table of command c: one entry per long
// name (aliases included), keyed by the record's long name, in the order
// of Slurm's own table (slurmGetoptOrder), which is the order glibc lists
// the candidates of an ambiguous abbreviation in; hora's own options
// follow. The table is built on first use (every client process links
// this package; only the job commands need it) and shared: callers must
// not modify it.
func GetoptTable(c Command) []Opt {
	i := slices.Index(Commands, c)
	if i < 0 || i >= len(getoptTables) {
		return buildGetoptTable(c)
	}
	t := &getoptTables[i]
	t.once.Do(func() { t.opts = buildGetoptTable(c) })
	return t.opts
}

// getoptTables are the built tables, by index in Commands (zero values:
// nothing to do at init).
var getoptTables [4]struct {
	once sync.Once
	opts []Opt
}

func buildGetoptTable(c Command) []Opt {
	order := strings.Fields(slurmGetoptOrder[c])
	rank := make(map[string]int32, len(order))
	for i, l := range order {
		rank[l] = int32(i + 1)
	}
	opts := OptionsOf(c)
	n := len(opts)
	for _, o := range opts {
		n += len(o.Aliases)
	}
	if n == 0 {
		return nil // qsub: its letters are not in the registry
	}
	// Each entry's rank is looked up once, not at every comparison of the
	// sort, which moves the entries in place: every sbatch, srun and salloc
	// process builds its table.
	out := make([]Opt, 0, n)
	ranks := make([]int32, 0, n)
	add := func(o Opt) {
		r := rank[o.Long]
		if r == 0 {
			r = int32(len(order) + 1)
		}
		out = append(out, o)
		ranks = append(ranks, r)
	}
	for _, o := range opts {
		add(Opt{o.Short, o.Long, o.Arg, o.Key()})
		for _, a := range o.Aliases {
			add(Opt{0, a, o.Arg, o.Key()})
		}
	}
	sort.Stable(byRank{out, ranks})
	return out
}

// byRank sorts a getopt table by the entries' ranks, moving both.
type byRank struct {
	opts  []Opt
	ranks []int32
}

func (b byRank) Len() int           { return len(b.opts) }
func (b byRank) Less(i, j int) bool { return b.ranks[i] < b.ranks[j] }
func (b byRank) Swap(i, j int) {
	b.opts[i], b.opts[j] = b.opts[j], b.opts[i]
	b.ranks[i], b.ranks[j] = b.ranks[j], b.ranks[i]
}

// slurmGetoptOrder is the order of the long options in Slurm 22.05's
// tables, as glibc prints them for "sbatch --=x" (every option is a
// candidate of the empty abbreviation).
var slurmGetoptOrder = map[Command]string{
	Sbatch: `account acctg-freq array batch begin bb bbf cluster-constraint chdir cluster clusters comment
		container context contiguous constraint core-spec cores-per-socket cpu-freq cpus-per-gpu
		cpus-per-task deadline delay-boot dependency distribution error exclude exclusive export
		export-file extra-node-info get-user-env gid gpu-bind gpu-freq gpus gpus-per-node gpus-per-socket
		gpus-per-task gres gres-flags help hint hold ignore-pbs input job-name kill-on-invalid-dep licenses
		mail-type mail-user mcs-label mem mem-bind mem-per-cpu mem-per-gpu mincpus network nice no-kill
		no-requeue nodefile nodelist nodes ntasks ntasks-per-core ntasks-per-gpu ntasks-per-node
		ntasks-per-socket ntasks-per-tres open-mode output overcommit oversubscribe parsable partition
		power prefer priority profile propagate qos quiet reboot requeue reservation signal
		sockets-per-node spread-job switches tasks-per-node test-only thread-spec threads-per-core time
		time-min tmp uid use-min-nodes verbose version usage wait wait-all-nodes wckey wrap`,
	Srun: `accel-bind account acctg-freq bcast bcast-exclude begin bb bbf cluster-constraint chdir cluster
		clusters comment compress container context contiguous constraint core-spec cores-per-socket
		cpu-bind cpu_bind cpu-freq cpus-per-gpu cpus-per-task deadline debugger-test delay-boot dependency
		disable-status distribution epilog error exact exclude exclusive export extra-node-info gid
		gpu-bind gpu-freq gpus gpus-per-node gpus-per-socket gpus-per-task gres gres-flags help het-group
		hint hold immediate input interactive jobid job-name kill-on-bad-exit label licenses mail-type
		mail-user threads mcs-label mem mem-bind mem-per-cpu mem-per-gpu mincpus mpi msg-timeout multi-prog
		network nice no-allocate no-kill nodefile nodelist nodes ntasks ntasks-per-core ntasks-per-gpu
		ntasks-per-node ntasks-per-socket ntasks-per-tres open-mode output overcommit overlap oversubscribe
		pack-group partition power prefer preserve-env priority profile prolog propagate pty qos quiet
		quit-on-interrupt reboot relative reservation resv-ports send-libs signal slurmd-debug
		sockets-per-node spread-job switches task-epilog task-prolog tasks-per-node test-only thread-spec
		threads-per-core time time-min tmp uid unbuffered use-min-nodes verbose version usage wait wckey
		whole x11`,
	Salloc: `account acctg-freq begin bell bb bbf cluster-constraint chdir cluster clusters comment container
		context contiguous constraint core-spec cores-per-socket cpu-freq cpus-per-gpu cpus-per-task
		deadline delay-boot dependency distribution exclude exclusive extra-node-info get-user-env gid
		gpu-bind gpu-freq gpus gpus-per-node gpus-per-socket gpus-per-task gres gres-flags help hint hold
		immediate job-name kill-command licenses mail-type mail-user mcs-label mem mem-bind mem-per-cpu
		mem-per-gpu mincpus network nice no-bell no-kill no-shell nodefile nodelist nodes ntasks
		ntasks-per-core ntasks-per-gpu ntasks-per-node ntasks-per-socket ntasks-per-tres overcommit
		oversubscribe partition power prefer priority profile qos quiet reboot reservation signal
		sockets-per-node spread-job switches tasks-per-node thread-spec threads-per-core time time-min tmp
		uid use-min-nodes verbose version usage wait-all-nodes wckey x11`,
}

// UsageErrorText is what command c prints (after "c: ") when getopt refuses
// an argument: glibc's line and Slurm's hint. Slurm exits 255 after it.
func UsageErrorText(c Command, getoptMsg string) string {
	return getoptMsg + "\nTry \"" + c.String() + " --help\" for more information"
}

// helpLine formats one option the way Slurm's --help does: the option in
// the first 30 columns, the text after it (after one blank when the option
// is wider), continuation lines indented to column 30.
func helpLine(b *strings.Builder, o *Option) {
	left := "      "
	if o.Short != 0 {
		left = "  -" + string(o.Short) + ", "
	}
	left += "--" + o.Long + argSpelling(o)
	const col, width = 30, 80
	lines := wrapWords(o.Help, width-col)
	switch {
	case len(left) < col:
		left += strings.Repeat(" ", col-len(left))
	case len(lines) > 0 && len(left)+1+len(lines[0]) <= width:
		left += " "
	default:
		// Too wide for the text beside it: the text starts on the next
		// line in column 30, as Slurm prints --switches.
		left += "\n" + strings.Repeat(" ", col)
	}
	b.WriteString(left)
	for i, l := range lines {
		if i > 0 {
			b.WriteString(strings.Repeat(" ", col))
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if len(lines) == 0 {
		b.WriteByte('\n')
	}
}

func argSpelling(o *Option) string {
	name := o.ArgName
	if name == "" {
		name = "value"
	}
	switch o.Arg {
	case RequiredArg:
		return "=" + name
	case OptionalArg:
		return "[=" + name + "]"
	}
	return ""
}

// wrapWords breaks text into lines of at most width bytes at blanks.
func wrapWords(text string, width int) []string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(text) {
		if cur != "" && len(cur)+1+len(w) > width {
			lines = append(lines, cur)
			cur = ""
		}
		if cur != "" {
			cur += " "
		}
		cur += w
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// usageLines are the synopsis heads of Slurm's --help and --usage.
var helpHeads = map[Command]string{
	Sbatch: "Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]",
	Srun:   "Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]] [ : [OPTIONS(N)...]] executable(N) [args(N)...]",
	Salloc: "Usage: salloc [OPTIONS(0)...] [ : [OPTIONS(N)]] [command(0) [args(0)...]]",
}

var usageTails = map[Command]string{
	Sbatch: "executable [args...]",
	Srun:   "executable [args...]",
	Salloc: "[command [args...]]",
}

// Help returns command c's --help text: Slurm's layout (synopsis, then the
// options by section, each under Slurm's heading), hora's descriptions.
func Help(c Command) string {
	var b strings.Builder
	b.WriteString(helpHeads[c])
	b.WriteString("\n")
	for sec := range sectionTitles {
		var opts []*Option
		for _, o := range OptionsOf(c) {
			if o.Section == Section(sec) && !o.Hidden {
				opts = append(opts, o)
			}
		}
		if len(opts) == 0 {
			continue
		}
		b.WriteString("\n" + sectionTitles[sec] + "\n")
		for _, o := range opts {
			helpLine(&b, o)
		}
	}
	return b.String()
}

// Usage returns command c's --usage text: Slurm's layout, every option
// once in brackets, wrapped at 80 columns under the command name.
func Usage(c Command) string {
	head := "Usage: " + c.String() + " "
	indent := strings.Repeat(" ", len(head))
	var b strings.Builder
	line := head
	first := true
	add := func(item string) {
		if !first && len(line)+1+len(item) > 79 {
			b.WriteString(line + "\n")
			line = indent
			first = true
		}
		if !first {
			line += " "
		}
		line += item
		first = false
	}
	for _, o := range OptionsOf(c) {
		if o.Section == secHelp || o.Section == secOther || o.Hidden {
			continue
		}
		if o.Short != 0 && o.Arg == RequiredArg {
			add(fmt.Sprintf("[-%c %s]", o.Short, argName(o)))
			continue
		}
		add("[--" + o.Long + argSpelling(o) + "]")
	}
	b.WriteString(line + "\n")
	b.WriteString(indent + usageTails[c] + "\n")
	return b.String()
}

func argName(o *Option) string {
	if o.ArgName == "" {
		return "value"
	}
	return o.ArgName
}
