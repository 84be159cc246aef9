package main

// The PBS view of a hora job: its state letter, times and paths as PBS
// prints them, and the attribute tables of qstat -f / -F json for each
// flavour (one line per attribute, cmd/hora/listing).

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"hora/api"
	"hora/cmd/hora/listing"
)

// pbsRow is one job as the PBS commands see it.
type pbsRow struct {
	*api.Job
	s *pbsSession
	// disp is the id shown when it is not <seq>.server (an array's
	// <seq>[].server, a subjob's <seq>[i].server); state a state letter
	// that is not the job's own (an array's B, a finished subjob's X);
	// array is set on an array's summary row.
	disp, state string
	array       *pbsArray
}

// pbsID is the row's job id as PBS prints it.
func (r *pbsRow) pbsID() string {
	if r.disp != "" {
		return r.disp
	}
	return r.s.jobID(r.ID)
}

// stateLetter is the row's PBS state letter.
func (r *pbsRow) stateLetter(now int64) string {
	if r.state != "" {
		return r.state
	}
	return pbsState(r.Job, r.torque(), now)
}

// pbsState is the job's PBS state letter (api.PBSState, which horad also
// filters by for qselect).
func pbsState(j *api.Job, torque bool, now int64) string { return api.PBSState(j, torque, now) }

// pbsDuration prints [H]H:MM:SS as PBS does ("%02ld:%02ld:%02ld").
func pbsDuration(secs int64) string {
	if secs < 0 {
		secs = 0
	}
	return fmt.Sprintf("%02d:%02d:%02d", secs/3600, secs/60%60, secs%60)
}

// pbsCtime prints a time stamp as ctime(3) does, without its newline.
func pbsCtime(u int64) string {
	if u == 0 {
		return ""
	}
	if s, ok := ctimeMemo[u]; ok {
		return s
	}
	s := time.Unix(u, 0).Format("Mon Jan _2 15:04:05 2006")
	if len(ctimeMemo) < 4096 {
		ctimeMemo[u] = s
	}
	return s
}

// ctimeMemo remembers formatted time stamps: thousands of jobs share a
// few submit seconds, and formatting each was a fifth of qstat -f.
var ctimeMemo = map[int64]string{}

func (r *pbsRow) torque() bool { return r.s.torque() }

// started is whether the row's job has run; an array's summary row has
// no resources used of its own.
func (r *pbsRow) started() bool { return r.StartTime != 0 && r.array == nil }

func (r *pbsRow) ncpus() int { return jobCPUs(r.Job) }

func (r *pbsRow) nodect() int { return jobNodeCount(r.Job) }

// pbsMemText is a size in PBS's form: kb, mb or gb, the largest exact unit.
func pbsMemText(mb int64) string {
	switch {
	case mb == 0:
		return ""
	case mb%1024 == 0:
		return strconv.FormatInt(mb/1024, 10) + "gb"
	}
	return strconv.FormatInt(mb, 10) + "mb"
}

// outPath is an output file as PBS shows it, host:path.
func (r *pbsRow) outPath(p string) string {
	if p == "" {
		return ""
	}
	host := r.Spec.SubmitHost
	if host == "" {
		host = r.s.server
	}
	return host + ":" + p
}

// variableList is Variable_List: the job's PBS_O_* variables (the whole
// environment is listed only to the owner, with -f).
func (r *pbsRow) variableList() string {
	var out []string
	for _, kv := range r.Spec.Env {
		if strings.HasPrefix(kv, "PBS_O_") {
			out = append(out, kv)
		}
	}
	if len(out) == 0 && r.Spec.WorkDir != "" {
		out = append(out, "PBS_O_WORKDIR="+r.Spec.WorkDir)
	}
	return strings.Join(out, ",")
}

func (r *pbsRow) execHost() string {
	if len(r.Nodes) == 0 {
		return ""
	}
	per := max(r.ncpus()/len(r.Nodes), 1)
	parts := make([]string, len(r.Nodes))
	for i, n := range r.Nodes {
		if r.torque() {
			if per == 1 {
				parts[i] = n + "/0"
			} else {
				parts[i] = n + "/0-" + strconv.Itoa(per-1)
			}
		} else {
			parts[i] = n + "/0*" + strconv.Itoa(per)
		}
	}
	return strings.Join(parts, "+")
}

func (r *pbsRow) walltimeUsed(c *listing.Ctx) string {
	if !r.started() {
		return ""
	}
	return c.Duration(timeUsed(r.Job, c.NowUnix))
}

