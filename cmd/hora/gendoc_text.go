package main

import (
	"hora/sbatch"
	"hora/sbatch/gendoc"
)

// The prose of sbatch.1, srun.1 and salloc.1 around the OPTIONS that the
// registry generates (markup: *bold*, _italic_, a paragraph starting with
// "$ " is a literal example). Facts here must match the code: the exit
// statuses are BuildSpec's and sbatchMain's.

type jobDoc struct {
	summary        string
	synopsis       []string
	description    []string
	precedence     string
	extra          []gendoc.Section
	inputEnvIntro  string
	extraInputEnv  []gendoc.Item
	outputEnvIntro string
	exit           []gendoc.Item
	examples       []string
	seeAlso        string
}

func filenamePattern() gendoc.Section {
	return gendoc.Section{Title: "FILENAME PATTERN",
		Paras: []string{"The names given to *--output*, *--error* and *--input* may hold these replacement symbols; a number after the percent sign pads with zeros to that width (at most 10), as in *%4j*. A name holding a backslash is used as it is, without the backslashes."},
		Items: []gendoc.Item{
			{Tag: "*%%*", Text: "A percent sign."},
			{Tag: "*%A*", Text: "The job id of an array's master job."},
			{Tag: "*%a*", Text: "The array task id."},
			{Tag: "*%J*", Text: "The job id and step id (jobid.stepid)."},
			{Tag: "*%j*", Text: "The job id."},
			{Tag: "*%N*", Text: "The short name of the first node of the job."},
			{Tag: "*%n*", Text: "The node index relative to the job (0 for the batch script)."},
			{Tag: "*%s*", Text: "The step id (batch for the batch script)."},
			{Tag: "*%t*", Text: "The task id (rank) relative to the step."},
			{Tag: "*%u*", Text: "The user name."},
			{Tag: "*%x*", Text: "The job name."},
		}}
}

// outputEnv is what horad sets in a job's environment (controller
// jobEnv); the same for the three commands.
func outputEnv() []gendoc.Item {
	return []gendoc.Item{
		{Tag: "*SLURM_JOB_ID*, *SLURM_JOBID*", Text: "The job id."},
		{Tag: "*SLURM_JOB_NAME*", Text: "The job name."},
		{Tag: "*SLURM_JOB_USER*, *SLURM_JOB_UID*, *SLURM_JOB_GROUP*, *SLURM_JOB_GID*", Text: "The job's owner."},
		{Tag: "*SLURM_JOB_PARTITION*, *SLURM_JOB_ACCOUNT*, *SLURM_JOB_QOS*, *SLURM_JOB_RESERVATION*", Text: "Where the job runs and what it is charged to."},
		{Tag: "*SLURM_JOB_NODELIST*, *SLURM_NODELIST*", Text: "The job's nodes as a hostlist (n[01-04])."},
		{Tag: "*SLURM_JOB_NUM_NODES*, *SLURM_NNODES*", Text: "The number of nodes."},
		{Tag: "*SLURM_NTASKS*, *SLURM_NPROCS*", Text: "The number of tasks, when *--ntasks* or *--ntasks-per-node* was given."},
		{Tag: "*SLURM_TASKS_PER_NODE*", Text: "Tasks on each node, in Slurm's compressed form (2(x3),1)."},
		{Tag: "*SLURM_CPUS_ON_NODE*, *SLURM_JOB_CPUS_PER_NODE*", Text: "CPUs on this node and on each node."},
		{Tag: "*SLURM_CPUS_PER_TASK*", Text: "The value of *--cpus-per-task*, when given."},
		{Tag: "*SLURM_MEM_PER_NODE*", Text: "Memory per node in megabytes, when asked for."},
		{Tag: "*SLURM_SUBMIT_DIR*, *SLURM_SUBMIT_HOST*", Text: "Where the job was submitted from."},
		{Tag: "*SLURM_CLUSTER_NAME*", Text: "The cluster name of hora.toml."},
		{Tag: "*SLURMD_NODENAME*", Text: "The node the script runs on."},
		{Tag: "*SLURM_NODEID*, *SLURM_PROCID*, *SLURM_LOCALID*", Text: "The batch script's node, task and local task index (0)."},
		{Tag: "*SLURM_RESTART_COUNT*", Text: "How many times the job was requeued."},
		{Tag: "*SLURM_JOB_START_TIME*, *SLURM_JOB_END_TIME*", Text: "Start time and time-limit end in Unix seconds."},
		{Tag: "*SLURM_EXPORT_ENV*", Text: "The value of *--export*, when given."},
		{Tag: "*HORA_RT_FRAME*, *HORA_RT_BUFFER*, *HORA_RT_WORK*", Text: "A periodic real-time job's frame in seconds, buffer in frames and work per frame of each process (comma-separated seconds)."},
		{Tag: "*ENVIRONMENT*", Text: "BATCH."},
		{Tag: "*HORA_JOB_ID*", Text: "The job id, under hora's own name."},
	}
}

