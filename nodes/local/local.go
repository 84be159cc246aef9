// Package local is the embedded default executor: every node it serves
// (local1, local2, ...) is this machine. Each step is supervised by a
// shepherd, horad's own binary re-executed in its own session with the job
// owner's credentials, which outlives horad and records the step's end in a
// node-side state directory. See README.md for the layout and protocol.
package local

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"hora/nodes"
)

// Config configures an Executor.
type Config struct {
	// StateDir holds one directory per node, each holding one directory
	// per step (e.g. ./var/nodes). Created if missing.
	StateDir string
	// ShepherdArgv starts a shepherd; the step directory is appended.
	// horad passes [os.Executable(), ShepherdCommand].
	ShepherdArgv []string
	// ShepherdEnv is the shepherd's own environment (not the job's, which
	// is LaunchSpec.Env exactly). Empty by default: the shepherd runs as the
	// job's user, who can read its environment, so horad's must not leak.
	ShepherdEnv []string
	// HandshakeTimeout bounds how long Launch waits for a shepherd to take
	// the step when ctx has no earlier deadline. 0 means 30 s.
	HandshakeTimeout time.Duration
	// SystemdRun, when set (horad running under systemd sets it to the path
	// of systemd-run), starts each shepherd as a transient service of its
	// own, hora-step-<node>-<step key>.service (hora-step-local1-42.batch.r0.service), instead of as horad's
	// child: the step then lives outside horad's cgroup and sandbox
	// (horad.service's ProtectSystem=strict, PrivateTmp and bounded
	// capabilities), with the full rights of its owner, and a restart of
	// horad cannot touch it. The handshake is unchanged: systemd-run --pipe
	// hands the service our pipes, and is let go once the shepherd took the
	// step (ending systemd-run leaves its service running).
	SystemdRun string
	// Place, when set, is called with each new shepherd's pid before it
	// receives its spec, so before the job is forked: what it does to the
	// shepherd (horad: move it into the job's class cgroup, [mix]) the
	// job's processes inherit. An error fails the launch.
	Place func(spec nodes.LaunchSpec, shepherdPid int) error
}

// Executor implements nodes.Executor on this machine.
type Executor struct {
	cfg      Config
	stateDir string // absolute
	euid     int
	// unreachable is set (horad as root only) when some ancestor of
	// stateDir cannot be searched by other users, so a shepherd running as
	// a job's user could not reach its step directory.
	unreachable string

	exits chan nodes.Status
	done  chan struct{}
	wg    sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	watched map[stepID]*watch
	// cgroups: steps' allocations are enforced with cgroup v1 (cgroup.go);
	// false when horad is not root or the hierarchies are missing.
	cgroups bool
	// cgMu orders the creation of a step's groups with the removal of
	// empty parent groups (node, horad) at another step's Forget: without
	// it a parent removed between its mkdir and the child's left the
	// launch writing into a deleted group (ENODEV).
	cgMu sync.Mutex
}

var _ nodes.Executor = (*Executor)(nil)

type stepID struct {
	node string
	key  nodes.StepKey
}

func (id stepID) String() string { return id.node + ":" + id.key.Name() }

// watch is a running step this Executor waits for.
type watch struct {
	pidfd *os.File // the shepherd; readable once it has exited
	rec   shepherdRecord
	child bool // started by this Executor, so it must also reap it
}

// New returns an Executor keeping its state under cfg.StateDir.
func New(cfg Config) (*Executor, error) {
	if len(cfg.ShepherdArgv) == 0 {
		return nil, errors.New("local executor: ShepherdArgv is empty")
	}
	if cfg.SystemdRun != "" && cfg.Place != nil {
		// Place acts on our child, which under SystemdRun is systemd-run,
		// not the shepherd.
		return nil, errors.New("local executor: SystemdRun and Place cannot both be set")
	}
	if cfg.StateDir == "" {
		return nil, errors.New("local executor: StateDir is empty")
	}
	dir, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("local executor: %w", err)
		}
		// Ours, so searchable by the users whose shepherds live below,
		// whatever horad's umask.
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, fmt.Errorf("local executor: %w", err)
		}
	}
	if cfg.HandshakeTimeout == 0 {
		cfg.HandshakeTimeout = 30 * time.Second
	}
	e := &Executor{
		cfg: cfg, stateDir: dir, euid: os.Geteuid(),
		exits:   make(chan nodes.Status, 64),
		done:    make(chan struct{}),
		watched: map[stepID]*watch{},
		cgroups: cgroupsUsable(),
	}
	if e.euid == 0 {
		e.unreachable = unsearchableAncestor(dir)
	}
	return e, nil
}