func (r *pbsRow) exitStatus() string {
	if !r.State.Finished() || r.StartTime == 0 {
		return "" // a job that never ran has no exit status
	}
	switch {
	case r.State == api.StateTimeout && r.torque():
		return "-11" // JOB_EXEC_OVERLIMIT_WT
	case r.State == api.StateTimeout:
		return "-29" // JOB_EXEC_KILL_WALLTIME
	case r.Signal != 0:
		return strconv.Itoa(256 + r.Signal) // both PBS: 256 + the signal
	}
	return strconv.Itoa(r.ExitCode)
}

func rv(f func(r *pbsRow) string) func(*listing.Ctx, *pbsRow) string {
	return func(_ *listing.Ctx, r *pbsRow) string { return f(r) }
}

// rvc is rv for values that need the context (clock, memoised durations).
func rvc(f func(c *listing.Ctx, r *pbsRow) string) func(*listing.Ctx, *pbsRow) string { return f }

func ifStarted(f func(c *listing.Ctx, r *pbsRow) string) func(*listing.Ctx, *pbsRow) string {
	return func(c *listing.Ctx, r *pbsRow) string {
		if !r.started() {
			return ""
		}
		return f(c, r)
	}
}

var (
	pbsCput       = ifStarted(func(c *listing.Ctx, r *pbsRow) string { return pbsDuration(r.TotalCPUMs / 1000) })
	pbsCPUPercent = ifStarted(func(c *listing.Ctx, r *pbsRow) string {
		// CPU time over walltime, as a percentage of one CPU.
		wall := timeUsed(r.Job, c.NowUnix)
		if wall <= 0 {
			return "0"
		}
		return strconv.FormatInt(r.TotalCPUMs/10/wall, 10)
	})
	pbsUsedMem   = ifStarted(func(c *listing.Ctx, r *pbsRow) string { return strconv.FormatInt(r.MaxRSSKB, 10) + "kb" })
	pbsZeroKB    = ifStarted(func(c *listing.Ctx, r *pbsRow) string { return "0kb" })
	pbsUsedNcpus = ifStarted(func(c *listing.Ctx, r *pbsRow) string { return strconv.Itoa(r.ncpus()) })
	pbsZero      = ifStarted(func(c *listing.Ctx, r *pbsRow) string { return "0" })
	pbsConst     = func(v string) func(*listing.Ctx, *pbsRow) string { return rv(func(*pbsRow) string { return v }) }
)

func pbsJobName(_ *listing.Ctx, r *pbsRow) string { return r.Spec.Name }

func pbsJobOwner(_ *listing.Ctx, r *pbsRow) string {
	return r.User + "@" + orHost(r.Spec.SubmitHost, r.s.server)
}

func pbsJobState(c *listing.Ctx, r *pbsRow) string { return r.stateLetter(c.NowUnix) }

func pbsQueue(_ *listing.Ctx, r *pbsRow) string { return r.Spec.Partition }

func pbsServer(_ *listing.Ctx, r *pbsRow) string { return r.s.server }

func pbsCtimeV(_ *listing.Ctx, r *pbsRow) string { return pbsCtime(r.SubmitTime) }

func pbsMtime(c *listing.Ctx, r *pbsRow) string {
	return pbsCtime(max(r.SubmitTime, r.StartTime, r.EndTime))
}

func pbsErrorPath(_ *listing.Ctx, r *pbsRow) string {
	if r.StderrPath == "" {
		return r.outPath(r.StdoutPath)
	}
	return r.outPath(r.StderrPath)
}

func pbsOutputPath(_ *listing.Ctx, r *pbsRow) string { return r.outPath(r.StdoutPath) }

func pbsHoldTypes(_ *listing.Ctx, r *pbsRow) string {
	switch r.Reason {
	case "JobHeldUser":
		return "u"
	case "JobHeldAdmin":
		return "o"
	}
	return "n"
}

func pbsJoinPath(_ *listing.Ctx, r *pbsRow) string {
	if r.Spec.Stderr == "" {
		return "oe"
	}
	return "n"
}

func pbsRerunable(_ *listing.Ctx, r *pbsRow) string {
	if r.Spec.NoRequeue {
		return "False"
	}
	return "True"
}

func pbsWalltimeReq(c *listing.Ctx, r *pbsRow) string {
	if r.Spec.TimeLimit <= 0 {
		return ""
	}
	return c.Duration(r.Spec.TimeLimit)
}

