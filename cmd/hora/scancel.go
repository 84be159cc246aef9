package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"hora/api"
	"hora/sbatch"
)

var scancelOpts = []sbatch.Opt{
	{Short: 'A', Long: "account", Arg: sbatch.RequiredArg, Key: "account"},
	{Short: 'b', Long: "batch", Arg: sbatch.NoArg, Key: "batch"},
	{Long: "ctld", Arg: sbatch.NoArg, Key: "ctld"},
	{Short: 'f', Long: "full", Arg: sbatch.NoArg, Key: "full"},
	{Short: 'H', Long: "hurry", Arg: sbatch.NoArg, Key: "hurry"},
	{Short: 'i', Long: "interactive", Arg: sbatch.NoArg, Key: "interactive"},
	{Short: 'M', Long: "clusters", Arg: sbatch.RequiredArg, Key: "clusters"},
	{Long: "me", Arg: sbatch.NoArg, Key: "me"},
	{Short: 'n', Long: "name", Arg: sbatch.RequiredArg, Key: "name"},
	{Long: "jobname", Arg: sbatch.RequiredArg, Key: "name"},
	{Short: 'p', Long: "partition", Arg: sbatch.RequiredArg, Key: "partition"},
	{Short: 'Q', Long: "quiet", Arg: sbatch.NoArg, Key: "quiet"},
	{Short: 'q', Long: "qos", Arg: sbatch.RequiredArg, Key: "qos"},
	{Short: 'R', Long: "reservation", Arg: sbatch.RequiredArg, Key: "reservation"},
	{Short: 's', Long: "signal", Arg: sbatch.RequiredArg, Key: "signal"},
	{Short: 't', Long: "state", Arg: sbatch.RequiredArg, Key: "state"},
	{Short: 'u', Long: "user", Arg: sbatch.RequiredArg, Key: "user"},
	{Short: 'v', Long: "verbose", Arg: sbatch.NoArg, Key: "verbose"},
	{Short: 'V', Long: "version", Arg: sbatch.NoArg, Key: "version"},
	{Short: 'w', Long: "nodelist", Arg: sbatch.RequiredArg, Key: "nodelist"},
	{Long: "wckey", Arg: sbatch.RequiredArg, Key: "wckey"},
	{Long: "help", Arg: sbatch.NoArg, Key: "help"},
	{Long: "usage", Arg: sbatch.NoArg, Key: "usage"},
}

// parseSignal reads --signal: a name with or without SIG, any case, or a
// number (COMPAT.md §4).
func parseSignal(s string) (int, bool) { return sbatch.SignalNumber(s) }

// scancelTarget is one id as the user spelled it, kept for the messages.
type scancelTarget struct {
	id      int64
	spelled string
}

