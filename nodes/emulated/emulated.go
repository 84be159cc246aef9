// Package emulated is an executor that runs no processes: each step "runs"
// for an emulated time inside horad, so that one machine can stand in for
// thousands of nodes in benchmarks and soak runs (executor = "emulated").
// Everything above the executor — store, Engine, controller, clients — is
// the real code; only the node side is pretended.
//
// A step runs for $HORA_EMULATED_RUNTIME seconds from its environment, else
// for its time limit, else for Config.DefaultRuntime; a runtime past the time
// limit ends TIMEOUT as the node-side limit would. SIGSTOP pauses the clock
// of a step, SIGCONT continues it, any other signal ends it with that signal.
//
// Steps outlive horad as real ones do: launches, ends and forgets are
// appended to a state file (one JSON object a line), so that after a
// restart Reattach reports what ended while horad was away and resumes the
// rest. The file is rewritten with only the live steps at open and whenever
// it has grown to several times their number.
package emulated

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"hora/nodes"
)

// Config of an emulated executor.
type Config struct {
	// StateFile keeps the steps across restarts; "" keeps them in memory.
	StateFile string
	// DefaultRuntime is the runtime of a step with neither
	// HORA_EMULATED_RUNTIME nor a time limit.
	DefaultRuntime time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// RuntimeEnv is the job environment variable that sets a step's runtime in
// seconds (sbatch --export=ALL,HORA_EMULATED_RUNTIME=2.5).
const RuntimeEnv = "HORA_EMULATED_RUNTIME"

type step struct {
	Key      nodes.StepKey `json:"key"`
	Node     string        `json:"node"`
	Start    time.Time     `json:"start"`
	Runtime  time.Duration `json:"runtime"`  // emulated work, excluding stopped time
	Limit    time.Duration `json:"limit"`    // 0 = none
	Stopped  time.Duration `json:"stopped"`  // time spent stopped so far
	StopAt   time.Time     `json:"stop_at"`  // when stopped, else zero
	Ended    time.Time     `json:"ended"`    // zero while running
	Signal   int           `json:"signal"`   // terminating signal
	TimedOut bool          `json:"timedout"` // ended by its limit

	timer *time.Timer
}

type record struct {
	Op   string  `json:"op"` // "L" launch or update, "F" forget
	Step *step   `json:"step,omitempty"`
	Key  *stepID `json:"key,omitempty"`
}

type stepID struct {
	Node string        `json:"node"`
	Key  nodes.StepKey `json:"key"`
}

// Executor is the emulated nodes.Executor.
type Executor struct {
	cfg   Config
	mu    sync.Mutex
	steps map[stepID]*step
	file  *os.File
	w     *bufio.Writer
	lines int
	exits chan nodes.Status
	queue []nodes.Status
	wake  chan struct{}
	done  chan struct{}
	wg    sync.WaitGroup
}

var _ nodes.Executor = (*Executor)(nil)
var _ nodes.LimitSetter = (*Executor)(nil)

// exitsBuffer lets the statuses of steps that end together wait in Exits,
// so that horad takes them in one batch (one commit, one scheduling pass)
// rather than one at a time as the delivering goroutine gets the CPU.
const exitsBuffer = 1024

// New opens (or creates) the state file and returns the executor. Steps
// found there do not run until Reattach names their nodes.
func New(cfg Config) (*Executor, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.DefaultRuntime <= 0 {
		cfg.DefaultRuntime = time.Second
	}
	e := &Executor{cfg: cfg, steps: map[stepID]*step{}, exits: make(chan nodes.Status, exitsBuffer),
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	if cfg.StateFile != "" {
		if err := e.load(); err != nil {
			return nil, err
		}
		if err := e.compact(); err != nil {
			return nil, err
		}
	}
	e.wg.Add(1)
	go e.deliver()
	return e, nil
}

func (e *Executor) load() error {
	f, err := os.Open(e.cfg.StateFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			// The last line may be cut short by a crash mid-write; any
			// other bad line is corruption worth stopping for.
			if !sc.Scan() {
				break
			}
			return fmt.Errorf("%s:%d: %v", e.cfg.StateFile, line, err)
		}
		switch {
		case r.Op == "L" && r.Step != nil:
			e.steps[stepID{r.Step.Node, r.Step.Key}] = r.Step
		case r.Op == "F" && r.Key != nil:
			delete(e.steps, *r.Key)
		default:
			return fmt.Errorf("%s:%d: unknown record %q", e.cfg.StateFile, line, sc.Text())
		}
	}
	return sc.Err()
}

// compact rewrites the state file with only the live steps, atomically.
func (e *Executor) compact() error {
	if e.file != nil {
		e.w.Flush()
		e.file.Close()
	}
	tmp := e.cfg.StateFile + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, s := range e.steps {
		b, _ := json.Marshal(record{Op: "L", Step: s})
		w.Write(append(b, '\n'))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	f.Close()
	if err := os.Rename(tmp, e.cfg.StateFile); err != nil {
		return err
	}
	e.file, err = os.OpenFile(e.cfg.StateFile, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	e.w = bufio.NewWriter(e.file)
	e.lines = len(e.steps)
	return nil
}

// persist appends a record; called with e.mu held. The write reaches the
// kernel before the caller returns (no fsync: the file must survive horad's
// death, not the machine's, as a node's processes would not either).
func (e *Executor) persist(r record) {
	if e.w == nil {
		return
	}
	b, _ := json.Marshal(r)
	e.w.Write(append(b, '\n'))
	e.w.Flush()
	e.lines++
	if e.lines > 4*len(e.steps)+100_000 {
		_ = e.compact()
	}
}

func runtimeOf(spec nodes.LaunchSpec, def time.Duration) time.Duration {
	for i := len(spec.Env) - 1; i >= 0; i-- {
		if v, ok := cutPrefix(spec.Env[i], RuntimeEnv+"="); ok {
			if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
				return time.Duration(s * float64(time.Second))
			}
		}
	}
	if spec.TimeLimit > 0 {
		return spec.TimeLimit
	}
	return def
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return "", false
}

// Launch starts the step's emulated clock.
func (e *Executor) Launch(ctx context.Context, spec nodes.LaunchSpec) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	id := stepID{spec.Node, spec.Key}
	if s, ok := e.steps[id]; ok && s.Ended.IsZero() {
		return fmt.Errorf("emulated %s: step %+v is already running", spec.Node, spec.Key)
	}
	s := &step{Key: spec.Key, Node: spec.Node, Start: e.cfg.Now(), Runtime: runtimeOf(spec, e.cfg.DefaultRuntime), Limit: spec.TimeLimit}
	e.steps[id] = s
	e.persist(record{Op: "L", Step: s})
	e.arm(s)
	return nil
}

// arm sets the step's timer to its end: the sooner of its runtime and its
// limit, counted in running (not stopped) time. Called with e.mu held.
func (e *Executor) arm(s *step) {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if !s.Ended.IsZero() || !s.StopAt.IsZero() {
		return
	}
	end, timedOut := s.Runtime, false
	if s.Limit > 0 && s.Limit < end {
		end, timedOut = s.Limit, true
	}
	left := end - (e.cfg.Now().Sub(s.Start) - s.Stopped)
	s.timer = time.AfterFunc(max(left, 0), func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if s.Ended.IsZero() && s.StopAt.IsZero() {
			e.endLocked(s, 0, timedOut)
		}
	})
}

