package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"hora/api"
	"hora/sbatch"
)

// scontrol update NodeName=<list> State=DRAIN|DOWN|RESUME|UNDRAIN Reason=<text>
// and scontrol suspend|resume|requeue <job_list>, with the texts and exit
// codes of scontrol 22.05.8 (measured, COMPAT.md §5).

// isNodeUpdate says whether `scontrol update` words name nodes.
func isNodeUpdate(words []string) bool {
	for _, w := range words {
		if k, _, ok := strings.Cut(w, "="); ok && strings.EqualFold(k, "NodeName") {
			return true
		}
	}
	return false
}

// nodeStateWord resolves a State= value as scontrol does: case-insensitive,
// abbreviable to three characters. ok is false for a word scontrol itself
// refuses; supported is false for one it accepts but horad does not offer.
func nodeStateWord(v string) (state string, supported, ok bool) {
	u := strings.ToUpper(v)
	match := func(full string) bool { return len(u) >= min(3, len(full)) && strings.HasPrefix(full, u) }
	for _, s := range []string{api.NodeDrain, api.NodeResume, api.NodeUndrain, api.NodeDown} {
		if match(s) {
			return s, true, true
		}
	}
	for _, s := range []string{"NORESP", "FAIL", "FUTURE", "POWER_DOWN", "POWER_UP", "UNKNOWN", "IDLE",
		"ALLOCATED", "ERROR", "MIXED", "CANCEL_REBOOT"} {
		if match(s) {
			return s, false, true
		}
	}
	return "", false, false
}

func scontrolUpdateNode(ctx context.Context, env *Env, words []string) int {
	var req api.NodeUpdateRequest
	names := ""
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			fmt.Fprintf(env.Stderr, "Invalid input: %s\nRequest aborted\n", w)
			return 1
		}
		switch strings.ToLower(k) {
		case "nodename":
			names = v
		case "state":
			s, supported, ok := nodeStateWord(v)
			if !ok {
				fmt.Fprintf(env.Stderr, "Invalid input: %s\nRequest aborted\n", w)
				fmt.Fprintln(env.Stderr, "Valid states are: NoResp DRAIN FAIL FUTURE RESUME POWER_DOWN POWER_UP UNDRAIN")
				fmt.Fprintln(env.Stderr, "Not all states are valid given a node's prior state")
				return 1
			}
			if !supported {
				fmt.Fprintf(env.Stderr, "slurm_update error: Requested operation not supported on this system (State=%s: horad offers DRAIN, DOWN, RESUME and UNDRAIN)\n", s)
				return 1
			}
			req.State = s
		case "reason":
			req.Reason = v
		default:
			fmt.Fprintf(env.Stderr, "Update of this parameter is not supported: %s\nRequest aborted\n", w)
			return 1
		}
	}
	if (req.State == api.NodeDrain || req.State == api.NodeDown) && req.Reason == "" {
		fmt.Fprintln(env.Stderr, "You must specify a reason when DOWNING or DRAINING a node. Request denied")
		return 1
	}
	if req.State == "" && req.Reason == "" {
		fmt.Fprintln(env.Stderr, "No changes specified")
		return 1
	}
	hosts, err := sbatch.ExpandHostlist(names)
	if err != nil || len(hosts) == 0 {
		fmt.Fprintln(env.Stderr, "slurm_update error: Invalid node name specified")
		return 1
	}
	req.Nodes = hosts
	cl := dial(env)
	if cl == nil {
		return 1
	}
	if _, err := cl.UpdateNodes(ctx, req); err != nil {
		fmt.Fprintf(env.Stderr, "slurm_update error: %s\n", apiErrText(err))
		return 1
	}
	return 0
}

// scontrolSuspend implements suspend, resume and requeue: per failed job a
// line "<error> for job <id>", exit 1 if any failed (as scontrol 22.05.8).
func scontrolSuspend(ctx context.Context, env *Env, verb string, words []string) int {
	req, ok := jobIDWords(env, verb, words, false)
	if !ok {
		return 1
	}
	cl := dial(env)
	if cl == nil {
		return 1
	}
	path := api.PathRequeue
	req.Hold = verb == "requeuehold"
	switch verb {
	case "suspend":
		path = api.PathSuspend
	case "resume":
		path = api.PathResume
	}
	resp, err := cl.Control(ctx, path, req)
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: error: %s\n", env.Prog, apiErrText(err))
		return 1
	}
	if reportJobResults(env, resp.Results) != "" {
		return 1
	}
	return 0
}

// nodeStateLong is `scontrol show node` State=: the base state, "*" when
// the node does not answer, "+DRAIN" when drained or draining. Slurm 22.05
// prints node_state_string of the state without its DRAIN flag, so an idle
// node in an active reservation is RESERVED, drained RESERVED+DRAIN, and
// IDLE* when it does not answer (that test comes first). In a MAINT
// reservation an idle or drained node is MAINT (MAINT+DRAIN), an allocated
// or down one ALLOCATED$ / DOWN$ ("$" replaces "*": MAINT is tested first).
func nodeStateLong(n *api.Node) string {
	base := "IDLE"
	switch strings.ToLower(n.State) {
	case "allocated", "draining":
		base = "ALLOCATED"
	case "down":
		base = "DOWN"
	case "reserved":
		base = "RESERVED"
	case "idle", "drained", "maint":
		switch {
		case n.Maint:
			base = "MAINT"
		case n.Reserved && !n.NotResponding:
			base = "RESERVED"
		}
	default:
		base = strings.ToUpper(nodeState(n.State, true))
	}
	switch {
	case n.Maint && base != "MAINT":
		base += "$"
	case n.NotResponding:
		base += "*"
	}
	if n.Drain {
		base += "+DRAIN"
	}
	return base
}

// tresText writes a TRES list as Slurm prints CfgTRES/AllocTRES:
// cpu=4,mem=4000M,billing=4,gres/gpu=2 (billing only when given).
func tresText(cpus int, memMB int64, gres string, billing int) string {
	s := fmt.Sprintf("cpu=%d", cpus)
	if memMB > 0 || billing > 0 {
		// An allocation without memory shows none; a node always shows its own.
		s += ",mem=" + mbText(memMB)
	}
	if billing > 0 {
		s += fmt.Sprintf(",billing=%d", billing)
	}
	// Typed gres count toward both gres/NAME and gres/NAME:TYPE.
	totals := map[string]int{}
	var names []string
	for _, g := range strings.Split(gres, ",") {
		if g == "" {
			continue
		}
		parts := strings.Split(g, ":")
		n, err := strconv.Atoi(parts[len(parts)-1])
		if err != nil {
			continue
		}
		keys := []string{"gres/" + parts[0]}
		if len(parts) == 3 {
			keys = append(keys, "gres/"+parts[0]+":"+parts[1])
		}
		for _, k := range keys {
			if _, ok := totals[k]; !ok {
				names = append(names, k)
			}
			totals[k] += n
		}
	}
	sort.Strings(names)
	for _, k := range names {
		s += fmt.Sprintf(",%s=%d", k, totals[k])
	}
	return s
}

// mbText is Slurm's TRES memory: 4000M, 16G when whole gigabytes.
func mbText(mb int64) string {
	if mb > 0 && mb%1024 == 0 {
		return strconv.FormatInt(mb/1024, 10) + "G"
	}
	return strconv.FormatInt(mb, 10) + "M"
}