// scancelMain cancels or signals jobs (COMPAT.md §4). It has Slurm's two
// paths: bare ids, where unknown and finished jobs are silently fine, and
// anything else (filters, --signal, -b, -f, -i), where they are errors.
func scancelMain(ctx context.Context, env *Env, args []string) int {
	p, err := sbatch.Getopt(scancelOpts, args, false)
	if err != nil {
		return usageError(env, err)
	}
	has := func(k string) bool { _, ok := p.Last(k); return ok }
	if has("help") {
		fmt.Fprint(env.Stdout, scancelHelp)
		return 0
	}
	if has("usage") {
		fmt.Fprint(env.Stdout, scancelUsage)
		return 0
	}
	if has("version") {
		return printVersion(env)
	}
	quiet, verbose := has("quiet"), has("verbose")

	var targets []scancelTarget
	var refs []jobRef
	for _, a := range p.Args {
		for _, s := range splitJobIDs(a) {
			r, ok := parseJobRef(s)
			if !ok {
				fmt.Fprintf(env.Stderr, "%s: error: Invalid job id %s\n", env.Prog, s)
				return 1
			}
			refs = append(refs, r)
			targets = append(targets, scancelTarget{r.id, s})
		}
	}

	// JOBID.STEP (a number) names one srun step; .batch and the other
	// forms select the whole job; 7_3 and 7_[1-3] select array tasks.
	var steps []api.StepRef
	var whole []jobRef
	for _, r := range refs {
		if _, st, ok := strings.Cut(r.spelled, "."); ok && r.tasks == nil {
			if n, err := strconv.Atoi(st); err == nil && n >= 0 {
				steps = append(steps, api.StepRef{Job: r.id, Step: n})
				continue
			}
		}
		whole = append(whole, r)
	}
	cr := controlRequest(whole)
	req := api.CancelRequest{IDs: cr.IDs, Tasks: cr.Tasks, Steps: steps}
	if v, ok := p.Last("signal"); ok {
		n, ok := parseSignal(v.Val)
		if !ok {
			// scancel 22.05.8 prints this one without the program name.
			fmt.Fprintf(env.Stderr, "Unknown job signal: %s\n", v.Val)
			return 1
		}
		req.Signal = n
	}
	if has("me") {
		req.Users = append(req.Users, currentUID())
	}
	if v, ok := p.Last("user"); ok {
		for _, u := range splitList(v.Val) {
			name, ok := lookupUser(u)
			if !ok {
				fmt.Fprintf(env.Stderr, "%s: error: Invalid user name: %s\n", env.Prog, u)
				return 1
			}
			req.Users = append(req.Users, name)
		}
	}
	if v, ok := p.Last("name"); ok {
		req.Names = splitList(v.Val)
	}
	if v, ok := p.Last("partition"); ok {
		req.Partitions = splitList(v.Val)
	}
	if v, ok := p.Last("state"); ok {
		for _, s := range splitList(v.Val) {
			// Any state name passes (a finished state just matches
			// nothing); unknown ones get scancel 22.05.8's bare message.
			st, ok := parseJobState(s)
			if !ok {
				fmt.Fprintf(env.Stderr, "Invalid job state specified: %s\n", s)
				fmt.Fprintln(env.Stderr, "Valid job states are PENDING, RUNNING, and SUSPENDED")
				return 1
			}
			req.States = append(req.States, st)
		}
	}
	// Options horad cannot apply (account, qos, reservation, nodes, wckey)
	// still switch scancel to its filtered path, as they do in Slurm.
	// TODO(api): CancelRequest has no Accounts/QOS/Reservations/Nodes/Batch.
	req.Filtered = len(req.Users) > 0 || len(req.Names) > 0 || len(req.Partitions) > 0 ||
		len(req.States) > 0 || req.Signal != 0
	for _, k := range []string{"batch", "full", "account", "qos", "reservation", "nodelist", "wckey", "interactive"} {
		req.Filtered = req.Filtered || has(k)
	}
	if len(targets) == 0 && !req.Filtered {
		fmt.Fprintf(env.Stderr, "%s: error: No job identification provided\n", env.Prog)
		return 1
	}
	if len(targets) == 0 && len(req.Users) == 0 && len(req.Names) == 0 && len(req.Partitions) == 0 && len(req.States) == 0 {
		// A signal alone names no job: Slurm refuses rather than signal all.
		fmt.Fprintf(env.Stderr, "%s: error: No job identification provided\n", env.Prog)
		return 1
	}

	cl := dial(env)
	if cl == nil {
		return 1
	}
	if verbose {
		for _, t := range targets {
			if req.Signal != 0 {
				fmt.Fprintf(env.Stderr, "%s: Signal %d to job %s\n", env.Prog, req.Signal, t.spelled)
			} else {
				fmt.Fprintf(env.Stderr, "%s: Terminating job %s\n", env.Prog, t.spelled)
			}
		}
	}
	resp, err := cl.Cancel(ctxOrBackground(ctx), req)
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: error: %s\n", env.Prog, apiErrText(err))
		return 1
	}
	return scancelReport(env, req, targets, resp.Results, quiet, verbose)
}

