package main

// pbsnodes (OP:src/cmds/pbsnodes.c, TQ:src/cmds/pbsnodes.c): hora's nodes
// as PBS vnodes. -a (the default) lists every node's attributes, "name" then
// "     attr = value" lines and a blank line; -l lists the nodes that are down
// or offline; -o/-c/-r mark nodes offline or clear the mark (operators), as
// scontrol update State=DRAIN/RESUME does.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"hora/api"
	"hora/cmd/hora/listing"
	"hora/sbatch"
)

// pbsNodeRow is one node with its session, for the attribute tables.
type pbsNodeRow struct {
	*api.Node
	s    *pbsSession
	jobs []api.Job
}

// pbsNodeState is the node's PBS state: free, job-busy (OpenPBS) / job-exclusive
// (Torque), offline, down, and "state-unknown,down" when not responding.
func pbsNodeState(n *api.Node, torque bool) string {
	switch {
	case n.NotResponding || n.State == "down":
		if n.Drain {
			return "down,offline"
		}
		return "down"
	case n.Drain:
		return "offline"
	case n.State == "allocated":
		if torque {
			return "job-exclusive"
		}
		return "job-busy"
	}
	return "free"
}

func (r *pbsNodeRow) jobList() string {
	var parts []string
	for _, id := range r.Jobs {
		full := r.s.jobID(id)
		if r.s.torque() {
			parts = append(parts, "0/"+full)
		} else {
			parts = append(parts, full+"/0")
		}
	}
	return strings.Join(parts, ", ")
}

func nv(f func(r *pbsNodeRow) string) func(*listing.Ctx, *pbsNodeRow) string {
	return func(_ *listing.Ctx, r *pbsNodeRow) string { return f(r) }
}

var (
	pbsNodeConst = func(v string) func(*listing.Ctx, *pbsNodeRow) string {
		return nv(func(*pbsNodeRow) string { return v })
	}
)

func pbsNodeName(_ *listing.Ctx, r *pbsNodeRow) string { return r.Name }

func pbsNodeStateV(_ *listing.Ctx, r *pbsNodeRow) string { return pbsNodeState(r.Node, r.s.torque()) }

func pbsNodeCPUs(_ *listing.Ctx, r *pbsNodeRow) string { return strconv.Itoa(r.CPUs) }

func pbsNodeJobs(_ *listing.Ctx, r *pbsNodeRow) string { return r.jobList() }

func pbsNodeMem(_ *listing.Ctx, r *pbsNodeRow) string {
	if r.MemoryMB == 0 {
		return ""
	}
	return strconv.FormatInt(r.MemoryMB*1024, 10) + "kb"
}

func pbsNodeComment(_ *listing.Ctx, r *pbsNodeRow) string { return r.Reason }

func pbsNodeQueues(_ *listing.Ctx, r *pbsNodeRow) string { return strings.Join(r.Partitions, ",") }

func pbsNodeVersion(*listing.Ctx, *pbsNodeRow) string { return pbsVersion }

func pbsNodeAssignedCPUs(_ *listing.Ctx, r *pbsNodeRow) string {
	used := 0
	for i := range r.jobs {
		if slices.Contains(r.jobs[i].Nodes, r.Name) {
			used += max(jobCPUs(&r.jobs[i])/max(len(r.jobs[i].Nodes), 1), 1)
		}
	}
	return strconv.Itoa(min(used, r.CPUs))
}

