package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"hora/api"
	"hora/sbatch"
)

// srunOpts is srun's command line, read through sbatch's option grammar
// (sbatch/srunopts.go holds the table and the SLURM_* input variables).
type srunOpts struct {
	vals []sbatch.Value // input variables first, then the command line

	label, multiProg, exact, overlap, overcommit bool
	unbuffered                                   bool
	quitOnIntr, killBadExit, disableStatus       bool
	immediate                                    int // seconds; 0 = not asked
	jobID                                        int64
	nodes, ntasks, ntpn, cpt                     int
	nodesFromCmd, ntasksFromCmd, cptFromCmd      bool
	nodelist, exclude                            []string
	cyclic                                       bool
	out, errOut, in                              string
	openAppend                                   bool
	chdir, jobName                               string
	args                                         []string
	spec                                         *api.JobSpec // the job options, as an allocation
	stepSignal                                   int          // the step ended by this signal (Slurm's rule)
	// pty runs task 0 on a pseudo-terminal (pty.go); quiet leaves a
	// task's exit code unprinted (qsub -I prints its own lines); launched
	// is set once the step's tasks are being started.
	pty, quiet, launched bool
}

// srunFail is a command-line or request error: the lines to print after
// "srun: " and the exit status.
type srunFail struct {
	lines []string
	exit  int
}

func (f *srunFail) Error() string { return strings.Join(f.lines, "; ") }

func fail(exit int, lines ...string) *srunFail { return &srunFail{lines: lines, exit: exit} }

// parseSrun reads srun's options: SLURM_* input variables, overridden by
// the command line.
func parseSrun(env *Env, args []string) (*srunOpts, error) {
	p, err := sbatch.Getopt(sbatch.SrunOptions(), args, true)
	if err != nil {
		var ue *sbatch.UsageError
		if errors.As(err, &ue) {
			return nil, fail(255, ue.Msg, `Try "srun --help" for more information`)
		}
		return nil, err
	}
	o := &srunOpts{args: p.Args}
	o.vals = append(sbatch.EnvValues(sbatch.Srun, env.Environ()), p.Values...)
	cmd := map[string]bool{}
	for _, v := range p.Values {
		cmd[v.Key] = true
	}
	o.nodesFromCmd, o.ntasksFromCmd, o.cptFromCmd = cmd["nodes"], cmd["ntasks"], cmd["cpus-per-task"]
	o.immediate = -1
	count := func(v sbatch.Value) (int, error) {
		n, err := strconv.Atoi(v.Val)
		if err != nil || n < 1 {
			return 0, fail(1, fmt.Sprintf("error: Invalid numeric value %q for --%s.", v.Val, v.Key))
		}
		return n, nil
	}
	for _, v := range o.vals {
		var err error
		switch v.Key {
		case "help":
			return nil, sbatch.ErrHelp
		case "usage":
			return nil, sbatch.ErrUsage
		case "version":
			return nil, sbatch.ErrVersion
		case "label":
			o.label = true
		case "pty":
			o.pty = true
		case "unbuffered":
			o.unbuffered = true
		case "multi-prog":
			o.multiProg = true
		case "exact":
			o.exact = true
		case "exclusive":
			o.exact = true // for a step, --exclusive is --exact
		case "overlap":
			o.overlap = true
		case "overcommit":
			o.overcommit = true
		case "quit-on-interrupt":
			o.quitOnIntr = true
		case "disable-status":
			o.disableStatus = true
		case "kill-on-bad-exit":
			o.killBadExit = v.Val == "" || v.Val != "0"
		case "immediate":
			o.immediate = 1
			if v.Val != "" {
				if o.immediate, err = count(v); err != nil {
					return nil, err
				}
			}
		case "jobid":
			id, perr := strconv.ParseInt(strings.TrimSpace(v.Val), 10, 64)
			if perr != nil || id < 1 {
				return nil, fail(1, "error: Invalid --jobid specification")
			}
			o.jobID = id
		case "nodes":
			lo, _, _ := strings.Cut(v.Val, "-")
			if o.nodes, err = count(sbatch.Value{Name: v.Name, Val: lo}); err != nil {
				return nil, fail(1, fmt.Sprintf("error: %q is not a valid node count", v.Val))
			}
		case "ntasks":
			o.ntasks, err = count(v)
		case "ntasks-per-node":
			o.ntpn, err = count(v)
		case "cpus-per-task":
			o.cpt, err = count(v)
		case "nodelist", "exclude":
			hosts, herr := sbatch.ExpandHostlist(v.Val)
			if herr != nil {
				return nil, fail(1, "error: Invalid node name specified")
			}
			if v.Key == "nodelist" {
				o.nodelist = hosts
			} else {
				o.exclude = hosts
			}
		case "distribution":
			d, _, _ := strings.Cut(strings.ToLower(v.Val), ":")
			d, _, _ = strings.Cut(d, ",")
			switch d {
			case "block", "*", "":
				o.cyclic = false
			case "cyclic":
				o.cyclic = true
			case "plane", "arbitrary", "pack", "nopack":
				o.cyclic = false
			default:
				return nil, fail(1, "error: Invalid --distribution specification")
			}
		case "output":
			o.out = v.Val
		case "error":
			o.errOut = v.Val
		case "input":
			o.in = v.Val
		case "open-mode":
			o.openAppend = strings.HasPrefix(strings.ToLower(v.Val), "a")
		case "chdir":
			o.chdir = v.Val
		case "job-name":
			o.jobName = v.Val
		}
		if err != nil {
			return nil, err
		}
	}
	if len(o.args) == 0 {
		return nil, fail(1, "fatal: No command given to execute.")
	}
	return o, nil
}

