package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"hora/api"
	"hora/sbatch"
)

// isJobUpdate: `scontrol update JobId=…` or `JobName=…` (without a
// NodeName= or a reservation, which have their own updates).
func isJobUpdate(words []string) bool {
	for _, w := range words {
		k, _, _ := strings.Cut(w, "=")
		switch strings.ToLower(k) {
		case "jobid", "jobname":
			return true
		}
	}
	return false
}

// scontrolTop is `scontrol top <job_list>`: the jobs, in the order given,
// move to the top of their owner's pending jobs in their partition
// (operators only, as Slurm without enable_user_top).
func scontrolTop(ctx context.Context, env *Env, args []string) int {
	if len(args) == 0 {
		fmt.Fprintf(env.Stderr, "too few arguments for keyword:top\n")
		return 1
	}
	var ids []int64
	for _, s := range strings.Split(args[0], ",") {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 {
			fmt.Fprintf(env.Stderr, "Invalid job id specified for job %s\n", args[0])
			return 1
		}
		ids = append(ids, id)
	}
	cl := dial(env)
	if cl == nil {
		return 1
	}
	resp, err := cl.Update(ctx, api.JobUpdateRequest{IDs: ids, Top: true})
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s for job %s\n", apiErrText(err), args[0])
		return 1
	}
	for _, r := range resp.Results {
		if r.Error != "" {
			fmt.Fprintf(env.Stderr, "%s for job %s\n", r.Error, args[0])
			return 1
		}
	}
	return 0
}

// scontrolUpdateJob parses `scontrol update JobId=<ids> Key=Value…` as
// scontrol does — values it checks itself (TimeLimit, StartTime, Deadline,
// NumNodes, Nice, Priority) fail here with its texts, unknown keys with
// "Update of this parameter is not supported" — and sends one request;
// horad's refusals print "<error> for job <id>", exit 1.
func scontrolUpdateJob(ctx context.Context, env *Env, words []string) int {
	var req api.JobUpdateRequest
	var refs []jobRef
	haveID := false
	for _, w := range words {
		if k, v, ok := strings.Cut(w, "="); ok && strings.EqualFold(k, "jobid") {
			haveID = true
			for _, s := range splitJobIDs(v) {
				r, ok := parseJobRef(s)
				if !ok {
					fmt.Fprintf(env.Stderr, "Invalid job id specified for job %s\n", s)
					return 1
				}
				refs = append(refs, r)
			}
		}
	}
	now := time.Now()
	bad := func(key string) int {
		fmt.Fprintf(env.Stderr, "%s: error: Invalid %s value\n", env.Prog, key)
		return 1
	}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			fmt.Fprintf(env.Stderr, "Invalid input: %s\nRequest aborted\n", w)
			return 1
		}
		switch strings.ToLower(k) {
		case "jobid":
		case "jobname", "name":
			if haveID || strings.EqualFold(k, "name") {
				req.Name = &v
			} else {
				req.ByName = v
			}
		case "timelimit":
			secs, err := sbatch.ParseSlurmDuration(v)
			if err != nil {
				return bad("TimeLimit")
			}
			if secs == 0 {
				secs = api.NoLimit // 0, UNLIMITED, INFINITE
			}
			req.TimeLimit = &secs
		case "partition":
			req.Partition = &v
		case "numnodes", "reqnodes", "minnodes":
			lo, _, _ := strings.Cut(v, "-")
			n, err := strconv.Atoi(lo)
			if err != nil || n < 0 {
				return bad("NumNodes")
			}
			req.Nodes = &n
		case "dependency":
			req.Dependency = &v
		case "starttime", "begintime":
			t, err := sbatch.ParseSlurmTime(v, now)
			if err != nil {
				return bad("StartTime")
			}
			u := t.Unix()
			req.Begin = &u
		case "deadline":
			t, err := sbatch.ParseSlurmTime(v, now)
			if err != nil {
				return bad("Deadline")
			}
			u := t.Unix()
			req.Deadline = &u
		case "comment":
			req.Comment = &v
		case "nice":
			n, err := strconv.Atoi(v)
			if err != nil {
				return bad("Nice")
			}
			if n < -2147483645 || n > 2147483645 {
				fmt.Fprintf(env.Stderr, "%s: error: Nice value out of range (+/- 2147483645). Value ignored\n", env.Prog)
				return 1
			}
			req.Nice = &n
		case "priority":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || n >= 4294967295 {
				fmt.Fprintf(env.Stderr, "%s: error: Invalid Priority value: %s\n", env.Prog, v)
				return 1
			}
			req.Priority = &n
		case "excnodelist":
			req.Exclude = &v
		case "features":
			req.Features = &v
		case "rtmisses":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return bad("RTMisses")
			}
			req.RTMisses = &n
		case "arraytaskthrottle":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return bad("ArrayTaskThrottle")
			}
			req.ArrayThrottle = &n
		default:
			fmt.Fprintf(env.Stderr, "Update of this parameter is not supported: %s\nRequest aborted\n", w)
			return 1
		}
	}
	cr := controlRequest(refs)
	req.IDs, req.Tasks = cr.IDs, cr.Tasks
	if len(req.IDs) == 0 && len(req.Tasks) == 0 && req.ByName == "" {
		fmt.Fprintf(env.Stderr, "No job identification provided\nRequest aborted\n")
		return 1
	}
	cl := dial(env)
	if cl == nil {
		return 1
	}
	resp, err := cl.Update(ctx, req)
	if err != nil {
		fmt.Fprintf(env.Stderr, "slurm_update error: %s\n", apiErrText(err))
		return 1
	}
	if reportJobResults(env, resp.Results) != "" {
		return 1
	}
	return 0
}
