// Package controller is horad's core: it owns the socket server, the durable
// store, the scheduling Engine and the node executor, and is the live driver
// of the Engine (replay is the other one, DESIGN.md §3).
//
// Ordering rules, which make "nothing acknowledged is ever lost" true:
//   - an event is committed to the store before the client hears of it and
//     before any action that follows from it runs on a node;
//   - the Engine and the in-memory jobs are touched only under c.mu, so the
//     Engine sees one totally ordered stream of events;
//   - node operations (launch, signal) run on one dispatcher goroutine in the
//     order the Engine decided them, outside c.mu, so a slow node never
//     blocks a client.
package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"hora/api"
	"hora/config"
	"hora/nodes"
	"hora/sbatch"
	"hora/scheduler"
	"hora/store"
)

// Version is set at build time (-ldflags -X hora/controller.Version=...).
var Version = "0.1.0-dev"

// Controller is a running horad.
type Controller struct {
	cfg *config.Config
	// limits is cfg.Limits for the socket server's goroutines, which
	// read it without mu (connlimit.go); rate holds the per-uid buckets.
	limits atomic.Pointer[config.Limits]
	rate   rateLimiter
	log    *slog.Logger
	st     *store.Store
	exec   nodes.Executor
	now    func() time.Time
	euid   uint32
	nodes  []config.Node

	mu     sync.Mutex
	eng    *scheduler.Engine
	jobs   map[int64]*job // active jobs and finished ones younger than MinJobAge
	order  []*job         // the jobs, by id ascending (listings walk this, not the map)
	nextID int64
	// recording counts the held submissions admitted and waiting outside mu
	// for their commit (submitHeldLocked), in all and by user: the limits
	// count them, though they are not in jobs yet.
	recording   int
	recordingOf map[uint32]int
	operators   map[uint32]bool
	admin       map[string]*nodeAdmin       // drained or down nodes (nodeadmin.go)
	resvs       map[string]*api.Reservation // advance reservations by name (reservations.go)
	arrays      map[int64]*arrayInfo        // job arrays by id (arrays.go)
	timeWatch   map[int64]*job              // running jobs with time limit warnings to mail (mail.go)
	// lastBusy is when each node last ran a job among the jobs already
	// forgotten (pruneLocked); the jobs still in memory say the rest.
	lastBusy map[string]int64
	// recovering is set while recover rebuilds the Engine: no scheduling
	// pass may run before every running job holds its nodes again.
	recovering bool
	// recovered is closed once Recover has rebuilt the state. Until then
	// the socket answers job listings from the store and holds every other
	// request (docs/recovery.md, "Listings during recovery").
	recovered       chan struct{}
	heldForRecovery atomic.Int32 // requests waiting for Recover (untilRecovered)

	work        *workQueue
	forgets     *workQueue            // Forgets of ended steps, apart from work (see forgetStep)
	stageQ      map[string]*workQueue // dlt partition → its staging channel (staging.go)
	wake        chan struct{}         // poke the tick loop after the Engine's wakeup time may have moved
	booted      time.Time             // when this horad started (scontrol show config BOOT_TIME)
	heartbeat   func()
	reconfigure func(context.Context) (string, error)
	// stepSecret signs the step keys of jobs on nodes that reach horad
	// through a callback socket (callbacks.go); nil without one.
	stepSecret []byte

	// Run's context and goroutines, for staging queues a reload adds.
	runCtx context.Context
	runWG  *sync.WaitGroup
	// For Stats (reload.go): the last scheduling pass of the tick loop.
	lastPass     time.Time
	lastPassTook time.Duration
	lastReload   time.Time
	started      time.Time
	// pruneLocked's next scan: when the oldest finished job comes of age
	// under pruneAge (a reload may change min_job_age_s).
	nextPrune int64
	pruneAge  int64
	// endsUnsettled counts the batched ends applied to memory whose commit
	// has not succeeded yet (in flight, or refused and being retried). No
	// start is recorded while it is above zero: the Engine may already
	// have given a start the CPUs such an end freed, and the record must
	// never show them held twice (awaitEndsSettled).
	endsUnsettled pendingCount
}

// job is the in-memory projection of one job plus what only the live
// controller needs.
type job struct {
	api.Job
	cancelRequested  bool
	startRecorded    bool // the current run's start is in the store (its step may still be launching)
	launching        bool // the current run's batch step is being launched: Launch has not returned
	launched         bool
	chunks           map[int]string  // running chunks of a divisible job: step → node
	transfer         map[int]float64 // staged chunks: step → measured transfer seconds
	overrun          map[int]bool    // chunks the policy killed for overrunning (end TIMEOUT)
	nodeFailed       bool            // a node of the job went down: its end is a node failure
	requeueRequested bool            // scontrol requeue: its end puts it back to PENDING
	requeueHold      string          // scontrol requeuehold: the hold reason it comes back with

	// dep is the job's dependency as the Engine has it, depShown the
	// user's terms aligned with it and depSep their separator (arrays.go).
	dep      *scheduler.Dependency
	depShown []sbatch.DepTerm
	depSep   string
	// legacyRun: the current run's steps were launched by a horad that did
	// not number runs (nodes.LegacyRun); they are addressed without a run.
	legacyRun bool
	srun      map[int]*srunStep // running srun steps (steps.go)
	allocDone *api.AllocDone    // salloc/srun released the allocation with this exit

	timeWarned uint8 // time limit warnings sent in this run, bit i = timeWarnings[i] (mail.go)
}

// runOf is the Run of the job's current steps: its restart count, so that
// each run of a requeued job is its own step on the node and nothing of an
// earlier run (its end, its Forget, its status) can touch the current one.
func runOf(j *job) int {
	if j.legacyRun {
		return nodes.LegacyRun
	}
	return j.Restarts
}

// stepKey names a step of the job's current run. Every path that acts on a
// node names its step through it.
func stepKey(j *job, step int) nodes.StepKey {
	return nodes.StepKey{Job: j.ID, Step: step, Run: runOf(j)}
}

// currentRunLocked says whether a step's status is of its job's current
// run, the only one horad acts on: a batch step of a job that runs, or a
// chunk of its divisible job's run. Anything else (an earlier run of a
// requeued job, a job that has ended or is unknown) is forgotten unread.
func (c *Controller) currentRunLocked(j *job, s nodes.Status) bool {
	if j == nil || s.Key.Run != runOf(j) {
		return false
	}
	if s.Key.Step >= 0 {
		return true // chunkEndLocked judges a chunk of an ended job
	}
	return j.State == api.StateRunning || j.State == api.StateSuspended
}

// Options configures New.
type Options struct {
	Config   *config.Config
	Logger   *slog.Logger
	Store    *store.Store
	Executor nodes.Executor
	Now      func() time.Time // nil = time.Now
	// Heartbeat is called from the scheduling loop at least once a second;
	// horad pings systemd's watchdog from it, so a wedged loop is detected.
	Heartbeat func()
	// Reconfigure re-reads the configuration file as SIGHUP does and says
	// which file, or why it was refused (scontrol reconfigure); nil: the
	// request is refused.
	Reconfigure func(ctx context.Context) (string, error)
}