// srunMain runs a job step: inside an allocation (SLURM_JOB_ID or --jobid)
// it asks horad for a step of it; outside one it first creates an
// allocation with the same options, runs the step in it and releases it.
func srunMain(ctx context.Context, env *Env, args []string) int {
	o, err := parseSrun(env, args)
	switch {
	case errors.Is(err, sbatch.ErrHelp):
		fmt.Fprint(env.Stdout, sbatch.Help(sbatch.Srun))
		return 0
	case errors.Is(err, sbatch.ErrUsage):
		fmt.Fprint(env.Stdout, sbatch.Usage(sbatch.Srun))
		return 0
	case errors.Is(err, sbatch.ErrVersion):
		fmt.Fprintln(env.Stdout, versionLine())
		return 0
	case err != nil:
		return printFail(env, "srun", err)
	}
	// The job options go through the registry's setters even inside an
	// allocation: a bad value is refused with Slurm's text before anything
	// is asked, and --export gives the tasks' environment.
	if o.spec, err = allocSpec(env, sbatch.Srun, o.vals); err != nil {
		return printSbatchErrorAs(env, "srun", err)
	}
	cl, err := api.Dial()
	if err != nil {
		fmt.Fprintf(env.Stderr, "srun: error: %v\n", err)
		return exitError(env)
	}
	// Signals are watched from the start, so that ^C while the step or
	// the allocation waits cancels the wait and releases what was taken.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGCONT)
	defer signal.Stop(sigs)

	if o.jobID == 0 {
		return srunWithAllocation(ctx, env, cl, o, sigs)
	}
	return runStep(ctx, env, cl, o, false, sigs)
}

func printFail(env *Env, prog string, err error) int {
	var f *srunFail
	if errors.As(err, &f) {
		for i, l := range f.lines {
			if i > 0 && strings.HasPrefix(l, "Try ") {
				fmt.Fprintln(env.Stderr, l)
			} else {
				fmt.Fprintf(env.Stderr, "%s: %s\n", prog, l)
			}
		}
		return f.exit
	}
	fmt.Fprintf(env.Stderr, "%s: error: %v\n", prog, err)
	return 1
}

