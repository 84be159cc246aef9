// Package ssh is the executor for physical nodes: ordinary Linux hosts
// reached over SSH with nothing installed on them. It keeps one pooled,
// kept-alive connection per node and drives a POSIX-sh wrapper on the node
// that plays the part of nodes/local's shepherd: it runs the step as its
// owner in its own session, outlives the SSH connection and horad, enforces
// the time limit and writes the exit status into a node-side state
// directory laid out as nodes/local's. See README.md.
package ssh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"hora/nodes"
)

// Node is one [[node]] of hora.toml.
type Node struct {
	Name         string // as the scheduler knows it
	Address      string // host or host:port (port 22 if none)
	User         string // SSH user: root, or one with passwordless sudo; default Config.User
	IdentityFile string // private key; default Config.IdentityFile
}

// Config configures an Executor. Zero durations take the defaults named.
type Config struct {
	Nodes []Node
	// KnownHostsFile holds the nodes' host keys (OpenSSH format). Required:
	// host keys are always verified.
	KnownHostsFile string
	User           string // default "root"
	IdentityFile   string // default for nodes without one
	// StateDir is the node-side state directory; each node keeps its steps
	// under StateDir/<node name>. Default /var/lib/hora-node.
	StateDir string
	// Launcher is "auto" (systemd-run where the node runs systemd, else
	// setsid), "systemd" or "setsid".
	Launcher string

	ConnectTimeout    time.Duration // TCP connect + SSH handshake; 10 s
	KeepaliveInterval time.Duration // 15 s
	KeepaliveTimeout  time.Duration // a keepalive unanswered this long closes the connection; 10 s
	ReconnectMin      time.Duration // first backoff after a failed dial; 500 ms
	ReconnectMax      time.Duration // 30 s
	CommandTimeout    time.Duration // bounds every remote command; 30 s
	// MaxSessions is the number of concurrent sessions per connection;
	// keep it below sshd's MaxSessions (default 10), which also counts
	// sessions still closing on its side. 8; two of them are kept for the
	// exit poller and the prober.
	MaxSessions int
	// PollInterval is how often each node with running steps is asked which
	// of them ended. 500 ms.
	PollInterval time.Duration
	// ProbeInterval, ProbeTimeout and ProbeMisses drive the health prober:
	// a node is down after ProbeMisses failed probes in a row, up after one
	// good probe. 5 s, 5 s, 3.
	ProbeInterval time.Duration
	ProbeTimeout  time.Duration
	ProbeMisses   int
	Logger        *slog.Logger
	// Mix, when set, enforces [mix] mode ps on the nodes (docs/mix.md).
	Mix *Mix
}

// Mix runs every step's scope in the systemd slice of its class,
// hora-rt.slice or hora-be.slice (children of hora.slice), whose CPUWeight
// are the class weights; the launch sets them (idempotent, so a node that
// was down or a changed ratio is right from its next step on). A node
// without systemd refuses the step: a ratio configured but not enforced
// would break the RT guarantee.
type Mix struct {
	RTWeight, BEWeight int                         // cpu.weight, 1..10000; change with SetWeights
	RT                 func(nodes.LaunchSpec) bool // the step is of the RT class
	// Switched, if set, receives every switch a node's tdm/gang agent
	// reports (the switch lag, docs/benchmarks.md); JobsChanged is called
	// when a node's agent reports a new set of jobs (MixJobs). Both are
	// called from the agent's reader and must not block.
	Switched    func(MixSwitch)
	JobsChanged func(node string)
	mu          sync.Mutex
}

// SetWeights changes the weights the next launches set (a reload of the
// ratio; SetMixWeights sets them on a node at once).
func (m *Mix) SetWeights(rt, be int) {
	m.mu.Lock()
	m.RTWeight, m.BEWeight = rt, be
	m.mu.Unlock()
}

func (m *Mix) weights() (rt, be int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.RTWeight, m.BEWeight
}

// NodeEvent is an up/down transition seen by the prober. The first probe
// of every node yields one event, so the receiver learns every node's state.
type NodeEvent = nodes.NodeEvent

// Executor implements nodes.Executor over SSH.
type Executor struct {
	cfg   Config
	log   *slog.Logger
	hosts map[string]*host

	exits  chan nodes.Status
	events chan NodeEvent
	done   chan struct{}
	ctx    context.Context // cancelled by Close; parent of internal operations
	cancel context.CancelFunc
	wg     sync.WaitGroup

	closeOnce sync.Once

	divMu   sync.Mutex
	agents  map[string]*agentSlot // [mix] tdm and gang: each node's agent (mixagent.go)
	mixJobs map[string][]MixJob   // what each node's agent last reported
}