// New builds a controller and recovers its state from the store and the
// nodes: pending jobs are queued again, running jobs re-attached, and jobs
// that ended while horad was down are recorded with their real exit status.
func New(ctx context.Context, o Options) (*Controller, error) {
	c, err := Open(ctx, o)
	if err != nil {
		return nil, err
	}
	if err := c.Recover(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// newEngine is the Engine horad runs on a configuration, at start and at
// every reload alike.
func newEngine(cfg *config.Config) (*scheduler.Engine, error) {
	eng, err := scheduler.New(cfg.Scheduler())
	if err != nil {
		return nil, err
	}
	// Dependencies may name any job horad still remembers: without this a
	// target that ended unwatched counts as purged, and satisfied.
	eng.KeepOutcomes()
	return eng, nil
}

// Open builds a controller without recovering its state: its Server may
// serve at once (job listings from the store, everything else held) while
// Recover runs. horad under socket activation does this, so that the
// client whose connection started it is answered before recovery ends.
func Open(ctx context.Context, o Options) (*Controller, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	eng, err := newEngine(o.Config)
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	c := &Controller{
		cfg: o.Config, log: o.Logger, st: o.Store, exec: o.Executor, now: o.Now,
		euid: uint32(os.Geteuid()), nodes: o.Config.ExpandedNodes(),
		eng: eng, jobs: map[int64]*job{}, operators: map[uint32]bool{0: true},
		admin: map[string]*nodeAdmin{}, resvs: map[string]*api.Reservation{}, arrays: map[int64]*arrayInfo{}, timeWatch: map[int64]*job{}, lastBusy: map[string]int64{},
		work: newWorkQueue(), forgets: newWorkQueue(), wake: make(chan struct{}, 1),
		heartbeat: o.Heartbeat, reconfigure: o.Reconfigure, stageQ: map[string]*workQueue{}, booted: o.Now(), started: o.Now(),
		recordingOf: map[uint32]int{}, recovered: make(chan struct{}),
	}
	c.setLimits(o.Config.Limits)
	for _, p := range o.Config.Partitions {
		if p.Policy == "dlt" {
			c.stageQ[p.Name] = newWorkQueue()
		}
	}
	for _, op := range o.Config.Operators {
		if uid, ok := lookupUID(op); ok {
			c.operators[uid] = true
		} else {
			return nil, fmt.Errorf("config: operators: unknown user %q", op)
		}
	}
	if err := c.loadStepSecret(); err != nil {
		return nil, err
	}
	return c, nil
}

// Recover rebuilds the state from the store and the nodes (New's second
// half, after Open); then every request is served. It runs once.
func (c *Controller) Recover(ctx context.Context) error {
	if err := c.recover(ctx); err != nil {
		return fmt.Errorf("recovery: %w", err)
	}
	close(c.recovered)
	return nil
}

// isRecovered says whether Recover has finished.
func (c *Controller) isRecovered() bool {
	select {
	case <-c.recovered:
		return true
	default:
		return false
	}
}

func (c *Controller) nowSec() float64 { return float64(c.now().UnixNano()) / 1e9 }

// Run serves until ctx is cancelled. It returns after the dispatcher has
// drained; running jobs keep running (their shepherds outlive horad).
func (c *Controller) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	var nodeEvents <-chan nodes.NodeEvent // nil (never ready) without a HealthReporter
	if hr, ok := c.exec.(nodes.HealthReporter); ok {
		nodeEvents = hr.NodeEvents()
	}
	c.serveCallbacks(ctx)
	wg.Add(4)
	go func() { defer wg.Done(); c.dispatch(ctx) }()
	go func() {
		defer wg.Done()
		for f, ok := c.forgets.pop(); ok; f, ok = c.forgets.pop() {
			f(ctx)
		}
	}()
	go func() { defer wg.Done(); c.watchExits(ctx, nodeEvents) }()
	go func() { defer wg.Done(); c.tickLoop(ctx) }()
	c.mu.Lock()
	c.runCtx, c.runWG = ctx, &wg
	for _, q := range c.stageQ {
		c.startStageQueue(q)
	}
	c.mu.Unlock()
	<-ctx.Done()
	c.work.close()
	c.forgets.close()
	c.mu.Lock()
	for _, q := range c.stageQ {
		q.close()
	}
	c.mu.Unlock()
	wg.Wait()
	return nil
}

// startStageQueue runs a partition's staging channel until Run ends.
// Caller holds c.mu; before Run the queue is started by Run itself.
func (c *Controller) startStageQueue(q *workQueue) {
	if c.runCtx == nil || c.runCtx.Err() != nil {
		return
	}
	ctx := c.runCtx
	c.runWG.Add(1)
	go func() {
		defer c.runWG.Done()
		for f, ok := q.pop(); ok; f, ok = q.pop() {
			f(ctx)
		}
	}()
}

// recover rebuilds the Engine from the store and reconciles with the nodes.
func (c *Controller) recover(ctx context.Context) error {
	c.recovering = true
	defer func() { c.recovering = false }()
	// Recovery allocates the whole active set at once and almost all of it
	// stays live: the collector, paced by GOGC=100, marked the growing heap
	// again at every doubling for nothing. A looser target while recovering
	// cost ≈ 2 % more peak memory and saved ≈ 20 % of horad's start-up CPU
	// with 100,000 jobs (docs/benchmarks.md); an admin's own GOGC above it,
	// or off, is left alone.
	if old := debug.SetGCPercent(recoveryGCPercent); old < 0 || old > recoveryGCPercent {
		debug.SetGCPercent(old)
	} else {
		defer debug.SetGCPercent(old)
	}
	if err := c.loadNodeAdmin(ctx); err != nil {
		return err
	}
	if err := c.recoverReservations(ctx); err != nil {
		return fmt.Errorf("reservations: %w", err)
	}
	// Only jobs still active, or ended recently enough to show in
	// squeue -t all, are loaded: a long history stays on disk for sacct.
	all, err := c.st.Jobs(ctx, store.Filter{Since: c.now().Unix() - int64(c.cfg.MinJobAgeS)})
	if err != nil {
		return err
	}
	if len(c.jobs) == 0 {
		// Sized at once: growing a map to 100,000 jobs rehashed it a dozen times.
		c.jobs = make(map[int64]*job, len(all))
		c.order = make([]*job, 0, len(all))
	}
	next, err := c.st.GetMeta(ctx, "next_job_id")
	if err != nil {
		return err
	}
	if c.nextID, err = strconv.ParseInt(next, 10, 64); err != nil {
		return fmt.Errorf("next job id %q: %w", next, err)
	}
	if c.nextID < c.cfg.FirstJobID {
		// first_job_id (Slurm's FirstJobId): ids start there, or move up to it.
		if err := c.st.SetMeta(ctx, "next_job_id", strconv.FormatInt(c.cfg.FirstJobID, 10)); err != nil {
			return fmt.Errorf("first_job_id: %w", err)
		}
		c.nextID = c.cfg.FirstJobID
	}
	names := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		names[i] = n.Name
	}
	steps, err := c.exec.Reattach(ctx, names)
	if err != nil {
		return fmt.Errorf("reattach: %w", err)
	}
	var suspended []int64 // running jobs restored suspended
	// What the Engine answers a restore (an End for a job whose
	// dependency can no longer be satisfied, with --kill-on-invalid-dep)
	// is carried out once every job is restored.
	var restoreActs []scheduler.Action
	var pending []*job // restored after the loop, once every job is known (dependencies)
	onNode := map[nodes.StepKey]nodes.Status{}
	for _, s := range steps {
		onNode[s.Key] = s
	}
	now := c.nowSec()
	minAge := int64(c.cfg.MinJobAgeS)
	for i := range all {
		aj := &all[i] // not a copy: a job is 1 KB, and there may be 100,000
		j := &job{Job: *aj}
		key := stepKey(j, scheduler.BatchStep)
		if aj.State == api.StateRunning || aj.State == api.StateSuspended {
			if err := c.recoverRunMarks(ctx, j); err != nil {
				return err
			}
			c.recoverLegacyRun(j, onNode)
			key = stepKey(j, scheduler.BatchStep)
		}
		switch {
		case aj.State.Finished():
			if aj.EndTime >= c.now().Unix()-minAge {
				c.addJob(j)
			}
			continue // its steps are forgotten below
		case (aj.State == api.StateRunning || aj.State == api.StateSuspended) && aj.Spec.Load > 0 && c.isDLT(aj.Spec.Partition):
			acts, err := c.recoverDivisible(ctx, j, onNode, now)
			if err != nil {
				return err
			}
			restoreActs = append(restoreActs, acts...)
			continue
		case aj.State == api.StateRunning || aj.State == api.StateSuspended:
			s, ok := onNode[key]
			switch {
			case ok && s.State == nodes.StepRunning:
				j.launched, j.startRecorded = true, true
				c.addJob(j)
				// Time spent suspended does not count toward the limit: the
				// Engine's expected end is start + suspended time + limit.
				started := float64(aj.StartTime + aj.SuspendedSecs)
				if aj.State == api.StateSuspended {
					started += max(0, now-float64(aj.SuspendTime))
				}
				restoreActs = append(restoreActs, c.eng.Handle(scheduler.Restore{Now: now, Job: c.schedJob(j), Running: true,
					Nodes: aj.Nodes, Started: started, Alloc: schedAlloc(aj.Alloc)})...)
				if aj.State == api.StateSuspended {
					suspended = append(suspended, aj.ID)
				}
				c.log.Info("re-attached running job", "job", aj.ID, "node", s.Node)
				if aj.State == api.StateSuspended && !j.requeueRequested && !j.nodeFailed {
					// A suspension acknowledged during the launch may not have
					// reached the step before the crash; STOP again is harmless.
					c.signalStepsLocked(j, signum("STOP"), false)
				}
				c.restopMarked(j)
				c.watchTimeLocked(j)
				c.rearmSrunSteps(j)
				if err := c.endOrphanedRemoteSteps(ctx, j); err != nil {
					return err
				}
				continue
			case ok && !(s.State == nodes.StepLost && s.Pid == 0):
				// Ended while horad was away: record the real outcome.
				c.addJob(j)
				j.launched = true
				c.mu.Lock()
				err := c.finishLocked(ctx, j, s)
				c.mu.Unlock()
				if err != nil {
					return err
				}
				continue // ended or requeued: its step is forgotten below
			case aj.CancelledBy >= 0:
				// Cancelled before the launch ever happened: it ends cancelled.
				c.addJob(j)
				end := c.now().Unix()
				if err := c.st.Append(ctx, store.Event{JobID: aj.ID, Time: end, Kind: store.KindEnd,
					State: api.StateCancelled, Reason: "None"}); err != nil {
					return err
				}
				j.State, j.EndTime = api.StateCancelled, end
				continue
			default:
				// The start was recorded but the job's process never started
				// (horad died before or during the launch): it never ran, so it
				// goes back to the queue (and its step, if any, is forgotten below).
				if err := c.st.Append(ctx, store.Event{JobID: aj.ID, Time: c.now().Unix(), Kind: store.KindRequeue}); err != nil {
					return err
				}
				j.State, j.Nodes, j.StartTime, j.EndTime, j.Reason = api.StatePending, nil, 0, 0, "None"
				j.ExitCode, j.Signal, j.Steps, j.CancelledBy, j.Alloc = 0, 0, nil, -1, nil
				j.StdoutPath, j.StderrPath = "", ""
				j.Restarts++
				j.legacyRun = false
				c.log.Warn("job was started but never launched; requeued", "job", aj.ID)
			}
		}
		c.addJob(j)
		pending = append(pending, j)
	}
	// Dependencies: first what the Engine must know of finished jobs, then
	// the pending jobs, each after the pending jobs it waits on.
	for _, j := range c.order {
		if j.State.Finished() {
			c.eng.Handle(endedEvent(now, j))
		}
	}
	for _, j := range pending {
		if err := c.prepareDepLocked(j); err != nil {
			c.log.Warn("dependency no longer readable; dropped", "job", j.ID, "dependency", j.Spec.Dependency)
		}
	}
	for _, j := range pendingRestoreOrder(pending) {
		restoreActs = append(restoreActs, c.eng.Handle(scheduler.Restore{Now: now, Job: c.schedJob(j)})...)
	}
	// Ended steps are forgotten unless horad still waits for them (the
	// batch step or a running chunk of an active job's current run): left
	// over after a crash between recording an end and forgetting it, ended
	// while horad was away (recorded above), or of an earlier run of a
	// requeued job. A step still running is left to end: its end comes
	// through Exits and is forgotten then.
	for k, s := range onNode {
		j := c.jobs[k.Job]
		waited := j != nil && !j.State.Finished() && c.currentRunLocked(j, s) &&
			(k.Step < 0 || j.chunks[k.Step] != "")
		if s.State != nodes.StepRunning && !waited {
			c.forgetStep(s.Node, k)
		}
	}
	c.cleanStaged() // before the first pass: no new transfer is queued yet
	// The first pass after recovery may start pending jobs. Suspended jobs
	// are told to the Engine only now: each event runs a pass, which must
	// see every restored job.
	c.mu.Lock()
	c.applyLocked(ctx, restoreActs)
	for _, id := range suspended {
		c.applyLocked(ctx, c.eng.Handle(scheduler.Suspend{Now: now, ID: scheduler.JobID(id)}))
	}
	c.applyLocked(ctx, c.eng.Handle(scheduler.Tick{Now: now}))
	c.mu.Unlock()
	return nil
}