// openpbsNodeAttrs are the attributes of `pbsnodes -a` in OpenPBS's order.
var openpbsNodeAttrs = listing.Lazy[pbsNodeRow]{Build: func() *listing.Table[pbsNodeRow] {
	return listing.NewTable([]listing.Field[pbsNodeRow]{
		{Names: []string{"Mom"}, Value: pbsNodeName},
		{Names: []string{"Port"}, Value: pbsNodeConst("15002")},
		{Names: []string{"pbs_version"}, Value: pbsNodeVersion},
		{Names: []string{"ntype"}, Value: pbsNodeConst("PBS")},
		{Names: []string{"state"}, Value: pbsNodeStateV},
		{Names: []string{"pcpus"}, Value: pbsNodeCPUs},
		{Names: []string{"jobs"}, Value: pbsNodeJobs},
		{Names: []string{"resources_available.arch"}, Value: pbsNodeConst("linux")},
		{Names: []string{"resources_available.host"}, Value: pbsNodeName},
		{Names: []string{"resources_available.mem"}, Value: pbsNodeMem},
		{Names: []string{"resources_available.ncpus"}, Value: pbsNodeCPUs},
		{Names: []string{"resources_available.vnode"}, Value: pbsNodeName},
		{Names: []string{"resources_assigned.ncpus"}, Value: pbsNodeAssignedCPUs},
		{Names: []string{"comment"}, Value: pbsNodeComment},
		{Names: []string{"queue"}, Value: pbsNodeQueues},
		{Names: []string{"resv_enable"}, Value: pbsNodeConst("True")},
		{Names: []string{"sharing"}, Value: pbsNodeConst("default_shared")},
	})
}}

// torqueNodeAttrs are Torque's (state, np, properties, ntype, jobs, status).
var torqueNodeAttrs = listing.Lazy[pbsNodeRow]{Build: func() *listing.Table[pbsNodeRow] {
	return listing.NewTable([]listing.Field[pbsNodeRow]{
		{Names: []string{"state"}, Value: pbsNodeStateV},
		{Names: []string{"power_state"}, Value: pbsNodeConst("Running")},
		{Names: []string{"np"}, Value: pbsNodeCPUs},
		{Names: []string{"properties"}, Value: pbsNodeQueues},
		{Names: []string{"ntype"}, Value: pbsNodeConst("cluster")},
		{Names: []string{"jobs"}, Value: pbsNodeJobs},
		{Names: []string{"status"}, Value: nv(func(r *pbsNodeRow) string {
			st := "opsys=linux,uname=Linux " + r.Name + ",ncpus=" + strconv.Itoa(r.CPUs)
			if r.MemoryMB > 0 {
				st += ",physmem=" + strconv.FormatInt(r.MemoryMB*1024, 10) + "kb"
			}
			return st + ",state=" + pbsNodeState(r.Node, true)
		})},
		{Names: []string{"note"}, Value: pbsNodeComment},
		{Names: []string{"mom_service_port"}, Value: pbsNodeConst("15002")},
		{Names: []string{"mom_manager_port"}, Value: pbsNodeConst("15003")},
		{Names: []string{"gpus"}, Value: pbsNodeConst("0")},
	})
}}