var _ nodes.Executor = (*Executor)(nil)

// New checks cfg and starts the per-node exit pollers and health probers.
// It does not connect: connections are made on first use.
func New(cfg Config) (*Executor, error) {
	if cfg.KnownHostsFile == "" {
		return nil, errors.New("ssh executor: [ssh] known_hosts is required (host keys are always verified)")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.ConnectTimeout, 10*time.Second)
	def(&cfg.KeepaliveInterval, 15*time.Second)
	def(&cfg.KeepaliveTimeout, 10*time.Second)
	def(&cfg.ReconnectMin, 500*time.Millisecond)
	def(&cfg.ReconnectMax, 30*time.Second)
	def(&cfg.CommandTimeout, 30*time.Second)
	def(&cfg.PollInterval, 500*time.Millisecond)
	def(&cfg.ProbeInterval, 5*time.Second)
	def(&cfg.ProbeTimeout, 5*time.Second)
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 8
	}
	if cfg.MaxSessions < 3 {
		return nil, fmt.Errorf("ssh executor: max_sessions %d: at least 3 are needed", cfg.MaxSessions)
	}
	if cfg.ProbeMisses <= 0 {
		cfg.ProbeMisses = 3
	}
	if cfg.User == "" {
		cfg.User = "root"
	}
	if cfg.StateDir == "" {
		cfg.StateDir = "/var/lib/hora-node"
	}
	if !path.IsAbs(cfg.StateDir) || strings.ContainsAny(cfg.StateDir, "=\n\x00") {
		return nil, fmt.Errorf("ssh executor: state_dir %q must be an absolute path without '=' or newlines", cfg.StateDir)
	}
	switch cfg.Launcher {
	case "":
		cfg.Launcher = "auto"
	case "auto", "systemd", "setsid":
	default:
		return nil, fmt.Errorf("ssh executor: launcher %q: want auto, systemd or setsid", cfg.Launcher)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	e := &Executor{
		cfg: cfg, log: log, hosts: map[string]*host{},
		exits:  make(chan nodes.Status, 256),
		events: make(chan NodeEvent, 64),
		done:   make(chan struct{}),
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	for _, n := range cfg.Nodes {
		if err := validNode(n.Name); err != nil {
			return nil, err
		}
		if _, dup := e.hosts[n.Name]; dup {
			return nil, fmt.Errorf("ssh executor: node %s configured twice", n.Name)
		}
		if n.User == "" {
			n.User = cfg.User
		}
		if n.IdentityFile == "" {
			n.IdentityFile = cfg.IdentityFile
		}
		if n.IdentityFile == "" {
			return nil, fmt.Errorf("ssh executor: node %s: no identity_file", n.Name)
		}
		if n.Address == "" {
			return nil, fmt.Errorf("ssh executor: node %s: no address", n.Name)
		}
		addr := n.Address
		if _, _, err := net.SplitHostPort(addr); err != nil {
			addr = net.JoinHostPort(strings.Trim(addr, "[]"), "22")
		}
		e.hosts[n.Name] = &host{
			e: e, node: n, addr: addr,
			dir:     path.Join(cfg.StateDir, n.Name),
			ops:     make(chan struct{}, cfg.MaxSessions-2),
			poll:    make(chan struct{}, 1),
			prb:     make(chan struct{}, 1),
			watched: map[stepKey]time.Time{},
		}
	}
	for _, h := range e.hosts {
		e.wg.Add(2)
		go h.pollLoop()
		go h.probeLoop()
	}
	return e, nil
}

// validNode keeps node names to what a hostname and a directory name allow.
func validNode(name string) error {
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("invalid node name %q", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("invalid node name %q: only letters, digits, '-', '_' and '.'", name)
		}
	}
	return nil
}

func (e *Executor) host(node string) (*host, error) {
	h := e.hosts[node]
	if h == nil {
		return nil, fmt.Errorf("unknown node %q (not an SSH node)", node)
	}
	select {
	case <-e.done:
		return nil, errClosed
	default:
	}
	return h, nil
}

// opCtx bounds a remote operation by CommandTimeout as well as ctx.
func (e *Executor) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, e.cfg.CommandTimeout)
}