// scancelReport prints the per-job errors and chooses the exit status.
func scancelReport(env *Env, req api.CancelRequest, targets []scancelTarget, results []api.JobResult, quiet, verbose bool) int {
	spelled := map[int64]string{}
	for _, t := range targets {
		if _, ok := spelled[t.id]; !ok {
			spelled[t.id] = t.spelled
		}
	}
	code := 0
	for _, r := range results {
		if r.Error == "" && r.Code == "" {
			continue
		}
		msg := r.Error
		if msg == "" {
			msg = codeText(r.Code)
		}
		// Unknown and finished jobs are no error when only ids were given:
		// workflow tools cancel jobs that may have ended (COMPAT.md §4).
		benign := !req.Filtered && (r.Code == api.CodeInvalidJobID || r.Code == api.CodeAlreadyDone)
		if benign && !verbose {
			continue
		}
		if !benign {
			code = 1
		}
		if quiet && !(r.Code == api.CodeAccessDenied) {
			continue
		}
		what := "job id " + strconv.FormatInt(r.ID, 10)
		id := r.ID
		if id < 0 {
			// horad's answer for a task selector that named no task of
			// array -id: the user's spelling names it (7_99)
			id = -id
		}
		if s, ok := spelled[id]; ok {
			if i := strings.IndexByte(s, '.'); i >= 0 {
				what = "job step id " + s
			} else {
				what = "job id " + s
			}
		}
		fmt.Fprintf(env.Stderr, "%s: error: Kill job error on %s: %s\n", env.Prog, what, msg)
	}
	if req.Filtered && len(targets) == 0 && len(results) == 0 && verbose {
		fmt.Fprintf(env.Stderr, "%s: error: No active jobs match ALL job filters, including: %s\n", env.Prog, filterText(req))
	}
	return code
}

// codeText is the Slurm strerror text for an api error code, for a daemon
// that sent only the code.
func codeText(code string) string {
	switch code {
	case api.CodeInvalidJobID:
		return "Invalid job id specified"
	case api.CodeAccessDenied:
		return "Access/permission denied"
	case api.CodeAlreadyDone:
		return "Job/step already completing or completed"
	}
	return code
}

func filterText(req api.CancelRequest) string {
	var parts []string
	if len(req.Users) > 0 {
		parts = append(parts, "user_name="+strings.Join(req.Users, ","))
	}
	if len(req.Names) > 0 {
		parts = append(parts, "job_name="+strings.Join(req.Names, ","))
	}
	if len(req.Partitions) > 0 {
		parts = append(parts, "partition="+strings.Join(req.Partitions, ","))
	}
	for _, s := range req.States {
		parts = append(parts, "state="+string(s))
	}
	return strings.Join(parts, " ")
}

const scancelUsage = `Usage: scancel [-A account] [--batch] [--full] [--interactive] [-n job_name]
               [-p partition] [-Q] [-q qos] [-R reservation] [-s signal | integer]
               [-t PENDING | RUNNING | SUSPENDED] [--usage] [-u user_name]
               [--hurry] [-V] [-v] [-w hosts...] [--wckey=wckey]
               [job_id[_array_id][.step_id]]
`

const scancelHelp = `Usage: scancel [OPTIONS] [job_id[_array_id][.step_id]]
  -A, --account=account           act only on jobs charging this account
  -b, --batch                     signal batch shell for specified job
  -f, --full                      signal batch shell and all steps for specified job
  -H, --hurry                     avoid burst buffer stage out
  -i, --interactive               require response from user for each job
  -M, --clusters                  clusters to issue commands to.
      --me                        cancel jobs of the current user
  -n, --name=job_name             act only on jobs with this name
  -p, --partition=partition       act only on jobs in this partition
  -Q, --quiet                     disable warnings
  -q, --qos=qos                   act only on jobs with this quality of service
  -R, --reservation=reservation   act only on jobs with this reservation
  -s, --signal=name | integer     signal to send to job, default is SIGKILL
  -t, --state=states              act only on jobs in this state.  Valid job
                                  states are PENDING, RUNNING and SUSPENDED
  -u, --user=user_name            act only on jobs of this user
  -V, --version                   output version information and exit
  -v, --verbose                   verbosity level
  -w, --nodelist                  act only on jobs on these nodes
      --wckey=wckey               act only on jobs with this workload
                                  charactization key

Help options:
  --help                          show this help message
  --usage                         display brief usage message

hora: -A, -q, -R, -w, --wckey, -b, -f and -i are accepted but not applied by horad yet;
array task ids and JOBID.batch select the whole job; JOBID.STEP ends that srun step.
`
