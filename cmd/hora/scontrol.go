package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"hora/api"
	"hora/sbatch"
)

var scontrolOpts = []sbatch.Opt{
	{Short: 'a', Long: "all", Arg: sbatch.NoArg, Key: "all"},
	{Short: 'd', Long: "details", Arg: sbatch.NoArg, Key: "details"},
	{Long: "federation", Arg: sbatch.NoArg, Key: "federation"},
	{Short: 'F', Long: "future", Arg: sbatch.NoArg, Key: "future"},
	{Long: "hide", Arg: sbatch.NoArg, Key: "hide"},
	{Long: "local", Arg: sbatch.NoArg, Key: "local"},
	{Short: 'M', Long: "cluster", Arg: sbatch.RequiredArg, Key: "cluster"},
	{Short: 'o', Long: "oneliner", Arg: sbatch.NoArg, Key: "oneliner"},
	{Short: 'Q', Long: "quiet", Arg: sbatch.NoArg, Key: "quiet"},
	{Long: "sibling", Arg: sbatch.NoArg, Key: "sibling"},
	{Short: 'u', Long: "uid", Arg: sbatch.RequiredArg, Key: "uid"},
	{Short: 'v', Long: "verbose", Arg: sbatch.NoArg, Key: "verbose"},
	{Short: 'V', Long: "version", Arg: sbatch.NoArg, Key: "version"},
	{Long: "help", Arg: sbatch.NoArg, Key: "help"},
	{Long: "usage", Arg: sbatch.NoArg, Key: "usage"},
}

// record collects the lines of one scontrol record; oneliner joins them.
type record struct{ lines []string }

func (r *record) add(fields ...string) { r.lines = append(r.lines, strings.Join(fields, " ")) }

// write prints a record: first line flush, continuation lines indented by
// three spaces, a blank line after; with -o everything on one line.
func (r *record) write(w io.Writer, oneliner bool) {
	if oneliner {
		fmt.Fprintln(w, strings.Join(r.lines, " "))
		return
	}
	for i, l := range r.lines {
		if i > 0 {
			io.WriteString(w, "   ")
		}
		io.WriteString(w, l)
		io.WriteString(w, "\n")
	}
	io.WriteString(w, "\n")
}

// jobRecord lays out `scontrol show job` as measured on 22.05.8 and
// described in COMPAT.md §5.2.
func jobRecord(j *api.Job, now time.Time, tfmt string) *record {
	return jobRecordMem(j, now, tfmt, partFacts{})
}

// partFacts is what `show job` prints of the job's partition: the memory
// of its smallest node (0 = unknown), for a pending job's TRES, and its
// OverSubscribe ("" = unknown, taken as NO).
type partFacts struct {
	nodeMem int64
	over    string
}