// endLocked ends a step and queues its status. Called with e.mu held.
func (e *Executor) endLocked(s *step, sig int, timedOut bool) {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.Ended, s.Signal, s.TimedOut = e.cfg.Now(), sig, timedOut
	if timedOut {
		s.Signal = int(syscall.SIGTERM)
	}
	e.persist(record{Op: "L", Step: s})
	e.queue = append(e.queue, e.status(s))
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *Executor) status(s *step) nodes.Status {
	st := nodes.Status{Key: s.Key, Node: s.Node, State: nodes.StepRunning, Started: s.Start, Pid: 1}
	if !s.Ended.IsZero() {
		st.State, st.Ended, st.Signal, st.TimedOut = nodes.StepExited, s.Ended, s.Signal, s.TimedOut
	}
	return st
}

// deliver hands queued statuses to Exits in order without ever blocking a
// timer or a caller on a slow reader.
func (e *Executor) deliver() {
	defer e.wg.Done()
	for {
		e.mu.Lock()
		var next *nodes.Status
		if len(e.queue) > 0 {
			st := e.queue[0]
			next = &st
		}
		e.mu.Unlock()
		if next == nil {
			select {
			case <-e.wake:
				continue
			case <-e.done:
				return
			}
		}
		select {
		case e.exits <- *next:
			e.mu.Lock()
			e.queue = e.queue[1:]
			e.mu.Unlock()
		case <-e.done:
			return
		}
	}
}