// recoveryGCPercent is GOGC while recover runs.
const recoveryGCPercent = 400

// recoverLegacyRun takes the steps of a running job that a horad without
// run numbers left (nodes.LegacyRun) as the job's current run, the upgrade
// path: that horad gave every run the same name, so an unnumbered step of
// a running job is the run it last started. A numbered step of the
// current run wins.
func (c *Controller) recoverLegacyRun(j *job, onNode map[nodes.StepKey]nodes.Status) {
	steps := []int{scheduler.BatchStep}
	for _, st := range j.Steps {
		steps = append(steps, st.Index)
	}
	legacy := false
	for _, step := range steps {
		if _, ok := onNode[nodes.StepKey{Job: j.ID, Step: step, Run: j.Restarts}]; ok {
			return
		}
		if _, ok := onNode[nodes.StepKey{Job: j.ID, Step: step, Run: nodes.LegacyRun}]; ok {
			legacy = true
		}
	}
	if legacy {
		j.legacyRun = true
		c.log.Info("re-attaching a run launched by a horad without run numbers", "job", j.ID)
	}
}

func (c *Controller) addJob(j *job) {
	c.noteArrayLocked(j)
	// New ids are the highest almost always (submissions; recovery reads
	// in id order): the search is for the rest.
	i := len(c.order)
	if i > 0 && c.order[i-1].ID >= j.ID {
		i = sort.Search(len(c.order), func(i int) bool { return c.order[i].ID >= j.ID })
	}
	c.jobs[j.ID] = j
	if i < len(c.order) && c.order[i].ID == j.ID {
		c.order[i] = j // the job replaced by a new record of itself
		return
	}
	c.order = slices.Insert(c.order, i, j)
}

