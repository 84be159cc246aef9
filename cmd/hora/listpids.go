package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// scontrol listpids [JOBID[.STEPID]] [NODENAME]: the processes of job
// steps on this machine, as Slurm lists those on the node scontrol runs
// on. hora's local nodes are this machine, and every process of a job
// carries the job's environment: HORA_JOB_ID, HORA_SOCKET (which horad:
// two may run here), SLURM_STEP_ID (none: the batch step),
// SLURM_LOCALID/SLURM_PROCID and SLURMD_NODENAME. A task's own process
// (its parent is not of the same task: the shepherd, or srun for a step)
// shows its ids; its descendants show "-", as in Slurm.
func scontrolListPids(ctx context.Context, env *Env, args []string) int {
	job, step, node := "", "", ""
	if len(args) > 0 && args[0] != "*" {
		job, step, _ = strings.Cut(args[0], ".")
		if _, err := strconv.ParseUint(job, 10, 32); err != nil {
			fmt.Fprintf(env.Stderr, "%q does not look like a jobid\n", args[0])
			return 1
		}
		if _, err := strconv.ParseUint(step, 10, 32); err != nil && strings.Contains(args[0], ".") {
			fmt.Fprintf(env.Stderr, "%q does not look like a stepid\n", args[0])
			return 1
		}
	}
	if len(args) > 1 {
		node = args[1]
	}
	cl := dial(env)
	if cl == nil {
		return 1
	}
	_ = ctx
	mine, err := os.Stat(cl.Socket)
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: error: %v\n", env.Prog, err)
		return 1
	}
	procs := jobProcesses(mine)
	var rows []jobProc
	for _, p := range procs {
		if (job == "" || p.job == job) && (step == "" || p.step == step) && (node == "" || p.node == node) {
			rows = append(rows, p)
		}
	}
	slices.SortStableFunc(rows, func(a, b jobProc) int {
		if c := cmpNum(a.job, b.job); c != 0 {
			return c
		}
		if a.step != b.step { // batch first, then steps by number
			if a.step == "batch" || b.step == "batch" {
				return map[bool]int{true: -1, false: 1}[a.step == "batch"]
			}
			return cmpNum(a.step, b.step)
		}
		if (a.local == "-") != (b.local == "-") {
			return map[bool]int{true: 1, false: -1}[a.local == "-"]
		}
		if c := cmpNum(a.local, b.local); c != 0 {
			return c
		}
		return a.pid - b.pid
	})
	fmt.Fprintf(env.Stdout, "%-8s %-8s %-8s %-7s %-8s\n", "PID", "JOBID", "STEPID", "LOCALID", "GLOBALID")
	for _, p := range rows {
		fmt.Fprintf(env.Stdout, "%-8d %-8s %-8s %-7s %-8s\n", p.pid, p.job, p.step, p.local, p.global)
	}
	if len(rows) > 0 || job == "" {
		return 0
	}
	on := "(null)"
	if node != "" {
		on = node
	}
	switch {
	case step != "":
		fmt.Fprintf(env.Stderr, "StepId=%s.%s does not exist on node %s.\n", job, step, on)
	case node != "":
		fmt.Fprintf(env.Stderr, "JobId=%s does not exist on node %s.\n", job, node)
	default:
		fmt.Fprintf(env.Stderr, "There are no steps for job %s on node (null).\n", job)
	}
	return 1
}

// jobProc is one process of a job step on this machine.
type jobProc struct {
	pid, ppid                      int
	job, step, local, global, node string
}

// jobProcesses reads /proc: the processes whose environment names a job
// of the horad whose socket is sock (processes this user may not read
// are not listed, as in Slurm for other users' jobs).
func jobProcesses(sock os.FileInfo) []jobProc {
	ents, _ := os.ReadDir("/proc")
	byPid := map[int]jobProc{}
	sockOK := map[string]bool{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !strings.Contains(string(b), "HORA_JOB_ID=") {
			continue
		}
		vars := map[string]string{}
		for _, kv := range strings.Split(string(b), "\x00") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				vars[k] = v
			}
		}
		s := vars["HORA_SOCKET"]
		ok, seen := sockOK[s]
		if !seen {
			if fi, err := os.Stat(s); err == nil && s != "" {
				ok = os.SameFile(fi, sock)
			}
			sockOK[s] = ok
		}
		if !ok {
			continue
		}
		p := jobProc{pid: pid, ppid: parentPid(pid), job: vars["HORA_JOB_ID"], step: vars["SLURM_STEP_ID"],
			local: vars["SLURM_LOCALID"], global: vars["SLURM_PROCID"], node: vars["SLURMD_NODENAME"]}
		if p.step == "" {
			p.step = "batch"
		}
		byPid[pid] = p
	}
	out := make([]jobProc, 0, len(byPid))
	for _, p := range byPid {
		if par, ok := byPid[p.ppid]; ok && par.job == p.job && par.step == p.step && par.global == p.global {
			p.local, p.global = "-", "-" // a descendant of the task
		}
		if p.local == "" {
			p.local = "-"
		}
		if p.global == "" {
			p.global = "-"
		}
		out = append(out, p)
	}
	return out
}

// parentPid reads the PPid of /proc/PID/stat (0 when the process is gone).
func parentPid(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	s := string(b)
	if k := strings.LastIndexByte(s, ')'); k >= 0 {
		f := strings.Fields(s[k+1:])
		if len(f) > 1 {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

func cmpNum(a, b string) int {
	x, _ := strconv.ParseInt(a, 10, 64)
	y, _ := strconv.ParseInt(b, 10, 64)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return strings.Compare(a, b)
}