func pbsMemReq(_ *listing.Ctx, r *pbsRow) string { return pbsMemText(r.Spec.MemMB * int64(r.nodect())) }

func pbsNcpus(_ *listing.Ctx, r *pbsRow) string { return strconv.Itoa(r.ncpus()) }

func pbsNodect(_ *listing.Ctx, r *pbsRow) string { return strconv.Itoa(r.nodect()) }

func pbsSelect(_ *listing.Ctx, r *pbsRow) string {
	n := r.nodect()
	return strconv.Itoa(n) + ":ncpus=" + strconv.Itoa(max(r.ncpus()/n, 1))
}

func pbsPlace(_ *listing.Ctx, r *pbsRow) string {
	if r.nodect() > 1 {
		return "scatter"
	}
	return "pack"
}

func pbsStime(_ *listing.Ctx, r *pbsRow) string { return pbsCtime(r.StartTime) }

func pbsEtime(_ *listing.Ctx, r *pbsRow) string { return pbsCtime(max(r.SubmitTime, r.EligibleTime)) }

func pbsExecHost(_ *listing.Ctx, r *pbsRow) string { return r.execHost() }

func pbsExecVnode(_ *listing.Ctx, r *pbsRow) string {
	if len(r.Nodes) == 0 {
		return ""
	}
	per := max(r.ncpus()/len(r.Nodes), 1)
	parts := make([]string, len(r.Nodes))
	for i, n := range r.Nodes {
		parts[i] = "(" + n + ":ncpus=" + strconv.Itoa(per) + ")"
	}
	return strings.Join(parts, "+")
}

func pbsSubstate(_ *listing.Ctx, r *pbsRow) string {
	// OP job substates: 10 queued, 20 held, 30 waiting, 42 running,
	// 43 suspended, 50 exiting, 92 finished.
	switch r.stateLetter(0) {
	case "B":
		return "15" // OP JOB_SUBSTATE_BEGUN
	case "X":
		return "93" // OP JOB_SUBSTATE_TERMINATED
	case "Q":
		return "10"
	case "H":
		return "20"
	case "W":
		return "30"
	case "R":
		return "42"
	case "S":
		return "43"
	case "E":
		return "50"
	}
	return "92"
}

func pbsComment(c *listing.Ctx, r *pbsRow) string {
	switch {
	case r.array != nil && r.StartTime != 0:
		return "Job Array Began at " + pbsCtime(r.StartTime) // OP's array comment
	case r.State.Finished() && r.StartTime != 0:
		return "Job run at " + pbsCtime(r.StartTime) + " on " + pbsExecVnode(c, r) + " and finished"
	case r.StartTime != 0:
		return "Job run at " + pbsCtime(r.StartTime) + " on " + pbsExecVnode(c, r)
	case r.State == api.StatePending && r.Reason != "" && r.Reason != "None":
		return "Not Running: " + r.Reason
	}
	return ""
}

func pbsExit(_ *listing.Ctx, r *pbsRow) string { return r.exitStatus() }

func pbsSubmitArgs(_ *listing.Ctx, r *pbsRow) string { return r.Spec.Command }

func pbsSubmitHost(_ *listing.Ctx, r *pbsRow) string { return orHost(r.Spec.SubmitHost, r.s.server) }

func pbsRunCount(_ *listing.Ctx, r *pbsRow) string {
	if !r.started() {
		return "0"
	}
	return strconv.Itoa(r.Restarts + 1)
}

func pbsHistory(_ *listing.Ctx, r *pbsRow) string {
	if !r.State.Finished() || r.EndTime == 0 {
		return ""
	}
	return strconv.FormatInt(r.EndTime, 10)
}

func pbsUsedWall(c *listing.Ctx, r *pbsRow) string { return r.walltimeUsed(c) }

func pbsJobDir(_ *listing.Ctx, r *pbsRow) string { return r.Spec.WorkDir }

func pbsEgroup(_ *listing.Ctx, r *pbsRow) string { return r.Group }

func pbsEuser(_ *listing.Ctx, r *pbsRow) string { return r.User }

func pbsCompTime(_ *listing.Ctx, r *pbsRow) string {
	if !r.State.Finished() {
		return ""
	}
	return pbsCtime(r.EndTime)
}

func pbsStartCount(_ *listing.Ctx, r *pbsRow) string {
	if !r.started() {
		return ""
	}
	return strconv.Itoa(r.Restarts + 1)
}