// schedJob converts a job to the Engine's view.
func (c *Controller) schedJob(j *job) scheduler.Job {
	limit := scheduler.Inf
	switch {
	case j.Spec.TimeLimit > 0:
		limit = float64(j.Spec.TimeLimit)
	case j.Spec.TimeLimit == 0:
		limit = 0 // the Engine applies the partition default
	}
	n := j.Spec.Nodes
	if n < 1 {
		n = 1
	}
	// A spec that cannot be read was refused at submit (checkSpec): a
	// stored one always reads.
	req, _ := requestOf(&j.Spec)
	var per *scheduler.Periodic
	if j.Spec.RTFrame != 0 || len(j.Spec.RTWork) > 0 {
		// A periodic job's processes hold an RT share of their nodes
		// (docs/mix.md), not CPUs of the consumable account.
		per = &scheduler.Periodic{Frame: j.Spec.RTFrame, Buffer: j.Spec.RTBuffer, Work: j.Spec.RTWork}
		req = nil
	}
	sj := scheduler.Job{
		ID: scheduler.JobID(j.ID), Partition: j.Spec.Partition, User: j.UID, Nodes: n,
		TimeLimit: limit, Submit: float64(j.SubmitTime), Begin: float64(j.Spec.Begin),
		Deadline: float64(j.Spec.Deadline), Load: j.Spec.Load, Held: j.Reason == "JobHeldUser" || j.Reason == "JobHeldAdmin",
		Reservation: j.Spec.Reservation, Req: req, Periodic: per, Name: j.Spec.Name,
		Array: scheduler.JobID(j.ArrayJobID), ArrayLimit: c.arrayThrottle(j.ArrayJobID),
		Dep: j.dep, KillOnInvalidDep: c.killOnInvalidDep(&j.Spec), Priority: j.Priority,
	}
	if sj.Priority == 0 {
		sj.Priority = basePriority(j.ID) // a job stored before priorities were
	}
	if j.Spec.Signal != "" { // parsing "" made an error value per job at recovery
		if sp, ok := sbatch.ParseSignalSpec(j.Spec.Signal); ok {
			sj.Signal, sj.SignalBefore = strconv.Itoa(sp.Num), float64(sp.Before)
		}
	}
	return sj
}

func (c *Controller) arrayThrottle(array int64) int {
	if a := c.arrays[array]; a != nil && array != 0 {
		return a.throttle
	}
	return 0
}

// applyLocked carries out the Engine's actions. State changes that need no
// node are recorded here, under c.mu; node work is queued for the dispatcher
// in the Engine's order.
func (c *Controller) applyLocked(ctx context.Context, acts []scheduler.Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case scheduler.Start:
			j := c.jobs[int64(a.ID)]
			if j == nil {
				c.log.Error("engine started an unknown job", "job", a.ID)
				continue
			}
			if a.Step != scheduler.BatchStep {
				c.startChunkLocked(j, a)
				continue
			}
			j.State, j.Nodes, j.StartTime, j.Reason = api.StateRunning, a.Nodes, c.now().Unix(), "None"
			j.Alloc = apiAlloc(a.Alloc)
			j.StdoutPath, j.StderrPath = outputPaths(&j.Job)
			spec := c.launchSpec(j, scheduler.BatchStep, a.Nodes[0])
			ev := store.Event{JobID: j.ID, Time: j.StartTime, Kind: store.KindStart, Nodes: a.Nodes,
				Alloc: j.Alloc, StdoutPath: j.StdoutPath, StderrPath: j.StderrPath}
			c.pushLaunch(spec, ev)
			c.mailLocked(j, mailBegin)
			c.watchTimeLocked(j)
		case scheduler.End:
			j := c.jobs[int64(a.ID)]
			if j == nil || j.State.Finished() {
				continue
			}
			st, _ := api.ParseState(a.State)
			now := c.now().Unix()
			ev := store.Event{JobID: j.ID, Time: now, Kind: store.KindEnd, State: st, Reason: a.Reason, ExitCode: 1}
			if err := c.st.Append(ctx, ev); err != nil {
				// The Engine has let the job go: the end is tried again
				// (a full disk), as a step's end is. Until it is durable
				// it counts among the unsettled ends, so that no start on
				// what it freed is recorded before it (awaitEndsSettled):
				// the fault harness's two-hour local run found a CPU
				// recorded as given to a job while the end of the job
				// holding it was still being retried.
				c.log.Error("recording end; trying again in a second", "job", j.ID, "err", err)
				c.endsUnsettled.add(1)
				go func() {
					select {
					case <-ctx.Done():
					case <-time.After(time.Second):
						c.mu.Lock()
						c.applyLocked(ctx, []scheduler.Action{a}) // counts itself again if refused again
						c.mu.Unlock()
					}
					c.endsUnsettled.add(-1)
				}()
				continue
			}
			// The store keeps StartTime 0 for a job that never ran; memory agrees.
			j.State, j.Reason, j.ExitCode, j.EndTime = st, a.Reason, 1, now
			c.mailLocked(j, mailEnd)
			// A policy may end a running divisible job (an overrun that would
			// break an admitted deadline): its chunks are stopped.
			for step, node := range j.chunks {
				key := stepKey(j, step)
				c.work.push(func(ctx context.Context) { _ = c.exec.Terminate(ctx, node, key, c.killWait()) })
			}
		case scheduler.Signal:
			j := c.jobs[int64(a.ID)]
			if j == nil || len(j.Nodes) == 0 {
				continue
			}
			node, key, sig := j.Nodes[0], stepKey(j, a.Step), signum(a.Sig)
			if n, ok := j.chunks[a.Step]; ok {
				node = n
				if a.Sig == "KILL" {
					c.markOverrunLocked(j, a.Step)
				}
			}
			c.work.push(func(ctx context.Context) {
				if err := c.exec.Signal(ctx, node, key, sig); err != nil {
					c.log.Warn("signal", "job", key.Job, "err", err)
				}
			})
		case scheduler.Requeue:
			c.log.Warn("requeue is not supported by the local executor yet", "job", a.ID)
		case scheduler.Admit, scheduler.Reject:
			// answered by the submit handler
		}
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// launch records the start durably, then starts the step on its node.
func (c *Controller) launch(ctx context.Context, spec nodes.LaunchSpec, evs ...store.Event) {
	if !c.stillToLaunch(spec) {
		return
	}
	if err := c.st.Append(ctx, evs...); err != nil {
		c.startNotRecorded(ctx, spec, evs, err)
		return
	}
	c.launchRecorded(ctx, spec)
}