// jobRecordMem is jobRecord knowing facts of the job's partition.
func jobRecordMem(j *api.Job, now time.Time, tfmt string, pf partFacts) *record {
	nodeMem := pf.nodeMem
	t := func(u int64) string { return fmtTime(u, tfmt, now) }
	r := &record{}
	id := strconv.FormatInt(j.ID, 10)
	if j.ArrayJobID != 0 {
		// A task, or the folded pending tasks of an array.
		f := []string{"JobId=" + id, "ArrayJobId=" + strconv.FormatInt(j.ArrayJobID, 10),
			"ArrayTaskId=" + arrayTaskText(j, false)}
		if j.ArrayThrottle > 0 {
			f = append(f, "ArrayTaskThrottle="+strconv.Itoa(j.ArrayThrottle))
		}
		r.add(append(f, "JobName="+j.Spec.Name)...)
	} else {
		r.add("JobId="+id, "JobName="+j.Spec.Name)
	}
	r.add(fmt.Sprintf("UserId=%s(%d)", j.User, j.UID), fmt.Sprintf("GroupId=%s(%d)", j.Group, j.GID), "MCS_label=N/A")
	r.add("Priority="+strconv.FormatInt(j.Priority, 10), "Nice="+strconv.Itoa(j.Spec.Nice), "Account="+orNull(j.Spec.Account), "QOS="+orNull(j.Spec.QOS))
	// scontrol writes a reason with a description (ReqNodeNotAvail, ...)
	// with its blanks as underscores, so that the line stays key=value.
	r.add("JobState="+string(j.State), "Reason="+strings.ReplaceAll(reasonText(j), " ", "_"), "Dependency="+orNull(j.Dependency))
	// horad resolves --requeue/--no-requeue/job_requeue at submit; a job
	// recorded before it could (neither flag) had Slurm's default, 1.
	requeue := "Requeue=1"
	if j.Spec.NoRequeue {
		requeue = "Requeue=0"
	}
	r.add(requeue, "Restarts="+strconv.Itoa(j.Restarts), "BatchFlag=1", "Reboot=0",
		fmt.Sprintf("ExitCode=%d:%d", j.ExitCode, j.Signal))
	timeMin := "N/A"
	if j.Spec.TimeMin > 0 {
		timeMin = sbatch.FormatLongDuration(j.Spec.TimeMin)
	}
	r.add("RunTime="+sbatch.FormatLongDuration(timeUsed(j, now.Unix())),
		"TimeLimit="+timeLimitText(j.Spec.TimeLimit, true), "TimeMin="+timeMin)
	eligible := j.EligibleTime
	if eligible == 0 {
		eligible = j.SubmitTime
	}
	eligibleText := t(eligible)
	if j.State == api.StatePending && strings.HasPrefix(j.Reason, "JobHeld") {
		// A held job is not eligible and accrues no age (22.05.8).
		eligibleText = "Unknown"
	}
	r.add("SubmitTime="+t(j.SubmitTime), "EligibleTime="+eligibleText)
	r.add("AccrueTime=" + eligibleText)
	deadline := "N/A"
	if j.Spec.Deadline != 0 {
		deadline = t(j.Spec.Deadline)
	}
	r.add("StartTime="+t(j.StartTime), "EndTime="+t(endTime(j)), "Deadline="+deadline)
	lastEval := j.StartTime
	if lastEval == 0 {
		lastEval = eligible
	}
	suspendTime, preSuspend := "None", int64(0)
	if j.SuspendTime > 0 {
		// SuspendTime is the last suspend or resume; the run time before
		// the last suspension is the same expression in both states.
		suspendTime, preSuspend = t(j.SuspendTime), max(j.SuspendTime-j.StartTime-j.SuspendedSecs, 0)
	}
	r.add("SuspendTime="+suspendTime, "SecsPreSuspend="+strconv.FormatInt(preSuspend, 10), "LastSchedEval="+t(lastEval), "Scheduler=Main")
	if j.Spec.RTFrame > 0 {
		// hora's periodic real-time jobs (docs/mix.md): their contract.
		r.add("RTClass=periodic", "RTFrame="+rtSeconds(j.Spec.RTFrame), "RTBuffer="+strconv.Itoa(j.Spec.RTBuffer),
			"RTWork="+rtWorkList(j.Spec.RTWork), "RTMisses="+strconv.Itoa(j.Spec.RTMisses))
	}
	r.add("Partition="+j.Spec.Partition, "AllocNode:Sid="+orNull(j.Spec.SubmitHost)+":0")
	r.add("ReqNodeList="+orNull(j.Spec.NodeList), "ExcNodeList="+orNull(j.Spec.Exclude))
	// A job that never ran has an empty NodeList (22.05.8), not (null).
	r.add("NodeList=" + hostlist(j.Nodes))
	if len(j.Nodes) > 0 {
		r.add("BatchHost=" + j.Nodes[0])
	}
	nodes, cpus := jobNodeCount(j), jobCPUs(j)
	tasks := j.Spec.NTasks
	if tasks <= 0 {
		tasks = nodes
	}
	r.add("NumNodes="+strconv.Itoa(nodes), "NumCPUs="+strconv.Itoa(cpus), "NumTasks="+strconv.Itoa(tasks),
		"CPUs/Task="+strconv.Itoa(max(j.Spec.CPUsPerTask, 1)), "ReqB:S:C:T=0:0:*:*")
	// Slurm 22.05 prints one TRES= line: what the job holds once it has
	// started, what it asks for before (newer Slurm splits them into
	// ReqTRES/AllocTRES). A pending job that names no memory may use all
	// of its nodes' memory, which Slurm counts in the request.
	tres := fmt.Sprintf("cpu=%d", cpus)
	switch {
	case j.Spec.MemMB > 0:
		tres += ",mem=" + mbText(j.Spec.MemMB)
	case j.StartTime == 0 && j.Spec.MemPerCPU == 0 && nodeMem > 0:
		tres += ",mem=" + mbText(nodeMem*int64(nodes))
	}
	tres += fmt.Sprintf(",node=%d,billing=%d", nodes, cpus)
	switch {
	case j.StartTime != 0 && len(j.Alloc) > 0:
		// What the job holds, in scontrol's order.
		var mem int64
		gpus := 0
		for _, a := range j.Alloc {
			mem += a.MemMB
			gpus += len(a.GPUs)
		}
		at := fmt.Sprintf("cpu=%d", cpus)
		if mem > 0 {
			at += ",mem=" + mbText(mem)
		}
		at += fmt.Sprintf(",node=%d,billing=%d", nodes, cpus)
		if gpus > 0 {
			at += fmt.Sprintf(",gres/gpu=%d", gpus)
		}
		r.add("TRES=" + at)
	default:
		r.add("TRES=" + tres)
	}
	r.add("Socks/Node=*", fmt.Sprintf("NtasksPerN:B:S:C=%d:0:*:*", j.Spec.NTasksPerNode), "CoreSpec=*")
	minMem := fmt.Sprintf("MinMemoryNode=%s", memText(j.Spec.MemMB))
	if j.Spec.MemPerCPU > 0 {
		minMem = fmt.Sprintf("MinMemoryCPU=%s", memText(j.Spec.MemPerCPU))
	}
	r.add("MinCPUsNode="+strconv.Itoa(max(j.Spec.CPUsPerTask, j.Spec.MinCPUs, 1)), minMem, "MinTmpDiskNode=0")
	r.add("Features="+orNull(j.Spec.Constraint), "DelayBoot=00:00:00")
	if j.Spec.Reservation != "" {
		r.add("Reservation=" + j.Spec.Reservation)
	}
	r.add("OverSubscribe="+api.JobOverSubscribe(pf.over, &j.Spec), "Contiguous=0", "Licenses=(null)", "Network=(null)")
	r.add("Command=" + orNull(j.Spec.Command))
	r.add("WorkDir=" + j.Spec.WorkDir)
	if j.Spec.Comment != "" {
		r.add("Comment=" + j.Spec.Comment)
	}
	out := j.StdoutPath
	if out == "" {
		out = strings.TrimSuffix(j.Spec.WorkDir, "/") + "/slurm-" + id + ".out"
	}
	errp := j.StderrPath
	if errp == "" {
		errp = out
	}
	in := j.Spec.Stdin
	if in == "" {
		in = "/dev/null"
	}
	r.add("StdErr=" + errp)
	r.add("StdIn=" + in)
	r.add("StdOut=" + out)
	// 22.05.8 ends the record with "Power=" and an empty line of its own
	// ("Power= " at the end of -o).
	r.add("Power=")
	r.add("")
	return r
}

