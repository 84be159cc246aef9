package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"hora/api"
	"hora/sbatch"
)

// sbatchMain submits a batch script, printing exactly what Slurm's sbatch
// prints: workflow tools parse "Submitted batch job N" (COMPAT.md §9.1).
func sbatchMain(ctx context.Context, env *Env, args []string) int {
	cwd, err := env.Getwd()
	if err != nil {
		fmt.Fprintf(env.Stderr, "sbatch: error: getcwd failed: %v\n", err)
		return 1
	}
	host, _ := os.Hostname()
	spec, flags, err := sbatch.BuildSpec(sbatch.Input{
		Argv: args, Env: env.Environ(), Cwd: cwd, Stdin: env.Stdin,
		ReadFile: os.ReadFile, Now: time.Now(), Hostname: host,
	})
	switch {
	case errors.Is(err, sbatch.ErrHelp):
		fmt.Fprint(env.Stdout, sbatch.Help(sbatch.Sbatch))
		return 0
	case errors.Is(err, sbatch.ErrUsage):
		fmt.Fprint(env.Stdout, sbatch.Usage(sbatch.Sbatch))
		return 0
	case errors.Is(err, sbatch.ErrVersion):
		fmt.Fprintln(env.Stdout, versionLine())
		return 0
	case err != nil:
		return printSbatchError(env, err)
	}
	for _, w := range flags.Warnings {
		fmt.Fprintf(env.Stderr, "sbatch: %s\n", w)
	}
	cl, err := api.Dial()
	if err != nil {
		fmt.Fprintf(env.Stderr, "sbatch: error: %v\n", err)
		return exitError(env)
	}
	resp, err := submitRetrying(ctx, env, cl, api.SubmitRequest{Spec: *spec, TestOnly: flags.TestOnly})
	if err != nil {
		var ae *api.Error
		if errors.As(err, &ae) {
			msg := ae.Message
			now := time.Now()
			switch {
			case ae.EarliestStart > 0 && ae.Earliest > 0:
				msg += " (earliest feasible start " + sbatch.FormatTimestamp(ae.EarliestStart, "", now) +
					", earliest guaranteed deadline " + sbatch.FormatTimestamp(ae.Earliest, "", now) + ")"
			case ae.Earliest > 0:
				msg += " (earliest guaranteed deadline " + sbatch.FormatTimestamp(ae.Earliest, "", now) + ")"
			case ae.EarliestStart > 0:
				msg += " (earliest feasible start " + sbatch.FormatTimestamp(ae.EarliestStart, "", now) + ")"
			}
			if ae.Code == api.CodeInvalidPartition && !flags.TestOnly {
				// sbatch 22.05 names the partition first (measured).
				fmt.Fprintf(env.Stderr, "sbatch: error: invalid partition specified: %s\n", spec.Partition)
			}
			if flags.TestOnly {
				fmt.Fprintf(env.Stderr, "allocation failure: %s\n", msg)
			} else {
				fmt.Fprintf(env.Stderr, "sbatch: error: Batch job submission failed: %s\n", msg)
			}
		} else {
			fmt.Fprintf(env.Stderr, "sbatch: error: Batch job submission failed: %v\n", err)
		}
		return exitError(env)
	}
	if flags.TestOnly {
		fmt.Fprintf(env.Stderr, "sbatch: Job %d to start at %s using %d processors on nodes %s in partition %s\n",
			resp.JobID, sbatch.FormatTimestamp(resp.StartTime, "", time.Now()), resp.CPUs,
			sbatch.CompressHostlist(resp.Nodes), resp.Partition)
		return 0
	}
	switch {
	case flags.Parsable:
		fmt.Fprintf(env.Stdout, "%d\n", resp.JobID)
	case !flags.Quiet:
		fmt.Fprintf(env.Stdout, "Submitted batch job %d\n", resp.JobID)
	}
	if flags.Wait {
		ctx, stop := interruptible(ctx)
		defer stop()
		return waitJob(ctx, env, cl, resp.JobID)
	}
	return 0
}