// unsearchableAncestor returns the first directory on the way to dir that
// others may not search ("" if there is none).
func unsearchableAncestor(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
			return d
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

func (e *Executor) stepDir(node string, key nodes.StepKey) string {
	return filepath.Join(e.stateDir, node, key.Name())
}

// Launch starts a shepherd for the step and returns once it holds the step.
// Failures the job's owner must see (output file, working directory,
// script) are not errors here: the step ends at once and its Status, with
// Err set, arrives on Exits.
func (e *Executor) Launch(ctx context.Context, spec nodes.LaunchSpec) error {
	if err := validNode(spec.Node); err != nil {
		return err
	}
	if e.euid != 0 && spec.UID != uint32(e.euid) {
		return fmt.Errorf("horad runs as uid %d and cannot run jobs of uid %d; run horad as root to serve several users",
			e.euid, spec.UID)
	}
	if e.euid == 0 && spec.UID != 0 && e.unreachable != "" {
		return fmt.Errorf("node state directory %s cannot be reached by uid %d: %s is not searchable by other users; "+
			"put the state directory under a world-searchable directory such as /var/lib/hora", e.stateDir, spec.UID, e.unreachable)
	}
	id := stepID{spec.Node, spec.Key}
	e.mu.Lock()
	closed, running := e.closed, e.watched[id] != nil
	e.mu.Unlock()
	if closed {
		return errors.New("local executor is closed")
	}
	if running {
		return fmt.Errorf("step %s is already running", id)
	}
	dir := e.stepDir(spec.Node, spec.Key)
	if _, err := os.Lstat(dir); err == nil {
		// Left over from an earlier run of the same job id (requeued).
		st, pfd := e.inspect(spec.Node, spec.Key)
		if pfd != nil {
			_ = pfd.Close()
		}
		if st.State == nodes.StepRunning {
			return fmt.Errorf("step %s is already running (shepherd pid %d)", id, st.Pid)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	// Modes are set explicitly: under a strict umask the shepherd, running
	// as the job's user, could not reach its directory.
	if err := mkdirMode(filepath.Dir(dir), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := mkdirMode(dir, 0o755); err != nil {
		return err
	}
	userDir := filepath.Join(dir, userDirName)
	if err := mkdirMode(userDir, 0o700); err != nil {
		_ = os.RemoveAll(dir)
		return err
	}
	var cred *syscall.Credential
	if e.euid == 0 {
		if err := os.Chown(userDir, int(spec.UID), int(spec.GID)); err != nil {
			_ = os.RemoveAll(dir)
			return err
		}
		cred = &syscall.Credential{Uid: spec.UID, Gid: spec.GID, Groups: supplementaryGroups(spec)}
	}
	err := e.startShepherd(ctx, id, dir, spec, cred)
	if err != nil {
		_ = os.RemoveAll(dir)
	}
	return err
}

// supplementaryGroups returns the groups the user belongs to, as login
// would set them; just the primary group if the user is unknown here.
func supplementaryGroups(spec nodes.LaunchSpec) []uint32 {
	u, err := user.LookupId(strconv.FormatUint(uint64(spec.UID), 10))
	if err != nil && spec.User != "" {
		u, err = user.Lookup(spec.User)
	}
	groups := []uint32{spec.GID}
	if err != nil {
		return groups
	}
	ids, err := u.GroupIds()
	if err != nil {
		return groups
	}
	for _, s := range ids {
		if g, err := strconv.ParseUint(s, 10, 32); err == nil && uint32(g) != spec.GID {
			groups = append(groups, uint32(g))
		}
	}
	return groups
}

func (e *Executor) startShepherd(ctx context.Context, id stepID, dir string, spec nodes.LaunchSpec, cred *syscall.Credential) error {
	// The shepherd's record is written once the shepherd runs, and by then
	// it may have started the job: its space is taken now, so that a full
	// disk cannot refuse it after the job started (a launch failure is a job
	// that never ran, for horad: TestLaunchOnFullDiskStartsNothingUnrecorded).
	if err := reserveFile(filepath.Join(dir, shepherdFile+".tmp"), shepherdRecordSize, 0o644); err != nil {
		return err
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer specW.Close()
	hsR, hsW, err := os.Pipe()
	if err != nil {
		specR.Close()
		return err
	}
	defer hsR.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		specR.Close()
		hsW.Close()
		return err
	}
	env := e.cfg.ShepherdEnv
	if env == nil {
		env = []string{}
	}
	pidfd := -1
	argv := append(append([]string{}, e.cfg.ShepherdArgv...), dir)
	unit := ""
	if e.cfg.SystemdRun != "" {
		unit = unitName(id)
		pre := []string{e.cfg.SystemdRun, "--pipe", "--quiet", "--collect", "--service-type=exec",
			"--unit=" + unit, "--description=hora step " + id.String()}
		if cred != nil {
			groups := make([]string, len(cred.Groups))
			for i, g := range cred.Groups {
				groups[i] = strconv.FormatUint(uint64(g), 10)
			}
			pre = append(pre, "--uid="+strconv.FormatUint(uint64(cred.Uid), 10),
				"--gid="+strconv.FormatUint(uint64(cred.Gid), 10),
				"--property=SupplementaryGroups="+strings.Join(groups, " "))
		}
		for _, kv := range env {
			pre = append(pre, "--setenv="+kv)
		}
		argv = append(append(pre, "--"), argv...)
		cred = nil // systemd-run itself runs as horad; the service as the owner
	}
	p, err := os.StartProcess(argv[0], argv, &os.ProcAttr{
		Dir:   "/",
		Env:   env,
		Files: []*os.File{specR, null, hsW},
		Sys:   &syscall.SysProcAttr{Setsid: true, Credential: cred, PidFD: &pidfd},
	})
	specR.Close()
	hsW.Close()
	null.Close()
	if err != nil {
		return fmt.Errorf("starting the shepherd: %w", err)
	}
	pid := p.Pid
	// Our own pidfd (from clone) outlives p; p's duplicate is released.
	_ = p.Release()
	if pidfd < 0 {
		return errors.New("starting the shepherd: the kernel gave no pidfd (Linux >= 5.3 is required)")
	}
	if err := unix.SetNonblock(pidfd, true); err != nil {
		unix.Close(pidfd)
		return err
	}
	pf := os.NewFile(uintptr(pidfd), "pidfd:"+strconv.Itoa(pid))
	// fail kills and reaps a shepherd that did not take the step.
	fail := func(err error) error {
		// The job first: killJob trusts its group only while the shepherd
		// is its parent, and a killed shepherd's job is reparented (it was
		// left running, orphaned, when a launch was abandoned at stop).
		e.killJob(dir, pid)
		_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		var info unix.Siginfo
		_ = unix.Waitid(unix.P_PIDFD, pidfd, &info, unix.WEXITED, nil)
		pf.Close()
		return err
	}
	if e.cfg.Place != nil {
		if err := e.cfg.Place(spec, pid); err != nil {
			return fail(fmt.Errorf("placing step %s: %w", id, err))
		}
	}
	// The shepherd waits for its spec: it joins the step's cgroups first,
	// and the job inherits them.
	if e.cgroups && (len(spec.CPUs) > 0 || spec.MemMB > 0 || spec.NodeGPUs > 0) {
		memDir, err := e.enterStepCgroups(spec, pid)
		if err != nil {
			e.removeCgroups(spec.Node, spec.Key)
			return fail(fmt.Errorf("enforcing the step's allocation: %w", err))
		}
		spec.MemCgroup = memDir
	}
	// The spec goes first so that the shepherd starts the job while horad
	// records the shepherd. A shepherd that died early makes the write fail
	// with EPIPE; what it said on stderr explains why better, so that is
	// read regardless.
	body, err := json.Marshal(newShepherdSpec(spec))
	if err != nil {
		return fail(err)
	}
	_, werr := specW.Write(body)
	specW.Close()
	if unit != "" {
		return e.handshakeUnit(ctx, id, dir, spec, unit, pid, pidfd, pf, hsR, werr, fail)
	}
	// The shepherd is our unreaped child, so its /proc entry is there.
	ps, err := readProcStat(pid)
	if err != nil {
		return fail(err)
	}
	rec := shepherdRecord{Pid: pid, StartTicks: ps.StartTicks, UID: spec.UID, GID: spec.GID, Started: time.Now(),
		Run: spec.Key.Run}
	if err := writeShepherdRecord(dir, rec); err != nil {
		return fail(err)
	}

	deadline := time.Now().Add(e.cfg.HandshakeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = hsR.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = hsR.SetReadDeadline(time.Now()) })
	said, rerr := io.ReadAll(io.LimitReader(hsR, 4096))
	stop()
	if string(said) != "ok\n" {
		msg := strings.TrimSpace(string(said))
		switch {
		case rerr != nil:
			msg = fmt.Sprintf("no answer: %v", rerr)
		case msg == "" && werr != nil:
			msg = werr.Error()
		case msg == "":
			msg = "exited without a word"
		}
		return fail(fmt.Errorf("shepherd for step %s: %s", id, msg))
	}
	w := &watch{pidfd: pf, rec: rec, child: true}
	e.mu.Lock()
	if e.closed {
		// Close raced with us: the step runs on; a later Reattach finds it.
		e.mu.Unlock()
		var info unix.Siginfo
		go func() { // reap it whenever it ends, so no zombie stays behind
			_ = unix.Waitid(unix.P_PIDFD, pidfd, &info, unix.WEXITED, nil)
			pf.Close()
		}()
		return nil
	}
	e.watched[id] = w
	e.wg.Add(1)
	e.mu.Unlock()
	go e.watch(id, w)
	return nil
}

// killJob kills the job group a failed shepherd may already have started.
func (e *Executor) killJob(dir string, shepherdPid int) {
	if pgid, ok := jobPgid(dir, shepherdPid); ok {
		_ = unix.Kill(-pgid, unix.SIGKILL)
	}
}

// jobPgid returns the job's process group as the shepherd recorded it,
// only if the kernel confirms that it is a group led by a child of that
// shepherd. The pid file is the user's to edit; this check is what keeps
// horad from signalling anything else on their word.
func jobPgid(dir string, shepherdPid int) (int, bool) {
	b, err := readSmallFile(filepath.Join(dir, userDirName, pidFile))
	if err != nil {
		return 0, false
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pgid <= 1 {
		return 0, false
	}
	ps, err := readProcStat(pgid)
	if err != nil || ps.Ppid != shepherdPid || ps.Pgrp != pgid {
		return 0, false
	}
	return pgid, true
}

// watch waits for a shepherd to exit and reports the step's end.
func (e *Executor) watch(id stepID, w *watch) {
	defer e.wg.Done()
	rc, err := w.pidfd.SyscallConn()
	if err != nil {
		return // only if the file is already closed
	}
	// Read parks this goroutine in the runtime's poller until the pidfd
	// turns readable, which the kernel does when the shepherd exits.
	err = rc.Read(func(fd uintptr) bool {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, _ := unix.Poll(pfd, 0)
		return n > 0
	})
	if err != nil {
		select {
		case <-e.done:
			return // closed by Close: the step is left running
		default:
		}
		// The runtime's poller did not take the pidfd: wait the plain way
		// rather than never report this step.
		if !e.pollExit(rc) {
			return
		}
	}
	if w.child {
		_ = rc.Control(func(fd uintptr) {
			var info unix.Siginfo
			_ = unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG, nil)
		})
	}
	st := e.endedStatus(id, w.rec)
	e.mu.Lock()
	delete(e.watched, id)
	e.mu.Unlock()
	_ = w.pidfd.Close()
	select {
	case e.exits <- st:
	case <-e.done:
	}
}

// pollExit waits for the pidfd with poll(2), waking each second to see
// whether Close was called. It reports whether the shepherd exited.
func (e *Executor) pollExit(rc syscall.RawConn) bool {
	for {
		select {
		case <-e.done:
			return false
		default:
		}
		n := 0
		cerr := rc.Control(func(fd uintptr) {
			n, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 1000)
		})
		if cerr != nil {
			return false
		}
		if n > 0 {
			return true
		}
	}
}

// endedStatus reads how a step whose shepherd is gone ended.
func (e *Executor) endedStatus(id stepID, rec shepherdRecord) nodes.Status {
	st := nodes.Status{Key: id.key, Node: id.node, State: nodes.StepExited}
	var s statusRecord
	if err := readJSON(filepath.Join(e.stepDir(id.node, id.key), userDirName, statusFile), &s); err != nil {
		st.State = nodes.StepLost
		st.Started = rec.Started
		if errors.Is(err, os.ErrNotExist) {
			st.Err = fmt.Sprintf("shepherd (pid %d) ended without recording the step's exit status", rec.Pid)
		} else {
			st.Err = "reading the step's exit status: " + err.Error()
		}
		// Pid tells the controller whether the job's process ever started:
		// a step lost before that (horad died mid-launch) is requeued, not failed.
		if b, err := readSmallFile(filepath.Join(e.stepDir(id.node, id.key), userDirName, pidFile)); err == nil {
			st.Pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		killOrphanGroup(st.Pid, rec)
		return st
	}
	st.ExitCode, st.Signal, st.TimedOut, st.Err = s.ExitCode, s.Signal, s.TimedOut, s.Err
	st.OOM = s.OOM
	st.MaxRSSKB, st.CPU = s.MaxRSSKB, time.Duration(s.CPUNs)
	st.Pid, st.Started, st.Ended = s.Pid, s.Started, s.Ended
	return st
}

// killOrphanGroup kills what is left of a lost step's job: a shepherd
// killed (the OOM killer, a kill -9) leaves its job running unsupervised
// while the job is requeued and started again — two runs at once, found by
// the fault harness. As slurmstepd's proctrack does at a step's end, the
// job's process group is killed (the step's cgroups, when it has them, are
// emptied at its Forget). The pid file is the user's to edit, so only a
// group led by a live process of the step's owner, started after the
// shepherd, is killed: never another user's processes.
func killOrphanGroup(pgid int, rec shepherdRecord) {
	if pgid <= 1 || rec.StartTicks == 0 {
		return
	}
	ps, err := readProcStat(pgid)
	if err != nil || ps.Pgrp != pgid || ps.State == 'Z' || ps.StartTicks < rec.StartTicks {
		return
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pgid), "status"))
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			if uid, err := strconv.ParseUint(f[1], 10, 32); err == nil && uint32(uid) == rec.UID {
				_ = unix.Kill(-pgid, unix.SIGKILL)
			}
			return
		}
	}
}