// srunWithAllocation creates the allocation, runs the step, releases it.
func srunWithAllocation(ctx context.Context, env *Env, cl *api.Client, o *srunOpts, sigs <-chan os.Signal) int {
	spec := o.spec
	if spec.Name == "" {
		spec.Name = filepath.Base(o.args[0])
	}
	id, code, ok := allocate(ctx, env, cl, "srun", spec, o.immediate, sigs, false)
	if !ok {
		return code
	}
	o.jobID = id
	rc := runStep(ctx, env, cl, o, true, sigs)
	// As Slurm's srun, the job ends with the step's status: a signal as
	// a signal (sacct 0:9), else the exit code.
	done := api.AllocDone{JobID: id, ExitCode: rc}
	if o.stepSignal != 0 {
		done = api.AllocDone{JobID: id, Signal: o.stepSignal}
	}
	_ = resend(ctx, cl, func(cl *api.Client) error { return cl.AllocDone(context.WithoutCancel(ctx), done) })
	return rc
}

// allocSpec builds the allocation's job from the options.
func allocSpec(env *Env, c sbatch.Command, vals []sbatch.Value) (*api.JobSpec, error) {
	cwd, err := env.Getwd()
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	return sbatch.AllocSpec(c, sbatch.Input{Env: env.Environ(), Cwd: cwd, Now: time.Now(), Hostname: host}, vals)
}

func printSbatchErrorAs(env *Env, prog string, err error) int {
	var se *sbatch.Error
	if errors.As(err, &se) {
		for _, l := range strings.Split(strings.TrimRight(se.Msg, "\n"), "\n") {
			fmt.Fprintf(env.Stderr, "%s: %s\n", prog, l)
		}
		return se.Exit
	}
	fmt.Fprintf(env.Stderr, "%s: error: %v\n", prog, err)
	return 1
}

// allocate submits an allocation and waits until it runs. salloc prints
// its "Pending"/"queued"/"Granted" lines; srun prints only when it waits.
// immediate > 0 gives up after that many seconds (Slurm's -I).
func allocate(ctx context.Context, env *Env, cl *api.Client, prog string, spec *api.JobSpec,
	immediate int, sigs <-chan os.Signal, salloc bool) (int64, int, bool) {
	resp, err := cl.Submit(ctx, api.SubmitRequest{Spec: *spec})
	if err != nil {
		msg := err.Error()
		var ae *api.Error
		if errors.As(err, &ae) {
			msg = ae.Message
		}
		if salloc {
			fmt.Fprintf(env.Stderr, "%s: error: Job submit/allocate failed: %s\n", prog, msg)
		} else {
			fmt.Fprintf(env.Stderr, "%s: error: Unable to allocate resources: %s\n", prog, msg)
		}
		return 0, exitError(env), false
	}
	return awaitAllocation(ctx, env, cl, prog, resp.JobID, immediate, sigs, salloc, false)
}

