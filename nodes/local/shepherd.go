package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"hora/nodes"
)

// ShepherdCommand is the first argument with which horad re-executes itself
// as a shepherd: `horad shepherd STEPDIR`.
const ShepherdCommand = "shepherd"

// ShepherdMain is the shepherd's entry point; cmd/horad calls it when
// os.Args[1] == ShepherdCommand and exits with its result. args is what
// follows ShepherdCommand: the step directory.
//
// The shepherd reads the step's LaunchSpec (JSON) on stdin, starts the job,
// writes "ok\n" on stderr once the step's fate is in its hands (running, or
// a launch failure recorded in the status file), then supervises the job
// until it ends and records how. It runs in its own session with the job
// owner's credentials, so it survives horad and can do no more than the user.
func ShepherdMain(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: shepherd STEPDIR")
		return 2
	}
	var w shepherdSpec
	if err := json.NewDecoder(os.Stdin).Decode(&w); err != nil {
		fmt.Fprintf(os.Stderr, "shepherd: reading the step: %v\n", err)
		return 1
	}
	spec := w.LaunchSpec
	spec.Env = make([]string, len(w.Env))
	for i, kv := range w.Env {
		spec.Env[i] = string(kv)
	}
	sh := &shepherd{dir: args[0], userDir: filepath.Join(args[0], userDirName), spec: &spec}
	return sh.run()
}

// shepherdSpec is the LaunchSpec as it travels to the shepherd: its
// environment as bytes (base64 in JSON, as Script already is), because
// encoding/json would turn every byte of a value that is not UTF-8 into
// U+FFFD and the job must see what its submitter exported. The outer Env,
// shallower, replaces the embedded one in the JSON.
type shepherdSpec struct {
	nodes.LaunchSpec
	Env [][]byte
}

func newShepherdSpec(spec nodes.LaunchSpec) shepherdSpec {
	w := shepherdSpec{LaunchSpec: spec, Env: make([][]byte, len(spec.Env))}
	for i, kv := range spec.Env {
		w.Env[i] = []byte(kv)
	}
	return w
}

type shepherd struct {
	dir, userDir string
	spec         *nodes.LaunchSpec
	pgid         int
}

