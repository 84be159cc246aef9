package config

// KeyDoc documents one key of hora.toml: the source of hora.toml(5)
// (ManPage). doc_test.go checks that every key the decoder accepts has one,
// and that each stated Default is what the code fills in when the key is
// absent, so the page cannot drift from the code.
type KeyDoc struct {
	Key     string // dotted path: "kill_wait_s", "node.cpus", "partition.params.*"
	Type    string // string, integer, float, boolean, array of strings, table, array of tables
	Default string // TOML literal of the value used when the key is absent; "" = required or none
	Desc    string // plain text; a blank line separates paragraphs
}

// Sections of the page, in order, with the keys they hold (by prefix).
var docSections = []struct{ Title, Prefix, Intro string }{
	{"GLOBAL KEYS", "", "Keys at the top of the file, before any table."},
	{"NODES", "node", "Each [[node]] table declares one node, or several alike when name is a hostlist."},
	{"PARTITIONS", "partition", "Each [[partition]] table declares a partition and its scheduling policy."},
	{"SSH", "ssh", "The [ssh] table holds the defaults of nodes reached over SSH (executor = \"ssh\")."},
	{"PBS", "pbs", "The [pbs] table configures the PBS commands (qsub, qstat, qdel, ...)."},
	{"LIMITS", "limits", "The [limits] table bounds what horad accepts, as Slurm's MaxJobCount and an association's MaxSubmitJobs do. 0 is no limit. Re-read on reload."},
	{"MIX", "mix", "The [mix] table sets the fairness ratio between real-time jobs (partitions with policy dlt or reserve) and best-effort jobs (the others), and how nodes enforce it. Without the table, real-time work owns the nodes (1:0) and nothing is enforced."},
}

