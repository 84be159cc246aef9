package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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

// The tasks of a granted step: srun starts them here, as the calling
// user, copies their output and forwards signals (docs/steps.md).

// task is one process of the step.
type task struct {
	id, node, local int
	cmd             *exec.Cmd
	done            bool
	status          syscall.WaitStatus
	startErr        error
	parentEnds      []*os.File // the tasks' ends of the output pipes, closed here once started
	// pty: the task is on a remote pty, of the caller's terminal (pty.go).
	pty *api.StepPty
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
	restore  func() // puts the caller's terminal back after a pty step (pty.go)
	ptyFd    int    // the caller's terminal, for a remote pty's size; -1 none
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
	// %A and %a of a step come from the step's environment, as slurmstepd
	// reads SLURM_ARRAY_JOB_ID and SLURM_ARRAY_TASK_ID out of it: inside an
	// array task they name the task (submitit's srun line writes into
	// %A_%a), elsewhere the job id and NO_VAL.
	arrayJob, arrayTask := g.JobID, int64(-1)
	if v, err := strconv.ParseInt(getenv("SLURM_ARRAY_JOB_ID"), 10, 64); err == nil {
		arrayJob = v
	}
	if v, err := strconv.ParseInt(getenv("SLURM_ARRAY_TASK_ID"), 10, 64); err == nil {
		arrayTask = v
	}
	fields := func(t *task) sbatch.PatternFields {
		return sbatch.PatternFields{JobID: g.JobID, ArrayJobID: arrayJob, ArrayTaskID: arrayTask, User: user,
			JobName: getenv("SLURM_JOB_NAME"), Node: g.Nodes[t.node], NodeIndex: t.node, TaskID: t.id,
			StepID: strconv.Itoa(g.StepID)}
	}
	// stdout, stderr: through pipes (labels, whole lines), into srun's
	// streams or the -o/-e files.
	for _, t := range l.tasks {
		if t.cmd == nil {
			continue
		}
		if o.pty && t.id == 0 {
			if err := l.attachPty(t); err != nil {
				return nil, err
			}
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
		var out []byte
		for {
			line, err := br.ReadSlice('\n')
			if len(line) > 0 {
				// One write for the label and its line: srun's own messages
				// (a task's exit status) go to the same file without outMu,
				// and one of them once landed between a label and its line.
				out = append(append(out[:0], prefix...), line...)
				if err == io.EOF && line[len(line)-1] != '\n' && prefix != "" {
					out = append(out, '\n')
				}
				l.outMu.Lock()
				_, _ = dst.Write(out)
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
	var stopRemote context.CancelFunc
	if g.Remote {
		running, stopRemote = l.startRemote(ctx, cl, exits)
		defer stopRemote()
	}
	// A step with its own --mem: every task waits in a gate (a shell
	// reading fd 3) until horad has put it in the step's memory group.
	var gateR, gateW *os.File
	if g.MemGate && !g.Remote {
		var err error
		if gateR, gateW, err = os.Pipe(); err != nil {
			fmt.Fprintf(l.env.Stderr, "srun: error: %v\n", err)
			return 1
		}
		for _, t := range l.tasks {
			if t.cmd != nil && t.cmd.Err == nil {
				path := t.cmd.Path
				t.cmd.Path = "/bin/sh"
				t.cmd.Args = append([]string{"/bin/sh", "-c", `read _ <&3; exec 3<&-; exec "$0" "$@"`, path}, t.cmd.Args[1:]...)
				t.cmd.ExtraFiles = []*os.File{gateR}
			}
		}
	}
	// Start every task before waiting for any: a task that exits at once
	// stays a zombie, which keeps the process group alive for the others.
	for _, t := range l.tasks {
		if t.cmd == nil || g.Remote {
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
	switch {
	case gateW != nil:
		// horad moves the held tasks into the step's memory group, then
		// the gate opens; if it could not, the tasks never run.
		gateR.Close()
		started := api.StepStarted{JobID: g.JobID, StepID: g.StepID, Pgid: l.pgid, NodePids: map[string][]int{}}
		for _, t := range l.tasks {
			if t.cmd != nil && t.cmd.Process != nil {
				n := g.Nodes[t.node]
				started.NodePids[n] = append(started.NodePids[n], t.cmd.Process.Pid)
			}
		}
		if l.pgid != 0 {
			if err := cl.StepStarted(context.WithoutCancel(ctx), started); err != nil {
				fmt.Fprintf(l.env.Stderr, "srun: error: %v\n", err)
				_ = syscall.Kill(-l.pgid, syscall.SIGKILL)
			}
		}
		gateW.Close()
	case l.pgid != 0:
		// Lets scancel JOBID.STEP reach the tasks; off the critical path.
		go func() {
			_ = cl.StepStarted(context.WithoutCancel(ctx), api.StepStarted{JobID: g.JobID, StepID: g.StepID, Pgid: l.pgid})
		}()
	}
	for _, t := range l.tasks {
		if t.cmd == nil || t.startErr != nil || g.Remote {
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
		if stopRemote != nil {
			// Remote tasks: KILL stops them on their nodes (the stream
			// ends), other signals are forwarded through horad.
			if sig == syscall.SIGKILL {
				stopRemote()
			} else {
				go func() {
					_ = cl.SignalStep(context.WithoutCancel(ctx), api.StepSignal{JobID: g.JobID, StepID: g.StepID, Signal: int(sig)})
				}()
			}
			return
		}
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
				if !l.o.quiet {
					fmt.Fprintf(l.env.Stderr, "srun: error: %s: task %d: Exited with exit code %d\n", node, e.t.id, e.status.ExitStatus())
				}
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
				if l.o.disableStatus && !l.o.quitOnIntr && now.Sub(lastInt) >= time.Second {
					// -X: one ^C is passed to the tasks, no status.
					fmt.Fprintf(l.env.Stderr, "srun: sending Ctrl-C to %s\n", l.stepID())
					kill(syscall.SIGINT)
					lastInt = now
					continue
				}
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
	if l.restore != nil {
		l.restore()
	}
	for _, f := range l.files {
		_ = f.Close()
	}
	end := api.StepEnd{JobID: g.JobID, StepID: g.StepID, ExitCode: worstExit, Signal: worstSig}
	if worstSig != 0 {
		end.ExitCode = 0
	}
	res, err := endStep(ctx, cl, end)
	if err == nil && res.OOMKills > 0 {
		// slurmstepd's line (task/cgroup) and srun's for tasks the kernel
		// killed for the step's memory.
		ev := "event"
		if res.OOMKills > 1 {
			ev = "events"
		}
		fmt.Fprintf(l.env.Stderr, "slurmstepd: error: Detected %d oom_kill %s in StepId=%d.%d. Some of the step tasks have been OOM Killed.\n", res.OOMKills, ev, g.JobID, g.StepID)
		for _, line := range signalled {
			fmt.Fprint(l.env.Stderr, strings.Replace(line, ": Killed\n", ": Out Of Memory\n", 1))
		}
	} else if err == nil && res.State == api.StateTimeout {
		// slurmstepd's lines for a step past its -t; the tasks' own
		// lines (Terminated) follow, as Slurm's srun prints them.
		fmt.Fprintf(l.env.Stderr, "srun: Job step aborted: Waiting up to %d seconds for job step to finish.\n", 32)
		at := time.Now().Format("2006-01-02T15:04:05")
		for _, n := range g.Nodes {
			fmt.Fprintf(l.env.Stderr, "slurmstepd: error: *** STEP %d.%d ON %s CANCELLED AT %s DUE TO TIME LIMIT ***\n", g.JobID, g.StepID, n, at)
		}
		for _, line := range signalled {
			fmt.Fprint(l.env.Stderr, line)
		}
	} else if err == nil && res.State == api.StateCancelled && !killed {
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
	var errno syscall.Errno
	switch {
	case errors.As(t.startErr, &ee):
		msg = "No such file or directory"
		if errors.Is(ee.Err, os.ErrPermission) {
			msg = "Permission denied"
		}
	case errors.As(t.startErr, &errno):
		// execve's strerror, as slurmstepd prints it.
		msg = errno.Error()
		msg = strings.ToUpper(msg[:1]) + msg[1:]
	}
	// slurmstepd names its node in its program name.
	fmt.Fprintf(l.env.Stderr, "slurmstepd-%s: error: execve(): %s: %s\n", l.grant.Nodes[t.node], name, msg)
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

// endStep reports the step's end (see resend).
func endStep(ctx context.Context, cl *api.Client, end api.StepEnd) (*api.StepEndResponse, error) {
	var res *api.StepEndResponse
	err := resend(ctx, cl, func(cl *api.Client) (err error) {
		res, err = cl.EndStep(context.WithoutCancel(ctx), end)
		return err
	})
	return res, err
}

// resend sends a report that must arrive (a step's end, an allocation's
// release). horad may have restarted meanwhile, and the client never sends
// a POST again on its own: the request is repeated on a new connection for
// up to a minute. horad's answer, even an error, ends it.
func resend(ctx context.Context, cl *api.Client, send func(*api.Client) error) error {
	deadline := time.Now().Add(time.Minute)
	for delay := 50 * time.Millisecond; ; delay = min(delay*2, 2*time.Second) {
		err := send(cl)
		var ae *api.Error
		if err == nil || errors.As(err, &ae) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(delay)
		if fresh, derr := api.Dial(); derr == nil {
			cl = fresh
		}
	}
}