// inspect reports a step from its state directory. For a running step it
// also returns a pidfd on its verified shepherd, which the caller owns.
func (e *Executor) inspect(node string, key nodes.StepKey) (nodes.Status, *os.File) {
	id := stepID{node, key}
	dir := e.stepDir(node, key)
	var rec shepherdRecord
	if err := readJSON(filepath.Join(dir, shepherdFile), &rec); err != nil {
		st := e.endedStatus(id, rec)
		if st.State == nodes.StepLost {
			st.Err = "no shepherd record: " + err.Error()
		}
		return st, nil
	}
	if key.Run != nodes.LegacyRun && rec.Run != key.Run {
		// Not the run this directory is named for: nothing here may be
		// acted on as that run's (only root writes the record and names).
		return nodes.Status{Key: key, Node: node, State: nodes.StepLost, Started: rec.Started,
			Err: fmt.Sprintf("the shepherd record is of run %d, the directory of run %d", rec.Run, key.Run)}, nil
	}
	if _, err := os.Lstat(filepath.Join(dir, userDirName, statusFile)); err == nil {
		return e.endedStatus(id, rec), nil
	}
	if pf := openShepherd(rec); pf != nil {
		st := nodes.Status{Key: key, Node: node, State: nodes.StepRunning, Started: rec.Started}
		st.Pid, _ = jobPgid(dir, rec.Pid)
		return st, pf
	}
	// The shepherd is gone; it may have written the status just before.
	return e.endedStatus(id, rec), nil
}