// startNotRecorded queues a launch whose start could not be recorded (a
// full disk) again a second later: the job is RUNNING in memory and holds
// its nodes, and dropping the launch left it so for ever with nothing
// running (found by the fault harness). stillToLaunch skips it if the job
// has left the run meanwhile.
func (c *Controller) startNotRecorded(ctx context.Context, spec nodes.LaunchSpec, evs []store.Event, err error) {
	c.log.Error("recording start; trying again in a second", "job", spec.Key.Job, "step", spec.Key.Step, "err", err)
	go func() {
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
			c.pushLaunch(spec, evs...)
		}
	}()
}

// stillToLaunch reports whether the job is still in the run spec launches:
// a run the job has left (requeued meanwhile) is not launched.
func (c *Controller) stillToLaunch(spec nodes.LaunchSpec) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stillToLaunchLocked(spec)
}

func (c *Controller) stillToLaunchLocked(spec nodes.LaunchSpec) bool {
	j := c.jobs[spec.Key.Job]
	return !(j == nil || j.State.Finished() || runOf(j) != spec.Key.Run)
}

// launchRecorded launches a step whose start is recorded.
func (c *Controller) launchRecorded(ctx context.Context, spec nodes.LaunchSpec) {
	if spec.Key.Step < 0 {
		c.mu.Lock()
		if j := c.jobs[spec.Key.Job]; j != nil && runOf(j) == spec.Key.Run {
			j.startRecorded = true
			if j.cancelRequested {
				// Cancelled between the Engine's start and its launch: the
				// scancel is acknowledged, so its script never starts. It
				// ends CANCELLED at once, as a job cancelled while Slurm
				// launches it.
				c.untilRecordedLocked(ctx, spec.Key, func(j *job) error {
					return c.finishLocked(ctx, j, nodes.Status{Key: spec.Key, Node: spec.Node, State: nodes.StepExited})
				})
				c.mu.Unlock()
				return
			}
			// A step reported lost until Launch returns waits for it
			// (handleExits).
			j.launching = true
		}
		c.mu.Unlock()
	}
	err := c.exec.Launch(ctx, spec)
	c.mu.Lock()
	defer c.mu.Unlock()
	j := c.jobs[spec.Key.Job]
	if j == nil || runOf(j) != spec.Key.Run {
		// The job left this run while it was being launched: whatever
		// started is stopped, and its end will be ignored and forgotten.
		if err == nil {
			c.work.push(func(ctx context.Context) { _ = c.exec.Terminate(ctx, spec.Node, spec.Key, 0) })
		}
		return
	}
	j.launched = err == nil
	if spec.Key.Step < 0 {
		j.launching = false
	}
	lostNode := j.nodeFailed
	if spec.Key.Step >= 0 {
		// A divisible job goes on after losing a node (the dlt policy
		// re-plans): only a chunk whose own node went down is stopped.
		a := c.admin[spec.Node]
		lostNode = a != nil && a.Down
	}
	if err == nil && (j.cancelRequested || lostNode || j.requeueRequested || j.allocDone != nil) {
		// cancelled, requeued, released or its node set DOWN between the
		// Engine's decision and the launch
		c.work.push(func(ctx context.Context) {
			_ = c.exec.Terminate(ctx, spec.Node, spec.Key, c.killWait())
		})
	}
	if err == nil && spec.Key.Step < 0 && j.State == api.StateSuspended {
		// suspended while being launched (suspend sent nothing then)
		c.signalStepsLocked(j, signum("STOP"), false)
	}
	if err != nil {
		c.log.Error("launch failed", "job", spec.Key.Job, "node", spec.Node, "err", err)
		c.untilRecordedLocked(ctx, spec.Key, func(j *job) error { return c.launchFailedLocked(ctx, j, spec, err) })
	}
}

// launchFailedLocked ends the run of a step whose launch failed. Launch
// errors are the node's (unreachable, state directory, shepherd); what the
// job's owner must fix (an output file) ends the step with Status.Err
// instead. Nothing of the job ran: NODE_FAIL.
func (c *Controller) launchFailedLocked(ctx context.Context, j *job, spec nodes.LaunchSpec, err error) error {
	st := nodes.Status{Key: spec.Key, Node: spec.Node, State: nodes.StepLost, ExitCode: 1, Err: err.Error()}
	if spec.Key.Step >= 0 {
		return c.chunkEndLocked(ctx, j, st)
	}
	if c.requeueable(j) && !j.requeueRequested && !j.cancelRequested && j.allocDone == nil {
		// As slurmctld: a batch job whose launch failed is requeued
		// and held ("launch failed requeued held"), since a launch
		// would most likely fail again at once; a user releases it.
		// Found by the fault harness: a full disk on the node (or a
		// link cut during the launch) ended requeue-able jobs NODE_FAIL.
		if j.requeueHold == "" {
			j.requeueHold = store.ReasonHeldUser
		}
		return c.requeueLocked(ctx, j, "launch failed: "+err.Error())
	}
	return c.finishLocked(ctx, j, st)
}

// untilRecordedLocked runs record, which decides how a step's run ended and
// records it before memory follows, and when the store refuses it (a full
// disk) runs it again a second later, and so on while the step's run is
// still the job's, until it is recorded or horad stops. A launch failure
// whose requeue the full disk refused left its job RUNNING for ever with
// nothing running (the fault harness). Caller holds c.mu.
func (c *Controller) untilRecordedLocked(ctx context.Context, key nodes.StepKey, record func(j *job) error) {
	j := c.jobs[key.Job]
	if j == nil {
		return
	}
	err := record(j)
	if err == nil || errors.Is(err, store.ErrClosed) || errors.Is(err, store.ErrInvalidEvent) || ctx.Err() != nil {
		return
	}
	c.log.Error("recording a step's end; trying again in a second", "job", key.Job, "step", key.Step, "err", err)
	c.inASecond(ctx, func() {
		j := c.jobs[key.Job]
		if j == nil || j.State.Finished() || runOf(j) != key.Run {
			return // ended or requeued meanwhile
		}
		if _, running := j.chunks[key.Step]; key.Step >= 0 && !running {
			return
		}
		c.untilRecordedLocked(ctx, key, record)
	})
}

// inASecond runs fn with c.mu held a second from now, unless horad stops
// first: how a write the store refused (a full disk) is tried again
// without holding anything up meanwhile.
func (c *Controller) inASecond(ctx context.Context, fn func()) {
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		fn()
	}()
}

// forgetStep removes an ended step's node-side state, on the forget queue:
// a Forget to a node that does not answer waits for the command timeout,
// and must hold back neither the exits behind it nor the launches on the
// work queue (a requeued job's relaunch). Its end is recorded already; a
// Forget lost to a shutdown is done by the next recovery.
func (c *Controller) forgetStep(node string, key nodes.StepKey) {
	c.forgets.push(func(ctx context.Context) {
		if err := c.exec.Forget(ctx, node, key); err != nil && ctx.Err() == nil {
			c.log.Warn("forgetting an ended step", "job", key.Job, "step", key.Step, "run", key.Run, "node", node, "err", err)
		}
	})
}

