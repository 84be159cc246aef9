// Command horad is hora's controller daemon. It listens on a Unix socket,
// keeps every job and event in one SQLite file, schedules with the pure
// Engine, and runs jobs on its nodes through an executor. Without a config
// file it runs the embedded default: four local nodes local[1-4], partition
// "batch", state in ./var.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/urfave/cli/v2"

	"hora/config"
	"hora/controller"
	"hora/nodes"
	"hora/nodes/emulated"
	"hora/nodes/local"
	hssh "hora/nodes/ssh"
	_ "hora/scheduler/policies" // registers batch, dlt and reserve
	"hora/store"
)

func main() {
	// The shepherd is horad's own binary re-executed for every job step; it
	// must not go through flag parsing or logging set-up.
	if len(os.Args) > 1 && os.Args[1] == local.ShepherdCommand {
		os.Exit(local.ShepherdMain(os.Args[2:]))
	}
	os.Exit(run(os.Args))
}

func app() *cli.App {
	// urfave/cli's default -v would be --version; horad keeps -v free.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version and exit"}
	return &cli.App{
		Name:    "horad",
		Usage:   "the hora batch controller",
		Version: controller.Version,
		Description: "horad schedules batch jobs submitted with sbatch (and the other Slurm-compatible " +
			"commands of hora) onto its nodes. Without --config it runs the embedded default: " +
			"four local nodes local[1-4] in partition batch, state in ./var/hora.db, socket ./var/horad.sock.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Usage: "read `FILE` (hora.toml(5)); strict: unknown keys are errors"},
			&cli.StringFlag{Name: "state-dir", Usage: "keep hora.db and local node state in `DIR` (overrides state_dir)"},
			&cli.StringFlag{Name: "socket", Usage: "listen on the Unix socket `PATH` (overrides socket)"},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "log at `LEVEL`: debug, info, warn or error"},
			&cli.BoolFlag{Name: "check-config", Usage: "read and validate the configuration, print every problem with file:line, and exit: 0 if it is valid"},
		},
		Action: serve,
	}
}

func run(args []string) int {
	if err := app().Run(args); err != nil {
		fmt.Fprintln(os.Stderr, "horad: "+err.Error())
		return 1
	}
	return 0
}

func serve(cc *cli.Context) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cc.String("log-level"))); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)

	cfg := config.Default()
	if p := cc.String("config"); p != "" {
		var err error
		if cfg, err = config.Load(p); err != nil {
			return err
		}
	}
	if cc.Bool("check-config") {
		fmt.Fprintf(cc.App.Writer, "%s: configuration OK (%d nodes, %d partitions)\n",
			cmp.Or(cfg.Path(), "(default config)"), len(cfg.NodeNames()), len(cfg.Partitions))
		return nil
	}
	overrides := func(cfg *config.Config) {
		if d := cc.String("state-dir"); d != "" {
			if cc.String("socket") == "" && (cfg.Path() == "" || cfg.Socket == filepath.Join(cfg.StateDir, "horad.sock")) {
				cfg.Socket = filepath.Join(d, "horad.sock")
			}
			cfg.StateDir = d
		}
		if s := cc.String("socket"); s != "" {
			cfg.Socket = s
		}
	}
	overrides(cfg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return err
	}
	dbPath := filepath.Join(cfg.StateDir, "hora.db")
	st, err := store.Open(ctx, dbPath)
	if err != nil {
		return fmt.Errorf("store %s: %w", dbPath, err)
	}
	defer st.Close()

	mixer, err := newMixEnforcer(cfg, log)
	if err != nil {
		return err
	}
	exec, err := newExecutor(cfg, log, mixer)
	if err != nil {
		return fmt.Errorf("executor: %w", err)
	}
	defer exec.Close()
	probeResources(ctx, cfg, exec, log)
	if mixer != nil {
		mixDone := make(chan struct{})
		go func() { mixer.run(ctx); close(mixDone) }()
		// After the controller stopped: both classes thawed, the groups of
		// a class with no process left removed (cgmix.Groups.Release).
		defer func() { stop(); <-mixDone; mixer.release() }()
	}

	// SIGHUP is caught from here on: one that arrives during recovery is
	// served as a reload once horad runs, instead of ending it.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var ctl *controller.Controller
	hb := heartbeat(func() string { return ctl.Stats().String() })
	stopExtending := extendStartTimeout()
	// scontrol reconfigure asks the loop below for a reload, so that it
	// never runs beside one a SIGHUP started.
	reconf := make(chan chan reloaded)
	reconfigure := func(rctx context.Context) (string, error) {
		done := make(chan reloaded, 1)
		select {
		case reconf <- done:
		case <-rctx.Done():
			return "", rctx.Err()
		}
		r := <-done // a reload is short, and is not abandoned half-way
		return r.path, r.err
	}
	ctl, err = controller.Open(ctx, controller.Options{Config: cfg, Logger: log, Store: st, Executor: exec,
		Heartbeat: hb, Reconfigure: reconfigure})
	if err != nil {
		stopExtending()
		return err
	}
	// Under horad.socket systemd has held the listening socket all along:
	// the client whose connection started horad waits in its backlog. It is
	// served at once: job listings from the store while recovery runs, every
	// other request once the state is rebuilt (docs/recovery.md). Without
	// socket activation the socket appears only after recovery, so that a
	// socket that answers means a recovered horad.
	ln, activated, err := activatedListener()
	if err != nil {
		stopExtending()
		return err
	}
	srv := ctl.Server()
	serveErr := make(chan error, 1)
	serve := func() {
		// [limits]'s connection bounds and fair service by uid (docs/limits.md).
		go func() { serveErr <- srv.Serve(ctl.Limit(ln)) }()
	}
	if activated {
		serve()
	}
	err = ctl.Recover(ctx)
	stopExtending()
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return err
	}
	if !activated {
		if ln, err = controller.Listen(cfg.Socket); err != nil {
			return fmt.Errorf("socket %s: %w", cfg.Socket, err)
		}
		serve()
	}
	defer ln.Close()
	runDone := make(chan error, 1)
	go func() { runDone <- ctl.Run(ctx) }()

	log.Info("horad ready", "socket", cfg.Socket, "activated", activated, "db", dbPath, "nodes", len(cfg.NodeNames()), "config", cfg.Path())
	// READY=1 only now: the state is recovered and the socket is served.
	_, _ = daemon.SdNotify(false, daemon.SdNotifyReady+"\nSTATUS="+ctl.Stats().String())

loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-hup:
			reload(ctx, log, ctl, mixer, cc.String("config"), overrides)
		case done := <-reconf:
			err := reload(ctx, log, ctl, mixer, cc.String("config"), overrides)
			done <- reloaded{cc.String("config"), err}
		case err := <-serveErr:
			if !errors.Is(err, http.ErrServerClosed) {
				log.Error("socket server failed", "err", err)
			}
			stop()
			break loop
		}
	}
	_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping)
	log.Info("horad stopping; running jobs keep running")
	shCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shCtx)
	if !activated {
		_ = os.Remove(cfg.Socket)
	}
	return <-runDone
}

// activatedListener returns the socket systemd passed (horad.socket), if
// any.
func activatedListener() (ln net.Listener, activated bool, err error) {
	lns, err := activation.Listeners()
	if err != nil {
		return nil, false, fmt.Errorf("socket activation: %w", err)
	}
	for _, l := range lns {
		if l != nil {
			for _, extra := range lns {
				if extra != nil && extra != l {
					extra.Close()
				}
			}
			return l, true, nil
		}
	}
	return nil, false, nil
}

// reloaded is the outcome of a reload asked by scontrol reconfigure.
type reloaded struct {
	path string
	err  error
}

// reload re-reads the configuration file on SIGHUP or scontrol
// reconfigure. A file with errors is refused with every problem at
// file:line, and horad keeps serving on the configuration it runs; [mix]
// included (a new ratio or mode takes effect on the running jobs).
func reload(ctx context.Context, log *slog.Logger, ctl *controller.Controller, mixer *mixEnforcer, path string, overrides func(*config.Config)) error {
	_, _ = daemon.SdNotify(false, daemon.SdNotifyReloading)
	defer func() { _, _ = daemon.SdNotify(false, daemon.SdNotifyReady+"\nSTATUS="+ctl.Stats().String()) }()
	if path == "" {
		log.Warn("SIGHUP: no --config file to re-read; nothing changes")
		return errors.New("horad was started without --config: there is no file to re-read")
	}
	nc, err := config.Load(path)
	if err == nil {
		overrides(nc) // --state-dir and --socket win over the file, as at start
		if err = mixer.checkReload(nc); err == nil {
			err = ctl.Reload(ctx, nc)
		}
	}
	if err == nil {
		mixer.reload(ctx, nc) // ratio and mode, under the running jobs
	}
	if err != nil {
		var probs config.Problems
		if errors.As(err, &probs) {
			for _, p := range probs {
				log.Error("reload refused, the running configuration stays", "file", p.File, "line", p.Line, "key", p.Key, "err", p.Msg, "at", p.String())
			}
			return err
		}
		log.Error("reload refused, the running configuration stays", "err", err)
	}
	return err
}