// Keys is every key of hora.toml.
var Keys = []KeyDoc{
	{"cluster_name", "string", `"hora"`, "Name of the cluster, shown by the client commands and given to jobs as SLURM_CLUSTER_NAME."},
	{"state_dir", "string", `"./var"`, "Directory of horad's SQLite database hora.db and of the state of local nodes. horad --state-dir overrides it. The packaged /etc/hora/hora.toml sets /var/lib/hora."},
	{"socket", "string", `"./var/horad.sock"`, "Path of the Unix socket horad listens on when it is not given one by systemd (horad.socket). The default is horad.sock in state_dir. Clients use $HORA_SOCKET, else /run/hora/horad.sock, else ./var/horad.sock."},
	{"operators", "array of strings", `[]`, "Users (names or numeric uids) who may act on every job, change nodes and manage reservations, as root may. Re-read on reload."},
	{"kill_wait_s", "integer", `30`, "Seconds between TERM and KILL when a job is cancelled or reaches its time limit (Slurm's KillWait)."},
	{"min_job_age_s", "integer", `300`, "Seconds a finished job stays listed by squeue -t all (Slurm's MinJobAge). sacct reads finished jobs from the database at any age."},
	{"mail_prog", "string", `""`, "The sendmail(8)-compatible program that --mail-type messages are handed to (run as *prog -oi -t* with the message on its standard input). Empty: /usr/sbin/sendmail when it exists, else no mail is sent."},
	{"executor", "string", `"local"`, "How jobs are run: \"local\" runs every node on this machine (a single-machine setup); \"ssh\" runs them on the hosts named by [[node]] over SSH."},
	{"reservation_access", "string", `"operators"`, "Who may create, update and delete advance reservations: \"operators\" (root and operators, as Slurm's SlurmUser) or \"users\" (also any user, for reservations whose only user is themselves)."},
	{"return_to_service", "integer", `1`, "Slurm's ReturnToService: 0 keeps a DOWN node down until scontrol update State=RESUME; 1 returns a node that was down for not responding when it answers again; 2 returns any DOWN node when it answers."},
	{"job_requeue", "integer", `1`, "Slurm's JobRequeue: 1 requeues a batch job whose node fails unless it was submitted with --no-requeue; 0 only with --requeue."},
	{"max_array_size", "integer", `1001`, "Slurm's MaxArraySize: sbatch --array task ids run from 0 to max_array_size - 1; a larger index is refused with Invalid job array specification."},
	{"kill_on_invalid_dep", "boolean", `false`, "Default of sbatch --kill-on-invalid-dep (Slurm's DependencyParameters=kill_invalid_depend): true cancels a job whose dependency can never be satisfied, false leaves it pending with reason DependencyNeverSatisfied."},
	{"first_job_id", "integer", `1`, "Slurm's FirstJobId: the first job id horad gives out. Raising it moves the next id up; ids are never reused, so lowering it has no effect."},

	{"node", "array of tables", "", "One [[node]] table per node or group of alike nodes. Without any, horad runs four local nodes local[1-4]."},
	{"node.name", "string", "", "Node name, or a Slurm hostlist (n[01-16]) that declares several nodes alike. Required."},
	{"node.address", "string", `""`, "ssh: host name or address, with an optional :port, that horad connects to. Empty: the node's name."},
	{"node.cpus", "integer", `0`, "CPUs of the node; 0 means sockets × cores_per_socket × threads_per_core when those are set, else this machine's CPU count."},
	{"node.memory_mb", "integer", `0`, "Memory jobs may use on the node, in MiB (Slurm's RealMemory); 0 means, on a local node, the machine's MemTotal less mem_reserve_mb."},
	{"node.sockets", "integer", `0`, "Sockets of the node (Slurm's node layout: sockets × cores_per_socket × threads_per_core = cpus); 0 means 1 socket of cpus cores, 1 thread each."},
	{"node.cores_per_socket", "integer", `0`, "Cores per socket; see sockets."},
	{"node.threads_per_core", "integer", `0`, "Hardware threads per core; see sockets."},
	{"node.mem_reserve_mb", "integer", `0`, "Memory in MiB kept for the system when memory_mb is probed."},
	{"node.gres", "string", `""`, "Generic resources in Slurm's Gres= form, for instance gpu:a100:2,nvme:1. Empty: on a local node, the GPUs found (/dev/nvidia0, ...)."},
	{"node.features", "array of strings", `[]`, "Features that sbatch -C/--constraint matches."},
	{"node.rate", "float", `1.0`, "Relative speed of the node; advance reservations on heterogeneous nodes scale run times by it."},
	{"node.user", "string", `""`, "ssh: login user for this node. Empty: [ssh] user."},
	{"node.identity_file", "string", `""`, "ssh: private key for this node. Empty: [ssh] identity_file."},

	{"partition", "array of tables", "", "One [[partition]] table per partition. Without any, one partition batch holds the first [[node]] entry's nodes and is the default."},
	{"partition.name", "string", "", "Partition name, as given to sbatch -p. Required."},
	{"partition.nodes", "string", "", "Hostlist of the partition's nodes; each must be declared by a [[node]] table. Partitions may share nodes. Required."},
	{"partition.default", "boolean", `false`, "Whether jobs without -p go to this partition. At most one partition may be the default; without one, the first partition is."},
	{"partition.policy", "string", `"batch"`, "Scheduling policy: \"batch\" (FCFS with backfilling, best-effort jobs), \"dlt\" (divisible real-time jobs admitted by divisible load theory: sbatch --deadline --load), \"reserve\" (rigid deadline jobs and advance reservations booked at submit time)."},
	{"partition.backfill", "string", `""`, "batch policy: \"easy\" (EASY backfilling) or \"fcfs\" (none). Empty: easy."},
	{"partition.max_time", "string", `""`, "Longest time limit a job may ask for, in Slurm's --time syntax (minutes, MM:SS, HH:MM:SS, D-HH, ...) or UNLIMITED. Empty: unlimited."},
	{"partition.default_time", "string", `""`, "Time limit of a job that gives none, in the same syntax. Empty: max_time (Slurm's rule); it never exceeds max_time."},
	{"partition.def_mem_per_cpu", "integer", `0`, "Memory in MiB per CPU of a job that asks for none (Slurm's DefMemPerCPU); 0 means such a job's memory is neither counted nor limited."},
	{"partition.max_mem_per_node", "integer", `0`, "Largest memory per node in MiB a job may ask for; larger jobs are refused at submit (Slurm's MaxMemPerNode). 0: no limit."},
	{"partition.oversubscribe", "string", `""`, "Slurm's OverSubscribe, any case: NO (the default when empty), each CPU to one job; YES[:N], a job that asks -s/--oversubscribe shares each of its CPUs with up to N−1 other such jobs (N 1 to 32767, default 4); FORCE[:N], every job that asks for resources does; EXCLUSIVE, every job gets whole nodes. Memory and generic resources are never shared. scontrol show partition prints it as NO, EXCLUSIVE, YES:N or FORCE:N."},
	{"partition.params", "table", "", "Policy parameters as string values, for instance cms, cps and admission for the dlt policy and strategy for the reserve policy; docs/architecture.md lists them."},
	{"partition.params.*", "string", "", "One policy parameter."},

	{"ssh", "table", "", "Defaults of nodes reached over SSH."},
	{"ssh.known_hosts", "string", `""`, "known_hosts file with the host keys of every node; required with executor = \"ssh\". Host keys are always verified, never learnt on first use. The file is re-read at each connection."},
	{"ssh.identity_file", "string", `""`, "Default private key horad logs in with."},
	{"ssh.user", "string", `"root"`, "Default login user: root, or a user with passwordless sudo for /bin/sh."},
	{"ssh.state_dir", "string", `"/var/lib/hora-node"`, "Directory on each node for the node-side state of its steps, one subdirectory per node name."},
	{"ssh.launcher", "string", `"auto"`, "How a step is started on a node: \"systemd\" (in a transient scope unit), \"setsid\" (in a session of its own) or \"auto\" (systemd where it runs as PID 1)."},
	{"ssh.probe_interval_s", "integer", `5`, "Seconds between two health probes of a node."},
	{"ssh.probe_misses", "integer", `3`, "Failed probes in a row after which a node is declared DOWN."},

	{"pbs", "table", "", "The PBS front end (qsub, qstat, ...)."},
	{"pbs.flavour", "string", `"openpbs"`, "Which PBS the PBS commands pass for: \"openpbs\" or \"torque\"."},
	{"pbs.server", "string", `""`, "Server name in PBS job ids (SEQ.SERVER). Empty: this machine's host name."},

	{"limits", "table", "", "Limits on submissions."},
	{"limits.max_job_count", "integer", `0`, "Jobs horad holds in memory (pending, running, and finished ones younger than min_job_age_s), for everyone, operators included (Slurm's MaxJobCount). At the limit a submission is refused for now: sbatch prints \"Slurm temporarily unable to accept job, sleeping and retrying\" and retries for up to two minutes."},
	{"limits.max_submit_jobs_per_user", "integer", `0`, "Pending and running jobs one user may have (Slurm's MaxSubmitJobs). Beyond it sbatch fails with \"Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)\", exit 1. Operators are exempt."},
	{"limits.rate_limit_bucket", "integer", `0`, "Requests one user may make in a burst (Slurm's rl_bucket_size): each uid has a bucket of this many tokens, refilled at rate_limit_refill per second, and a request finding it empty is refused with \"Rate limit exceeded, please retry momentarily\"; the client commands sleep 1, 2, 3... s and retry. root and horad's own user are exempt. 0: no rate limit."},
	{"limits.rate_limit_refill", "float", `0`, "Tokens added to each user's bucket per second (Slurm's rl_refill_rate over rl_refill_period). Required when rate_limit_bucket is set."},
	{"limits.max_connections", "integer", `0`, "Connections horad serves at once. Beyond it a connection waits until one ends, and waiting connections are taken in turn by uid, so one user's flood does not starve another user's command. Long requests (srun's streams, squeue -i) hold their connection."},
	{"limits.max_connections_per_user", "integer", `0`, "Connections of one uid horad serves at once; more wait without delaying other users. root is exempt."},

	{"mix", "table", "", "The fairness ratio between the real-time and best-effort classes."},
	{"mix.ratio", "string", `"1:0"`, "x:y: on every node the real-time class is guaranteed the share x/(x+y) of the node's time while both classes have work, and either class may use all of it when the other is idle. Real-time admission plans with that share. \"1:0\": real-time work owns the nodes, best-effort work fills what it leaves."},
	{"mix.mode", "string", `"ps"`, "How a node enforces the ratio: \"ps\" (proportional share: the classes' cgroups get CPU weights x and y), \"tdm\" (time division: every period the real-time class runs for its share, then the best-effort class), \"gang\" (an Ousterhout matrix rotated every quantum, each job on a node stopped and continued in its own freezer group or systemd scope)."},
	{"mix.period", "float", `3.0`, "tdm: the period in seconds that is divided between the classes."},
	{"mix.quantum", "float", `0.5`, "gang: the time slice in seconds."},
	{"mix.rows", "integer", `6`, "gang: the rows of the matrix, split between the classes by the ratio. Periodic real-time jobs are admitted by the 1GS rows test: r = M·(Q+δ)·ζmax/(d·Q) real-time rows with one free slot per process down the same nodes."},
	{"mix.sync", "float", `0`, "tdm: the synchronisation δ in seconds at the start of each division, during which neither class runs on a node where both have processes (be-rt-mix-2001 §4.2): a guard against the skew of the switch between nodes, so that no node runs the new division's class while another still runs the old one. gang: the row switch δ that the real-time admission counts in the cycle M·(Q+δ) (§4.4). 0: none."},
}
