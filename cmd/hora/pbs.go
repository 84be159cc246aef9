package main

// The PBS commands (COMPAT.md §6): qsub, qdel, qhold, qrls, qsig, qrerun
// here; qstat, qselect and pbsnodes in their own files. They speak to the
// same horad over the same socket as the Slurm commands, so a job from qsub
// is an ordinary hora job (squeue and scancel see it) and an sbatch job is
// seen by qstat and qdel. Their texts, layouts and exit statuses follow the
// flavour horad announces in its ping answer ([pbs] flavour in hora.toml):
// OpenPBS or Torque.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"hora/api"
	"hora/sbatch"
)

// pbsSession is a PBS command's connection to horad and what the ping
// answer says about the PBS it passes for.
type pbsSession struct {
	cl      *api.Client
	flavour string
	server  string
	now     time.Time
}

func (s *pbsSession) torque() bool { return s.flavour == sbatch.FlavourTorque }

// pbsConnect dials horad and asks for the flavour. A PBS client that cannot
// reach its server says so and exits non-zero (OP/TQ "cannot connect to
// server"); hora adds the socket paths it tried.
func pbsConnect(ctx context.Context, env *Env) (*pbsSession, int) {
	cl, err := dialFunc()
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: cannot connect to server (%v)\n", env.Prog, err)
		return nil, 1
	}
	ping, err := cl.Ping(ctxOrBackground(ctx))
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: cannot connect to server (%s)\n", env.Prog, apiErrText(err))
		return nil, 1
	}
	s := &pbsSession{cl: cl, flavour: ping.PBSFlavour, server: ping.PBSServer, now: nowFunc()}
	if s.flavour == "" {
		s.flavour = sbatch.FlavourOpenPBS
	}
	if s.server == "" {
		s.server, _ = os.Hostname()
	}
	return s, 0
}

// jobID is the id PBS prints: <seq>.<server>.
func (s *pbsSession) jobID(seq int64) string { return strconv.FormatInt(seq, 10) + "." + s.server }

// qsubMain submits a job as qsub does and prints its id, <seq>.<server>.
func qsubMain(ctx context.Context, env *Env, args []string) int {
	for _, a := range args {
		if a == "--version" {
			fmt.Fprintln(env.Stdout, "pbs_version = "+pbsVersion)
			return 0
		}
		if a == "--" {
			break
		}
	}
	// The ping (flavour and server name, needed before the options can be
	// read) travels while this process looks up its user and directory:
	// it is the one round trip qsub has more than sbatch.
	type connected struct {
		s    *pbsSession
		code int
	}
	ping := make(chan connected, 1)
	go func() {
		s, code := pbsConnect(ctx, env)
		ping <- connected{s, code}
	}()
	cwd, cwdErr := env.Getwd()
	host, _ := os.Hostname()
	home, uname := env.Getenv("HOME"), env.Getenv("USER")
	if u, err := user.Current(); err == nil {
		home, uname = u.HomeDir, u.Username
	}
	conn := <-ping
	s := conn.s
	if s == nil {
		return conn.code
	}
	if cwdErr != nil {
		fmt.Fprintf(env.Stderr, "qsub: unable to get the current directory: %v\n", cwdErr)
		return 1
	}
	spec, flags, err := sbatch.BuildQsubSpec(sbatch.QsubInput{
		Argv: args, Env: env.Environ(), Cwd: cwd, Stdin: env.Stdin,
		ReadFile: os.ReadFile, IsDir: isDir, Now: time.Now(), Hostname: host,
		Home: home, User: uname, Flavour: s.flavour, Server: s.server,
	})
	if err != nil {
		var pe *sbatch.PBSError
		if errors.As(err, &pe) {
			fmt.Fprint(env.Stderr, pe.Text)
			return pe.Exit
		}
		fmt.Fprintf(env.Stderr, "qsub: %v\n", err)
		return 1
	}
	if flags.Interactive {
		return qsubInteractive(ctx, env, s, spec)
	}
	resp, err := s.cl.Submit(ctxOrBackground(ctx), api.SubmitRequest{Spec: *spec})
	if err != nil {
		fmt.Fprint(env.Stderr, qsubSubmitError(s, err))
		return sbatch.PBSExit(pbsErrno(err))
	}
	if !flags.NoID {
		if spec.Array != "" {
			fmt.Fprintln(env.Stdout, s.arrayID(resp.JobID))
		} else {
			fmt.Fprintln(env.Stdout, s.jobID(resp.JobID))
		}
	}
	if flags.Block {
		// -W block=true: qsub exits with the job's exit status.
		ctx, stop := interruptible(ctxOrBackground(ctx))
		defer stop()
		return waitJob(ctx, env, s.cl, resp.JobID)
	}
	return 0
}