// unitName names the systemd scope of a step, run included
// ("hora-job-42-batch-r1"), so that a requeued job's new run never meets
// the scope its last run left behind.
func unitName(k nodes.StepKey) string {
	return "hora-job-" + strings.ReplaceAll(k.Name(), ".", "-")
}

// ceilSeconds rounds d up to whole seconds, as POSIX sleep counts.
func ceilSeconds(d time.Duration) string {
	if d <= 0 {
		return "0"
	}
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}

// runFile is the node-side script that starts the job as the wrapper's
// child: working directory, exactly spec.Env (env -i), default signal
// dispositions (an asynchronous command of a shell starts with SIGINT and
// SIGQUIT ignored; GNU env resets them where it can), then the script.
func runFile(spec nodes.LaunchSpec, scriptPath string) string {
	var b strings.Builder
	b.WriteString("cd -- " + Quote(orRoot(spec.WorkDir)) + " || exit 1\n")
	b.WriteString("if env --default-signal true 2>/dev/null; then set -- --default-signal; else set --; fi\n")
	b.WriteString(`exec env "$@" -i`)
	for _, kv := range spec.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			continue
		}
		b.WriteString(" " + Quote(kv))
	}
	if !hasShebang(spec.Script) {
		// No #! line: run it with sh, as a shell would.
		b.WriteString(" /bin/sh")
	}
	b.WriteString(" " + Quote(scriptPath))
	for _, a := range spec.Args {
		b.WriteString(" " + Quote(a))
	}
	b.WriteString("\n")
	return b.String()
}

func orRoot(dir string) string {
	if dir == "" {
		return "/"
	}
	return dir
}

func hasShebang(script []byte) bool { return len(script) >= 2 && script[0] == '#' && script[1] == '!' }

func checkSpec(spec nodes.LaunchSpec) error {
	for what, s := range map[string]string{"stdout path": spec.Stdout, "stderr path": spec.Stderr,
		"stdin path": spec.Stdin, "working directory": spec.WorkDir, "user": spec.User} {
		if err := checkNoNUL(what, s); err != nil {
			return err
		}
	}
	for _, a := range spec.Args {
		if err := checkNoNUL("argument", a); err != nil {
			return err
		}
	}
	for _, kv := range spec.Env {
		if err := checkNoNUL("environment", kv); err != nil {
			return err
		}
	}
	return nil
}