func (c *Controller) killWait() time.Duration { return time.Duration(c.cfg.KillWaitS) * time.Second }

// watchExits turns step exits into final job states and node health events
// into node states, in one goroutine so that their order holds: an executor
// sends a node's down event before it reports the node's steps lost, and a
// pending event is handled before any exit, so the Engine knows the node is
// down when it hears of the lost steps (dlt re-plans their data).
func (c *Controller) watchExits(ctx context.Context, nodeEvents <-chan nodes.NodeEvent) {
	drain := func() {
		for {
			select {
			case ev, ok := <-nodeEvents:
				if !ok {
					nodeEvents = nil
					return
				}
				c.nodeEvent(ctx, ev)
			default:
				return
			}
		}
	}
	exits := c.exec.Exits()
	batch := make([]nodes.Status, 0, maxEndBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-nodeEvents:
			if !ok {
				nodeEvents = nil
				continue
			}
			c.nodeEvent(ctx, ev)
		case s, ok := <-exits:
			if !ok {
				return
			}
			drain()
			// The exits already waiting join this one: their ends share a
			// commit and a scheduling pass (handleExits).
			batch = append(batch[:0], s)
		gather:
			for len(batch) < maxEndBatch {
				select {
				case s, ok := <-exits:
					if !ok {
						c.handleExits(ctx, batch)
						return
					}
					select {
					case ev, ok := <-nodeEvents:
						// A node event may have been sent before this exit:
						// it goes after the exits before it, before this one.
						c.handleExits(ctx, batch)
						batch = batch[:0]
						if !ok {
							nodeEvents = nil
						} else {
							c.nodeEvent(ctx, ev)
							drain()
						}
					default:
					}
					batch = append(batch, s)
				default:
					break gather
				}
			}
			c.handleExits(ctx, batch)
		}
	}
}

// maxEndBatch bounds the ends recorded in one commit and told to the
// Engine in one pass, as maxLaunchBatch bounds the starts.
const maxEndBatch = 512

// handleExit is handleExits of one status.
func (c *Controller) handleExit(ctx context.Context, s nodes.Status) {
	c.handleExits(ctx, []nodes.Status{s})
}

// handleExits records the ends of the steps the executor reported, those of
// their jobs' current runs, and then forgets the steps. The ends of batch
// steps are queued to the store together under c.mu, so that they share one
// commit, and told to the Engine in one HandleBatch, so that they share one
// scheduling pass; the commit is awaited outside c.mu (docs/scale.md, "Ends").
// Nothing that follows from an end leaves horad before the end is durable:
// the store commits in queue order, a start on the freed nodes or of a
// released dependent is queued after the end and launched only once its
// own start is durable, and the step is forgotten only after its end is.
func (c *Controller) handleExits(ctx context.Context, batch []nodes.Status) {
	type recorded struct {
		s    nodes.Status
		wait func() error
		ev   *store.Event // the end recorded, applied to memory already
	}
	type ending struct {
		s  nodes.Status
		j  *job
		ev store.Event
	}
	type where struct {
		node string
		key  nodes.StepKey
	}
	done := make([]recorded, 0, len(batch))
	// keep holds the steps whose end is not recorded: recovery will find
	// them on their nodes and record it.
	keep := map[where]bool{}
	var ends []ending
	endsOf := map[int64]bool{} // jobs whose end this batch has decided
	// again holds the reports whose end could not be recorded before
	// anything of it reached memory (a requeue or a chunk's end refused by
	// the store, a batch the store would not queue), and those held until
	// their launch returns: they are handled anew in a second, while horad
	// runs. A full disk freed later left such a
	// job RUNNING (COMPLETING in squeue) for ever (the fault harness).
	var again []nodes.Status
	c.mu.Lock()
	for _, s := range batch {
		j := c.jobs[s.Key.Job]
		var err error
		switch {
		case endsOf[s.Key.Job] && s.Key.Step < 0:
			// A second report of a run whose end this batch decided (as a
			// report of a job that has ended): forgotten with it, after it.
		case !c.currentRunLocked(j, s):
			// A run the job has left (requeued: its node was lost, or its end
			// was taken as the requeue already), or a job that has ended: its
			// end says nothing about the job now.
			if j != nil && !j.State.Finished() {
				c.log.Info("end of an earlier run ignored", "job", s.Key.Job, "run", s.Key.Run,
					"current", runOf(j), "node", s.Node)
			}
		case s.Key.Step >= 0:
			err = c.chunkEndLocked(ctx, j, s)
		case s.State == nodes.StepLost && j.launching:
			// Lost while its launch has not returned (the executor found
			// the step gone before Launch came back): the launch decides,
			// and this report is held until it has. A launch that returns
			// makes it a node lost under the job (requeued if allowed); a
			// launch that fails ends the run itself (launchFailedLocked).
			// Taken at once, a requeue-able array task ended NODE_FAIL on
			// a full disk (the fault harness, 110-minute soak).
			again = append(again, s)
			continue
		default:
			ev, requeue := c.endEventLocked(j, s)
			if requeue == "" {
				ends = append(ends, ending{s, j, ev})
				endsOf[j.ID] = true
				continue
			}
			err = c.requeueLocked(ctx, j, requeue)
		}
		if err != nil {
			// Nothing of it reached memory: decided again in a second
			// (the node-side state is kept meanwhile, for recovery).
			c.log.Error("recording job end; trying again in a second", "job", s.Key.Job, "err", err)
			again = append(again, s)
			continue
		}
		done = append(done, recorded{s, durableAlready, nil})
	}
	if len(ends) > 0 {
		evs := make([][]store.Event, len(ends))
		for i, e := range ends {
			evs[i] = []store.Event{e.ev}
		}
		// Not withdrawn when horad stops: an end is a fact to keep.
		waits, err := c.st.AppendEachQueued(context.WithoutCancel(ctx), evs)
		if err != nil {
			for _, e := range ends {
				c.log.Error("recording job end; trying again in a second", "job", e.j.ID, "err", err)
				again = append(again, e.s)
			}
		} else {
			c.endsUnsettled.add(int64(len(ends)))
			now := c.nowSec()
			fins := make([]scheduler.Event, len(ends))
			for i, e := range ends {
				fin := c.applyEndLocked(e.j, e.ev)
				fin.Now = now
				fins[i] = fin
				done = append(done, recorded{e.s, waits[i], &e.ev})
			}
			acts, err := c.eng.HandleBatch(now, fins)
			if err != nil {
				c.log.Error("ending jobs in the Engine", "err", err)
			}
			c.applyLocked(ctx, acts)
		}
	}
	c.mu.Unlock()
	if len(again) > 0 {
		go func() {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
				c.handleExits(ctx, again)
			}
		}()
	}
	// Every end of the batch is durable (or failed) before any step is
	// forgotten: a step reported twice is forgotten after its end.
	for _, r := range done {
		err := r.wait()
		switch {
		case err != nil && r.ev != nil && !errors.Is(err, store.ErrInvalidEvent):
			c.log.Error("recording job end", "job", r.s.Key.Job, "err", err)
			keep[where{r.s.Node, r.s.Key}] = true
			go c.retryEnd(ctx, r.s, *r.ev) // settles it
			continue
		case err != nil:
			c.log.Error("recording job end", "job", r.s.Key.Job, "err", err)
			keep[where{r.s.Node, r.s.Key}] = true
		}
		if r.ev != nil {
			c.endsUnsettled.add(-1)
		}
	}
	for _, r := range done {
		if !keep[where{r.s.Node, r.s.Key}] {
			// The step is this run's alone, so forgetting it, whenever that
			// happens, cannot touch the job's next run.
			c.forgetStep(r.s.Node, r.s.Key)
		}
	}
}

