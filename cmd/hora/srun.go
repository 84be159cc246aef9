package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"hora/api"
	"hora/sbatch"
)

func init() { register("srun", srunMain) }

// srunOpts is srun's command line, read through sbatch's option grammar
// (sbatch/srunopts.go holds the table and the SLURM_* input variables).
type srunOpts struct {
	vals []sbatch.Value // input variables first, then the command line

	label, multiProg, exact, overlap, overcommit bool
	unbuffered                                   bool
	quitOnIntr, killBadExit                      bool
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
	p, err := sbatch.Getopt(sbatch.SrunOptions, args, true)
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
	_ = cl.AllocDone(context.WithoutCancel(ctx), done)
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
	id := resp.JobID
	release := func() { _ = cl.AllocDone(context.WithoutCancel(ctx), api.AllocDone{JobID: id, ExitCode: 1}) }
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
				fmt.Fprintf(env.Stderr, "%s: error: Job allocation %d has been revoked.\n", prog, id)
				return id, 1, false
			}
		}
		if immediate > 0 && time.Since(start) >= time.Duration(immediate)*time.Second {
			release()
			fmt.Fprintf(env.Stderr, "%s: error: Unable to allocate resources: Requested nodes are busy\n", prog)
			return id, 1, false
		}
		if !announced && immediate <= 0 && time.Since(start) > 250*time.Millisecond {
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
			if salloc {
				fmt.Fprintf(env.Stderr, "%s: Job allocation %d has been revoked.\n", prog, id)
				fmt.Fprintf(env.Stderr, "%s: Job aborted due to signal\n", prog)
			} else {
				fmt.Fprintf(env.Stderr, "%s: Job allocation %d has been revoked\n", prog, id)
			}
			return id, 1, false
		case <-time.After(delay):
		}
		delay = min(delay*2, 500*time.Millisecond)
	}
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

// task is one process of the step.
type task struct {
	id, node, local int
	cmd             *exec.Cmd
	done            bool
	status          syscall.WaitStatus
	startErr        error
	parentEnds      []*os.File // the tasks' ends of the output pipes, closed here once started
}

// launch holds a running step.
type launch struct {
	env      *Env
	o        *srunOpts
	grant    *api.StepGrant
	tasks    []*task
	outMu    sync.Mutex
	labelW   int
	files    map[string]*os.File
	pgid     int
	readers  sync.WaitGroup
	stdinFor []io.WriteCloser
}

// stepID is Slurm's "StepId=J.S" spelling.
func (l *launch) stepID() string { return fmt.Sprintf("StepId=%d.%d", l.grant.JobID, l.grant.StepID) }

