package sbatch

import (
	"fmt"
	"strings"

	"hora/api"
)

// srun's and salloc's options (srun --help and salloc --help of Slurm
// 22.05), kept in this one file so that they move into the shared option
// registry as one piece. Keys equal to an sbatch key mean the same job
// option and go through sbatch's setters (AllocSpec); the keys below that
// start with "step-" or name srun/salloc-only options are the commands'
// own.

// jobKeys are the sbatch option keys that describe the allocation srun or
// salloc creates, and that srun also reads as the step's request.
var jobKeys = []string{
	"account", "acctg-freq", "bb", "bbf", "begin", "chdir", "cluster-constraint", "clusters",
	"comment", "constraint", "container", "contiguous", "core-spec", "cores-per-socket",
	"cpu-freq", "cpus-per-gpu", "cpus-per-task", "deadline", "delay-boot", "dependency",
	"distribution", "exclude", "exclusive", "export", "extra-node-info", "gpu-bind", "gpu-freq",
	"gpus", "gpus-per-node", "gpus-per-socket", "gpus-per-task", "gres", "gres-flags", "hint",
	"hold", "job-name", "licenses", "mail-type", "mail-user", "mcs-label", "mem", "mem-bind",
	"mem-per-cpu", "mem-per-gpu", "mincpus", "network", "nice", "no-kill", "nodelist", "nodes",
	"ntasks", "ntasks-per-core", "ntasks-per-gpu", "ntasks-per-node", "ntasks-per-socket",
	"overcommit", "oversubscribe", "partition", "power", "priority", "profile", "propagate",
	"qos", "quiet", "reboot", "reservation", "signal", "sockets-per-node", "spread-job",
	"switches", "thread-spec", "threads-per-core", "time", "time-min", "tmp", "use-min-nodes",
	"verbose", "wckey", "help", "usage", "version",
}

func jobOpts(extra ...Opt) []Opt {
	var out []Opt
	for _, o := range SbatchOptions {
		for _, k := range jobKeys {
			if o.Key == k {
				out = append(out, o)
				break
			}
		}
	}
	return append(out, extra...)
}

// SrunOptions is srun's table: the job options plus the step's own.
var SrunOptions = jobOpts(
	Opt{0, "bcast", OptionalArg, "bcast"},
	Opt{0, "cpu-bind", RequiredArg, "cpu-bind"},
	Opt{'X', "disable-status", NoArg, "disable-status"},
	Opt{'e', "error", RequiredArg, "step-error"},
	Opt{0, "epilog", RequiredArg, "epilog"},
	Opt{0, "exact", NoArg, "exact"},
	Opt{'i', "input", RequiredArg, "step-input"},
	Opt{'I', "immediate", OptionalArg, "immediate"},
	Opt{0, "jobid", RequiredArg, "jobid"},
	Opt{'K', "kill-on-bad-exit", OptionalArg, "kill-on-bad-exit"},
	Opt{'l', "label", NoArg, "label"},
	Opt{0, "mpi", RequiredArg, "mpi"},
	Opt{0, "multi-prog", NoArg, "multi-prog"},
	Opt{'Z', "no-allocate", NoArg, "no-allocate"},
	Opt{'o', "output", RequiredArg, "step-output"},
	Opt{0, "open-mode", RequiredArg, "step-open-mode"},
	Opt{0, "overlap", NoArg, "overlap"},
	Opt{'E', "preserve-env", NoArg, "preserve-env"},
	Opt{0, "prolog", RequiredArg, "prolog"},
	Opt{0, "pty", NoArg, "pty"},
	Opt{0, "quit-on-interrupt", NoArg, "quit-on-interrupt"},
	Opt{'r', "relative", RequiredArg, "relative"},
	Opt{0, "resv-ports", OptionalArg, "resv-ports"},
	Opt{0, "send-libs", OptionalArg, "send-libs"},
	Opt{0, "slurmd-debug", RequiredArg, "slurmd-debug"},
	Opt{0, "task-epilog", RequiredArg, "task-epilog"},
	Opt{0, "task-prolog", RequiredArg, "task-prolog"},
	Opt{'T', "threads", RequiredArg, "threads"},
	Opt{'u', "unbuffered", NoArg, "unbuffered"},
	Opt{'W', "wait", RequiredArg, "step-wait"},
)

// SallocOptions is salloc's table.
var SallocOptions = jobOpts(
	Opt{0, "bell", NoArg, "bell"},
	Opt{0, "get-user-env", OptionalArg, "get-user-env"},
	Opt{0, "gid", RequiredArg, "gid"},
	Opt{'I', "immediate", OptionalArg, "immediate"},
	Opt{'K', "kill-command", OptionalArg, "kill-command"},
	Opt{0, "no-bell", NoArg, "no-bell"},
	Opt{0, "no-shell", NoArg, "no-shell"},
	Opt{'F', "nodefile", RequiredArg, "nodefile"},
	Opt{0, "uid", RequiredArg, "uid"},
)