// pbsVersion is what --version prints: hora's version, in PBS's form
// (toil reads `pbsnodes --version` and looks for "PBSPro" only).
var pbsVersion = "hora-" + version

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// pbsErrno maps horad's refusal onto the PBS error number a PBS server
// would answer.
func pbsErrno(err error) int {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return sbatch.PBSESystem
	}
	switch ae.Code {
	case api.CodeInvalidPartition:
		return sbatch.PBSEUnkQue
	case api.CodeAccessDenied:
		return sbatch.PBSEPerm
	case api.CodeInvalidJobID:
		return sbatch.PBSEUnkJobID
	}
	return sbatch.PBSEBadAtVal
}

// qsubSubmitError phrases horad's refusal of a submission as each PBS does:
// OpenPBS "qsub: <text>", Torque "qsub: submit error (<text>)".
func qsubSubmitError(s *pbsSession, err error) string {
	text := apiErrText(err)
	var ae *api.Error
	if errors.As(err, &ae) && ae.Code == api.CodeInvalidPartition {
		text = "Unknown queue"
	}
	if s.torque() {
		return "qsub: submit error (" + text + ")\n"
	}
	return "qsub: " + text + "\n"
}

// qsubInteractive is qsub -I: the job is an allocation; once it runs, the
// user's shell runs in it as a step on its first node over a pty, with the
// machinery of srun (runStep, pty.go), and the job ends with the shell.
// The lines are OpenPBS's (OP:src/cmds/qsub_sup.c interactive()).
func qsubInteractive(ctx context.Context, env *Env, s *pbsSession, spec *api.JobSpec) int {
	ctx = ctxOrBackground(ctx)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	resp, err := s.cl.Submit(ctx, api.SubmitRequest{Spec: *spec})
	if err != nil {
		fmt.Fprint(env.Stderr, qsubSubmitError(s, err))
		return sbatch.PBSExit(pbsErrno(err))
	}
	full := s.jobID(resp.JobID)
	fmt.Fprintf(env.Stdout, "qsub: waiting for job %s to start\n", full)
	id, code, ok := awaitAllocation(ctx, env, s.cl, "qsub", resp.JobID, 0, sigs, false, true)
	if !ok {
		fmt.Fprintf(env.Stderr, "qsub: job %s was not started\n", full)
		return max(code, 1)
	}
	fmt.Fprintf(env.Stdout, "qsub: job %s ready\n\n", full)
	shell := ""
	for _, kv := range spec.Env {
		if v, ok := strings.CutPrefix(kv, "SHELL="); ok {
			shell = v
		}
	}
	if spec.PBS != nil && spec.PBS.Shell != "" {
		shell = spec.PBS.Shell
	}
	if shell == "" {
		shell = "/bin/sh"
	}
	o := &srunOpts{jobID: id, nodes: 1, nodesFromCmd: true, ntasks: 1, args: []string{shell}, spec: spec, chdir: spec.WorkDir,
		jobName: spec.Name, pty: true, quiet: true}
	rc := runStep(ctx, env, s.cl, o, true, sigs)
	done := api.AllocDone{JobID: id, ExitCode: rc}
	if o.stepSignal != 0 {
		done = api.AllocDone{JobID: id, Signal: o.stepSignal}
	}
	_ = resend(ctx, s.cl, func(cl *api.Client) error { return cl.AllocDone(context.WithoutCancel(ctx), done) })
	if !o.launched {
		// No shell ran (the step was refused or could not start):
		// runStep said why; the job is released.
		fmt.Fprintf(env.Stderr, "qsub: job %s: the interactive shell could not be started\n", full)
		return max(rc, 1)
	}
	fmt.Fprintf(env.Stdout, "\nqsub: job %s completed\n", full)
	return 0 // OP exit_qsub(0): the shell's status is the job's Exit_status
}