// awaitAllocation waits until the submitted allocation id runs, with
// allocate's lines unless quiet (qsub -I prints PBS's own).
func awaitAllocation(ctx context.Context, env *Env, cl *api.Client, prog string, id int64,
	immediate int, sigs <-chan os.Signal, salloc, quiet bool) (int64, int, bool) {
	release := func() {
		_ = resend(ctx, cl, func(cl *api.Client) error {
			return cl.AllocDone(context.WithoutCancel(ctx), api.AllocDone{JobID: id, ExitCode: 1})
		})
	}
	start := time.Now()
	delay := 5 * time.Millisecond
	announced := false
	for {
		jobs, err := cl.Jobs(ctx, api.JobFilter{IDs: []int64{id}, History: true})
		if err == nil && len(jobs) == 1 {
			switch st := jobs[0].State; {
			case st == api.StateRunning:
				if announced {
					fmt.Fprintf(env.Stderr, "%s: job %d has been allocated resources\n", prog, id)
				}
				if salloc {
					fmt.Fprintf(env.Stderr, "%s: Granted job allocation %d\n", prog, id)
				}
				return id, 0, true
			case st.Finished():
				if !quiet {
					fmt.Fprintf(env.Stderr, "%s: error: Job allocation %d has been revoked.\n", prog, id)
				}
				return id, 1, false
			}
		}
		if immediate > 0 && time.Since(start) >= time.Duration(immediate)*time.Second {
			release()
			fmt.Fprintf(env.Stderr, "%s: error: Unable to allocate resources: Requested nodes are busy\n", prog)
			return id, exitImmediate(env), false
		}
		if !announced && !quiet && immediate <= 0 && time.Since(start) > 250*time.Millisecond {
			// horad starts a job that fits at its next scheduling pass,
			// moments after the submission: only a job still pending
			// after that waits, as Slurm's does when its allocation RPC
			// answers without nodes.
			if salloc {
				fmt.Fprintf(env.Stderr, "%s: Pending job allocation %d\n", prog, id)
			}
			fmt.Fprintf(env.Stderr, "%s: job %d queued and waiting for resources\n", prog, id)
			announced = true
		}
		select {
		case <-ctx.Done():
			release()
			return id, 1, false
		case s := <-sigs:
			if s == syscall.SIGCONT {
				continue
			}
			release()
			switch {
			case quiet:
			case salloc:
				fmt.Fprintf(env.Stderr, "%s: Job allocation %d has been revoked.\n", prog, id)
				fmt.Fprintf(env.Stderr, "%s: Job aborted due to signal\n", prog)
			default:
				fmt.Fprintf(env.Stderr, "%s: Job allocation %d has been revoked\n", prog, id)
			}
			return id, 1, false
		case <-time.After(delay):
		}
		delay = min(delay*2, 500*time.Millisecond)
	}
}

// exitImmediate is the status of an allocation -I gave up on: Slurm's
// immediate_exit, 1 unless $SLURM_EXIT_IMMEDIATE says otherwise.
func exitImmediate(env *Env) int {
	if n, err := strconv.Atoi(env.Getenv("SLURM_EXIT_IMMEDIATE")); err == nil {
		return n
	}
	return 1
}

// runStep creates the step (waiting while it does not fit yet), starts
// its tasks here, forwards signals and output, and reports the end.
// created is set when srun made the allocation itself.
func runStep(ctx context.Context, env *Env, cl *api.Client, o *srunOpts, created bool, sigs <-chan os.Signal) int {
	if !created {
		if n, err := strconv.Atoi(env.Getenv("SLURM_JOB_NUM_NODES")); err == nil && o.nodes > n {
			fmt.Fprintf(env.Stderr, "srun: error: Only allocated %d nodes asked for %d\n", n, o.nodes)
			return 1
		}
	}
	nodes := o.nodes
	if !o.nodesFromCmd && created {
		nodes = 0
	}
	if o.ntasks > 0 && nodes > o.ntasks {
		if o.nodesFromCmd && o.ntasksFromCmd {
			fmt.Fprintf(env.Stderr, "srun: Warning: can't run %d processes on %d nodes, setting nnodes to %d\n", o.ntasks, nodes, o.ntasks)
		}
		nodes = o.ntasks
	}
	name := o.jobName
	if name == "" || !o.nameFromCmd() {
		name = filepath.Base(o.args[0])
	}
	req := api.StepRequest{JobID: o.jobID, Name: name, Nodes: nodes, NTasks: o.ntasks,
		NTasksPerNode: o.ntpn, CPUsPerTask: o.cpt, NodeList: o.nodelist, Exclude: o.exclude,
		Cyclic: o.cyclic, Exact: o.exact || o.cptFromCmd, Overlap: o.overlap, Overcommit: o.overcommit}
	if o.spec != nil && o.spec.TimeLimit > 0 && o.spec.TimeLimit != api.NoLimit {
		req.TimeLimit = o.spec.TimeLimit
	}
	if o.spec != nil && o.spec.MemMB > 0 {
		req.MemMB = o.spec.MemMB
	}
	grant, code, ok := createStep(ctx, env, cl, o, req, sigs)
	if !ok {
		return code
	}
	// The job's own variables (from horad) over the caller's: srun may
	// run outside the batch script (srun --jobid from a login shell).
	jobVars := map[string]string{}
	for _, kv := range grant.Env {
		k, v, _ := strings.Cut(kv, "=")
		jobVars[k] = v
	}
	getenv := func(k string) string {
		if v, ok := jobVars[k]; ok {
			return v
		}
		return env.Getenv(k)
	}
	l, err := newLaunch(env, o, grant, getenv)
	if err != nil {
		fmt.Fprintf(env.Stderr, "srun: error: %v\n", err)
		_, _ = cl.EndStep(context.WithoutCancel(ctx), api.StepEnd{JobID: grant.JobID, StepID: grant.StepID, ExitCode: 1})
		return 1
	}
	o.launched = true
	return l.run(ctx, cl, sigs)
}