func (sh *shepherd) run() int {
	// Files are created as the user would with the usual umask: output
	// 0644, the script 0700.
	unix.Umask(0o022)
	// Catch, rather than ignore, the signals that would end or stop the
	// shepherd: ignored dispositions survive exec and would leak into the
	// job, caught ones are reset to default there. SIGPIPE is caught so
	// that writing the handshake to a horad that died is not fatal.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGHUP, unix.SIGINT, unix.SIGQUIT,
		unix.SIGPIPE, unix.SIGUSR1, unix.SIGUSR2, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU)

	started := time.Now()
	// The pid file's space is taken before the job starts, and the pid is
	// written into it in place once it is known, which needs no new space:
	// a pid that a full disk refused after the job had started made the job
	// count as never started (Status.Pid 0), and horad ran a --no-requeue job
	// a second time (fault harness). Without the space the job does not start.
	pidTmp := filepath.Join(sh.userDir, pidFile+".tmp")
	err := reserveFile(pidTmp, pidFileSize, 0o644)
	var p *os.Process
	if err == nil {
		p, err = sh.start()
	}
	if err != nil {
		rec := statusRecord{ExitCode: 1, Started: started, Ended: time.Now(), Err: err.Error()}
		if werr := writeJSONAtomic(filepath.Join(sh.userDir, statusFile), rec, 0o644, true); werr != nil {
			fmt.Fprintf(os.Stderr, "shepherd: %v; recording it: %v\n", err, werr)
			return 1
		}
		handshake()
		return 0
	}
	sh.pgid = p.Pid
	if err := writeReserved(pidTmp, filepath.Join(sh.userDir, pidFile), pidRecord(p.Pid)); err != nil {
		// Without the pid file horad could not signal the job: give up on it.
		_ = unix.Kill(-p.Pid, unix.SIGKILL)
		_, _ = p.Wait()
		fmt.Fprintf(os.Stderr, "shepherd: recording the job's pid: %v\n", err)
		return 1
	}
	handshake()

	type waited struct {
		ws  syscall.WaitStatus
		ru  *syscall.Rusage
		err error
	}
	exited := make(chan waited, 1)
	go func() {
		st, err := p.Wait()
		if err != nil {
			exited <- waited{err: err}
			return
		}
		ru, _ := st.SysUsage().(*syscall.Rusage)
		exited <- waited{ws: st.Sys().(syscall.WaitStatus), ru: ru}
	}()

	var limitC, killC <-chan time.Time
	if sh.spec.TimeLimit > 0 {
		limitC = time.After(sh.spec.TimeLimit - time.Since(started))
	}
	var killTimer *time.Timer
	var killAt time.Time
	// terminate sends TERM now and arms KILL at now+grace, keeping an
	// earlier KILL if one is already armed.
	terminate := func(grace time.Duration) {
		_ = unix.Kill(-sh.pgid, unix.SIGTERM)
		// A stopped (suspended) job only acts on TERM once continued.
		_ = unix.Kill(-sh.pgid, unix.SIGCONT)
		at := time.Now().Add(grace)
		if killTimer != nil && !at.Before(killAt) {
			return
		}
		if killTimer != nil {
			killTimer.Stop()
		}
		killAt, killTimer = at, time.NewTimer(grace)
		killC = killTimer.C
	}

	rec := statusRecord{Pid: sh.pgid, Started: started}
	for done := false; !done; {
		select {
		case w := <-exited:
			done = true
			switch {
			case w.err != nil:
				rec.ExitCode, rec.Err = 1, "waiting for the job: "+w.err.Error()
			case w.ws.Signaled():
				rec.Signal = int(w.ws.Signal())
			default:
				rec.ExitCode = w.ws.ExitStatus()
			}
			if w.ru != nil {
				// Linux reports ru_maxrss in KiB.
				rec.MaxRSSKB = w.ru.Maxrss
				rec.CPUNs = w.ru.Utime.Nano() + w.ru.Stime.Nano()
			}
		case s := <-sigs:
			switch s {
			case unix.SIGTERM:
				terminate(sh.terminateGrace())
			case unix.SIGUSR1:
				// horad moved the limit (a resumed job's suspended time does
				// not count); a limit that already fired stays fired.
				if d, ok := sh.movedLimit(); ok && !rec.TimedOut {
					limitC = time.After(max(0, d-time.Since(started)))
				}
			}
		case <-limitC:
			limitC = nil
			rec.TimedOut = true
			terminate(sh.spec.KillWait)
		case <-killC:
			killC = nil
			_ = unix.Kill(-sh.pgid, unix.SIGKILL)
		}
	}
	// The step ends with its batch script, as in Slurm: whatever the script
	// left behind in its process group goes too.
	_ = unix.Kill(-sh.pgid, unix.SIGKILL)
	if sh.spec.MemCgroup != "" {
		if n := oomKills(sh.spec.MemCgroup); n > 0 {
			rec.OOM = true
			sh.tellErr(oomMessage(n, sh.spec.Key))
		}
	}
	rec.Ended = time.Now()
	if err := writeJSONAtomic(filepath.Join(sh.userDir, statusFile), rec, 0o644, true); err != nil {
		return 1
	}
	return 0
}

// handshake tells horad the step is in the shepherd's hands, then points
// stderr at /dev/null so horad's end of the pipe sees EOF and later writes
// cannot fail on a horad that has gone away.
func handshake() {
	_, _ = os.Stderr.WriteString("ok\n")
	if null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil {
		_ = unix.Dup3(int(null.Fd()), 2, 0)
		_ = null.Close()
	}
}