func (e *Executor) find(node string, key nodes.StepKey) (*step, error) {
	s, ok := e.steps[stepID{node, key}]
	if !ok {
		return nil, fmt.Errorf("emulated %s: no step %+v", node, key)
	}
	return s, nil
}

// Signal: STOP pauses the step's clock, CONT continues it, any other
// signal ends it as killed by that signal.
func (e *Executor) Signal(ctx context.Context, node string, key nodes.StepKey, sig nodes.Signum) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, err := e.find(node, key)
	if err != nil || !s.Ended.IsZero() {
		return err
	}
	now := e.cfg.Now()
	switch syscall.Signal(sig) {
	case syscall.SIGSTOP, syscall.SIGTSTP:
		if s.StopAt.IsZero() {
			s.StopAt = now
		}
	case syscall.SIGCONT:
		if !s.StopAt.IsZero() {
			s.Stopped += now.Sub(s.StopAt)
			s.StopAt = time.Time{}
		}
	default:
		e.endLocked(s, int(sig), false)
		return nil
	}
	e.persist(record{Op: "L", Step: s})
	e.arm(s)
	return nil
}

// Terminate ends the step at once, as TERM ends a process that does not
// trap it.
func (e *Executor) Terminate(ctx context.Context, node string, key nodes.StepKey, grace time.Duration) error {
	return e.Signal(ctx, node, key, nodes.Signum(syscall.SIGTERM))
}

// SetTimeLimit moves a running step's limit.
func (e *Executor) SetTimeLimit(ctx context.Context, node string, key nodes.StepKey, limit time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, err := e.find(node, key)
	if err != nil || !s.Ended.IsZero() {
		return err
	}
	s.Limit = limit
	e.persist(record{Op: "L", Step: s})
	e.arm(s)
	return nil
}

// Reattach lists every step known on the given nodes and resumes the clocks
// of the running ones; steps whose end passed while horad was away are
// reported ended at that instant.
func (e *Executor) Reattach(ctx context.Context, names []string) ([]nodes.Status, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []nodes.Status
	for _, s := range e.steps {
		if !want[s.Node] {
			continue
		}
		if s.Ended.IsZero() && s.StopAt.IsZero() {
			end, timedOut := s.Runtime, false
			if s.Limit > 0 && s.Limit < end {
				end, timedOut = s.Limit, true
			}
			if at := s.Start.Add(s.Stopped + end); !at.After(e.cfg.Now()) {
				s.Ended, s.TimedOut = at, timedOut
				if timedOut {
					s.Signal = int(syscall.SIGTERM)
				}
				e.persist(record{Op: "L", Step: s})
			} else {
				e.arm(s)
			}
		}
		out = append(out, e.status(s))
	}
	return out, nil
}

// Forget drops an ended step.
func (e *Executor) Forget(ctx context.Context, node string, key nodes.StepKey) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	id := stepID{node, key}
	if s, ok := e.steps[id]; ok {
		if s.timer != nil {
			s.timer.Stop()
		}
		delete(e.steps, id)
		e.persist(record{Op: "F", Key: &id})
	}
	return nil
}

// Exits delivers one Status per step that ends.
func (e *Executor) Exits() <-chan nodes.Status { return e.exits }

// Close stops the clocks' delivery; the state file keeps the steps.
func (e *Executor) Close() error {
	e.mu.Lock()
	for _, s := range e.steps {
		if s.timer != nil {
			s.timer.Stop()
		}
	}
	e.mu.Unlock()
	close(e.done)
	e.wg.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.file != nil {
		e.w.Flush()
		return e.file.Close()
	}
	return nil
}