func memText(mb int64) string {
	if mb <= 0 {
		return "0"
	}
	return strconv.FormatInt(mb, 10) + "M"
}

// timeOrNone prints a time stamp, or Slurm's None for one not known.
func timeOrNone(unix int64, now time.Time) string {
	if unix == 0 {
		return "None"
	}
	return fmtTime(unix, "", now)
}

// nodeRecord lays out `scontrol show node`.
func nodeRecord(n *api.Node, now time.Time) *record {
	r := &record{}
	st := nodeStateLong(n)
	alloc, allocMem := n.AllocCPUs, n.AllocMemMB
	if alloc == 0 && n.AllocMemMB == 0 {
		// An older horad reports no counts: a busy node is held whole.
		switch strings.ToLower(n.State) {
		case "allocated", "draining":
			alloc = n.CPUs
		}
	}
	sockets, cores, threads := n.Sockets, n.CoresPerSocket, max(n.ThreadsPerCore, 1)
	if sockets == 0 {
		sockets, cores = n.CPUs, 1
	}
	load, freeMem := "N/A", "N/A"
	if n.FreeMemMB > 0 {
		load, freeMem = strconv.FormatFloat(n.CPULoad, 'f', 2, 64), strconv.FormatInt(n.FreeMemMB, 10)
	}
	feats := orNull(strings.Join(n.Features, ","))
	// Slurm ends three of these lines with a blank (seen on 22.05.8: -o
	// then shows two blanks between their fields and the next).
	r.add("NodeName="+n.Name, "Arch=x86_64", "CoresPerSocket="+strconv.Itoa(cores), "")
	r.add("CPUAlloc="+strconv.Itoa(alloc), "CPUEfctv="+strconv.Itoa(n.CPUs), "CPUTot="+strconv.Itoa(n.CPUs), "CPULoad="+load)
	r.add("AvailableFeatures=" + feats)
	r.add("ActiveFeatures=" + feats)
	r.add("Gres=" + orNull(n.Gres))
	addr := n.Address
	if addr == "" {
		addr = n.Name
	}
	r.add("NodeAddr="+addr, "NodeHostName="+n.Name, "Version="+slurmVersion)
	if n.OS != "" {
		r.add("OS="+n.OS, "")
	}
	r.add("RealMemory="+strconv.FormatInt(n.MemoryMB, 10), "AllocMem="+strconv.FormatInt(allocMem, 10), "FreeMem="+freeMem,
		"Sockets="+strconv.Itoa(sockets), "Boards=1")
	r.add("State="+st, "ThreadsPerCore="+strconv.Itoa(threads), "TmpDisk=0", "Weight=1", "Owner=N/A", "MCS_label=N/A")
	r.add("Partitions="+strings.Join(n.Partitions, ","), "")
	r.add("BootTime="+timeOrNone(n.BootTime, now), "SlurmdStartTime="+timeOrNone(n.StartTime, now))
	if n.LastBusy != 0 {
		r.add("LastBusyTime=" + fmtTime(n.LastBusy, "", now))
	}
	r.add("CfgTRES=" + tresText(n.CPUs, n.MemoryMB, n.Gres, n.CPUs))
	if alloc > 0 || allocMem > 0 {
		r.add("AllocTRES=" + tresText(alloc, allocMem, n.AllocGres, 0))
	} else {
		r.add("AllocTRES=")
	}
	r.add("CapWatts=n/a")
	r.add("CurrentWatts=0", "AveWatts=0")
	r.add("ExtSensorsJoules=n/s", "ExtSensorsWatts=0", "ExtSensorsTemp=n/s")
	if n.Reason != "" {
		// Slurm: Reason=<text> [<user>@<time set>]
		r.add(fmt.Sprintf("Reason=%s [%s@%s]", n.Reason, orDefault(n.ReasonUser, "root"), fmtTime(n.ReasonTime, "", now)))
	}
	return r
}

