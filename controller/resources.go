package controller

import (
	"os"
	"slices"
	"strconv"
	"strings"

	"hora/api"
	"hora/sbatch"
	"hora/scheduler"
)

// requestOf turns a job spec's resource options into the Engine's request
// (nil when the job takes whole nodes). A spec that cannot be read (a
// client other than sbatch sent bad gres or hostlists) is an *api.Error
// with Slurm's text.
func requestOf(s *api.JobSpec) (*scheduler.Request, error) {
	if !s.WantsResources() && !s.Oversubscribe {
		return nil, nil
	}
	q := &scheduler.Request{
		NTasks: s.NTasks, CPUsPerTask: max(s.CPUsPerTask, 1), TasksPerNode: s.NTasksPerNode,
		NodesSet: s.Nodes > 0, NodesMax: s.NodesMax, MinCPUs: s.MinCPUs,
		MemPerNode: s.MemMB, MemAll: s.MemAll, MemPerCPU: s.MemPerCPU, MemPerGPU: s.MemPerGPU,
		CPUsPerGPU: s.CPUsPerGPU, NoMultithread: s.NoMultithread,
		Exclusive: s.Exclusive != "" && s.Exclusive != "user", ExclusiveUser: s.Exclusive == "user",
		Oversubscribe: s.Oversubscribe, OnlyShare: !s.WantsResources(),
	}
	q.MemGiven = s.MemMB > 0 || s.MemAll || s.MemPerCPU > 0 || s.MemPerGPU > 0
	if q.NTasks == 0 {
		// Slurm: one task per node unless -n or --ntasks-per-node says.
		q.NTasks = max(s.Nodes, 1)
	}
	badGres := &api.Error{Message: sbatch.MsgInvalidGres, Code: "InvalidGres"}
	gs, err := sbatch.ParseGres(s.Gres)
	if err != nil {
		return nil, badGres
	}
	for _, g := range gs {
		q.Gres = append(q.Gres, scheduler.GresReq{Name: g.Name, Type: g.Type, Count: g.Count})
	}
	if s.GPUsPerNode != "" {
		typ, n, err := sbatch.ParseTypedCount(s.GPUsPerNode)
		if err != nil {
			return nil, badGres
		}
		q.Gres = append(q.Gres, scheduler.GresReq{Name: "gpu", Type: typ, Count: n})
	}
	if s.GPUsPerTask != "" {
		typ, n, err := sbatch.ParseTypedCount(s.GPUsPerTask)
		if err != nil {
			return nil, badGres
		}
		q.GPUsPerTask, q.GPUType = n, typ
	}
	if s.GPUs != "" {
		typ, n, err := sbatch.ParseTypedCount(s.GPUs)
		if err != nil {
			return nil, badGres
		}
		q.GPUs, q.GPUType = n, typ
	}
	badNodes := &api.Error{Message: "Requested node configuration is not available", Code: api.CodeInvalidNodeCount}
	if s.NodeList != "" {
		if q.NodeList, err = sbatch.ExpandHostlist(s.NodeList); err != nil {
			return nil, badNodes
		}
	}
	if s.Exclude != "" {
		if q.Exclude, err = sbatch.ExpandHostlist(s.Exclude); err != nil {
			return nil, badNodes
		}
	}
	if s.Constraint != "" {
		if q.Features, q.AnyFeature, err = sbatch.ParseConstraint(s.Constraint); err != nil {
			return nil, &api.Error{Message: "Invalid feature specification", Code: api.CodeBadRequest}
		}
	}
	return q, nil
}

// apiAlloc is the wire form of the Engine's allocation.
func apiAlloc(as []scheduler.NodeAlloc) []api.NodeAlloc {
	if len(as) == 0 {
		return nil
	}
	out := make([]api.NodeAlloc, len(as))
	for i, a := range as {
		out[i] = api.NodeAlloc{Node: a.Node, CPUs: slices.Clone(a.CPUs), MemMB: a.MemMB, Tasks: a.Tasks, Gres: a.GresText()}
		for _, g := range a.Gres {
			if g.Name == "gpu" {
				out[i].GPUs = append(out[i].GPUs, g.IDs...)
			}
		}
		slices.Sort(out[i].GPUs)
	}
	return out
}

// schedAlloc reads an allocation back for the Engine (recovery).
func schedAlloc(as []api.NodeAlloc) []scheduler.NodeAlloc {
	if len(as) == 0 {
		return nil
	}
	out := make([]scheduler.NodeAlloc, len(as))
	for i, a := range as {
		out[i] = scheduler.NodeAlloc{Node: a.Node, CPUs: slices.Clone(a.CPUs), MemMB: a.MemMB, Tasks: a.Tasks, Gres: parseGresText(a.Gres)}
	}
	return out
}

// parseGresText reads what NodeAlloc.GresText writes:
// name[:type]:count[(IDX:0-1,3)], comma-separated.
func parseGresText(s string) []scheduler.GresUse {
	var out []scheduler.GresUse
	for s != "" {
		item := s
		// Commas also separate index ranges inside (IDX:...).
		depth, cut := 0, len(s)
		for k := 0; k < len(s); k++ {
			switch s[k] {
			case '(':
				depth++
			case ')':
				depth--
			case ',':
				if depth == 0 && cut == len(s) {
					cut = k
				}
			}
		}
		item, s = s[:cut], strings.TrimPrefix(s[cut:], ",")
		var ids []int
		if k := strings.Index(item, "(IDX:"); k >= 0 {
			for _, r := range strings.Split(strings.TrimSuffix(item[k+5:], ")"), ",") {
				lo, hi, isRange := strings.Cut(r, "-")
				a, err1 := strconv.Atoi(lo)
				b := a
				var err2 error
				if isRange {
					b, err2 = strconv.Atoi(hi)
				}
				if err1 != nil || err2 != nil {
					continue
				}
				for x := a; x <= b; x++ {
					ids = append(ids, x)
				}
			}
			item = item[:k]
		}
		parts := strings.Split(item, ":")
		if len(parts) < 2 {
			continue
		}
		n, err := strconv.Atoi(parts[len(parts)-1])
		if err != nil {
			continue
		}
		g := scheduler.GresUse{Name: parts[0], Count: n, IDs: ids}
		if len(parts) == 3 {
			g.Type = parts[1]
		}
		out = append(out, g)
	}
	return out
}