// Launch ships the script and starts the step's wrapper on its node, and
// returns once the wrapper holds the step. As with nodes/local, problems
// that are the job owner's to fix (output file, working directory) do not
// fail Launch: the step ends at once with Status.Err set, on Exits.
//
// An error of type *UnreachableError after the command was sent leaves the
// outcome unknown: the step may be running; Reattach tells.
func (e *Executor) Launch(ctx context.Context, spec nodes.LaunchSpec) error {
	h, err := e.host(spec.Node)
	if err != nil {
		return err
	}
	if err := checkSpec(spec); err != nil {
		return fmt.Errorf("step %s: %w", spec.Key.Name(), err)
	}
	name := spec.Key.Name()
	h.mu.Lock()
	_, running := h.watched[name]
	h.mu.Unlock()
	if running {
		return fmt.Errorf("step %s is already running on node %s", name, spec.Node)
	}
	h.awaitCallbacks(ctx)
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	stepDir := path.Join(h.dir, name)
	run := runFile(spec, path.Join(stepDir, "user", "script"))
	stdin := strings.NewReader(encodeLine([]byte(run)) + "\n" + string(spec.Script))
	appendOut := "0"
	switch {
	case spec.Append:
		appendOut = "1"
	case spec.SharedOutput:
		appendOut = "shared" // truncated, then every write at the end
	}
	started := time.Now()
	r, err := h.run(ctx, h.ops, false, shLaunch, stdin,
		h.dir, name, strconv.FormatUint(uint64(spec.UID), 10), strconv.FormatUint(uint64(spec.GID), 10),
		e.cfg.Launcher, unitName(spec.Key), started.UTC().Format(time.RFC3339Nano), shWrapper, strconv.Itoa(spec.Key.Run), scopeProps(spec),
		e.mixArg(spec),
		ceilSeconds(spec.TimeLimit), ceilSeconds(spec.KillWait), appendOut,
		spec.Stdout, spec.Stderr, spec.Stdin, spec.WorkDir)
	if err != nil {
		return fmt.Errorf("launching step %s: %w", name, err)
	}
	out := strings.TrimSpace(string(r.out))
	if r.code != 0 || !strings.HasPrefix(lastLine(out), "launched ") {
		msg := strings.TrimPrefix(lastLine(out), "error: ")
		if msg == "" {
			msg = fmt.Sprintf("exit %d: %s", r.code, strings.TrimSpace(string(r.errs)))
		}
		return fmt.Errorf("launching step %s on node %s: %s", name, spec.Node, msg)
	}
	h.mu.Lock()
	h.watched[name] = started
	h.mu.Unlock()
	return nil
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// statusRecord is the wrapper's account of a step's end (the same fields
// as nodes/local's status file).
type statusRecord struct {
	ExitCode int       `json:"exit_code"`
	Signal   int       `json:"signal"`
	TimedOut bool      `json:"timed_out"`
	OOM      bool      `json:"oom,omitempty"`
	Pid      int       `json:"pid"`
	Started  time.Time `json:"started"`
	Ended    time.Time `json:"ended"`
	Err      string    `json:"err,omitempty"`
}

// shepherdRecord is the launcher's (root's) record of the wrapper.
type shepherdRecord struct {
	Pid        int       `json:"pid"`
	StartTicks uint64    `json:"start_ticks"`
	UID        uint32    `json:"uid"`
	GID        uint32    `json:"gid"`
	Started    time.Time `json:"started"`
	// Run is the job's run the wrapper was started for; it must agree with
	// the step's name (absent, 0, for a LegacyRun step).
	Run int `json:"run"`
}

// parseReport turns the node's report lines into statuses.
func parseReport(node string, out []byte) []nodes.Status {
	var sts []nodes.Status
	for _, line := range strings.Split(string(out), "\n") {
		kind, rest, _ := strings.Cut(line, " ")
		name, rest, _ := strings.Cut(rest, " ")
		key, ok := nodes.ParseStepName(name)
		if !ok {
			continue
		}
		st := nodes.Status{Key: key, Node: node}
		switch kind {
		case "E":
			var s statusRecord
			if err := json.Unmarshal([]byte(strings.TrimSpace(rest)), &s); err != nil {
				st.State, st.Err = nodes.StepLost, "unreadable exit status: "+err.Error()
				break
			}
			st.State = nodes.StepExited
			st.ExitCode, st.Signal, st.TimedOut, st.Err = s.ExitCode, s.Signal, s.TimedOut, s.Err
			st.OOM = s.OOM
			st.Pid, st.Started, st.Ended = s.Pid, s.Started, s.Ended
		case "L":
			// "L NAME PGID REASON": the job's process group if it started.
			pg, reason, _ := strings.Cut(rest, " ")
			st.State, st.Err = nodes.StepLost, reason
			st.Pid, _ = strconv.Atoi(pg)
		case "R":
			pg, rec, _ := strings.Cut(rest, " ")
			st.State = nodes.StepRunning
			st.Pid, _ = strconv.Atoi(pg)
			var r shepherdRecord
			if json.Unmarshal([]byte(rec), &r) == nil {
				st.Started = r.Started
			}
			if key.Run != nodes.LegacyRun && r.Run != key.Run {
				// Not the run the directory is named for: never acted on
				// as that run's.
				st.State, st.Pid = nodes.StepLost, 0
				st.Err = fmt.Sprintf("the wrapper record is of run %d, the directory of run %d", r.Run, key.Run)
			}
		default:
			continue
		}
		sts = append(sts, st)
	}
	return sts
}

// pollLoop asks the node every PollInterval which of its watched steps
// ended, in one command over the pooled connection, and reports them.
func (h *host) pollLoop() {
	defer h.e.wg.Done()
	t := time.NewTicker(h.e.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-h.e.done:
			return
		case <-t.C:
		}
		h.mu.Lock()
		names := make([]string, 0, len(h.watched))
		for n := range h.watched {
			names = append(names, n)
		}
		down := h.down
		h.mu.Unlock()
		if len(names) == 0 || down {
			continue
		}
		ctx, cancel := context.WithTimeout(h.e.ctx, max(h.e.cfg.ProbeTimeout, 2*h.e.cfg.PollInterval))
		r, err := h.run(ctx, h.poll, false, shReport, nil, append([]string{h.dir}, names...)...)
		cancel()
		if err != nil {
			// The prober decides whether the node is down; polling just
			// tries again.
			continue
		}
		for _, st := range parseReport(h.node.Name, r.out) {
			h.report(st)
		}
	}
}