// partitionRecord lays out `scontrol show partition`; ReFrame reads
// PartitionName= and Nodes= from it (COMPAT.md §7.7).
func partitionRecord(p *api.Partition, nodes []api.Node) *record {
	r := &record{}
	lim := func(s int64, none string) string {
		switch s {
		case api.NoLimit:
			return "UNLIMITED"
		case 0:
			return none
		}
		return sbatch.FormatLongDuration(s)
	}
	cpus := 0
	var mem int64
	var gres []string
	for _, name := range p.Nodes {
		for i := range nodes {
			if nodes[i].Name == name {
				cpus += nodes[i].CPUs
				mem += nodes[i].MemoryMB
				if nodes[i].Gres != "" {
					gres = append(gres, nodes[i].Gres)
				}
			}
		}
	}
	def := "NO"
	if p.Default {
		def = "YES"
	}
	r.add("PartitionName=" + p.Name)
	r.add("AllowGroups=ALL", "AllowAccounts=ALL", "AllowQos=ALL")
	r.add("AllocNodes=ALL", "Default="+def, "QoS=N/A")
	defTime := "NONE"
	if p.DefaultTime > 0 {
		defTime = sbatch.FormatLongDuration(p.DefaultTime)
	}
	r.add("DefaultTime="+defTime, "DisableRootJobs=NO", "ExclusiveUser=NO", "GraceTime=0", "Hidden=NO")
	r.add("MaxNodes=UNLIMITED", "MaxTime="+lim(p.MaxTime, "UNLIMITED"), "MinNodes=0", "LLN=NO", "MaxCPUsPerNode=UNLIMITED")
	r.add("Nodes=" + orNull(hostlist(p.Nodes)))
	r.add("PriorityJobFactor=1", "PriorityTier=1", "RootOnly=NO", "ReqResv=NO", "OverSubscribe="+orDefault(p.OverSubscribe, "NO"))
	r.add("OverTimeLimit=NONE", "PreemptMode=OFF")
	r.add("State="+strings.ToUpper(orDefault(p.State, "up")), "TotalCPUs="+strconv.Itoa(cpus),
		"TotalNodes="+strconv.Itoa(len(p.Nodes)), "SelectTypeParameters=NONE")
	r.add("JobDefaults=(null)")
	r.add("DefMemPerNode=UNLIMITED", "MaxMemPerNode=UNLIMITED")
	// The partition's total, in 22.05's order: cpu, mem, node, billing,
	// then the gres counts as CfgTRES writes them.
	if len(p.Nodes) == 0 {
		return r // no TRES to count
	}
	tres := "cpu=" + strconv.Itoa(cpus)
	if mem > 0 {
		tres += ",mem=" + mbText(mem)
	}
	tres += fmt.Sprintf(",node=%d,billing=%d", len(p.Nodes), cpus)
	r.add("TRES=" + tres + strings.TrimPrefix(tresText(0, 0, strings.Join(gres, ","), 0), "cpu=0"))
	return r
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// scontrolMain implements the scontrol verbs that clients use: show
// job/node/partition/hostnames/hostlist, hold, uhold, release.
func scontrolMain(ctx context.Context, env *Env, args []string) int {
	p, err := sbatch.Getopt(scontrolOpts, args, true)
	if err != nil {
		return usageError(env, err)
	}
	has := func(k string) bool { _, ok := p.Last(k); return ok }
	switch {
	case has("help"):
		fmt.Fprint(env.Stdout, scontrolHelp)
		return 0
	case has("usage"):
		fmt.Fprint(env.Stdout, scontrolHelp)
		return 0
	case has("version"):
		return printVersion(env)
	}
	words := p.Args
	if len(words) == 0 {
		fmt.Fprintf(env.Stderr, "%s: error: interactive mode is not supported; give a command\n", env.Prog)
		return 1
	}
	// Global options may also follow the verb ("scontrol show -o nodes").
	oneliner := has("oneliner")
	var rest []string
	for _, w := range words {
		switch w {
		case "-o", "--oneliner":
			oneliner = true
		case "-a", "--all", "-d", "--details", "-Q", "--quiet", "-v", "--verbose":
		default:
			if strings.HasPrefix(w, "--") && len(w) > 2 {
				// getopt reads options after the verb too.
				fmt.Fprintf(env.Stderr, "%s: unrecognized option '%s'\nTry \"%s --help\" for more information\n", env.Prog, w, env.Prog)
				return 1
			}
			rest = append(rest, w)
		}
	}
	words = rest
	ctx = ctxOrBackground(ctx)
	verb := strings.ToLower(words[0])
	switch {
	case verb == "show" || verb == "list":
		if len(words) < 2 {
			fmt.Fprintf(env.Stderr, "too few arguments for keyword:%s\n", words[0])
			return 1
		}
		return scontrolShow(ctx, env, words[1], words[2:], oneliner)
	case verb == "create" || verb == "delete" || (verb == "update" && len(words) > 1 && isResvEntity(words[1])):
		return scontrolResv(ctx, env, verb, words[1:]) // reservation.go
	case verb == "update" && isNodeUpdate(words[1:]):
		return scontrolUpdateNode(ctx, env, words[1:])
	case verb == "update" && isJobUpdate(words[1:]):
		return scontrolUpdateJob(ctx, env, words[1:])
	case verb == "suspend" || verb == "resume" || verb == "requeue" || verb == "requeuehold":
		return scontrolSuspend(ctx, env, verb, words[1:])
	case verb == "hold" || verb == "uhold" || verb == "release":
		return scontrolHold(ctx, env, verb, words[1:])
	case verb == "top":
		return scontrolTop(ctx, env, words[1:])
	case verb == "listpids":
		return scontrolListPids(ctx, env, words[1:])
	case verb == "version":
		return printVersion(env)
	case verb == "reconfigure":
		// As Slurm's: silent on success; horad re-reads hora.toml as on
		// SIGHUP, and a file with errors changes nothing.
		cl := dial(env)
		if cl == nil {
			return 1
		}
		if _, err := cl.Reconfigure(ctxOrBackground(ctx)); err != nil {
			fmt.Fprintf(env.Stderr, "slurm_reconfigure error: %s\n", apiErrText(err))
			return 1
		}
		return 0
	case verb == "ping":
		cl := dial(env)
		if cl == nil {
			return 1
		}
		pr, err := cl.Ping(ctx)
		if err != nil {
			fmt.Fprintf(env.Stdout, "Slurmctld(primary) at horad is DOWN\n")
			return 1
		}
		// Slurm names the controller's host; horad answers on a local
		// socket, so that is this machine.
		_ = pr
		host, err := os.Hostname()
		if err != nil {
			host = "horad"
		}
		fmt.Fprintf(env.Stdout, "Slurmctld(primary) at %s is UP\n", host)
		return 0
	}
	fmt.Fprintf(env.Stderr, "invalid keyword: %s\n", words[0])
	return 1
}

// showEntity resolves scontrol's abbreviable entity names.
func showEntity(s string) string {
	s = strings.ToLower(s)
	for _, e := range []string{"jobs", "nodes", "partitions", "hostnames", "hostlist", "hostlistsorted", "config", "reservations", "steps"} {
		if len(s) >= 3 && strings.HasPrefix(e, s) {
			return strings.TrimSuffix(e, "s")
		}
	}
	for pre, e := range map[string]string{"jobid=": "job", "nodename=": "node", "partitionname=": "partition",
		"reservationname=": "reservation", "reservation=": "reservation"} {
		if strings.HasPrefix(s, pre) {
			return e
		}
	}
	return ""
}

func scontrolShow(ctx context.Context, env *Env, what string, rest []string, oneliner bool) int {
	entity := showEntity(what)
	// "show JobId=5" carries the name in the entity word.
	if _, val, ok := strings.Cut(what, "="); ok && val != "" {
		rest = append([]string{val}, rest...)
	}
	name := ""
	if len(rest) > 0 {
		name = rest[0]
	}
	switch entity {
	case "hostname", "hostlist", "hostlistsorted":
		if name == "" {
			// Inside a job the list defaults to the job's nodes.
			name = env.Getenv("SLURM_JOB_NODELIST")
		}
		if name == "" {
			fmt.Fprintf(env.Stderr, "%s: error: host list is empty\n", env.Prog)
			return 0
		}
		hosts, err := sbatch.ExpandHostlist(name)
		if err != nil {
			fmt.Fprintf(env.Stderr, "%s: error: Invalid hostlist: %s\n", env.Prog, name)
			return 1
		}
		if entity == "hostname" {
			for _, h := range hosts {
				fmt.Fprintln(env.Stdout, h)
			}
		} else {
			fmt.Fprintln(env.Stdout, sbatch.CompressHostlist(hosts))
		}
		return 0
	case "job":
		return showJobs(ctx, env, name, oneliner)
	case "step":
		return showSteps(ctxOrBackground(ctx), env, name, oneliner)
	case "config":
		return showConfig(ctx, env)
	case "reservation":
		return showReservations(ctx, env, name, oneliner)
	case "node", "partition":
		cl := dial(env)
		if cl == nil {
			return 1
		}
		nodes, err := cl.Nodes(ctx)
		var parts []api.Partition
		if err == nil && entity == "partition" {
			parts, err = cl.Partitions(ctx)
		}
		if err != nil {
			fmt.Fprintf(env.Stderr, "slurm_load_%ss error: %s\n", entity, apiErrText(err))
			return 1
		}
		return writeNodesParts(env, entity, name, nodes, parts, oneliner)
	}
	// The trailing space is scontrol 22.05.8's.
	fmt.Fprintf(env.Stderr, "invalid entity:%s for keyword:show \n", what)
	return 1
}

func writeNodesParts(env *Env, entity, name string, nodes []api.Node, parts []api.Partition, oneliner bool) int {
	found := false
	if entity == "node" {
		var want []string
		if name != "" {
			want, _ = sbatch.ExpandHostlist(name)
		}
		for i := range nodes {
			if name != "" && !containsStr(want, nodes[i].Name) {
				continue
			}
			found = true
			nodeRecord(&nodes[i], nowFunc()).write(env.Stdout, oneliner)
		}
		if !found {
			if name != "" {
				fmt.Fprintf(env.Stdout, "Node %s not found\n", name)
				return 1
			}
			fmt.Fprintln(env.Stdout, "No nodes in the system")
		}
		return 0
	}
	for i := range parts {
		if name != "" && parts[i].Name != name {
			continue
		}
		found = true
		partitionRecord(&parts[i], nodes).write(env.Stdout, oneliner)
	}
	if !found {
		if name != "" {
			fmt.Fprintf(env.Stdout, "Partition %s not found\n", name)
			return 1
		}
		fmt.Fprintln(env.Stdout, "No partitions in the system")
	}
	return 0
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// showJobs prints `scontrol show job [id]`, including finished jobs horad
// still remembers (as slurmctld does for MinJobAge).
func showJobs(ctx context.Context, env *Env, name string, oneliner bool) int {
	f := api.JobFilter{All: true, Full: true, Fold: true}
	var ref jobRef
	if name != "" {
		var ok bool
		ref, ok = parseJobRef(name)
		if !ok {
			fmt.Fprintln(env.Stderr, "scontrol_print_job error: Invalid job id specified")
			return 1
		}
		f.IDs = []int64{ref.id}
		f.Fold = ref.tasks == nil
	}
	cl := dial(env)
	if cl == nil {
		return 1
	}
	jobs, err := cl.Jobs(ctx, f)
	if err != nil {
		fmt.Fprintf(env.Stderr, "slurm_load_jobs error: %s\n", apiErrText(err))
		return 1
	}
	if ref.tasks != nil {
		// "show job 7_3": only that task of array 7.
		kept := jobs[:0]
		for _, j := range jobs {
			if j.ArrayJobID == ref.id && slices.Contains(ref.tasks, j.ArrayTaskID) {
				kept = append(kept, j)
			}
		}
		jobs = kept
	}
	return writeJobs(env, jobs, name != "", oneliner, partitionFacts(ctx, cl, jobs))
}

// partitionFacts reads, per partition of the jobs, its OverSubscribe and,
// when a pending job without a memory request is in it, the smallest
// memory of its nodes (nil when there are no jobs or horad does not say).
func partitionFacts(ctx context.Context, cl *api.Client, jobs []api.Job) map[string]partFacts {
	if len(jobs) == 0 {
		return nil
	}
	parts, err := cl.Partitions(ctx)
	if err != nil {
		return nil
	}
	out := map[string]partFacts{}
	for _, p := range parts {
		out[p.Name] = partFacts{over: p.OverSubscribe}
	}
	need := slices.ContainsFunc(jobs, func(j api.Job) bool {
		return j.StartTime == 0 && j.Spec.MemMB == 0 && j.Spec.MemPerCPU == 0
	})
	if !need {
		return out
	}
	nodes, err := cl.Nodes(ctx)
	if err != nil {
		return out
	}
	for _, p := range parts {
		f := out[p.Name]
		for _, n := range nodes {
			if slices.Contains(p.Nodes, n.Name) && n.MemoryMB > 0 && (f.nodeMem == 0 || n.MemoryMB < f.nodeMem) {
				f.nodeMem = n.MemoryMB
			}
		}
		out[p.Name] = f
	}
	return out
}

func writeJobs(env *Env, jobs []api.Job, named, oneliner bool, parts map[string]partFacts) int {
	if len(jobs) == 0 {
		if named {
			fmt.Fprintln(env.Stderr, "slurm_load_jobs error: Invalid job id specified")
			return 1
		}
		fmt.Fprintln(env.Stdout, "No jobs in the system")
		return 0
	}
	now, tfmt := nowFunc(), timeFormat(env)
	for i := range jobs {
		jobRecordMem(&jobs[i], now, tfmt, parts[jobs[i].Spec.Partition]).write(env.Stdout, oneliner)
	}
	return 0
}

// scontrolHold implements hold, uhold and release with ids given as comma
// or space separated lists.
func scontrolHold(ctx context.Context, env *Env, verb string, words []string) int {
	req, ok := jobIDWords(env, verb, words, true)
	if !ok {
		return 1
	}
	cl := dial(env)
	if cl == nil {
		return 1
	}
	path := api.PathHold
	if verb == "release" {
		path = api.PathRelease
	}
	req.UserHold = verb == "uhold"
	resp, err := cl.Control(ctx, path, req)
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: error: %s\n", env.Prog, apiErrText(err))
		return 1
	}
	// Like scontrol 22.05.8 ("hold abc"): one line per failed job, then
	// the last error once more as slurm_perror prints it.
	if last := reportJobResults(env, resp.Results); last != "" {
		fmt.Fprintf(env.Stderr, "slurm_suspend error: %s\n", last)
		return 1
	}
	return 0
}

// jobIDWords reads the job ids of hold, release, suspend, resume and requeue:
// comma or space separated, an optional JobId= prefix. A bad id is reported
// as scontrol does; perror adds hold's second, slurm_perror line.
func jobIDWords(env *Env, verb string, words []string, perror bool) (api.ControlRequest, bool) {
	var refs []jobRef
	for _, w := range words {
		for _, s := range splitJobIDs(w) {
			if v, ok := strings.CutPrefix(strings.ToLower(s), "jobid="); ok {
				s = v
			}
			r, ok := parseJobRef(s)
			if !ok {
				fmt.Fprintf(env.Stderr, "Invalid job id specified for job %s\n", s)
				if perror {
					fmt.Fprintln(env.Stderr, "slurm_suspend error: Invalid job id specified")
				}
				return api.ControlRequest{}, false
			}
			refs = append(refs, r)
		}
	}
	if len(refs) == 0 {
		fmt.Fprintf(env.Stderr, "too few arguments for keyword:%s\n", verb)
		return api.ControlRequest{}, false
	}
	return controlRequest(refs), true
}

// reportJobResults prints "<error> for job <id>" per refused job and returns
// the last error ("" when every job was done).
func reportJobResults(env *Env, results []api.JobResult) string {
	last := ""
	for _, r := range results {
		if r.Error == "" && r.Code == "" {
			continue
		}
		last = r.Error
		if last == "" {
			last = codeText(r.Code)
		}
		id := r.ID
		if id < 0 {
			// a task selector that named no task of array -id
			id = -id
		}
		fmt.Fprintf(env.Stderr, "%s for job %d\n", last, id)
	}
	return last
}

const scontrolHelp = `Usage: scontrol [<OPTION>] [<COMMAND>]
    Valid <OPTION> values are:
     -a or --all: equivalent to "all" command
     -d or --details: equivalent to "details" command
     -h or --help: equivalent to "help" command
     -o or --oneliner: equivalent to "oneliner" command
     -Q or --quiet: equivalent to "quiet" command
     -v or --verbose: equivalent to "verbose" command
     -V or --version: equivalent to "version" command

  <keyword> may be omitted from the execute line and scontrol will execute
  in interactive mode (not supported by hora).

    Valid <COMMAND> values are:
     create reservation <SPEC> create an advance reservation: StartTime=
                              Duration=|EndTime= Nodes=|NodeCnt= Users=
                              [ReservationName=] [PartitionName=] [Flags=].
     delete ReservationName=<name>  delete a reservation.
     hold <job_list>          prevent specified job from starting.
     ping                     print status of slurmctld daemons.
     reconfigure              make horad re-read hora.toml (as SIGHUP); root
                              and operators.
     release <job_list>       permit specified job to start (see hold).
     show <ENTITY> [<ID>]     display state of identified entity, default
                              is all records. <ENTITY> is one of job, node,
                              partition, reservation, hostnames, hostlist.
     uhold <job_list>         place user hold on specified job (see hold).
     update ReservationName=<name> <SPEC>  change a reservation (Users+=,
                              Users-= add and remove users).
     version                  display tool version number.

  <job_list> is a comma or space separated list of job ids.
`

// showConfig prints `scontrol show config` in scontrol 22.05's layout: a
// dated title, "Key<padded to 23> = value" lines, a blank line and the
// controller's status line, as `scontrol ping` prints it.
func showConfig(ctx context.Context, env *Env) int {
	cl := dial(env)
	if cl == nil {
		return 1
	}
	cfg, err := cl.Config(ctx)
	if err != nil {
		fmt.Fprintf(env.Stderr, "slurm_load_ctl_conf error: %s\n", apiErrText(err))
		return 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Configuration data as of %s\n", fmtTime(cfg.Now, timeFormat(env), nowFunc()))
	for _, p := range cfg.Pairs {
		v := p.Value
		if p.Key == "MessageTimeout" {
			// The bound is the client's own ($HORA_MESSAGE_TIMEOUT).
			if d, err := api.MessageTimeout(); err == nil {
				v = strconv.Itoa(int(d.Seconds())) + " sec"
			}
		}
		fmt.Fprintf(&b, "%-23s = %s\n", p.Key, v)
	}
	fmt.Fprintf(&b, "\nSlurmctld(primary) at %s is UP\n", orDefault(cfg.Host, "horad"))
	fmt.Fprint(env.Stdout, b.String())
	return 0
}