// openShepherd returns a pidfd on the shepherd rec names, or nil if that
// process no longer exists. The pidfd is opened before the start time is
// checked, so a pid reused in between is caught by the check.
func openShepherd(rec shepherdRecord) *os.File {
	if rec.Pid <= 1 {
		return nil
	}
	fd, err := unix.PidfdOpen(rec.Pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil
	}
	ps, err := readProcStat(rec.Pid)
	if err != nil || ps.StartTicks != rec.StartTicks || ps.State == 'Z' {
		unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), "pidfd:"+strconv.Itoa(rec.Pid))
}

// Reattach lists every step in the state directories of the given nodes
// and watches the running ones again.
func (e *Executor) Reattach(ctx context.Context, nodeNames []string) ([]nodes.Status, error) {
	var out []nodes.Status
	for _, node := range nodeNames {
		if err := validNode(node); err != nil {
			return nil, err
		}
		ents, err := os.ReadDir(filepath.Join(e.stateDir, node))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, ent := range ents {
			key, ok := nodes.ParseStepName(ent.Name())
			if !ok || !ent.IsDir() {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			id := stepID{node, key}
			e.mu.Lock()
			w := e.watched[id]
			e.mu.Unlock()
			if w != nil {
				st := nodes.Status{Key: key, Node: node, State: nodes.StepRunning, Started: w.rec.Started}
				st.Pid, _ = jobPgid(e.stepDir(node, key), w.rec.Pid)
				out = append(out, st)
				continue
			}
			st, pf := e.inspect(node, key)
			if pf != nil {
				var rec shepherdRecord
				_ = readJSON(filepath.Join(e.stepDir(node, key), shepherdFile), &rec)
				w := &watch{pidfd: pf, rec: rec}
				e.mu.Lock()
				if e.closed {
					e.mu.Unlock()
					pf.Close()
					return nil, errors.New("local executor is closed")
				}
				e.watched[id] = w
				e.wg.Add(1)
				e.mu.Unlock()
				go e.watch(id, w)
			}
			out = append(out, st)
		}
	}
	return out, nil
}

// running returns the verified shepherd record of a running step.
func (e *Executor) running(node string, key nodes.StepKey) (shepherdRecord, *os.File, error) {
	if err := validNode(node); err != nil {
		return shepherdRecord{}, nil, err
	}
	if _, err := os.Lstat(e.stepDir(node, key)); err != nil {
		return shepherdRecord{}, nil, fmt.Errorf("no step %s on node %s", key.Name(), node)
	}
	_, pf := e.inspect(node, key)
	if pf == nil {
		return shepherdRecord{}, nil, fmt.Errorf("step %s on node %s is not running", key.Name(), node)
	}
	var rec shepherdRecord
	if err := readJSON(filepath.Join(e.stepDir(node, key), shepherdFile), &rec); err != nil {
		pf.Close()
		return rec, nil, err
	}
	return rec, pf, nil
}

// Signal delivers sig to the step's process group. horad signals the group
// directly rather than through the shepherd, since SIGSTOP cannot be caught
// and forwarded; jobPgid makes sure the group is the one the shepherd leads.
func (e *Executor) Signal(ctx context.Context, node string, key nodes.StepKey, sig nodes.Signum) error {
	rec, pf, err := e.running(node, key)
	if err != nil {
		return err
	}
	defer pf.Close()
	pgid, ok := jobPgid(e.stepDir(node, key), rec.Pid)
	if !ok {
		return fmt.Errorf("step %s on node %s has no running process group", key.Name(), node)
	}
	if err := unix.Kill(-pgid, syscall.Signal(sig)); err != nil {
		return fmt.Errorf("signal %d to step %s on node %s: %w", sig, key.Name(), node, err)
	}
	return nil
}

// Terminate asks the shepherd to send TERM to the step's process group and
// KILL after grace. The shepherd does the waiting, so horad keeps no timer
// and the KILL happens even if horad dies meanwhile. Terminating a step
// that has already ended is not an error.
func (e *Executor) Terminate(ctx context.Context, node string, key nodes.StepKey, grace time.Duration) error {
	if grace < 0 {
		grace = 0
	}
	_, pf, err := e.running(node, key)
	if err != nil {
		if _, serr := os.Lstat(filepath.Join(e.stepDir(node, key), userDirName, statusFile)); serr == nil {
			return nil
		}
		return err
	}
	defer pf.Close()
	dir := e.stepDir(node, key)
	if err := writeFileAtomic(filepath.Join(dir, terminateFile), []byte(strconv.FormatInt(int64(grace), 10)+"\n"), 0o644, false); err != nil {
		return err
	}
	var sendErr error
	rc, err := pf.SyscallConn()
	if err != nil {
		return err
	}
	if err := rc.Control(func(fd uintptr) {
		sendErr = unix.PidfdSendSignal(int(fd), unix.SIGTERM, nil, 0)
	}); err != nil {
		return err
	}
	if errors.Is(sendErr, unix.ESRCH) {
		return nil // ended meanwhile
	}
	return sendErr
}

// SetTimeLimit moves a running step's time limit (counted from its start):
// the limit is left in the step directory, which only root writes, and the
// shepherd is told with SIGUSR1 through its pidfd, as Terminate does.
func (e *Executor) SetTimeLimit(ctx context.Context, node string, key nodes.StepKey, limit time.Duration) error {
	if limit <= 0 {
		return fmt.Errorf("time limit %v is not positive", limit)
	}
	_, pf, err := e.running(node, key)
	if err != nil {
		return err
	}
	defer pf.Close()
	if err := writeFileAtomic(filepath.Join(e.stepDir(node, key), limitFile), []byte(strconv.FormatInt(int64(limit), 10)+"\n"), 0o644, false); err != nil {
		return err
	}
	rc, err := pf.SyscallConn()
	if err != nil {
		return err
	}
	var sendErr error
	if err := rc.Control(func(fd uintptr) { sendErr = unix.PidfdSendSignal(int(fd), unix.SIGUSR1, nil, 0) }); err != nil {
		return err
	}
	if errors.Is(sendErr, unix.ESRCH) {
		return nil // ended meanwhile
	}
	return sendErr
}

// Forget removes the state directory of a step that has ended.
func (e *Executor) Forget(ctx context.Context, node string, key nodes.StepKey) error {
	if err := validNode(node); err != nil {
		return err
	}
	id := stepID{node, key}
	e.mu.Lock()
	w := e.watched[id]
	e.mu.Unlock()
	if w != nil {
		return fmt.Errorf("step %s is still running", id)
	}
	dir := e.stepDir(node, key)
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		if e.cgroups { // a launch that failed after creating the groups
			e.removeCgroups(node, key)
		}
		return e.removeStaged(node, key)
	}
	if _, pf := e.inspect(node, key); pf != nil {
		pf.Close()
		return fmt.Errorf("step %s is still running", id)
	}
	if err := e.removeStaged(node, key); err != nil {
		return err
	}
	if e.cgroups {
		e.removeCgroups(node, key)
	}
	return os.RemoveAll(dir)
}

