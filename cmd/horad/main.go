// Command horad is hora's controller daemon. It listens on a Unix socket,
// keeps every job and event in one SQLite file, schedules with the pure
// Engine, and runs jobs on its nodes through an executor. Without a config
// file it runs the embedded default: four local nodes local[1-4], partition
// "batch", state in ./var.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

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
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
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
	if d := cc.String("state-dir"); d != "" {
		if cc.String("socket") == "" && (cfg.Path() == "" || cfg.Socket == filepath.Join(cfg.StateDir, "horad.sock")) {
			cfg.Socket = filepath.Join(d, "horad.sock")
		}
		cfg.StateDir = d
	}
	if s := cc.String("socket"); s != "" {
		cfg.Socket = s
	}
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
	if mixer != nil {
		mixDone := make(chan struct{})
		go func() { mixer.run(ctx); close(mixDone) }()
		defer func() { stop(); <-mixDone }() // thaws both classes before horad exits
	}

	ctl, err := controller.New(ctx, controller.Options{Config: cfg, Logger: log, Store: st, Executor: exec,
		Heartbeat: watchdog()})
	if err != nil {
		return err
	}
	ln, err := controller.Listen(cfg.Socket)
	if err != nil {
		return fmt.Errorf("socket %s: %w", cfg.Socket, err)
	}
	srv := ctl.Server()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	runDone := make(chan error, 1)
	go func() { runDone <- ctl.Run(ctx) }()

	log.Info("horad ready", "socket", cfg.Socket, "db", dbPath, "nodes", len(cfg.NodeNames()), "config", cfg.Path())
	_, _ = daemon.SdNotify(false, daemon.SdNotifyReady)

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error("socket server failed", "err", err)
		}
		stop()
	}
	_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping)
	log.Info("horad stopping; running jobs keep running")
	shCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shCtx)
	_ = os.Remove(cfg.Socket)
	return <-runDone
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
		return hssh.New(hssh.Config{
			Nodes: ns, KnownHostsFile: cfg.SSH.KnownHosts, User: cfg.SSH.User,
			IdentityFile: cfg.SSH.IdentityFile, StateDir: cfg.SSH.StateDir, Launcher: cfg.SSH.Launcher,
			ProbeInterval: time.Duration(cfg.SSH.ProbeIntervalS) * time.Second, ProbeMisses: cfg.SSH.ProbeMisses,
			Logger: log,
		})
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
		lc.Place = mixer.place(cfg)
	}
	return local.New(lc)
}

// watchdog returns the controller's heartbeat: a systemd watchdog ping,
// rate-limited to half the WatchdogSec interval; nil when no watchdog is set.
// It is called from the scheduling loop itself, so a wedged loop stops the pings.
func watchdog() func() {
	every, err := daemon.SdWatchdogEnabled(false)
	if err != nil || every == 0 {
		return nil
	}
	var last time.Time
	return func() {
		if time.Since(last) >= every/2 {
			last = time.Now()
			_, _ = daemon.SdNotify(false, daemon.SdNotifyWatchdog)
		}
	}
}