const exitErrorText = "Exit status to use instead of 1 when the command fails."

func exitErrorEnv() gendoc.Item { return gendoc.Item{Tag: "*SLURM_EXIT_ERROR*", Text: exitErrorText} }

func jobDocs() map[sbatch.Command]jobDoc {
	return map[sbatch.Command]jobDoc{
		sbatch.Sbatch: {
			summary:  "submit a batch script to hora",
			synopsis: []string{"*sbatch* [_OPTIONS_...] [_script_ [_args_...]]", "*sbatch* [_OPTIONS_...] *--wrap*=_command_"},
			description: []string{
				"*sbatch* submits a batch script to *horad*(8) and prints *Submitted batch job* _N_ once the job is stored. The script is the file named on the command line (looked up in the current directory, then along *PATH* when the name has no slash), the standard input when no file is named, or a one-line shell script made from *--wrap*. Arguments after the script are passed to it; options after the script name are its arguments too.",
				"Options may also be given in the script, on lines starting with *#SBATCH* before the first command, and on *#PBS* lines, which are translated (see *--ignore-pbs*). The script must start with *#!*; a script that is empty, holds a NUL byte or has DOS line ends is refused, as Slurm refuses it.",
				"What happens to the job depends on its partition: best-effort jobs are scheduled first come first served with backfilling; on a real-time partition a job with *--deadline* is admitted only if hora can guarantee the deadline, and refused at once otherwise, with the earliest deadline it could guarantee. A periodic real-time job (*--rt-frame*) is admitted at once if every process fits the real-time share of a node set by the cluster's fairness ratio, and refused otherwise with the largest work per frame that would fit; it shares its nodes with other jobs.",
			},
			precedence:    "Values come from #SBATCH lines, then #PBS lines, then the input environment variables, then the command line; a later source overrides an earlier one.",
			extra:         []gendoc.Section{filenamePattern()},
			inputEnvIntro: "Each of these variables sets an option when the command line does not; a variable for a flag (such as *SBATCH_WAIT*) sets it when empty, yes or a non-zero number.",
			extraInputEnv: []gendoc.Item{exitErrorEnv(),
				{Tag: "*SLURM_CONF*", Text: "Read by Slurm's sbatch; hora's configuration is *hora.toml*(5) on the horad side, and the client needs none."}},
			outputEnvIntro: "horad sets these variables in the batch script's environment, in addition to the exported ones (*--export*).",
			exit: []gendoc.Item{
				{Tag: "*0*", Text: "The job was submitted (or --help, --usage, --version, --test-only succeeded). With *--wait*, the job's exit code instead."},
				{Tag: "*1*", Text: "The script cannot be read or is not a batch script, horad refused the job (for example an unknown partition, a deadline it cannot guarantee or a periodic job it cannot admit), or horad cannot be reached; *SLURM_EXIT_ERROR* overrides the value. Also a count that is not a positive integer (*--ntasks*, *--cpus-per-task*, *--ntasks-per-node*), as in Slurm, and a bad *--rt-frame*, *--rt-buffer* or *--rt-work* (hora's own options)."},
				{Tag: "*255*", Text: "A bad option or option value, on the command line, in the script or in the environment; Slurm 22.05 exits with 255 here."},
			},
			examples: []string{
				"Submit a script asking for two nodes for ten minutes:",
				"$ sbatch -N2 -t 10 job.sh\nSubmitted batch job 42",
				"A divisible real-time job: one gigabyte of load read from data.bin, to finish within the hour or be refused now:",
				"$ sbatch -p rt --load=1G --input=data.bin --deadline=now+1hour process.sh",
				"A periodic real-time job of four processes, each needing 8 ms of CPU per 33 ms frame, with 3 frames of buffer:",
				"$ sbatch --rt-frame=33ms --rt-buffer=3 --rt-work=8ms -n 4 video.sh",
				"Run a command without writing a script, and wait for it:",
				"$ sbatch --wrap='hostname' --wait",
			},
			seeAlso: seeAlso("sbatch"),
		},
		sbatch.Srun: {
			summary:  "run parallel tasks as a job step of hora",
			synopsis: []string{"*srun* [_OPTIONS_...] _executable_ [_args_...]"},
			description: []string{
				"*srun* runs a program as tasks of a job step. Inside an allocation (a batch job or *salloc*(1), where *SLURM_JOB_ID* is set) the step uses the allocation's nodes; elsewhere srun first asks *horad*(8) for an allocation with the same options *sbatch*(1) takes, runs the step in it, and releases it when the step ends.",
				"srun starts the tasks itself, as the calling user, once *horad*(8) has granted and recorded the step: on the local executor every node is this machine. On SSH nodes (*executor = \"ssh\"*) srun on the submit host has *horad* run the tasks over its SSH connections, as the job's owner, and streams their output back (their standard input is empty and only the kill reaches them). Each task gets the step's Slurm environment, its output is passed on line by line (*-l* labels it), its standard input is srun's (every task by default, *-i* _N_ for one), and the signals srun receives are passed to every task; two interrupts within a second end the step. Steps in divisible real-time jobs are refused with *Requested operation is presently disabled*. A step that does not fit beside the job's running steps waits: *srun: Job* _N_ *step creation temporarily disabled, retrying (Requested nodes are busy)*.",
				"The options below are those Slurm's srun accepts; the man page says for each what hora does with it.",
			},
			precedence:     "Values come from the input environment variables, then the command line.",
			extra:          []gendoc.Section{filenamePattern()},
			inputEnvIntro:  "Each of these variables sets an option when the command line does not. Inside an allocation several of them are set by the allocation itself, which is how a step inherits the job's request.",
			extraInputEnv:  []gendoc.Item{exitErrorEnv()},
			outputEnvIntro: "Each task gets the job's variables below, plus its own *SLURM_PROCID*, *SLURM_LOCALID*, *SLURM_NODEID* and *SLURM_STEP_ID*.",
			exit: []gendoc.Item{
				{Tag: "*0*", Text: "Every task exited with status 0."},
				{Tag: "_N_", Text: "The largest exit status of the step's tasks, or 128 plus the largest signal when a task was killed by a signal, as in Slurm."},
				{Tag: "*1*", Text: "srun itself failed (no allocation, horad unreachable); *SLURM_EXIT_ERROR* overrides the value."},
				{Tag: "*255*", Text: "A bad option or option value."},
			},
			examples: []string{
				"Four tasks on two nodes, each line of output labelled with its task number:",
				"$ srun -N2 -n4 -l hostname",
			},
			seeAlso: seeAlso("srun"),
		},
		sbatch.Salloc: {
			summary:  "obtain a hora allocation and run a command in it",
			synopsis: []string{"*salloc* [_OPTIONS_...] [_command_ [_args_...]]"},
			description: []string{
				"*salloc* asks *horad*(8) for an allocation, prints *salloc: Granted job allocation* _N_ when it is granted, runs the command (by default the user's shell) with the allocation's environment, and releases the allocation when the command exits. *srun*(1) inside the command runs job steps on the allocated nodes.",
			},
			precedence:     "Values come from the input environment variables, then the command line.",
			inputEnvIntro:  "Each of these variables sets an option when the command line does not.",
			extraInputEnv:  []gendoc.Item{exitErrorEnv(), {Tag: "*SLURM_EXIT_IMMEDIATE*", Text: "Exit status when *--immediate* gives up."}},
			outputEnvIntro: "The command runs with the job's variables below.",
			exit: []gendoc.Item{
				{Tag: "_N_", Text: "The exit status of the command."},
				{Tag: "*1*", Text: "salloc itself failed (the allocation was refused, horad unreachable); *SLURM_EXIT_ERROR* overrides the value."},
				{Tag: "*255*", Text: "A bad option or option value."},
			},
			examples: []string{
				"An interactive shell on two nodes for one hour:",
				"$ salloc -N2 -t 1:00:00",
			},
			seeAlso: seeAlso("salloc"),
		},
	}
}