func pbsNodesReq(_ *listing.Ctx, r *pbsRow) string {
	n := r.nodect()
	if r.Spec.PBS != nil && r.Spec.PBS.PPN > 0 {
		return strconv.Itoa(n) + ":ppn=" + strconv.Itoa(r.Spec.PBS.PPN)
	}
	if per := r.ncpus() / n; per > 1 {
		return strconv.Itoa(n) + ":ppn=" + strconv.Itoa(per)
	}
	return strconv.Itoa(n)
}

func pbsInitDir(_ *listing.Ctx, r *pbsRow) string { return r.Spec.WorkDir }

func orHost(h, server string) string {
	if h == "" {
		return server
	}
	return h
}

// openpbsJobAttrs are OpenPBS's job attributes in the order its qstat -f
// prints them (OP:src/cmds/qstat.c display_statjob over the server's
// attribute order); an empty value is an attribute the job does not have.
var openpbsJobAttrs = listing.Lazy[pbsRow]{Build: func() *listing.Table[pbsRow] {
	return listing.NewTable([]listing.Field[pbsRow]{
		{Names: []string{"Job_Name"}, Value: pbsJobName},
		{Names: []string{"Job_Owner"}, Value: pbsJobOwner},
		{Names: []string{"resources_used.cpupercent"}, Value: pbsCPUPercent},
		{Names: []string{"resources_used.cput"}, Value: pbsCput},
		{Names: []string{"resources_used.mem"}, Value: pbsUsedMem},
		{Names: []string{"resources_used.ncpus"}, Value: pbsUsedNcpus},
		{Names: []string{"resources_used.vmem"}, Value: pbsZeroKB},
		{Names: []string{"resources_used.walltime"}, Value: pbsUsedWall},
		{Names: []string{"job_state"}, Value: pbsJobState},
		{Names: []string{"queue"}, Value: pbsQueue},
		{Names: []string{"server"}, Value: pbsServer},
		{Names: []string{"Checkpoint"}, Value: pbsConst("u")},
		{Names: []string{"ctime"}, Value: pbsCtimeV},
		{Names: []string{"Error_Path"}, Value: pbsErrorPath},
		{Names: []string{"exec_host"}, Value: pbsExecHost},
		{Names: []string{"exec_vnode"}, Value: pbsExecVnode},
		{Names: []string{"Hold_Types"}, Value: pbsHoldTypes},
		{Names: []string{"Join_Path"}, Value: pbsJoinPath},
		{Names: []string{"Keep_Files"}, Value: pbsConst("n")},
		{Names: []string{"Mail_Points"}, Value: pbsConst("a")},
		{Names: []string{"mtime"}, Value: pbsMtime},
		{Names: []string{"Output_Path"}, Value: pbsOutputPath},
		{Names: []string{"Priority"}, Value: pbsConst("0")},
		{Names: []string{"qtime"}, Value: pbsCtimeV},
		{Names: []string{"Rerunable"}, Value: pbsRerunable},
		{Names: []string{"Resource_List.mem"}, Value: pbsMemReq},
		{Names: []string{"Resource_List.ncpus"}, Value: pbsNcpus},
		{Names: []string{"Resource_List.nodect"}, Value: pbsNodect},
		{Names: []string{"Resource_List.place"}, Value: pbsPlace},
		{Names: []string{"Resource_List.select"}, Value: pbsSelect},
		{Names: []string{"Resource_List.walltime"}, Value: pbsWalltimeReq},
		{Names: []string{"stime"}, Value: pbsStime},
		{Names: []string{"jobdir"}, Value: pbsJobDir},
		{Names: []string{"substate"}, Value: pbsSubstate},
		{Names: []string{"Variable_List"}, Value: pbsVariableList},
		{Names: []string{"comment"}, Value: pbsComment},
		{Names: []string{"etime"}, Value: pbsEtime},
		{Names: []string{"run_count"}, Value: pbsRunCount},
		{Names: []string{"Exit_status"}, Value: pbsExit},
		{Names: []string{"Submit_arguments"}, Value: pbsSubmitArgs},
		{Names: []string{"history_timestamp"}, Value: pbsHistory},
		{Names: []string{"array"}, Value: pbsArrayFlag},
		{Names: []string{"array_state_count"}, Value: pbsArrayStateCount},
		{Names: []string{"array_indices_submitted"}, Value: pbsArraySubmitted},
		{Names: []string{"array_indices_remaining"}, Value: pbsArrayRemaining},
		{Names: []string{"array_id"}, Value: pbsArrayID},
		{Names: []string{"array_index"}, Value: pbsArrayIndex},
		{Names: []string{"project"}, Value: pbsConst("_pbs_project_default")},
		{Names: []string{"Submit_Host"}, Value: pbsSubmitHost},
	})
}}