// compressCounts writes per-node counts as Slurm's SLURM_JOB_CPUS_PER_NODE
// and SLURM_TASKS_PER_NODE: runs of equal values as v(xN), "2(x3),1".
func compressCounts(v []int) string {
	var parts []string
	for i := 0; i < len(v); {
		j := i
		for j+1 < len(v) && v[j+1] == v[i] {
			j++
		}
		parts = append(parts, repeatCount(strconv.Itoa(v[i]), j-i+1))
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// allocOn is the job's allocation on node, or nil.
func allocOn(j *api.Job, node string) *api.NodeAlloc {
	for k := range j.Alloc {
		if j.Alloc[k].Node == node {
			return &j.Alloc[k]
		}
	}
	return nil
}

// resourceEnv sets the variables Slurm derives from an allocation
// (COMPAT.md §2.1) for the step on node.
func resourceEnv(j *api.Job, node string, set func(k, v string)) {
	if len(j.Alloc) == 0 {
		return
	}
	cpus := make([]int, len(j.Alloc))
	tasks := make([]int, len(j.Alloc))
	ntasks := 0
	for k, a := range j.Alloc {
		cpus[k], tasks[k] = len(a.CPUs), a.Tasks
		ntasks += a.Tasks
	}
	set("SLURM_JOB_CPUS_PER_NODE", compressCounts(cpus))
	set("SLURM_TASKS_PER_NODE", compressCounts(tasks))
	set("SLURM_NTASKS", strconv.Itoa(ntasks))
	set("SLURM_NPROCS", strconv.Itoa(ntasks))
	if j.Spec.NTasksPerNode > 0 {
		set("SLURM_NTASKS_PER_NODE", strconv.Itoa(j.Spec.NTasksPerNode))
	}
	a := allocOn(j, node)
	if a == nil {
		return
	}
	set("SLURM_CPUS_ON_NODE", strconv.Itoa(len(a.CPUs)))
	switch {
	case j.Spec.MemPerCPU > 0:
		set("SLURM_MEM_PER_CPU", strconv.FormatInt(j.Spec.MemPerCPU, 10))
	case j.Spec.MemPerGPU > 0:
		set("SLURM_MEM_PER_GPU", strconv.FormatInt(j.Spec.MemPerGPU, 10))
	case a.MemMB > 0:
		set("SLURM_MEM_PER_NODE", strconv.FormatInt(a.MemMB, 10))
	}
	if len(a.GPUs) > 0 {
		ids := make([]string, len(a.GPUs))
		for k, g := range a.GPUs {
			ids[k] = strconv.Itoa(g)
		}
		list := strings.Join(ids, ",")
		set("CUDA_VISIBLE_DEVICES", list)
		set("GPU_DEVICE_ORDINAL", list)
		set("SLURM_JOB_GPUS", list)
		set("SLURM_GPUS_ON_NODE", strconv.Itoa(len(a.GPUs)))
	}
}

// resourceView fills a node's configured and allocated resources.
func resourceView(n *api.Node, s scheduler.NodeSpec, ni scheduler.NodeInfo, freeMem int64, load float64) {
	n.Sockets, n.CoresPerSocket, n.ThreadsPerCore = s.Sockets, s.Cores, s.Threads
	n.MemoryMB = s.MemMB
	n.Features = s.Features
	n.Gres = gresDefText(s.Gres)
	n.AllocCPUs, n.AllocMemMB, n.AllocGres = ni.AllocCPUs, ni.AllocMemMB, gresDefText(ni.AllocGres)
	n.FreeMemMB, n.CPULoad = freeMem, load
	for _, id := range ni.Jobs {
		if !slices.Contains(n.Jobs, int64(id)) {
			n.Jobs = append(n.Jobs, int64(id))
		}
	}
}

func gresDefText(gs []scheduler.GresDef) string {
	var parts []string
	for _, g := range gs {
		if g.Type != "" {
			parts = append(parts, g.Name+":"+g.Type+":"+strconv.Itoa(g.Count))
		} else {
			parts = append(parts, g.Name+":"+strconv.Itoa(g.Count))
		}
	}
	return strings.Join(parts, ",")
}

// probeLoad reads this machine's available memory (MiB) and 1-minute load
// for local nodes (scontrol FreeMem, CPULoad); 0 for SSH nodes, which show
// N/A.
func (c *Controller) probeLoad() (int64, float64) {
	if c.cfg.Executor == "ssh" {
		return 0, 0
	}
	var mem int64
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, ln := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(ln, "MemAvailable:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				mem = kb / 1024
			}
		}
	}
	var load float64
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			load, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return mem, load
}

// overSubscribeText is a partition's OverSubscribe as scontrol prints it
// (FORCE:4 for "force"); config has already refused a bad one.
func overSubscribeText(s string) string {
	o, err := scheduler.ParseOverSubscribe(s)
	if err != nil {
		return "NO"
	}
	return o.String()
}