// Exits delivers one Status per watched step that ends.
func (e *Executor) Exits() <-chan nodes.Status { return e.exits }

// Close stops watching. Shepherds and their steps keep running; a new
// Executor finds them with Reattach.
func (e *Executor) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	close(e.done)
	ws := make([]*watch, 0, len(e.watched))
	for _, w := range e.watched {
		ws = append(ws, w)
	}
	e.mu.Unlock()
	for _, w := range ws {
		_ = w.pidfd.Close()
	}
	e.wg.Wait()
	close(e.exits)
	if e.cgroups {
		e.sweepCgroups()
	}
	return nil
}

// unitName is the transient service a step runs in under SystemdRun:
// hora-step-<node>-<step key>.service (hora-step-local1-42.batch.r0.service), with any character systemd does
// not allow in a unit name replaced by '_'.
func unitName(id stepID) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_', r == ':':
			return r
		}
		return '_'
	}, id.node+"-"+id.key.Name())
	return "hora-step-" + clean + ".service"
}

// handshakeUnit finishes a launch through systemd-run (Config.SystemdRun):
// it waits for the shepherd's "ok" line (systemd-run holds the pipe open
// until the service ends, so there is no EOF to wait for), finds the
// shepherd as the service's main process, records it and watches it by a
// pidfd of its own, then lets systemd-run go. A shepherd that already ended
// is watched through systemd-run, which exits with its service.
func (e *Executor) handshakeUnit(ctx context.Context, id stepID, dir string, spec nodes.LaunchSpec, unit string,
	runPid, runPidfd int, runPf *os.File, hsR *os.File, werr error, fail func(error) error) error {
	systemctl := filepath.Join(filepath.Dir(e.cfg.SystemdRun), "systemctl")
	failUnit := func(err error) error {
		_ = exec.Command(systemctl, "stop", unit).Run()
		return fail(err)
	}
	deadline := time.Now().Add(e.cfg.HandshakeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = hsR.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = hsR.SetReadDeadline(time.Now()) })
	said, rerr := bufio.NewReader(io.LimitReader(hsR, 4096)).ReadString('\n')
	stop()
	if said != "ok\n" {
		msg := strings.TrimSpace(said)
		switch {
		case msg == "" && rerr != nil && !errors.Is(rerr, io.EOF):
			msg = fmt.Sprintf("no answer: %v", rerr)
		case msg == "" && werr != nil:
			msg = werr.Error()
		case msg == "":
			msg = "exited without a word"
		}
		return failUnit(fmt.Errorf("shepherd for step %s (unit %s): %s", id, unit, msg))
	}
	out, err := exec.Command(systemctl, "show", "--property=MainPID", "--value", unit).Output()
	if err != nil {
		return failUnit(fmt.Errorf("step %s: systemctl show %s: %w", id, unit, err))
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	rec := shepherdRecord{Pid: runPid, UID: spec.UID, GID: spec.GID, Started: time.Now()}
	w := &watch{pidfd: runPf, child: true}
	if pid > 0 {
		fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
		if err != nil {
			return failUnit(fmt.Errorf("step %s: pidfd of the shepherd %d: %w", id, pid, err))
		}
		ps, perr := readProcStat(pid)
		cg, cerr := readSmallFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
		if perr != nil || cerr != nil || !strings.Contains(string(cg), "/"+unit) {
			unix.Close(fd)
			return failUnit(fmt.Errorf("step %s: process %d is not the shepherd of %s", id, pid, unit))
		}
		rec.Pid, rec.StartTicks = pid, ps.StartTicks
		// systemd-run has done its part; ending it leaves the service running.
		_ = unix.PidfdSendSignal(runPidfd, unix.SIGKILL, nil, 0)
		var info unix.Siginfo
		_ = unix.Waitid(unix.P_PIDFD, runPidfd, &info, unix.WEXITED, nil)
		runPf.Close()
		w = &watch{pidfd: os.NewFile(uintptr(fd), "pidfd:"+strconv.Itoa(pid)), child: false}
	}
	w.rec = rec
	if err := writeShepherdRecord(dir, rec); err != nil {
		w.pidfd.Close()
		return failUnit(err)
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		w.pidfd.Close()
		return nil
	}
	e.watched[id] = w
	e.wg.Add(1)
	e.mu.Unlock()
	go e.watch(id, w)
	return nil
}

// NodeSystem is this machine's kernel and boot time: every local node is
// this machine (nodes.SystemReader).
func (e *Executor) NodeSystem(string) (nodes.NodeSystem, bool) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return nodes.NodeSystem{}, false
	}
	sys := nodes.NodeSystem{OS: strings.Join([]string{unix.ByteSliceToString(u.Sysname[:]),
		unix.ByteSliceToString(u.Release[:]), unix.ByteSliceToString(u.Version[:])}, " ")}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		sys.Boot, _ = nodes.ParseBootTime(string(b))
	}
	return sys, true
}