// report delivers the end of a watched step once.
func (h *host) report(st nodes.Status) {
	name := st.Key.Name()
	h.mu.Lock()
	_, ok := h.watched[name]
	delete(h.watched, name)
	h.mu.Unlock()
	if !ok {
		return
	}
	select {
	case h.e.exits <- st:
	case <-h.e.done:
	}
}

// Reattach lists every step in the state directories of the given nodes
// (running, exited with the real status, or lost) and watches the running
// ones again. Nodes that cannot be reached are skipped and named in the
// returned *ReattachError; the statuses of the others are still returned.
func (e *Executor) Reattach(ctx context.Context, names []string) ([]nodes.Status, error) {
	var out []nodes.Status
	var rerr ReattachError
	for _, node := range names {
		h, err := e.host(node)
		if err != nil {
			return out, err
		}
		octx, cancel := e.opCtx(ctx)
		r, err := h.run(octx, h.ops, false, shList, nil, h.dir)
		cancel()
		if err != nil {
			if rerr.Unreachable == nil {
				rerr.Unreachable = map[string]error{}
			}
			rerr.Unreachable[node] = err
			continue
		}
		sts := parseReport(node, r.out)
		h.mu.Lock()
		for _, st := range sts {
			if st.State == nodes.StepRunning {
				if _, ok := h.watched[st.Key.Name()]; !ok {
					h.watched[st.Key.Name()] = st.Started
				}
			}
		}
		h.mu.Unlock()
		out = append(out, sts...)
	}
	if rerr.Unreachable != nil {
		return out, &rerr
	}
	return out, nil
}

// ReattachError names the nodes whose state could not be read.
type ReattachError struct {
	Unreachable map[string]error
}

func (e *ReattachError) Error() string {
	var parts []string
	for n, err := range e.Unreachable {
		parts = append(parts, fmt.Sprintf("%s: %v", n, err))
	}
	return "reattach: nodes unreachable: " + strings.Join(parts, "; ")
}

// Signal delivers sig to the step's process group on its node, after the
// node has checked that the group is led by a child of the step's wrapper.
func (e *Executor) Signal(ctx context.Context, node string, key nodes.StepKey, sig nodes.Signum) error {
	h, err := e.host(node)
	if err != nil {
		return err
	}
	name := unix.SignalName(syscall.Signal(sig))
	if name == "" {
		return fmt.Errorf("unknown signal %d", sig)
	}
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	r, err := h.run(ctx, h.ops, false, shSignal, nil, h.dir, key.Name(), strings.TrimPrefix(name, "SIG"))
	if err != nil {
		return fmt.Errorf("signal %s to step %s: %w", name, key.Name(), err)
	}
	if r.code == 5 {
		return fmt.Errorf("step %s on node %s has no running process group", key.Name(), node)
	}
	return stepOpErr("signal "+name+" to", node, key, r)
}

// stepOpErr reads the exit status of a node-side step operation (shSignal,
// shSetLimit, shTerminate share it): 0 done, 3 no such step, 4 not running,
// anything else a failure of the operation itself.
func stepOpErr(op, node string, key nodes.StepKey, r result) error {
	switch r.code {
	case 0:
		return nil
	case 3:
		return fmt.Errorf("no step %s on node %s", key.Name(), node)
	case 4:
		return fmt.Errorf("step %s on node %s is not running", key.Name(), node)
	default:
		return fmt.Errorf("%s step %s on node %s: exit %d: %s", op, key.Name(), node, r.code, strings.TrimSpace(string(r.errs)))
	}
}

// SetTimeLimit moves a running step's limit (counted from its start, whole
// seconds rounded up): the wrapper's limit watcher sleeps again for it.
func (e *Executor) SetTimeLimit(ctx context.Context, node string, key nodes.StepKey, limit time.Duration) error {
	if limit <= 0 {
		return fmt.Errorf("time limit %v is not positive", limit)
	}
	h, err := e.host(node)
	if err != nil {
		return err
	}
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	r, err := h.run(ctx, h.ops, false, shSetLimit, nil, h.dir, key.Name(), ceilSeconds(limit))
	if err != nil {
		return fmt.Errorf("time limit of step %s: %w", key.Name(), err)
	}
	return stepOpErr("time limit of", node, key, r)
}