func durableAlready() error { return nil }

var errEndsUnsettled = errors.New("an earlier job end is not recorded yet")

// awaitEndsSettled waits until every batched end applied to memory is
// durable, so that a start on the CPUs an end freed is recorded after it:
// the store commits in queue order, but an end refused by a full disk is
// written again later (retryEnd), after starts queued meanwhile. Ends in
// flight settle within a commit; false after 2 s (an end being retried).
func (c *Controller) awaitEndsSettled(ctx context.Context) bool {
	return c.endsUnsettled.wait(ctx, 2*time.Second)
}

// retryEnd records again, once a second, an end whose commit failed (a full
// disk, an I/O error), then forgets its step. Memory and the Engine took the
// end when it was queued, so the same event is written, not the end decided
// again (the job has ended in memory: a new decision would ignore the
// report). Until it is durable the step stays on its node, where recovery
// would find it; a refused event or a closed store leaves it to recovery.
func (c *Controller) retryEnd(ctx context.Context, s nodes.Status, ev store.Event) {
	defer c.endsUnsettled.add(-1)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := c.st.Append(ctx, ev)
		if err == nil {
			c.log.Info("job end recorded after a failed commit", "job", ev.JobID)
			c.forgetStep(s.Node, s.Key)
			return
		}
		if errors.Is(err, store.ErrInvalidEvent) || errors.Is(err, store.ErrClosed) || ctx.Err() != nil {
			c.log.Error("recording job end: left to recovery", "job", ev.JobID, "err", err)
			return
		}
	}
}

// nodeEvent turns an executor's health event into a node state
// (nodeadmin.go): a down node gets no new work and shows "down" with the
// reason in sinfo; its running steps are reported lost by the executor and
// end through watchExits.
func (c *Controller) nodeEvent(ctx context.Context, ev nodes.NodeEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodeHealthLocked(ctx, ev)
}

// finishLocked records how a job ended and tells the Engine; the end is
// durable when it returns.
func (c *Controller) finishLocked(ctx context.Context, j *job, s nodes.Status) error {
	if j == nil {
		return nil
	}
	ev, requeue := c.endEventLocked(j, s)
	if requeue != "" {
		return c.requeueLocked(ctx, j, requeue)
	}
	if err := c.st.Append(ctx, ev); err != nil {
		return err
	}
	fin := c.applyEndLocked(j, ev)
	fin.Now = c.nowSec()
	c.applyLocked(ctx, c.eng.Handle(fin))
	return nil
}

// endEventLocked decides how a job's run ended: the end event to record,
// or why the run is requeued instead (requeueLocked).
func (c *Controller) endEventLocked(j *job, s nodes.Status) (ev store.Event, requeue string) {
	st, reason := api.StateCompleted, "None"
	// A node lost under the job (not a launch that failed: that would fail
	// again) ends its run; a job that allows it runs again from the start.
	nodeLost := (s.State == nodes.StepLost && j.launched) || j.nodeFailed
	if d := j.allocDone; d != nil && !j.cancelRequested && !s.TimedOut && !nodeLost {
		// The allocation was released: it ends with its client's exit.
		s.ExitCode, s.Signal, s.Err = d.ExitCode, d.Signal, ""
	}
	switch {
	case j.cancelRequested || j.CancelledBy >= 0:
		st = api.StateCancelled
	case nodeLost && c.requeueable(j):
		return ev, "node failure"
	case j.requeueRequested:
		return ev, "scontrol requeue"
	case s.TimedOut:
		st, reason = api.StateTimeout, "TimeLimit"
	case s.OOM:
		// Slurm: OUT_OF_MEMORY, ExitCode 0:125 (sacct), squeue OOM.
		st, reason = api.StateOOM, "OutOfMemory"
		s.ExitCode, s.Signal = 0, 125
	case s.State == nodes.StepLost || j.nodeFailed:
		st, reason = api.StateNodeFail, "NodeDown"
	case s.Err != "":
		st, reason = api.StateFailed, "JobLaunchFailure"
	case s.Signal != 0:
		st, reason = api.StateFailed, "RaisedSignal"
	case s.ExitCode != 0:
		st, reason = api.StateFailed, "NonZeroExitCode"
	}
	end := s.Ended.Unix()
	if s.Ended.IsZero() {
		end = c.now().Unix()
	}
	return store.Event{JobID: j.ID, Time: end, Kind: store.KindEnd, State: st, Reason: reason,
		ExitCode: s.ExitCode, Signal: s.Signal, MaxRSSKB: s.MaxRSSKB, TotalCPUMs: s.CPU.Milliseconds()}, ""
}

// applyEndLocked makes memory follow a recorded (or queued) end event and
// returns what the Engine is to hear (its Now left to the caller).
func (c *Controller) applyEndLocked(j *job, ev store.Event) scheduler.Finished {
	j.State, j.Reason, j.ExitCode, j.Signal, j.EndTime = ev.State, ev.Reason, ev.ExitCode, ev.Signal, ev.Time
	j.MaxRSSKB, j.TotalCPUMs = ev.MaxRSSKB, ev.TotalCPUMs
	c.endSrunStepsLocked(j)
	if ev.State == api.StateTimeout {
		c.mailLocked(j, mailTimeLimit)
	}
	c.mailLocked(j, mailEnd)
	return scheduler.Finished{ID: scheduler.JobID(j.ID), Step: scheduler.BatchStep,
		Failed: ev.State != api.StateCompleted}
}

// tickLoop lets time pass in the Engine (begin times, pending deadlines) and
// forgets finished jobs older than MinJobAge.
func (c *Controller) tickLoop(ctx context.Context) {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.wake:
		}
		c.mu.Lock()
		now := c.nowSec()
		passStart := time.Now()
		c.applyLocked(ctx, c.eng.Handle(scheduler.Tick{Now: now}))
		c.lastPass, c.lastPassTook = time.Now(), time.Since(passStart)
		c.expireReservationsLocked(ctx)
		c.timeWarningsLocked()
		c.pruneLocked()
		next := c.eng.NextWakeup()
		// applyLocked above wakes this loop, as it must when a handler calls
		// it; left there, that wake-up made the loop run again at once and
		// spin on a whole core, O(jobs) per pass under the lock. A wake-up
		// sent before this pass took the lock is served by this pass, so
		// drop it while still holding the lock.
		select {
		case <-c.wake:
		default:
		}
		c.mu.Unlock()
		if c.heartbeat != nil {
			c.heartbeat()
		}
		d := time.Second
		if w := next - now; !math.IsInf(next, 1) && w < 1 {
			d = time.Duration(math.Max(w, 0.01) * float64(time.Second))
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(d)
	}
}