func (o *srunOpts) nameFromCmd() bool {
	for i := len(o.vals) - 1; i >= 0; i-- {
		if o.vals[i].Key == "job-name" {
			return !strings.HasPrefix(o.vals[i].Name, "SLURM_")
		}
	}
	return false
}

// createStep asks for the step until it is granted, refused, or srun is
// interrupted, with Slurm's messages.
func createStep(ctx context.Context, env *Env, cl *api.Client, o *srunOpts, req api.StepRequest, sigs <-chan os.Signal) (*api.StepGrant, int, bool) {
	start := time.Now()
	delay := 10 * time.Millisecond
	waited := false // the "temporarily disabled" line was printed
	for {
		grant, err := cl.CreateStep(ctx, req)
		if err == nil {
			if waited {
				fmt.Fprintf(env.Stderr, "srun: Step created for job %d\n", req.JobID)
			}
			return grant, 0, true
		}
		var ae *api.Error
		if !errors.As(err, &ae) {
			fmt.Fprintf(env.Stderr, "srun: error: %v\n", err)
			return nil, 1, false
		}
		switch ae.Code {
		case api.CodeInvalidJobID, api.CodeAccessDenied, api.CodePending:
			fmt.Fprintf(env.Stderr, "srun: error: Unable to confirm allocation for job %d: %s\n", req.JobID, ae.Message)
			fmt.Fprintf(env.Stderr, "srun: Check SLURM_JOB_ID environment variable. Expired or invalid job %d\n", req.JobID)
			return nil, exitError(env), false
		case api.CodeAlreadyDone:
			fmt.Fprintf(env.Stderr, "srun: error: Slurm job %d has expired\n", req.JobID)
			fmt.Fprintf(env.Stderr, "srun: Check SLURM_JOB_ID environment variable. Expired or invalid job %d\n", req.JobID)
			return nil, exitError(env), false
		case api.CodeConfiguring:
		case api.CodeStepBusy:
			if o.immediate > 0 && time.Since(start) >= time.Duration(o.immediate)*time.Second {
				fmt.Fprintf(env.Stderr, "srun: error: Unable to create step for job %d: %s\n", req.JobID, ae.Message)
				return nil, exitError(env), false
			}
			if !waited {
				fmt.Fprintf(env.Stderr, "srun: Job %d step creation temporarily disabled, retrying (%s)\n", req.JobID, ae.Message)
				waited = true
			}
		default:
			fmt.Fprintf(env.Stderr, "srun: error: Unable to create step for job %d: %s\n", req.JobID, ae.Message)
			return nil, exitError(env), false
		}
		select {
		case <-ctx.Done():
			return nil, 1, false
		case s := <-sigs:
			if s != syscall.SIGCONT {
				fmt.Fprintf(env.Stderr, "srun: Cancelled pending step for job %d\n", req.JobID)
				return nil, 1, false
			}
		case <-time.After(delay):
		}
		delay = min(delay*2, time.Second)
	}
}