func pbsVariableList(_ *listing.Ctx, r *pbsRow) string { return r.variableList() }

// torqueJobAttrs are Torque's, in its qstat -f order (TQ:src/cmds/qstat.c
// display_full_job over pbs_server's job attribute order).
var torqueJobAttrs = listing.Lazy[pbsRow]{Build: func() *listing.Table[pbsRow] {
	return listing.NewTable([]listing.Field[pbsRow]{
		{Names: []string{"Job_Name"}, Value: pbsJobName},
		{Names: []string{"Job_Owner"}, Value: pbsJobOwner},
		{Names: []string{"resources_used.cput"}, Value: pbsCput},
		{Names: []string{"resources_used.energy_used"}, Value: pbsZero},
		{Names: []string{"resources_used.mem"}, Value: pbsUsedMem},
		{Names: []string{"resources_used.vmem"}, Value: pbsZeroKB},
		{Names: []string{"resources_used.walltime"}, Value: pbsUsedWall},
		{Names: []string{"job_state"}, Value: pbsJobState},
		{Names: []string{"queue"}, Value: pbsQueue},
		{Names: []string{"server"}, Value: pbsServer},
		{Names: []string{"Checkpoint"}, Value: pbsConst("u")},
		{Names: []string{"ctime"}, Value: pbsCtimeV},
		{Names: []string{"Error_Path"}, Value: pbsErrorPath},
		{Names: []string{"exec_host"}, Value: pbsExecHost},
		{Names: []string{"Hold_Types"}, Value: pbsHoldTypes},
		{Names: []string{"Join_Path"}, Value: pbsJoinPath},
		{Names: []string{"Keep_Files"}, Value: pbsConst("n")},
		{Names: []string{"Mail_Points"}, Value: pbsConst("a")},
		{Names: []string{"mtime"}, Value: pbsMtime},
		{Names: []string{"Output_Path"}, Value: pbsOutputPath},
		{Names: []string{"Priority"}, Value: pbsConst("0")},
		{Names: []string{"qtime"}, Value: pbsCtimeV},
		{Names: []string{"Rerunable"}, Value: pbsRerunable},
		{Names: []string{"Resource_List.mem"}, Value: pbsMemReq},
		{Names: []string{"Resource_List.nodect"}, Value: pbsNodect},
		{Names: []string{"Resource_List.nodes"}, Value: pbsNodesReq},
		{Names: []string{"Resource_List.walltime"}, Value: pbsWalltimeReq},
		{Names: []string{"Variable_List"}, Value: pbsVariableList},
		{Names: []string{"euser"}, Value: pbsEuser},
		{Names: []string{"egroup"}, Value: pbsEgroup},
		{Names: []string{"queue_type"}, Value: pbsConst("E")},
		{Names: []string{"etime"}, Value: pbsEtime},
		{Names: []string{"exit_status"}, Value: pbsExit},
		{Names: []string{"submit_args"}, Value: pbsSubmitArgs},
		{Names: []string{"start_time"}, Value: pbsStime},
		{Names: []string{"start_count"}, Value: pbsStartCount},
		{Names: []string{"fault_tolerant"}, Value: pbsConst("False")},
		{Names: []string{"comp_time"}, Value: pbsCompTime},
		{Names: []string{"job_radix"}, Value: pbsConst("0")},
		{Names: []string{"job_array_id"}, Value: pbsArrayIndex},
		{Names: []string{"job_array_request"}, Value: pbsArrayRequest},
		{Names: []string{"submit_host"}, Value: pbsSubmitHost},
		{Names: []string{"init_work_dir"}, Value: pbsInitDir},
	})
}}

// pbsTimeUse is the "Time Use" column: resources_used.cput, "0" until the
// job runs (OP prints "0" when the server has no value yet). The CPU time
// is the batch step's user+system time, which the node measures when the
// job ends (sacct's TotalCPU); a running job shows 00:00:00.
func pbsTimeUse(r *pbsRow) string {
	if !r.started() {
		return "0"
	}
	return pbsDuration(r.TotalCPUMs / 1000)
}