// pbsControl is qdel, qhold, qrls, qsig and qrerun: options, then job ids,
// each acted on in turn; a failure is reported per id and the exit status
// is the last PBS error number (truncated), as the PBS clients do.
func pbsControl(ctx context.Context, env *Env, args []string, prog string) int {
	opts := pbsFixedOpts(prog)
	for _, a := range args {
		if a == "--version" {
			fmt.Fprintln(env.Stdout, "pbs_version = "+pbsVersion)
			return 0
		}
	}
	p, err := sbatch.Getopt(opts, args, false)
	if err != nil || len(p.Args) == 0 {
		if err != nil {
			var ue *sbatch.UsageError
			if errors.As(err, &ue) {
				fmt.Fprintf(env.Stderr, "%s: %s\n", prog, ue.Msg)
			}
		}
		fmt.Fprint(env.Stderr, pbsControlUsage[prog])
		return 2
	}
	sig := 0
	holdTypes := "u"
	if v, ok := p.Last("h"); ok {
		for _, c := range v.Val {
			if !strings.ContainsRune("uosn", c) {
				fmt.Fprintf(env.Stderr, "%s: illegal -h value\n", prog)
				fmt.Fprint(env.Stderr, pbsControlUsage[prog])
				return 2
			}
		}
		holdTypes = v.Val
	}
	suspend, resume := false, false
	if prog == "qsig" {
		name := "SIGTERM"
		if v, ok := p.Last("s"); ok {
			name = v.Val
		}
		switch strings.ToLower(name) {
		case "suspend":
			suspend = true
		case "resume":
			resume = true
		default:
			n, ok := signalNumber(name)
			if !ok {
				fmt.Fprintf(env.Stderr, "qsig: invalid signal %s\n", name)
				return 2
			}
			sig = n
		}
	}
	if v, ok := p.Last("W"); ok && prog == "qdel" {
		if v.Val != "force" && v.Val != "suppress_email" && !allDigitsStr(v.Val) {
			fmt.Fprintln(env.Stderr, "qdel: illegal -W value")
			fmt.Fprint(env.Stderr, pbsControlUsage[prog])
			return 2
		}
	}
	s, code := pbsConnect(ctx, env)
	if s == nil {
		return code
	}
	ctx = ctxOrBackground(ctx)
	status := 0
	for _, id := range p.Args {
		ref, ok := parsePBSRef(id)
		if !ok {
			fmt.Fprintf(env.Stderr, "%s: illegally formed job identifier: %s\n", prog, id)
			if s.torque() || prog == "qdel" {
				// OP qdel and Torque stop at once (exit(1)); OpenPBS's
				// other commands go on with the next id.
				return 1
			}
			status = 1
			continue
		}
		seq := ref.seq
		full := s.jobID(seq)
		// <seq>[] and <seq> name the whole array (horad: an array's id
		// names its tasks); <seq>[i] one subjob, as a task selector.
		ctl := api.ControlRequest{IDs: []int64{seq}}
		if ref.task >= 0 {
			// The subjob's own job id, looked up: horad answers a task
			// selector naming no task for the array's first task.
			full = s.subjobID(seq, ref.task)
			task, err := s.taskJob(ctx, seq, ref.task)
			if err != nil {
				fmt.Fprintf(env.Stderr, "%s: %s %s\n", prog, apiErrText(err), full)
				status = sbatch.PBSExit(pbsErrno(err))
				continue
			}
			if task == 0 {
				fmt.Fprint(env.Stderr, pbsJobError(s, prog, sbatch.PBSEUnkJobID, id, full))
				status = sbatch.PBSExit(sbatch.PBSEUnkJobID)
				continue
			}
			seq = task
			ctl.IDs = []int64{task}
		} else if ref.array {
			full = s.arrayID(seq)
		}
		var resp *api.CancelResponse
		var err error
		switch {
		case prog == "qdel":
			resp, err = s.cl.Cancel(ctx, api.CancelRequest{IDs: ctl.IDs, Tasks: ctl.Tasks, Filtered: true})
		case prog == "qhold":
			if holdTypes == "n" {
				continue
			}
			resp, err = s.cl.Control(ctx, api.PathHold, ctl)
		case prog == "qrls":
			resp, err = s.cl.Control(ctx, api.PathRelease, ctl)
		case suspend:
			resp, err = s.cl.Control(ctx, api.PathSuspend, ctl)
		case resume:
			resp, err = s.cl.Control(ctx, api.PathResume, ctl)
		case prog == "qsig":
			resp, err = s.cl.Cancel(ctx, api.CancelRequest{IDs: ctl.IDs, Tasks: ctl.Tasks, Signal: sig, Filtered: true})
		case prog == "qrerun":
			resp, err = s.cl.Control(ctx, api.PathRequeue, ctl)
		}
		if err != nil {
			fmt.Fprintf(env.Stderr, "%s: %s %s\n", prog, apiErrText(err), full)
			status = sbatch.PBSExit(pbsErrno(err))
			continue
		}
		for _, r := range resp.Results {
			if r.Error == "" || r.ID != seq {
				continue
			}
			errno := sbatch.PBSEBadState
			switch r.Code {
			case api.CodeInvalidJobID, api.CodeAlreadyDone:
				errno = sbatch.PBSEUnkJobID
			case api.CodeAccessDenied:
				errno = sbatch.PBSEPerm
			}
			fmt.Fprint(env.Stderr, pbsJobError(s, prog, errno, id, full))
			status = sbatch.PBSExit(errno)
		}
	}
	return status
}