// pruneLocked forgets the finished jobs older than MinJobAge. It scans the
// jobs only when the oldest finished job it left may have come of age: the
// tick loop runs after every change, and a scan of 100,000 jobs at each one
// was an eighth of horad's CPU at 1,000 ends a second. A job that ends
// later has an end time no earlier than the scan, give or take the
// second an executor's status may wait (pruned a second late, at worst).
func (c *Controller) pruneLocked() {
	nowS := c.now().Unix()
	minAge := int64(c.cfg.MinJobAgeS)
	if nowS < c.nextPrune && minAge == c.pruneAge {
		return
	}
	cut := nowS - minAge
	oldest := nowS
	keep := c.order[:0]
	for _, j := range c.order {
		id := j.ID
		if j.State.Finished() && j.EndTime >= cut {
			oldest = min(oldest, j.EndTime)
		}
		if j.State.Finished() && j.EndTime < cut {
			delete(c.jobs, id)
			for _, n := range j.Nodes {
				c.lastBusy[n] = max(c.lastBusy[n], j.EndTime)
			}
			c.eng.Handle(scheduler.Purge{Now: c.nowSec(), ID: schedID(id)})
			if a := c.arrays[j.ArrayJobID]; a != nil && j.ArrayJobID != 0 {
				if i, found := slices.BinarySearch(a.ids, id); found {
					a.ids = slices.Delete(a.ids, i, i+1)
				}
				if len(a.ids) == 0 {
					delete(c.arrays, j.ArrayJobID)
				}
			}
			continue
		}
		keep = append(keep, j)
	}
	clear(c.order[len(keep):]) // no pruned job stays reachable
	c.order = keep
	c.nextPrune, c.pruneAge = oldest+minAge+1, minAge
}

// dispatch runs node operations in order.
func (c *Controller) dispatch(ctx context.Context) {
	for {
		items, ok := c.work.popBatch(maxLaunchBatch)
		if !ok {
			return
		}
		c.runItems(ctx, items)
	}
}

// runItems does items in order, each run of consecutive launches together.
func (c *Controller) runItems(ctx context.Context, items []workItem) {
	for i := 0; i < len(items); {
		if items[i].launch == nil {
			items[i].run(ctx)
			i++
			continue
		}
		k := i
		for k < len(items) && items[k].launch != nil {
			k++
		}
		c.launchAll(ctx, items[i:k])
		i = k
	}
}

// maxLaunchBatch bounds the starts recorded in one commit, as the store
// bounds its batches (a pass may start thousands of jobs).
const maxLaunchBatch = 512

// launchItem is a start to record and launch (launch).
type launchItem struct {
	c    *Controller
	spec nodes.LaunchSpec
	evs  []store.Event
}

// pushLaunch queues a launch: the dispatcher records the starts queued
// together in one commit, then launches them in order.
func (c *Controller) pushLaunch(spec nodes.LaunchSpec, evs ...store.Event) {
	c.work.pushItem(workItem{launch: &launchItem{c, spec, evs}})
}

// launchAll is launch for consecutive queued launches: every start is
// queued to the store first, so that they share a commit (one fsync for a
// pass's starts rather than one each: the dispatcher is one goroutine, and
// ≥ 1,000 starts/s is the goal at 4,096 nodes), and each job is launched
// only once its own start is durable, in queue order.
func (c *Controller) launchAll(ctx context.Context, items []workItem) {
	if !c.awaitEndsSettled(ctx) {
		for _, it := range items {
			c.startNotRecorded(ctx, it.launch.spec, it.launch.evs, errEndsUnsettled)
		}
		return
	}
	if len(items) == 1 {
		c.launch(ctx, items[0].launch.spec, items[0].launch.evs...)
		return
	}
	waits := make([]func() error, len(items))
	var queue [][]store.Event
	var queued []int
	c.mu.Lock()
	for i, it := range items {
		if c.stillToLaunchLocked(it.launch.spec) {
			queue = append(queue, it.launch.evs)
			queued = append(queued, i)
		}
	}
	c.mu.Unlock()
	// One unit: the starts share a commit even when the writer is idle.
	ws, err := c.st.AppendEachQueued(ctx, queue)
	if err != nil {
		for _, i := range queued {
			c.startNotRecorded(ctx, items[i].launch.spec, items[i].launch.evs, err)
		}
		return
	}
	for k, i := range queued {
		waits[i] = ws[k]
	}
	for i, it := range items {
		if waits[i] == nil {
			continue
		}
		if err := waits[i](); err != nil {
			c.startNotRecorded(ctx, it.launch.spec, it.launch.evs, err)
			continue
		}
		c.launchRecorded(ctx, it.launch.spec)
	}
}

// workQueue is an unbounded FIFO of node operations: the Engine may decide
// many starts at once, and deciding must never wait for a node.
type workQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []workItem
	closed bool
}

// workItem is a node operation (f), or a launch, which the dispatcher
// batches (launchAll).
type workItem struct {
	f      func(context.Context)
	launch *launchItem
}

// run does the item alone.
func (it workItem) run(ctx context.Context) {
	if it.launch != nil {
		it.launch.c.launch(ctx, it.launch.spec, it.launch.evs...)
		return
	}
	it.f(ctx)
}

func newWorkQueue() *workQueue {
	q := &workQueue{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *workQueue) push(f func(context.Context)) {
	q.pushItem(workItem{f: f})
}

func (q *workQueue) pushItem(it workItem) {
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mu.Unlock()
	q.cond.Signal()
}

// pop returns the next operation, for queues that hold no launches.
func (q *workQueue) pop() (func(context.Context), bool) {
	items, ok := q.popBatch(1)
	if !ok {
		return nil, false
	}
	return items[0].run, true
}

// popBatch waits for work and takes up to max items queued, in order; false
// once the queue is closed and empty.
func (q *workQueue) popBatch(max int) ([]workItem, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.items) == 0 {
		return nil, false
	}
	n := min(max, len(q.items))
	out := make([]workItem, n)
	copy(out, q.items)
	clear(q.items[:n])
	q.items = q.items[n:]
	return out, true
}

func (q *workQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// outputPaths expands the job's -o/-e patterns (default slurm-%j.out) into
// absolute paths, relative ones against the job's working directory.
func outputPaths(j *api.Job) (string, string) {
	out := j.Spec.Stdout
	if out == "" {
		out = "slurm-%j.out"
		if j.ArrayJobID != 0 {
			out = "slurm-%A_%a.out" // Slurm's default for array tasks
		}
	}
	o := expand(j, out)
	e := o
	if j.Spec.Stderr != "" {
		e = expand(j, j.Spec.Stderr)
	}
	return o, e
}

func expand(j *api.Job, pattern string) string {
	p := expandPattern(j, pattern)
	if !filepath.IsAbs(p) {
		p = filepath.Join(j.Spec.WorkDir, p)
	}
	return p
}
