package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"hora/api"
	"hora/sbatch"
)

// sallocMain grants an allocation, runs the command (default the user's
// shell) with its SLURM_* environment here, and releases it when the
// command ends, printing Slurm's lines (src/salloc/salloc.c).
func sallocMain(ctx context.Context, env *Env, args []string) int {
	p, err := sbatch.Getopt(sbatch.SallocOptions(), args, true)
	if err != nil {
		var ue *sbatch.UsageError
		if errors.As(err, &ue) {
			fmt.Fprintf(env.Stderr, "salloc: %s\n", sbatch.UsageErrorText(sbatch.Salloc, ue.Msg))
			return 255
		}
		fmt.Fprintf(env.Stderr, "salloc: error: %v\n", err)
		return 1
	}
	vals := append(sbatch.EnvValues(sbatch.Salloc, env.Environ()), p.Values...)
	immediate, killSig, noShell := 0, syscall.Signal(0), false
	for _, v := range vals {
		switch v.Key {
		case "help":
			fmt.Fprint(env.Stdout, sbatch.Help(sbatch.Salloc))
			return 0
		case "usage":
			fmt.Fprint(env.Stdout, sbatch.Usage(sbatch.Salloc))
			return 0
		case "version":
			fmt.Fprintln(env.Stdout, versionLine())
			return 0
		case "immediate":
			immediate = 1
			if v.Val != "" {
				n, err := strconv.Atoi(v.Val)
				if err != nil || n < 1 {
					fmt.Fprintf(env.Stderr, "salloc: error: Invalid numeric value %q for %s.\n", v.Val, v.Name)
					return 1
				}
				immediate = n
			}
		case "kill-command":
			killSig = syscall.SIGTERM
			if v.Val != "" {
				s, ok := parseSignal(v.Val)
				if !ok {
					fmt.Fprintf(env.Stderr, "salloc: error: Invalid signal name or number: %s\n", v.Val)
					return 1
				}
				killSig = syscall.Signal(s)
			}
		case "no-shell":
			noShell = true
		}
	}
	spec, err := allocSpec(env, sbatch.Salloc, vals)
	if err != nil {
		return printSbatchErrorAs(env, "salloc", err)
	}
	argv := p.Args
	if len(argv) == 0 {
		sh := env.Getenv("SHELL")
		if sh == "" {
			sh = "/bin/sh"
		}
		argv = []string{sh}
	}
	if spec.Name == "" {
		// Slurm names the job after the command it runs.
		spec.Name = filepath.Base(argv[0])
	}
	cl, err := api.Dial()
	if err != nil {
		fmt.Fprintf(env.Stderr, "salloc: error: %v\n", err)
		return exitError(env)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	id, code, ok := allocate(ctx, env, cl, "salloc", spec, immediate, sigs, true)
	signal.Stop(sigs)
	if !ok {
		return code
	}
	if noShell {
		return 0
	}
	ae, err := cl.AllocEnv(ctx, id)
	if err != nil {
		fmt.Fprintf(env.Stderr, "salloc: error: %v\n", err)
		fmt.Fprintf(env.Stderr, "salloc: Relinquishing job allocation %d\n", id)
		_ = resend(ctx, cl, func(cl *api.Client) error {
			return cl.AllocDone(context.WithoutCancel(ctx), api.AllocDone{JobID: id, ExitCode: 1})
		})
		return 1
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = env.Stdin, env.Stdout, env.Stderr
	cmd.Env = mergeEnv(append(env.Environ(), ae.Env...), nil)
	// The command owns the terminal's signals while it runs (^C goes to
	// it, not to salloc), as with Slurm's salloc. salloc catches and
	// drops them rather than ignoring them: an ignored signal would stay
	// ignored in the command it starts.
	quiet := make(chan os.Signal, 8)
	signal.Notify(quiet, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTSTP, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(quiet)
	rc, sig := 0, 0
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(env.Stderr, "salloc: error: %s: %v\n", argv[0], unwrapExec(err))
		rc = 127
	} else {
		// TERM and HUP (salloc killed, its terminal gone) are passed to
		// the command, whose end then releases the allocation as usual.
		go func() {
			for sig := range quiet {
				if sig == syscall.SIGTERM || sig == syscall.SIGHUP {
					_ = cmd.Process.Signal(sig)
				}
			}
		}()
		revoked := watchRevoked(ctx, cl, id, func() {
			fmt.Fprintf(env.Stderr, "salloc: Job allocation %d has been revoked.\n", id)
			if killSig != 0 {
				_ = cmd.Process.Signal(killSig)
			}
		})
		_ = cmd.Wait()
		close(revoked)
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		switch {
		case ws.Exited():
			rc = ws.ExitStatus()
		case ws.Signaled():
			rc, sig = 128+int(ws.Signal()), int(ws.Signal())
		}
	}
	jobs, err := cl.Jobs(ctx, api.JobFilter{IDs: []int64{id}, History: true})
	if err == nil && len(jobs) == 1 && jobs[0].State.Finished() {
		return rc // revoked: nothing to relinquish
	}
	fmt.Fprintf(env.Stderr, "salloc: Relinquishing job allocation %d\n", id)
	// Slurm records the command's wait status: a signal shows as one.
	done := api.AllocDone{JobID: id, ExitCode: rc}
	if sig != 0 {
		done = api.AllocDone{JobID: id, Signal: sig}
	}
	if err := resend(ctx, cl, func(cl *api.Client) error { return cl.AllocDone(context.WithoutCancel(ctx), done) }); err != nil {
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeAlreadyDone {
			fmt.Fprintf(env.Stderr, "salloc: error: Unable to clean up job allocation %d: %v\n", id, err)
		}
	}
	return rc
}

// watchRevoked calls revoked once if the allocation ends while the
// command runs (scancel, time limit); closing the returned channel stops
// the watch.
func watchRevoked(ctx context.Context, cl *api.Client, id int64, revoked func()) chan struct{} {
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
			jobs, err := cl.Jobs(ctx, api.JobFilter{IDs: []int64{id}, History: true})
			if err == nil && len(jobs) == 1 && jobs[0].State.Finished() {
				revoked()
				return
			}
		}
	}()
	return stop
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}