// newExecutor builds the executor the config names: local processes on
// this machine (the embedded default) or ordinary hosts over SSH.
func newExecutor(cfg *config.Config, log *slog.Logger, mixer *mixEnforcer) (nodes.Executor, error) {
	if cfg.Executor == "emulated" {
		if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
			return nil, err
		}
		return emulated.New(emulated.Config{StateFile: filepath.Join(cfg.StateDir, "emulated.state")})
	}
	if cfg.Executor == "ssh" {
		var ns []hssh.Node
		for _, n := range cfg.ExpandedNodes() {
			ns = append(ns, hssh.Node{Name: n.Name, Address: n.Address, User: n.User, IdentityFile: n.IdentityFile})
		}
		sc := hssh.Config{
			Nodes: ns, KnownHostsFile: cfg.SSH.KnownHosts, User: cfg.SSH.User,
			IdentityFile: cfg.SSH.IdentityFile, StateDir: cfg.SSH.StateDir, Launcher: cfg.SSH.Launcher,
			ProbeInterval: time.Duration(cfg.SSH.ProbeIntervalS) * time.Second, ProbeMisses: cfg.SSH.ProbeMisses,
			Logger: log,
		}
		if mixer != nil {
			sc.Mix = mixer.sshMixFor()
		}
		e, err := hssh.New(sc)
		if mixer != nil {
			mixer.ssh = e
		}
		return e, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	lc := local.Config{
		StateDir:     filepath.Join(cfg.StateDir, "nodes"),
		ShepherdArgv: []string{self, local.ShepherdCommand},
	}
	if mixer != nil {
		// [mix] moves each shepherd into its class's cgroup before it gets
		// its spec, which needs the shepherd as horad's child: with [mix]
		// local steps are not started in units of their own (and
		// horad.service needs ProtectControlGroups=no, docs/operations.md).
		lc.Place = mixer.place()
	} else {
		lc.SystemdRun = systemdRun(log)
	}
	return local.New(lc)
}

// systemdRun returns the path of systemd-run when horad runs as a systemd
// service (INVOCATION_ID is set by systemd, /run/systemd/system exists when
// it is PID 1): local jobs then run in transient services of their own,
// outside horad.service's cgroup and sandbox. "" otherwise (a horad started
// by hand or by the tests keeps its shepherds as children).
func systemdRun(log *slog.Logger) string {
	// Only the system manager runs units as other users: a horad under a
	// user manager (not root) keeps its shepherds as children.
	if os.Getenv("INVOCATION_ID") == "" || os.Geteuid() != 0 {
		return ""
	}
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		return ""
	}
	p, err := exec.LookPath("systemd-run")
	if err != nil {
		log.Warn("systemd-run not found: local jobs run inside horad.service", "err", err)
		return ""
	}
	return p
}

// extendStartTimeout tells systemd, while horad recovers, that start-up is
// progressing (STATUS=recovering, EXTEND_TIMEOUT_USEC every 10 s), so that a
// large state on a loaded machine is not killed by TimeoutStartSec. The
// returned function stops it; READY=1 follows.
func extendStartTimeout() func() {
	if os.Getenv("NOTIFY_SOCKET") == "" {
		return func() {}
	}
	_, _ = daemon.SdNotify(false, "STATUS=recovering the state")
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_, _ = daemon.SdNotify(false, "EXTEND_TIMEOUT_USEC=30000000")
			}
		}
	}()
	return func() { close(done) }
}

// heartbeat returns the controller's heartbeat, called from the scheduling
// loop itself (so a wedged loop stops it): a systemd watchdog ping,
// rate-limited to half the WatchdogSec interval, and a STATUS= line (jobs,
// nodes, last scheduling pass) every statusEvery. nil outside systemd.
func heartbeat(status func() string) func() {
	if os.Getenv("NOTIFY_SOCKET") == "" {
		return nil
	}
	every, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		every = 0
	}
	const statusEvery = 5 * time.Second
	var lastPing, lastStatus time.Time
	return func() {
		now := time.Now()
		var msg []string
		if every > 0 && now.Sub(lastPing) >= every/2 {
			lastPing = now
			msg = append(msg, daemon.SdNotifyWatchdog)
		}
		if now.Sub(lastStatus) >= statusEvery {
			lastStatus = now
			msg = append(msg, "STATUS="+status())
		}
		if len(msg) > 0 {
			_, _ = daemon.SdNotify(false, strings.Join(msg, "\n"))
		}
	}
}

// probeResources reads, on each SSH node whose hora.toml entry leaves out
// its CPUs, memory or gres, what the node has, before the Engine is built
// (docs/resources.md). A node that does not answer within the probe time
// keeps the defaults until horad restarts.
func probeResources(ctx context.Context, cfg *config.Config, exec nodes.Executor, log *slog.Logger) {
	pr, ok := exec.(nodes.ResourceProber)
	if !ok || cfg.Executor != "ssh" {
		return
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range cfg.ExpandedNodes() {
		if !n.NeedsProbe() {
			continue
		}
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			r, err := pr.ProbeResources(ctx, name)
			if err != nil {
				log.Warn("node resources not probed; hora.toml defaults apply", "node", name, "err", err)
				return
			}
			mu.Lock()
			cfg.SetProbed(name, config.Probed{CPUs: r.CPUs, MemMB: r.MemMB, GPUs: r.GPUs})
			mu.Unlock()
			log.Info("node resources probed", "node", name, "cpus", r.CPUs, "memory_mb", r.MemMB, "gpus", r.GPUs)
		}(n.Name)
	}
	wg.Wait()
}