// printSbatchError prints a parse error the way sbatch does: the first line
// behind the program name, the following ones (the "Try ..." hint) bare.
func printSbatchError(env *Env, err error) int {
	var se *sbatch.Error
	if !errors.As(err, &se) {
		fmt.Fprintf(env.Stderr, "sbatch: error: %v\n", err)
		return 1
	}
	if se.Pre != "" {
		fmt.Fprintln(env.Stderr, se.Pre)
	}
	lines := strings.Split(strings.TrimRight(se.Msg, "\n"), "\n")
	for i, l := range lines {
		if i == 0 || strings.HasPrefix(l, "error: ") {
			fmt.Fprintf(env.Stderr, "sbatch: %s\n", l)
		} else {
			fmt.Fprintln(env.Stderr, l)
		}
	}
	if se.Exit == 1 {
		return exitError(env)
	}
	return se.Exit
}

// exitError is Slurm's error_exit: 1 unless $SLURM_EXIT_ERROR says otherwise.
// submitRetrying submits, and while horad answers "try again" (its
// max_job_count reached: Slurm's EAGAIN) sleeps and retries as Slurm's
// sbatch does: the message once, then 1, 2, … 15 s between attempts, and
// after the last the refusal ("Resource temporarily unavailable").
func submitRetrying(ctx context.Context, env *Env, cl *api.Client, req api.SubmitRequest) (*api.SubmitResponse, error) {
	const maxRetries = 15 // Slurm's MAX_RETRIES in sbatch.c
	for retries := 0; ; retries++ {
		resp, err := cl.Submit(ctx, req)
		var ae *api.Error
		if err == nil || !errors.As(err, &ae) || ae.Code != api.CodeTryAgain || retries >= maxRetries {
			return resp, err
		}
		if retries == 0 {
			fmt.Fprintln(env.Stderr, "sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying")
		}
		select {
		case <-time.After(time.Duration(retries+1) * time.Second):
		case <-ctx.Done():
			return nil, err
		}
	}
}

func exitError(env *Env) int {
	if v := env.Getenv("SLURM_EXIT_ERROR"); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return 1
}

// waitJob implements -W/--wait: poll until the job ends and return its exit
// code (1 when it was killed by a signal), as sbatch does.
func waitJob(ctx context.Context, env *Env, cl *api.Client, id int64) int {
	delay := 100 * time.Millisecond
	for {
		jobs, err := cl.Jobs(ctx, api.JobFilter{IDs: []int64{id}, History: true})
		if err == nil && len(jobs) == 1 && jobs[0].State.Finished() {
			j := jobs[0]
			if j.Signal != 0 || j.State == api.StateCancelled || j.State == api.StateTimeout {
				if j.ExitCode == 0 {
					return 1
				}
			}
			return j.ExitCode
		}
		select {
		case <-ctx.Done():
			return 1
		case <-time.After(delay):
		}
		delay = min(delay*2, 2*time.Second)
	}
}

// versionLine is what every Slurm command prints for -V/--version: the
// Slurm whose commands hora speaks, in upstream Slurm's form ("slurm
// 22.05.8"; Debian's build says slurm-wlm), because clients parse it
// with `^slurm (\d+)\.(\d+)\.(\d+)` (law's get_slurm_version, FirecREST's
// sinfo -V, puppet-slurm's facts). hora's own version is horad --version
// and `scontrol show config` says which program answers
// (AccountingStorageType = accounting_storage/hora).
func versionLine() string { return "slurm " + slurmVersion }

// slurmVersion is the Slurm release hora's commands pass for
// (SLURM_VERSION in scontrol show config).
const slurmVersion = "22.05.8"

// version is set by the build (-ldflags -X main.version=...).
var version = "0.1.0-dev"