func newLaunch(env *Env, o *srunOpts, g *api.StepGrant, getenv func(string) string) (*launch, error) {
	l := &launch{env: env, o: o, grant: g, files: map[string]*os.File{}}
	n := len(g.TaskNode)
	l.labelW = len(strconv.Itoa(max(n-1, 0)))
	argvs := make([][]string, n)
	for i := range argvs {
		argvs[i] = o.args
	}
	if o.multiProg {
		var err error
		if argvs, err = multiProg(o.args[0], n); err != nil {
			return nil, err
		}
	}
	// Per node: its tasks (SLURM_GTIDS, SLURM_TASKS_PER_NODE).
	perNode := make([][]int, len(g.Nodes))
	for t, k := range g.TaskNode {
		perNode[k] = append(perNode[k], t)
	}
	counts := make([]int, len(perNode))
	for k := range perNode {
		counts[k] = len(perNode[k])
	}
	base := env.Environ()
	if o.spec != nil {
		base = o.spec.Env // --export applied
	}
	base = append(slices.Clip(base), g.Env...)
	user := getenv("USER")
	if user == "" {
		user = strconv.Itoa(os.Getuid())
	}
	wd := o.chdir
	if wd == "" {
		wd, _ = env.Getwd()
	}
	stepNodes := sbatch.CompressHostlist(g.Nodes)
	for t := range n {
		k := g.TaskNode[t]
		local := 0
		for local < len(perNode[k]) && perNode[k][local] != t {
			local++
		}
		tk := &task{id: t, node: k, local: local}
		argv := argvs[t]
		if len(argv) == 0 {
			tk.startErr = fmt.Errorf("no program for task %d in the --multi-prog file", t)
			l.tasks = append(l.tasks, tk)
			continue
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = wd
		set := map[string]string{
			"SLURM_STEP_ID": strconv.Itoa(g.StepID), "SLURM_STEPID": strconv.Itoa(g.StepID),
			"SLURM_STEP_NUM_TASKS": strconv.Itoa(n), "SLURM_STEP_NUM_NODES": strconv.Itoa(len(g.Nodes)),
			"SLURM_STEP_NODELIST": stepNodes, "SLURM_STEP_TASKS_PER_NODE": compressCounts(counts),
			"SLURM_NTASKS": strconv.Itoa(n), "SLURM_NPROCS": strconv.Itoa(n),
			"SLURM_NNODES": strconv.Itoa(len(g.Nodes)), "SLURM_NODELIST": stepNodes,
			"SLURM_TASKS_PER_NODE": compressCounts(counts),
			"SLURM_PROCID":         strconv.Itoa(t), "SLURM_LOCALID": strconv.Itoa(local),
			"SLURM_NODEID": strconv.Itoa(k), "SLURMD_NODENAME": g.Nodes[k],
			"SLURM_GTIDS": joinInts(perNode[k]), "SLURM_CPUS_ON_NODE": strconv.Itoa(g.CPUs[k]),
			"SLURM_DISTRIBUTION":  map[bool]string{true: "cyclic", false: "block"}[o.cyclic],
			"SLURM_TOPOLOGY_ADDR": g.Nodes[k], "SLURM_TOPOLOGY_ADDR_PATTERN": "node",
			"SLURM_PRIO_PROCESS": "0", "SLURM_UMASK": "0022",
			"SLURM_SRUN_COMM_HOST": "127.0.0.1", "SLURM_LAUNCH_NODE_IPADDR": "127.0.0.1",
			"SLURM_JOB_ID": strconv.FormatInt(g.JobID, 10), "SLURM_JOBID": strconv.FormatInt(g.JobID, 10),
		}
		if o.cpt > 0 {
			set["SLURM_CPUS_PER_TASK"] = strconv.Itoa(o.cpt)
		}
		if o.label {
			set["SLURM_LABELIO"] = "1"
		}
		cmd.Env = mergeEnv(base, set)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		tk.cmd = cmd
		l.tasks = append(l.tasks, tk)
	}
	fields := func(t *task) sbatch.PatternFields {
		return sbatch.PatternFields{JobID: g.JobID, ArrayJobID: g.JobID, ArrayTaskID: -1, User: user,
			JobName: getenv("SLURM_JOB_NAME"), Node: g.Nodes[t.node], NodeIndex: t.node, TaskID: t.id,
			StepID: strconv.Itoa(g.StepID)}
	}
	// stdout, stderr: through pipes (labels, whole lines), into srun's
	// streams or the -o/-e files.
	for _, t := range l.tasks {
		if t.cmd == nil {
			continue
		}
		var outDst, errDst io.Writer = env.Stdout, env.Stderr
		var err error
		if o.out != "" {
			if outDst, err = l.open(sbatch.ExpandPattern(o.out, fields(t)), t, n); err != nil {
				return nil, err
			}
		}
		switch {
		case o.errOut != "":
			if errDst, err = l.open(sbatch.ExpandPattern(o.errOut, fields(t)), t, n); err != nil {
				return nil, err
			}
		case o.out != "":
			errDst = outDst
		}
		if err := l.pipe(t, outDst, false); err != nil {
			return nil, err
		}
		if err := l.pipe(t, errDst, true); err != nil {
			return nil, err
		}
		// stdin: Slurm's default broadcasts srun's stdin to every task;
		// "-i N" gives it to task N only, "none" to nobody, a file
		// pattern opens one file per task.
		switch in := o.in; {
		case in == "" || strings.EqualFold(in, "all"):
			w, err := t.cmd.StdinPipe()
			if err != nil {
				return nil, err
			}
			l.stdinFor = append(l.stdinFor, w)
		case strings.EqualFold(in, "none"):
		case isNumber(in):
			if id, _ := strconv.Atoi(in); id == t.id {
				w, err := t.cmd.StdinPipe()
				if err != nil {
					return nil, err
				}
				l.stdinFor = append(l.stdinFor, w)
			}
		default:
			f, err := os.Open(sbatch.ExpandPattern(in, fields(t)))
			if err != nil {
				return nil, fmt.Errorf("%s: %v", in, err)
			}
			t.cmd.Stdin = f
		}
	}
	return l, nil
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// open opens (once per name) an output file of the step.
func (l *launch) open(name string, t *task, n int) (io.Writer, error) {
	if f, ok := l.files[name]; ok {
		return f, nil
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if l.o.openAppend {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(name, flags, 0o644)
	if err != nil {
		return nil, err
	}
	l.files[name] = f
	return f, nil
}

// pipe copies one stream of a task to dst line by line, labelled with -l.
func (l *launch) pipe(t *task, dst io.Writer, stderr bool) error {
	// Our own pipe rather than exec's: Wait closes exec's read end when
	// the task exits, which would lose what is still buffered; this one
	// is read to EOF, when the task and anything it left behind close it.
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	if stderr {
		t.cmd.Stderr = w
	} else {
		t.cmd.Stdout = w
	}
	t.parentEnds = append(t.parentEnds, w)
	prefix := ""
	if l.o.label {
		prefix = fmt.Sprintf("%*d: ", l.labelW, t.id)
	}
	l.readers.Add(1)
	if l.o.unbuffered && prefix == "" {
		// -u: what a task writes is passed on as it comes.
		go func() {
			defer l.readers.Done()
			defer r.Close()
			buf := make([]byte, 32<<10)
			for {
				n, err := r.Read(buf)
				if n > 0 {
					l.outMu.Lock()
					_, _ = dst.Write(buf[:n])
					l.outMu.Unlock()
				}
				if err != nil {
					return
				}
			}
		}()
		return nil
	}
	go func() {
		defer l.readers.Done()
		defer r.Close()
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := br.ReadSlice('\n')
			if len(line) > 0 {
				l.outMu.Lock()
				if prefix != "" {
					_, _ = io.WriteString(dst, prefix)
				}
				_, _ = dst.Write(line)
				if err == io.EOF && line[len(line)-1] != '\n' && prefix != "" {
					_, _ = io.WriteString(dst, "\n")
				}
				l.outMu.Unlock()
			}
			if err != nil && err != bufio.ErrBufferFull {
				return
			}
		}
	}()
	return nil
}

// exit is a task's end as srun tells it.
type exit struct {
	t      *task
	status syscall.WaitStatus
}

func (l *launch) run(ctx context.Context, cl *api.Client, sigs <-chan os.Signal) int {
	g := l.grant
	exits := make(chan exit, len(l.tasks))
	running := 0
	// Start every task before waiting for any: a task that exits at once
	// stays a zombie, which keeps the process group alive for the others.
	for _, t := range l.tasks {
		if t.cmd == nil {
			continue
		}
		if l.pgid != 0 {
			t.cmd.SysProcAttr.Pgid = l.pgid
		}
		err := t.cmd.Start()
		for _, f := range t.parentEnds {
			_ = f.Close()
		}
		if err != nil {
			t.startErr = err
			continue
		}
		if l.pgid == 0 {
			l.pgid = t.cmd.Process.Pid
		}
		running++
	}
	if l.pgid != 0 {
		// Lets scancel JOBID.STEP reach the tasks; off the critical path.
		go func() {
			_ = cl.StepStarted(context.WithoutCancel(ctx), api.StepStarted{JobID: g.JobID, StepID: g.StepID, Pgid: l.pgid})
		}()
	}
	for _, t := range l.tasks {
		if t.cmd == nil || t.startErr != nil {
			continue
		}
		go func(t *task) {
			err := t.cmd.Wait()
			var ws syscall.WaitStatus
			if t.cmd.ProcessState != nil {
				ws = t.cmd.ProcessState.Sys().(syscall.WaitStatus)
			} else if err != nil {
				ws = syscall.WaitStatus(1 << 8)
			}
			exits <- exit{t, ws}
		}(t)
	}
	if len(l.stdinFor) > 0 {
		go l.copyStdin()
	}
	// Slurm's rule (launch_slurm.c _task_finish): a signalled task
	// outranks exit codes, the largest signal wins; otherwise the
	// largest exit code. A task that could not start exits 2 (execve).
	var worstSig, worstExit int
	for _, t := range l.tasks {
		if t.startErr != nil {
			l.taskStartFailed(t)
			worstExit = max(worstExit, 2)
		}
	}
	var lastInt time.Time
	killed := false
	var signalled []string
	kill := func(sig syscall.Signal) {
		if l.pgid != 0 {
			_ = syscall.Kill(-l.pgid, sig)
		}
	}
	if l.o.killBadExit && worstExit != 0 && running > 0 {
		kill(syscall.SIGTERM)
	}
	for running > 0 {
		select {
		case e := <-exits:
			running--
			e.t.done, e.t.status = true, e.status
			node := g.Nodes[e.t.node]
			switch {
			case e.status.Signaled():
				// Printed once the step's fate is known: a step that
				// scancel ended shows Slurm's abort lines instead.
				if !killed {
					signalled = append(signalled, fmt.Sprintf("srun: error: %s: task %d: %s\n", node, e.t.id, signalText(e.status.Signal())))
				}
				worstSig = max(worstSig, int(e.status.Signal()))
			case e.status.ExitStatus() != 0:
				fmt.Fprintf(l.env.Stderr, "srun: error: %s: task %d: Exited with exit code %d\n", node, e.t.id, e.status.ExitStatus())
				worstExit = max(worstExit, e.status.ExitStatus())
			}
			if l.o.killBadExit && (e.status.Signaled() || e.status.ExitStatus() != 0) && running > 0 {
				kill(syscall.SIGTERM)
				go func() { time.Sleep(killWait); kill(syscall.SIGKILL) }()
			}
		case s := <-sigs:
			sig := s.(syscall.Signal)
			switch sig {
			case syscall.SIGINT:
				now := time.Now()
				if l.o.quitOnIntr || now.Sub(lastInt) < time.Second {
					fmt.Fprintf(l.env.Stderr, "srun: sending Ctrl-C to %s\n", l.stepID())
					kill(syscall.SIGINT)
					if !killed {
						fmt.Fprintln(l.env.Stderr, "srun: forcing job termination")
						killed = true
						kill(syscall.SIGKILL)
					} else {
						fmt.Fprintln(l.env.Stderr, "srun: job abort in progress")
					}
				} else {
					fmt.Fprintln(l.env.Stderr, "srun: interrupt (one more within 1 sec to abort)")
					l.printStatus()
				}
				lastInt = now
			case syscall.SIGQUIT:
				fmt.Fprintln(l.env.Stderr, "srun: Quit")
				if !killed {
					fmt.Fprintln(l.env.Stderr, "srun: forcing job termination")
					killed = true
				}
				kill(syscall.SIGKILL)
			default:
				kill(sig)
			}
		}
	}
	l.readers.Wait()
	for _, f := range l.files {
		_ = f.Close()
	}
	end := api.StepEnd{JobID: g.JobID, StepID: g.StepID, ExitCode: worstExit, Signal: worstSig}
	if worstSig != 0 {
		end.ExitCode = 0
	}
	res, err := cl.EndStep(context.WithoutCancel(ctx), end)
	if err == nil && res.State == api.StateCancelled && !killed {
		// What Slurm's srun and slurmstepd print for a cancelled step
		// (step_launch.c, slurmstepd's "*** STEP ... CANCELLED ***").
		fmt.Fprintf(l.env.Stderr, "srun: Job step aborted: Waiting up to %d seconds for job step to finish.\n", 32)
		at := time.Now().Format("2006-01-02T15:04:05")
		for _, n := range g.Nodes {
			fmt.Fprintf(l.env.Stderr, "slurmstepd: error: *** STEP %d.%d ON %s CANCELLED AT %s ***\n", g.JobID, g.StepID, n, at)
		}
	} else {
		for _, line := range signalled {
			fmt.Fprint(l.env.Stderr, line)
		}
	}
	if worstSig != 0 {
		l.o.stepSignal = worstSig
		return 128 + worstSig
	}
	return worstExit
}

// killWait is how long --kill-on-bad-exit waits between TERM and KILL.
const killWait = 2 * time.Second

func (l *launch) taskStartFailed(t *task) {
	name := ""
	if t.cmd != nil {
		name = t.cmd.Args[0]
	}
	msg := t.startErr.Error()
	var ee *exec.Error
	if errors.As(t.startErr, &ee) {
		msg = "No such file or directory"
		if errors.Is(ee.Err, os.ErrPermission) {
			msg = "Permission denied"
		}
	}
	fmt.Fprintf(l.env.Stderr, "slurmstepd: error: execve(): %s: %s\n", name, msg)
	fmt.Fprintf(l.env.Stderr, "srun: error: %s: task %d: Exited with exit code 2\n", l.grant.Nodes[t.node], t.id)
}

// printStatus is srun's answer to one ^C: the tasks running and ended.
func (l *launch) printStatus() {
	var run, ex, ab []int
	for _, t := range l.tasks {
		switch {
		case !t.done && t.startErr == nil:
			run = append(run, t.id)
		case t.done && (t.status.Signaled() || t.status.ExitStatus() != 0), t.startErr != nil:
			ab = append(ab, t.id)
		default:
			ex = append(ex, t.id)
		}
	}
	for _, g := range []struct {
		ids  []int
		what string
	}{{run, "running"}, {ab, "exited abnormally"}, {ex, "exited"}} {
		if len(g.ids) == 0 {
			continue
		}
		s := "s"
		if len(g.ids) == 1 {
			s = ""
		}
		fmt.Fprintf(l.env.Stderr, "srun: %s task%s %s: %s\n", l.stepID(), s, rangeList(g.ids), g.what)
	}
}

func (l *launch) copyStdin() {
	buf := make([]byte, 32<<10)
	for {
		n, err := l.env.Stdin.Read(buf)
		for _, w := range l.stdinFor {
			if n > 0 {
				_, _ = w.Write(buf[:n])
			}
		}
		if err != nil {
			for _, w := range l.stdinFor {
				_ = w.Close()
			}
			return
		}
	}
}

// signalText is strsignal(3)'s text, as srun prints a signalled task.
func signalText(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "Killed"
	case syscall.SIGTERM:
		return "Terminated"
	case syscall.SIGINT:
		return "Interrupt"
	case syscall.SIGSEGV:
		return "Segmentation fault"
	case syscall.SIGABRT:
		return "Aborted"
	case syscall.SIGHUP:
		return "Hangup"
	case syscall.SIGBUS:
		return "Bus error"
	case syscall.SIGPIPE:
		return "Broken pipe"
	case syscall.SIGUSR1:
		return "User defined signal 1"
	case syscall.SIGUSR2:
		return "User defined signal 2"
	case syscall.SIGQUIT:
		return "Quit"
	}
	return s.String()
}

// rangeList prints task ids as Slurm's bit_fmt does: 0-2,5.
func rangeList(ids []int) string {
	sort.Ints(ids)
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		} else {
			parts = append(parts, strconv.Itoa(ids[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// compressCounts prints per-node counts as Slurm does: 2(x3),1.
func compressCounts(c []int) string {
	var parts []string
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[i] {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d(x%d)", c[i], j-i+1))
		} else {
			parts = append(parts, strconv.Itoa(c[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// mergeEnv returns base with the keys of set replaced or added.
func mergeEnv(base []string, set map[string]string) []string {
	out := make([]string, 0, len(base)+len(set))
	seen := map[string]bool{}
	// later entries of base win (the job's variables follow the caller's)
	last := map[string]int{}
	for i, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		last[k] = i
	}
	for i, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; ok || last[k] != i {
			continue
		}
		out = append(out, kv)
		seen[k] = true
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+set[k])
	}
	return out
}

// multiProg reads a --multi-prog configuration (srun.1 MULTIPLE PROGRAM
// CONFIGURATION): "ranks program args", ranks as "0-2,5" or "*"; in the
// arguments %t is the task id and %o its offset within its range.
func multiProg(path string, n int) ([][]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("Unable to open multi-prog file %s: %v", path, err)
	}
	out := make([][]string, n)
	for ln, line := range strings.Split(string(b), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		words := strings.Fields(line)
		if len(words) == 0 {
			continue
		}
		if len(words) < 2 {
			return nil, fmt.Errorf("%s:%d: invalid multi-prog line: no program", path, ln+1)
		}
		var ids []int
		if words[0] == "*" {
			for t := range n {
				ids = append(ids, t)
			}
		} else {
			for _, r := range strings.Split(words[0], ",") {
				lo, hi, isRange := strings.Cut(r, "-")
				a, err1 := strconv.Atoi(lo)
				z := a
				var err2 error
				if isRange {
					z, err2 = strconv.Atoi(hi)
				}
				if err1 != nil || err2 != nil || a < 0 || z < a {
					return nil, fmt.Errorf("%s:%d: invalid task range %q", path, ln+1, r)
				}
				for t := a; t <= z; t++ {
					ids = append(ids, t)
				}
			}
		}
		for off, t := range ids {
			if t >= n {
				return nil, fmt.Errorf("%s:%d: task %d is not in the step (%d tasks)", path, ln+1, t, n)
			}
			if out[t] != nil {
				continue // the first line naming a task wins
			}
			argv := make([]string, len(words)-1)
			for i, w := range words[1:] {
				w = strings.ReplaceAll(w, "%t", strconv.Itoa(t))
				argv[i] = strings.ReplaceAll(w, "%o", strconv.Itoa(off))
			}
			out[t] = argv
		}
	}
	return out, nil
}