// Terminate sends TERM (and CONT) to the step's process group and leaves a
// node-side timer that sends KILL after grace if the step still runs, so no
// timer lives in horad. Terminating a step that has ended is not an error.
func (e *Executor) Terminate(ctx context.Context, node string, key nodes.StepKey, grace time.Duration) error {
	h, err := e.host(node)
	if err != nil {
		return err
	}
	grace = max(grace, 0)
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	r, err := h.run(ctx, h.ops, false, shTerminate, nil, h.dir, key.Name(),
		strconv.FormatInt(int64(grace), 10), ceilSeconds(grace), shLib)
	if err != nil {
		return fmt.Errorf("terminate step %s: %w", key.Name(), err)
	}
	return stepOpErr("terminate", node, key, r)
}

// Forget removes the node-side state of an ended step.
func (e *Executor) Forget(ctx context.Context, node string, key nodes.StepKey) error {
	h, err := e.host(node)
	if err != nil {
		return err
	}
	name := key.Name()
	h.mu.Lock()
	_, watched := h.watched[name]
	h.mu.Unlock()
	if watched {
		return fmt.Errorf("step %s:%s is still running", node, name)
	}
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	r, err := h.run(ctx, h.ops, false, shForget, nil, h.dir, name)
	if err != nil {
		return fmt.Errorf("forget step %s: %w", name, err)
	}
	switch r.code {
	case 0:
		return nil
	case 4:
		return fmt.Errorf("step %s:%s is still running", node, name)
	default:
		return fmt.Errorf("forget step %s on node %s: exit %d: %s", name, node, r.code, strings.TrimSpace(string(r.errs)))
	}
}

// Exits delivers one Status per watched step that ends (StepExited), or
// whose node the prober declared down (StepLost). Open until Close.
func (e *Executor) Exits() <-chan nodes.Status { return e.exits }

// NodeEvents delivers the prober's up/down transitions. Open until Close;
// the receiver must keep reading it.
func (e *Executor) NodeEvents() <-chan NodeEvent { return e.events }

// Close stops polling, probing and keepalives and closes the connections.
// Steps keep running on their nodes; a new Executor finds them with Reattach.
func (e *Executor) Close() error {
	e.closeOnce.Do(func() {
		close(e.done)
		e.cancel()
		for _, h := range e.hosts {
			h.mu.Lock()
			c := h.client
			h.mu.Unlock()
			if c != nil {
				c.Close()
			}
		}
		e.wg.Wait()
		close(e.exits)
		close(e.events)
	})
	return nil
}

// scopeProps are the systemd properties that enforce a step's allocation
// in its scope: the CPUs it was given (AllowedCPUs), its memory
// (MemoryMax) and no swap beyond it (MemorySwapMax=0); "-" for a step
// that holds its node whole. Only digits, commas and letters: safe as one
// shell word, split on ";" by shLaunch.
func scopeProps(spec nodes.LaunchSpec) string {
	var ps []string
	if len(spec.CPUs) > 0 {
		ids := make([]string, len(spec.CPUs))
		for i, c := range spec.CPUs {
			ids[i] = strconv.Itoa(c)
		}
		ps = append(ps, "AllowedCPUs="+strings.Join(ids, ","))
	}
	if spec.MemMB > 0 {
		ps = append(ps, "MemoryMax="+strconv.FormatInt(spec.MemMB<<20, 10), "MemorySwapMax=0")
	}
	// The node's GPUs the step was not given, and those it was: not
	// systemd properties; the launcher denies the former with a devices
	// group where it runs without systemd, and under systemd allows every
	// device but them (gpuallow; docs/resources.md).
	var deny, allow []string
	for id := 0; id < spec.NodeGPUs; id++ {
		if !slices.Contains(spec.GPUs, id) {
			deny = append(deny, strconv.Itoa(id))
		} else {
			allow = append(allow, strconv.Itoa(id))
		}
	}
	if len(deny) > 0 {
		ps = append(ps, "HoraDenyGPUs="+strings.Join(deny, ","))
		if len(allow) > 0 {
			ps = append(ps, "HoraAllowGPUs="+strings.Join(allow, ","))
		}
	}
	if len(ps) == 0 {
		return "-"
	}
	return strings.Join(ps, ";")
}

// mixArg is shLaunch's MIX argument: "RTW,BEW,class" or "-" without [mix].
// Digits, commas and letters only: one safe shell word.
func (e *Executor) mixArg(spec nodes.LaunchSpec) string {
	m := e.cfg.Mix
	if m == nil {
		return "-"
	}
	class := "be"
	if m.RT != nil && m.RT(spec) {
		class = "rt"
	}
	rt, be := m.weights()
	return strconv.Itoa(rt) + "," + strconv.Itoa(be) + "," + class
}