// taskJob is the job id of task i of array seq, 0 when there is none.
func (s *pbsSession) taskJob(ctx context.Context, seq, i int64) (int64, error) {
	jobs, err := s.cl.Jobs(ctx, api.JobFilter{IDs: []int64{seq}, All: true})
	if err != nil {
		return 0, err
	}
	for _, j := range jobs {
		if j.ArrayJobID == seq && j.ArrayTaskID == i {
			return j.ID, nil
		}
	}
	return 0, nil
}

// pbsJobError is the per-job refusal line: "<prog>: <PBS text> <id>"
// (OP prt_job_err, TQ the same), except Torque's qdel, which names an
// unknown job "nonexistent" (TQ:src/cmds/qdel.c).
func pbsJobError(s *pbsSession, prog string, errno int, given, full string) string {
	if s.torque() && prog == "qdel" && errno == sbatch.PBSEUnkJobID {
		return "qdel: nonexistent job id: " + given + "\n"
	}
	return prog + ": " + pbsErrText(s.flavour, errno) + " " + full + "\n"
}

// pbsErrText is pbse_to_txt of each flavour (OP:src/lib/Liblog/pbs_messages.c,
// TQ:src/include/pbs_error_db.h).
func pbsErrText(flavour string, errno int) string {
	torque := flavour == sbatch.FlavourTorque
	switch errno {
	case sbatch.PBSEUnkJobID:
		if torque {
			return "Unknown Job Id Error"
		}
		return "Unknown Job Id"
	case sbatch.PBSEPerm:
		return "Unauthorized Request "
	case sbatch.PBSEBadState:
		return "Request invalid for state of job"
	case sbatch.PBSEUnkQue:
		return "Unknown queue"
	case sbatch.PBSEHistJobID:
		return "Job has finished"
	case sbatch.PBSEExcQResc:
		return "Job violates queue and/or server resource limits"
	}
	if torque {
		return "Illegal attribute or resource value for"
	}
	return "Illegal attribute or resource value"
}