// terminateGrace reads the grace horad left for a Terminate; without one
// (SIGTERM from elsewhere, e.g. the user or a shutdown) it is KillWait.
func (sh *shepherd) terminateGrace() time.Duration {
	b, err := os.ReadFile(filepath.Join(sh.dir, terminateFile))
	if err != nil {
		return sh.spec.KillWait
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || ns < 0 {
		return sh.spec.KillWait
	}
	return time.Duration(ns)
}

// start writes the script, opens the job's files as the user and starts the
// job in its own process group.
func (sh *shepherd) start() (_ *os.Process, err error) {
	spec := sh.spec
	script := filepath.Join(sh.userDir, scriptFile)
	if err := writeNewFile(script, spec.Script, 0o700); err != nil {
		return nil, fmt.Errorf("writing the batch script: %w", err)
	}
	// Outputs first, so that later launch errors can be written into them.
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if spec.Append {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	if spec.SharedOutput {
		flags |= os.O_APPEND
	}
	outPath := spec.Stdout
	if outPath == "" {
		outPath = os.DevNull
	}
	out, err := os.OpenFile(outPath, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot open output file: %w", err)
	}
	defer out.Close()
	errf := out
	if spec.Stderr != "" && spec.Stderr != spec.Stdout {
		if errf, err = os.OpenFile(spec.Stderr, flags, 0o644); err != nil {
			return nil, fmt.Errorf("cannot open error file: %w", err)
		}
		defer errf.Close()
	}
	defer func() {
		// Say why in the job's own error file, where its user looks first,
		// as slurmstepd does.
		if err != nil {
			fmt.Fprintf(errf, "hora: error: %v\n", err)
		}
	}()
	inPath := spec.Stdin
	if inPath == "" {
		inPath = os.DevNull
	}
	in, err := os.Open(inPath)
	if err != nil {
		return nil, fmt.Errorf("cannot open input file: %w", err)
	}
	defer in.Close()
	// The child cannot tell a failed chdir from a failed exec (both come
	// back as one errno), so the working directory is checked here, as the
	// user, to give the user a message that names it.
	if spec.WorkDir != "" {
		fi, err := os.Stat(spec.WorkDir)
		switch {
		case err != nil:
			return nil, fmt.Errorf("cannot chdir to working directory: %w", err)
		case !fi.IsDir():
			return nil, fmt.Errorf("cannot chdir to working directory %s: not a directory", spec.WorkDir)
		case unix.Access(spec.WorkDir, unix.X_OK) != nil:
			return nil, fmt.Errorf("cannot chdir to working directory %s: permission denied", spec.WorkDir)
		}
	}
	env := spec.Env
	if env == nil {
		env = []string{} // nil would mean "inherit the shepherd's environment"
	}
	attr := &os.ProcAttr{
		Dir:   spec.WorkDir,
		Env:   env,
		Files: []*os.File{in, out, errf},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	}
	p, err := os.StartProcess(script, append([]string{script}, spec.Args...), attr)
	if errors.Is(err, syscall.ENOEXEC) {
		// No #! line: run it with sh, as a shell would.
		p, err = os.StartProcess("/bin/sh", append([]string{"/bin/sh", script}, spec.Args...), attr)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot execute the batch script: %w", err)
	}
	return p, nil
}

// writeNewFile creates path, which must not exist yet, and fills it.
func writeNewFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// movedLimit reads the limit horad left with SetTimeLimit.
func (sh *shepherd) movedLimit() (time.Duration, bool) {
	b, err := os.ReadFile(filepath.Join(sh.dir, limitFile))
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return time.Duration(n), true
}

// tellErr appends a line to the job's error file (its output file when
// there is none), as slurmstepd writes its errors there.
func (sh *shepherd) tellErr(msg string) {
	p := sh.spec.Stderr
	if p == "" {
		p = sh.spec.Stdout
	}
	if p == "" {
		return
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	_, _ = f.WriteString(msg)
	_ = f.Close()
}