// SrunEnv maps srun's input variables (srun.1 INPUT ENVIRONMENT
// VARIABLES, src/srun/libsrun/opt.c) to option keys; flags are set by an
// empty value, "yes" or a non-zero number. A command-line option wins.
var SrunEnv = []envOption{
	{"SLURM_ACCOUNT", "account", false},
	{"SLURM_CONSTRAINT", "constraint", false},
	{"SLURM_CPU_BIND", "cpu-bind", false},
	{"SLURM_DISABLE_STATUS", "disable-status", true},
	{"SLURM_DISTRIBUTION", "distribution", false},
	{"SLURM_EXACT", "exact", true},
	{"SLURM_EXPORT_ENV", "export", false},
	{"SLURM_JOB_ID", "jobid", false},
	{"SLURM_JOB_NAME", "job-name", false},
	{"SLURM_JOB_NUM_NODES", "nodes", false},
	{"SLURM_KILL_BAD_EXIT", "kill-on-bad-exit", false},
	{"SLURM_LABELIO", "label", true},
	{"SLURM_MEM_PER_CPU", "mem-per-cpu", false},
	{"SLURM_MEM_PER_NODE", "mem", false},
	{"SLURM_NPROCS", "ntasks", false},
	{"SLURM_NTASKS", "ntasks", false},
	{"SLURM_NTASKS_PER_NODE", "ntasks-per-node", false},
	{"SLURM_OPEN_MODE", "step-open-mode", false},
	{"SLURM_OVERCOMMIT", "overcommit", true},
	{"SLURM_OVERLAP", "overlap", true},
	{"SLURM_PARTITION", "partition", false},
	{"SLURM_QOS", "qos", false},
	{"SLURM_REMOTE_CWD", "chdir", false},
	{"SLURM_RESERVATION", "reservation", false},
	{"SLURM_SRUN_MULTI", "multi-prog", true},
	{"SLURM_STDERRMODE", "step-error", false},
	{"SLURM_STDINMODE", "step-input", false},
	{"SLURM_STDOUTMODE", "step-output", false},
	{"SLURM_TIMELIMIT", "time", false},
	{"SLURM_UNBUFFEREDIO", "unbuffered", true},
	{"SLURM_WAIT", "step-wait", false},
}

// SallocEnv maps salloc's input variables (salloc.1) to option keys.
var SallocEnv = []envOption{
	{"SALLOC_ACCOUNT", "account", false},
	{"SALLOC_CONSTRAINT", "constraint", false},
	{"SALLOC_EXCLUSIVE", "exclusive", false},
	{"SALLOC_GPUS", "gpus", false},
	{"SALLOC_IMMEDIATE", "immediate", false},
	{"SALLOC_MEM_PER_CPU", "mem-per-cpu", false},
	{"SALLOC_MEM_PER_NODE", "mem", false},
	{"SALLOC_NO_BELL", "no-bell", true},
	{"SALLOC_PARTITION", "partition", false},
	{"SALLOC_QOS", "qos", false},
	{"SALLOC_RESERVATION", "reservation", false},
	{"SALLOC_TIMELIMIT", "time", false},
	{"SALLOC_WCKEY", "wckey", false},
}

// EnvValues turns the variables of table found in env into option values,
// to be placed before the command line's (which then win).
func EnvValues(table []envOption, env []string) []Value {
	m := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	var out []Value
	for _, e := range table {
		v, ok := m[e.Var]
		if !ok {
			continue
		}
		if e.Flag {
			if !envFlagSet(v) {
				continue
			}
			v = ""
		}
		out = append(out, Value{Key: e.Key, Name: e.Var, Val: v, Set: true})
	}
	return out
}

// AllocSpec builds the job of an allocation (salloc, srun outside one)
// from option values: sbatch's setters for the job options, the others
// ignored. Errors are in Slurm's words, as for sbatch.
func AllocSpec(in Input, vals []Value) (*api.JobSpec, error) {
	spec := &api.JobSpec{WorkDir: in.Cwd, SubmitHost: in.Hostname, Alloc: true}
	st := &state{spec: spec, flags: &Flags{}, in: in}
	for _, v := range vals {
		if !isJobKey(v.Key) {
			continue
		}
		switch v.Key {
		case "help", "usage", "version", "quiet", "verbose":
			continue
		}
		if msg := st.apply(setting{v.Key, v.Name, v.Val, ""}); msg != "" {
			e := &Error{Msg: "error: " + msg, Exit: exitOption}
			if st.exit != 0 {
				e.Exit = st.exit
			}
			return nil, e
		}
	}
	if err := st.finish(); err != nil {
		return nil, err
	}
	return spec, nil
}

func isJobKey(k string) bool {
	for _, j := range jobKeys {
		if j == k {
			return true
		}
	}
	return false
}

// OptionsHelp lists a table as "--help" does.
func OptionsHelp(usage string, opts []Opt) string {
	var b strings.Builder
	b.WriteString(usage + "\n\nParallel run options:\n")
	for _, o := range opts {
		short := "    "
		if o.Short != 0 {
			short = "  -" + string(o.Short) + ","
		}
		arg := ""
		switch o.Arg {
		case RequiredArg:
			arg = "=<value>"
		case OptionalArg:
			arg = "[=<value>]"
		}
		fmt.Fprintf(&b, "%s --%s%s\n", short, o.Long, arg)
	}
	return b.String()
}
