package controller

// The job side of the PBS front end: a job submitted with qsub (its spec
// carries api.PBSSpec) sees PBS's job environment beside Slurm's
// (COMPAT.md §6.1): PBS_JOBID as <seq>.<server>, PBS_QUEUE, PBS_NODEFILE
// with one line per CPU slot, a private TMPDIR, and Torque's PBS_NUM_* when
// submitted in the torque flavour. The submit-side PBS_O_* variables come
// from qsub itself, in the spec's environment.

import (
	"os"
	"strconv"
	"strings"

	"hora/api"
	"hora/nodes/ssh"
)

// pbsServer is the server name that ends PBS job ids: [pbs] server, else
// this machine's host name (as pbs_server names itself).
func (c *Controller) pbsServer() string {
	if c.cfg.PBS.Server != "" {
		return c.cfg.PBS.Server
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return h
}

// pbsSlotsPerNode is the number of PBS_NODEFILE lines per node: Torque's
// ppn when given, else the job's CPUs spread over its nodes.
func pbsSlotsPerNode(j *job) int {
	if p := j.Spec.PBS; p != nil && p.PPN > 0 {
		return p.PPN
	}
	n := max(len(j.Nodes), 1)
	tasks := j.Spec.NTasks
	if tasks <= 0 {
		tasks = n
	}
	return max(tasks*max(j.Spec.CPUsPerTask, 1)/n, 1)
}

// pbsEnv appends the PBS variables of a qsub'd job to env.
func (c *Controller) pbsEnv(env []string, j *job) []string {
	p := j.Spec.PBS
	set := func(k, v string) { env = append(env, k+"="+v) }
	server := p.Server
	if server == "" {
		server = c.pbsServer()
	}
	// A task of an array is a subjob: <array>[<index>].server, with the
	// array's id and its index (OP qsub.1B PBS_ARRAY_ID/PBS_ARRAY_INDEX;
	// TQ job_clone PBS_ARRAYID).
	if j.ArrayJobID != 0 {
		array, index := strconv.FormatInt(j.ArrayJobID, 10), strconv.FormatInt(j.ArrayTaskID, 10)
		set("PBS_JOBID", array+"["+index+"]."+server)
		if p.Flavour == "torque" {
			set("PBS_ARRAYID", index)
		} else {
			set("PBS_ARRAY_INDEX", index)
			set("PBS_ARRAY_ID", array+"[]."+server)
		}
	} else {
		set("PBS_JOBID", strconv.FormatInt(j.ID, 10)+"."+server)
	}
	name := j.Spec.Name
	if j.ArrayJobID != 0 && p.Flavour == "torque" {
		name += "-" + strconv.FormatInt(j.ArrayTaskID, 10) // TQ job_clone "%s-%d"
	}
	set("PBS_JOBNAME", name)
	set("PBS_QUEUE", j.Spec.Partition)
	oq := p.Queue
	if oq == "" {
		oq = j.Spec.Partition
	}
	set("PBS_O_QUEUE", oq)
	if j.Spec.Alloc {
		set("PBS_ENVIRONMENT", "PBS_INTERACTIVE") // qsub -I
	} else {
		set("PBS_ENVIRONMENT", "PBS_BATCH")
	}
	set("PBS_TASKNUM", "1")
	set("PBS_NODENUM", "0")
	set("PBS_MOMPORT", "15003")
	if p.Flavour == "torque" {
		nodes, ppn := max(len(j.Nodes), 1), pbsSlotsPerNode(j)
		set("PBS_NUM_NODES", strconv.Itoa(nodes))
		set("PBS_NUM_PPN", strconv.Itoa(ppn))
		set("PBS_NP", strconv.Itoa(nodes*ppn))
		set("PBS_VNODENUM", "0")
		if j.Spec.TimeLimit > 0 {
			set("PBS_WALLTIME", strconv.FormatInt(j.Spec.TimeLimit, 10))
		}
	}
	return env
}

// pbsScript wraps a qsub'd job's script in a prologue that makes what PBS's
// mom makes before the job starts: a private TMPDIR and PBS_NODEFILE in it.
// The script itself is written beside them and run as a child, so that the
// directory is removed when it ends, also when it is killed (the shepherd
// signals the whole process group; the trap runs once the child is gone).
// A script without "#!" runs under the owner's shell, as PBS feeds it to
// the login shell.
func pbsScript(j *job) []byte {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# hora: PBS job prologue (TMPDIR, PBS_NODEFILE), then the job script\n")
	b.WriteString("d=$(mktemp -d /tmp/pbs." + strconv.FormatInt(j.ID, 10) + ".XXXXXX) || exit 1\n")
	b.WriteString("trap 'rm -rf \"$d\"; trap - TERM; kill -TERM $$' TERM\n")
	b.WriteString("trap 'rm -rf \"$d\"' EXIT\n")
	b.WriteString("{\n")
	slots := pbsSlotsPerNode(j)
	for _, n := range j.Nodes {
		for range slots {
			b.WriteString("echo " + ssh.Quote(n) + "\n")
		}
	}
	b.WriteString("} > \"$d/nodefile\"\n")
	script := j.Spec.Script
	if !strings.HasSuffix(script, "\n") {
		script += "\n"
	}
	eof := "HORA_PBS_SCRIPT_EOF"
	for strings.Contains(script, eof) {
		eof += "_"
	}
	b.WriteString("cat > \"$d/script\" <<'" + eof + "'\n" + script + eof + "\n")
	b.WriteString("chmod 700 \"$d/script\"\n")
	b.WriteString("TMPDIR=$d PBS_NODEFILE=$d/nodefile\nexport TMPDIR PBS_NODEFILE\n")
	switch {
	case j.Spec.PBS.Shell != "":
		b.WriteString(ssh.Quote(j.Spec.PBS.Shell) + " \"$d/script\" \"$@\"\n")
	case strings.HasPrefix(j.Spec.Script, "#!"):
		b.WriteString("\"$d/script\" \"$@\"\n")
	default:
		b.WriteString("\"${SHELL:-/bin/sh}\" \"$d/script\" \"$@\"\n")
	}
	return []byte(b.String())
}

// newPBSArraySel reads qselect's pbs_arrays parameter (api.PBSArraySel),
// judging an array by the tasks horad still holds (a task forgotten after
// min_job_age no longer counts). Its methods run under c.mu.
func (c *Controller) newPBSArraySel(mode string, now int64) (*api.PBSArraySel, bool) {
	return api.NewPBSArraySel(mode, now, func(array int64) []*api.Job {
		a := c.arrays[array]
		if a == nil {
			return nil
		}
		tasks := make([]*api.Job, 0, len(a.ids))
		for _, id := range a.ids {
			if t := c.jobs[id]; t != nil {
				tasks = append(tasks, &t.Job)
			}
		}
		return tasks
	})
}