func pbsnodesMain(ctx context.Context, env *Env, args []string) int {
	for _, a := range args {
		if a == "--version" {
			// Torque prints its version on stderr (TQ pbsnodes.c); toil
			// runs `pbsnodes --version` and looks for "PBSPro" in it.
			if s, _ := pbsConnect(ctx, env); s != nil && s.torque() {
				fmt.Fprintf(env.Stderr, "Version: %s\nCommit: %s\n", pbsVersion, "hora")
				return 0
			}
			fmt.Fprintln(env.Stdout, "pbs_version = "+pbsVersion)
			return 0
		}
	}
	opts := pbsFixedOpts("pbsnodes")
	p, err := sbatch.Getopt(opts, args, false)
	if err != nil {
		var ue *sbatch.UsageError
		if errors.As(err, &ue) {
			fmt.Fprintf(env.Stderr, "pbsnodes: %s\n", ue.Msg)
		}
		fmt.Fprint(env.Stderr, pbsnodesUsage)
		return 2
	}
	has := func(k string) bool { _, ok := p.Last(k); return ok }
	s, code := pbsConnect(ctx, env)
	if s == nil {
		return code
	}
	ctx = ctxOrBackground(ctx)
	if has("o") || has("c") || has("r") {
		if len(p.Args) == 0 {
			fmt.Fprintln(env.Stderr, "pbsnodes: no nodes given")
			return 2
		}
		req := api.NodeUpdateRequest{Nodes: p.Args, State: "RESUME"}
		if has("o") {
			comment := "offline by " + env.Getenv("USER")
			if v, ok := p.Last("C"); ok {
				comment = v.Val
			} else if v, ok := p.Last("N"); ok {
				comment = v.Val
			}
			req.State, req.Reason = "DRAIN", comment
		}
		if _, err := s.cl.UpdateNodes(ctx, req); err != nil {
			fmt.Fprintf(env.Stderr, "Error marking node %s - %s\n", strings.Join(p.Args, ","), apiErrText(err))
			return 1
		}
		return 0
	}
	nodes, err := s.cl.Nodes(ctx)
	if err != nil {
		fmt.Fprintf(env.Stderr, "pbsnodes: %s\n", apiErrText(err))
		return 1
	}
	w := bufio.NewWriter(env.Stdout)
	defer w.Flush()
	status := 0
	var sel []*api.Node
	if len(p.Args) == 0 {
		for i := range nodes {
			sel = append(sel, &nodes[i])
		}
	}
	for _, name := range p.Args {
		k := slices.IndexFunc(nodes, func(n api.Node) bool { return n.Name == name })
		if k < 0 {
			fmt.Fprintf(env.Stderr, "pbsnodes: Unknown node  %s\n", name)
			status = sbatch.PBSExit(15062) // PBSE_UNKNODE
			continue
		}
		sel = append(sel, &nodes[k])
	}
	if has("l") {
		for _, n := range sel {
			st := pbsNodeState(n, s.torque())
			if st == "free" || st == "job-busy" || st == "job-exclusive" {
				continue
			}
			if s.torque() {
				fmt.Fprintf(w, "%-20.20s %s\n", n.Name, st)
			} else {
				fmt.Fprintf(w, "%-20s %s %s\n", n.Name, st, n.Reason)
			}
		}
		return status
	}
	var jobs []api.Job
	if !s.torque() {
		jobs, _ = s.cl.Jobs(ctx, api.JobFilter{States: []api.JobState{api.StateRunning, api.StateSuspended}})
	}
	table := openpbsNodeAttrs.Get()
	if s.torque() {
		table = torqueNodeAttrs.Get()
	}
	c := listing.NewCtx(nowFunc(), "", pbsDuration)
	var attrs []listing.Attr
	if v, ok := p.Last("F"); ok && strings.EqualFold(v.Val, "json") && !s.torque() {
		// OP pbsnodes -F json: {"timestamp", "pbs_version", "pbs_server",
		// "nodes": {name: {attributes, resources nested, jobs an array}}}.
		j := &listing.CJSON{}
		j.Open()
		j.Num("timestamp", strconv.FormatInt(c.NowUnix, 10))
		j.Str("pbs_version", pbsVersion)
		j.Str("pbs_server", s.server)
		j.Key("nodes")
		j.Open()
		for _, n := range sel {
			attrs = table.AppendAttrs(attrs[:0], c, &pbsNodeRow{n, s, jobs})
			j.Key(n.Name)
			j.Open()
			var plain []listing.Attr
			for _, a := range attrs {
				if a.Name != "jobs" {
					plain = append(plain, a)
				}
			}
			j.Members(plain)
			if len(n.Jobs) > 0 {
				var ids []string
				for _, id := range n.Jobs {
					ids = append(ids, s.jobID(id)+"/0")
				}
				j.Strs("jobs", ids)
			}
			j.Close()
		}
		j.Close()
		j.Close()
		j.B = append(j.B, '\n')
		w.Write(j.B)
		return status
	}
	for _, n := range sel {
		attrs = table.AppendAttrs(attrs[:0], c, &pbsNodeRow{n, s, jobs})
		fmt.Fprintln(w, n.Name)
		for _, a := range attrs {
			fmt.Fprintf(w, "     %s = %s\n", a.Name, a.Value)
		}
		fmt.Fprintln(w)
	}
	return status
}