func allDigitsStr(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// signalNumber reads qsig -s: a name with or without SIG, or a number.
func signalNumber(s string) (int, bool) {
	if n, err := strconv.Atoi(s); err == nil {
		return n, n > 0 && n < 65
	}
	name := strings.TrimPrefix(strings.ToUpper(s), "SIG")
	for n, nm := range signalNames {
		if nm == name {
			return n, true
		}
	}
	return 0, false
}

var signalNames = map[int]string{1: "HUP", 2: "INT", 3: "QUIT", 4: "ILL", 5: "TRAP", 6: "ABRT", 7: "BUS",
	8: "FPE", 9: "KILL", 10: "USR1", 11: "SEGV", 12: "USR2", 13: "PIPE", 14: "ALRM", 15: "TERM",
	17: "CHLD", 18: "CONT", 19: "STOP", 20: "TSTP", 21: "TTIN", 22: "TTOU", 23: "URG", 24: "XCPU",
	25: "XFSZ", 26: "VTALRM", 27: "PROF", 28: "WINCH", 29: "IO", 30: "PWR", 31: "SYS"}

// pbsControlUsage are the usage texts (OP:src/cmds/q*.c).
var pbsControlUsage = map[string]string{
	"qdel":   "usage:\n\tqdel [-W force|suppress_email=X] [-x] job_identifier...\n\tqdel --version\n",
	"qhold":  "usage: qhold [-h hold_list] job_identifier...\n       qhold --version\n",
	"qrls":   "usage: qrls [-h hold_list] job_identifier...\n       qrls --version\n",
	"qsig":   "usage: qsig [-s signal] job_identifier...\n       qsig --version\n",
	"qrerun": "usage: qrerun [-W force] job_identifier...\n       qrerun --version\n",
}

// qalterMain changes jobs (OP qalter.1B): -N name, -l walltime, -a
// eligible time and -W depend through horad's one update path (scontrol
// update's), -h holds through hold/release.
// Other attributes are refused by name and change nothing.
func qalterMain(ctx context.Context, env *Env, args []string) int {
	for _, a := range args {
		if a == "--version" {
			fmt.Fprintln(env.Stdout, "pbs_version = "+pbsVersion)
			return 0
		}
	}
	usage := qalterUsage
	opts := pbsFixedOpts("qalter")
	p, err := sbatch.Getopt(opts, args, true)
	if err != nil || len(p.Args) == 0 {
		var ue *sbatch.UsageError
		if errors.As(err, &ue) {
			fmt.Fprintf(env.Stderr, "qalter: %s\n", ue.Msg)
		}
		fmt.Fprint(env.Stderr, usage)
		return 2
	}
	illegal := func(opt string) int {
		fmt.Fprintf(env.Stderr, "qalter: illegal -%s value\n", opt)
		fmt.Fprint(env.Stderr, usage)
		return 2
	}
	var req api.JobUpdateRequest
	hold := ""
	badWall := false
	for _, v := range p.Values {
		switch v.Key {
		case "N":
			if v.Val == "" {
				return illegal("N")
			}
			name := v.Val
			req.Name = &name
		case "a":
			t, ok := sbatch.ParsePBSDateTime(v.Val, time.Now())
			if !ok {
				return illegal("a")
			}
			u := t.Unix()
			req.Begin = &u
		case "h":
			for _, c := range v.Val {
				if !strings.ContainsRune("uosn", c) {
					return illegal("h")
				}
			}
			hold = v.Val
		case "l":
			for _, r := range strings.Split(v.Val, ",") {
				name, val, ok := strings.Cut(r, "=")
				if !ok || name == "" {
					return illegal("l")
				}
				if name != "walltime" {
					fmt.Fprintf(env.Stderr, "qalter: hora cannot alter -l %s of a queued job; only walltime\n", name)
					return 2
				}
				secs, err := sbatch.ParsePBSDuration(val)
				if err != nil {
					badWall = true
					continue
				}
				req.TimeLimit = &secs
			}
		case "W":
			for _, w := range strings.Split(v.Val, ",") {
				name, val, _ := strings.Cut(w, "=")
				if name != "depend" {
					fmt.Fprintf(env.Stderr, "qalter: hora cannot alter -W %s of a queued job; only depend\n", name)
					return 2
				}
				dep, ok := sbatch.PBSDependency(val)
				if !ok {
					return illegal("W")
				}
				req.Dependency = &dep
			}
		default:
			fmt.Fprintf(env.Stderr, "qalter: hora cannot alter -%s of a queued job; only -N, -l walltime, -a, -h and -W depend\n", v.Key)
			return 2
		}
	}
	s, code := pbsConnect(ctx, env)
	if s == nil {
		return code
	}
	ctx = ctxOrBackground(ctx)
	status := 0
	for _, id := range p.Args {
		seq, ok := parsePBSJobID(id)
		if !ok {
			fmt.Fprintf(env.Stderr, "qalter: illegally formed job identifier: %s\n", id)
			status = 1
			continue
		}
		full := s.jobID(seq)
		if badWall {
			// OP: the client library refuses the value (ecl), naming the job.
			text := pbsErrText(s.flavour, sbatch.PBSEBadAtVal)
			if s.torque() {
				text += " Resource_List.walltime"
			}
			fmt.Fprintf(env.Stderr, "qalter: %s %s\n", text, full)
			return sbatch.PBSExit(sbatch.PBSEBadAtVal)
		}
		var results []api.JobResult
		if req.Name != nil || req.TimeLimit != nil || req.Begin != nil || req.Dependency != nil {
			// The one update path of horad, scontrol update's: its rules
			// (a running job's walltime only shortened by its owner) are
			// OpenPBS's qalter rules too (qalter.1B).
			r := req
			r.IDs = []int64{seq}
			resp, err := s.cl.Update(ctx, r)
			if err != nil {
				fmt.Fprintf(env.Stderr, "qalter: %s %s\n", apiErrText(err), full)
				status = sbatch.PBSExit(pbsErrno(err))
				continue
			}
			results = resp.Results
		}
		if hold != "" && !hasError(results) {
			var resp *api.CancelResponse
			if hold == "n" {
				resp, err = s.cl.Release(ctx, []int64{seq})
			} else {
				resp, err = s.cl.Hold(ctx, []int64{seq})
			}
			if err != nil {
				fmt.Fprintf(env.Stderr, "qalter: %s %s\n", apiErrText(err), full)
				status = sbatch.PBSExit(pbsErrno(err))
				continue
			}
			results = resp.Results
		}
		for _, r := range results {
			if r.Error == "" {
				continue
			}
			errno := sbatch.PBSEBadState
			switch r.Code {
			case api.CodeInvalidJobID:
				errno = sbatch.PBSEUnkJobID
			case api.CodeAccessDenied:
				errno = sbatch.PBSEPerm
			case api.CodeInvalidTimeLimit:
				errno = sbatch.PBSEExcQResc
			case api.CodeBadRequest: // a dependency horad refused
				errno = sbatch.PBSEBadAtVal
			}
			fmt.Fprint(env.Stderr, pbsJobError(s, "qalter", errno, id, full))
			status = sbatch.PBSExit(errno)
		}
	}
	return status
}

func hasError(rs []api.JobResult) bool {
	for _, r := range rs {
		if r.Error != "" {
			return true
		}
	}
	return false
}
