package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"hora/api"
	"hora/cmd/hora/listing"
	"hora/sbatch"
)

// sinfo's fixed layouts (COMPAT.md §5.1; -N -l measured on 22.05.8).
const (
	sinfoDefaultFormat = "%#P %.5a %.10l %.6D %.6t %N"
	sinfoSummarize     = "%#P %.5a %.10l %.16F %N"
	sinfoLongFormat    = "%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %.11i %N"
	// -N and -N -l right-justify the partition (22.05.8 opts.c:
	// "partition:.9"; measured by the golden suite), CPUS left-justified.
	sinfoNodeFormat   = "%#N %.6D %#.P %6t"
	sinfoNodeLong     = "%#N %.6D %#.P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E"
	sinfoReasonFormat = "%20E %9u %19H %N"
)

var sinfoOpts = []sbatch.Opt{
	{Short: 'a', Long: "all", Arg: sbatch.NoArg, Key: "all"},
	{Short: 'd', Long: "dead", Arg: sbatch.NoArg, Key: "dead"},
	{Short: 'e', Long: "exact", Arg: sbatch.NoArg, Key: "exact"},
	{Short: 'h', Long: "noheader", Arg: sbatch.NoArg, Key: "noheader"},
	{Short: 'i', Long: "iterate", Arg: sbatch.RequiredArg, Key: "iterate"},
	{Short: 'l', Long: "long", Arg: sbatch.NoArg, Key: "long"},
	{Short: 'M', Long: "clusters", Arg: sbatch.RequiredArg, Key: "clusters"},
	{Short: 'n', Long: "nodes", Arg: sbatch.RequiredArg, Key: "nodes"},
	{Short: 'N', Long: "Node", Arg: sbatch.NoArg, Key: "Node"},
	{Short: 'o', Long: "format", Arg: sbatch.RequiredArg, Key: "format"},
	{Short: 'O', Long: "Format", Arg: sbatch.RequiredArg, Key: "Format"},
	{Short: 'p', Long: "partition", Arg: sbatch.RequiredArg, Key: "partition"},
	{Short: 'r', Long: "responding", Arg: sbatch.NoArg, Key: "responding"},
	{Short: 'R', Long: "list-reasons", Arg: sbatch.NoArg, Key: "list-reasons"},
	{Short: 's', Long: "summarize", Arg: sbatch.NoArg, Key: "summarize"},
	{Short: 'S', Long: "sort", Arg: sbatch.RequiredArg, Key: "sort"},
	{Short: 't', Long: "states", Arg: sbatch.RequiredArg, Key: "states"},
	{Short: 'v', Long: "verbose", Arg: sbatch.NoArg, Key: "verbose"},
	{Short: 'V', Long: "version", Arg: sbatch.NoArg, Key: "version"},
	{Long: "help", Arg: sbatch.NoArg, Key: "help"},
	{Long: "usage", Arg: sbatch.NoArg, Key: "usage"},
}

// sinfoFields are sinfo's format letters with their headers (sinfo.1,
// COMPAT.md §5.1); Keep marks time columns and node lists, padded but never
// cut (as squeue). Values are computed per group of nodes by sinfoView.
var sinfoFields = listing.Lazy[siGroup]{Build: func() *listing.Table[siGroup] {
	heads := []struct {
		l byte
		h string
	}{{'P', "PARTITION"}, {'R', "PARTITION"}, {'a', "AVAIL"}, {'l', "TIMELIMIT"}, {'L', "DEFAULTTIME"},
		{'D', "NODES"}, {'t', "STATE"}, {'T', "STATE"}, {'N', "NODELIST"}, {'n', "HOSTNAMES"},
		{'o', "NODE_ADDR"}, {'c', "CPUS"}, {'C', "CPUS(A/I/O/T)"}, {'m', "MEMORY"}, {'e', "FREE_MEM"},
		{'O', "CPU_LOAD"}, {'G', "GRES"}, {'f', "AVAIL_FEATURES"}, {'b', "ACTIVE_FEATURES"},
		{'E', "REASON"}, {'s', "JOB_SIZE"}, {'r', "ROOT"}, {'h', "OVERSUBSCRIBE"}, {'g', "GROUPS"},
		{'i', "RESERVATION"}, {'F', "NODES(A/I/O/T)"}, {'z', "S:C:T"}, {'d', "TMP_DISK"},
		{'w', "WEIGHT"}, {'u', "USER"}, {'H', "TIMESTAMP"}, {'X', "SOCKETS"}, {'Y', "CORES"}, {'Z', "THREADS"}}
	fields := make([]listing.Field[siGroup], len(heads))
	for i, h := range heads {
		fields[i] = listing.Field[siGroup]{Letter: h.l, Header: h.h, Keep: strings.IndexByte("lLNnH", h.l) >= 0}
	}
	t := listing.NewTable(fields)
	t.AllowAuto = true
	return t
}}

// sinfoHeader is the column title of a letter.
func sinfoHeader(kind byte) string {
	if f, ok := sinfoFields.Get().ByLetter(kind); ok {
		return f.Header
	}
	return ""
}

// sinfoAggregate lists the letters computed over a group of nodes rather
// than per node; nodes are grouped on all the other displayed fields.
const sinfoAggregate = "DNnoCF"

// siField is one piece of an sinfo line.
type siField struct {
	kind   byte // 0 = literal
	col    listing.Column
	auto   bool // '#': width of the longest value (COMPAT.md §5.1)
	suffix string
	text   string
}

// parseSinfoFormat reads an -o string with the listing engine's parser.
func parseSinfoFormat(f string) (fields []siField, bad []string) {
	items, bad := sinfoFields.Get().ParsePercent(f)
	for _, it := range items {
		if it.Field == nil {
			fields = append(fields, siField{text: it.Text})
			continue
		}
		fields = append(fields, siField{kind: it.Field.Letter, col: it.Col, auto: it.Auto, suffix: it.Suffix})
	}
	return fields, bad
}

// nodeStateNames maps horad's node states to sinfo's compact (%t) and long
// (%T) spellings (COMPAT.md §5.1).
var nodeStateNames = map[string][2]string{
	"idle": {"idle", "idle"}, "allocated": {"alloc", "allocated"}, "mixed": {"mix", "mixed"},
	"down": {"down", "down"}, "drained": {"drain", "drained"}, "draining": {"drng", "draining"},
	"completing": {"comp", "completing"}, "fail": {"fail", "fail"}, "failing": {"failg", "failing"},
	"future": {"futr", "future"}, "maint": {"maint", "maint"}, "reserved": {"resv", "reserved"},
	"unknown": {"unk", "unknown"},
}

// noRespSuffix is sinfo's "*": the node does not answer; or "$" for a
// node of an active MAINT reservation that is not idle, which Slurm 22.05's
// node_state_string tests before "not responding" (an idle one is "maint").
func noRespSuffix(n *api.Node) string {
	if n.Maint && !strings.EqualFold(n.State, "maint") {
		return "$"
	}
	if n.NotResponding {
		return "*"
	}
	return ""
}

func nodeState(s string, long bool) string {
	n, ok := nodeStateNames[strings.ToLower(s)]
	if !ok {
		return strings.ToLower(s)
	}
	if long {
		return n[1]
	}
	return n[0]
}

// sinfoLongNames maps sinfo -O field names (case-insensitive) to the -o
// letter that prints the same thing (22.05.8 opts.c _parse_long_format).
var sinfoLongNames = map[string]byte{
	"available": 'a', "cpus": 'c', "cpusstate": 'C', "memory": 'm', "freemem": 'e', "cpusload": 'O',
	"nodes": 'D', "nodeaiot": 'F', "nodeaddr": 'o', "nodehost": 'n', "nodelist": 'N', "partition": 'P',
	"partitionname": 'R', "reason": 'E', "statecompact": 't', "statelong": 'T', "time": 'l',
	"defaulttime": 'L', "size": 's', "root": 'r', "oversubscribe": 'h', "share": 'h', "groups": 'g',
	"socketcorethread": 'z', "disk": 'd', "weight": 'w', "features": 'f', "features_act": 'b',
	"gres": 'G', "timestamp": 'H', "user": 'u', "reservation": 'i', "sockets": 'X', "cores": 'Y',
	"threads": 'Z',
}

// sinfoFormatFromNames turns -O "name[:[.]size][suffix],..." into the
// equivalent -o format; a field without a size is 20 wide, left-justified.
func sinfoFormatFromNames(list string) (format string, bad []string) {
	var b strings.Builder
	for _, item := range strings.Split(list, ",") {
		if item == "" {
			continue
		}
		name, spec, _ := strings.Cut(item, ":")
		letter, ok := sinfoLongNames[strings.ToLower(name)]
		if !ok {
			bad = append(bad, name)
			continue
		}
		right, width, i := false, 20, 0
		if i < len(spec) && spec[i] == '.' {
			right = true
			i++
		}
		if j := i; j < len(spec) && spec[j] >= '0' && spec[j] <= '9' {
			width = 0
			for ; j < len(spec) && spec[j] >= '0' && spec[j] <= '9'; j++ {
				width = width*10 + int(spec[j]-'0')
			}
			i = j
		}
		b.WriteByte('%')
		if right {
			b.WriteByte('.')
		}
		fmt.Fprintf(&b, "%d%c%s", width, letter, spec[i:])
	}
	return b.String(), bad
}

// sinfoValidStates is sinfo 22.05.8's list after "valid states:".
const sinfoValidStates = "unknown,down,idle,allocated,?,mixed,future,drain,drained,draining,no_respond,reserved,perfctrs,cloud,completing,powering_down,powered_down,power_down,powering_up,fail,maint,reboot,reboot^,unknown"

// sinfoStateFilter reads -t: a comma list of node states (long or compact
// names, case-insensitive; "drain" also means draining, "alloc" allocated,
// "no_respond" a node that does not answer). The bad name is returned.
func sinfoStateFilter(list string) (keep func(*api.Node) bool, bad string) {
	valid := map[string]bool{"alloc": true, "mix": true, "comp": true, "drng": true, "futr": true, "resv": true, "unk": true, "all": true}
	for _, s := range strings.Split(sinfoValidStates, ",") {
		valid[s] = true
	}
	var want []string
	for _, s := range splitList(list) {
		s = strings.ToLower(s)
		if !valid[s] {
			return nil, s
		}
		want = append(want, s)
	}
	return func(n *api.Node) bool {
		short, long := nodeState(n.State, false), nodeState(n.State, true)
		for _, w := range want {
			switch {
			case w == "all", w == short, w == long,
				w == "drain" && (long == "drained" || long == "draining"),
				w == "no_respond" && n.NotResponding:
				return true
			}
		}
		return false
	}, ""
}

// siGroup is one output line: a partition and the nodes sharing the
// displayed attributes.
type siGroup struct {
	part  *api.Partition
	nodes []*api.Node
}

// sinfoView is the data an sinfo run formats.
type sinfoView struct {
	parts []api.Partition
	nodes []api.Node
	now   time.Time
}

func partName(p *api.Partition) string {
	if p.Default {
		return p.Name + "*"
	}
	return p.Name
}

// nodeValue is a per-node or per-partition field.
func (v *sinfoView) nodeValue(kind byte, p *api.Partition, n *api.Node) string {
	switch kind {
	case 'P':
		if p == nil {
			return ""
		}
		return partName(p)
	case 'R':
		if p == nil {
			return ""
		}
		return p.Name
	case 'a':
		if p == nil || p.State == "" {
			return "up"
		}
		return strings.ToLower(p.State)
	case 'l', 'L':
		if p == nil {
			return "n/a"
		}
		lim := p.MaxTime
		if kind == 'L' {
			lim = p.DefaultTime
		}
		switch {
		case lim == api.NoLimit:
			return "infinite"
		case lim == 0 && kind == 'L':
			return "n/a"
		}
		return sbatch.FormatSqueueDuration(lim)
	case 's':
		return "1-infinite"
	case 'r':
		return "no"
	case 'h':
		if p == nil || p.OverSubscribe == "" {
			return "NO"
		}
		return p.OverSubscribe // NO, EXCLUSIVE, YES:N, FORCE:N
	case 'g':
		return "all"
	case 'i', 'b':
		return ""
	case 'u':
		if n != nil && n.ReasonUser != "" {
			return n.ReasonUser
		}
		return "Unknown"
	case 'H':
		if n != nil && n.ReasonTime != 0 {
			return fmtTime(n.ReasonTime, "", v.now)
		}
		return "Unknown"
	}
	if n == nil {
		// A partition without nodes still gets a line (Slurm prints n/a).
		switch kind {
		case 't', 'T':
			return "n/a"
		case 'E':
			return "none"
		}
		n = &api.Node{}
	}
	switch kind {
	case 't':
		return nodeState(n.State, false) + noRespSuffix(n)
	case 'T':
		return nodeState(n.State, true) + noRespSuffix(n)
	case 'c':
		return strconv.Itoa(n.CPUs)
	case 'm':
		return strconv.FormatInt(n.MemoryMB, 10)
	case 'e':
		if n.FreeMemMB <= 0 {
			return "N/A"
		}
		return strconv.FormatInt(n.FreeMemMB, 10)
	case 'O':
		if n.FreeMemMB <= 0 && n.CPULoad == 0 {
			return "N/A"
		}
		return strconv.FormatFloat(n.CPULoad, 'f', 2, 64)
	case 'G':
		return orNull(n.Gres)
	case 'f':
		return orNull(strings.Join(n.Features, ","))
	case 'E':
		if n.Reason == "" {
			return "none"
		}
		return n.Reason
	case 'z':
		if n.Sockets > 0 {
			return fmt.Sprintf("%d:%d:%d", n.Sockets, n.CoresPerSocket, max(n.ThreadsPerCore, 1))
		}
		// Slurm shows a node configured with CPUs only as CPUs sockets of one core.
		return strconv.Itoa(n.CPUs) + ":1:1"
	case 'X':
		return strconv.Itoa(n.CPUs)
	case 'Y', 'Z':
		return "1"
	case 'd':
		return "0"
	case 'w':
		return "1"
	}
	return ""
}

// aggValue is a field computed over a group.
func (v *sinfoView) aggValue(kind byte, g *siGroup) string {
	switch kind {
	case 'D':
		return strconv.Itoa(len(g.nodes))
	case 'N', 'n', 'o':
		names := make([]string, len(g.nodes))
		for i, n := range g.nodes {
			names[i] = n.Name
		}
		return hostlist(names)
	case 'C', 'F':
		var a, i, o, t int
		for _, n := range g.nodes {
			w := 1
			if kind == 'C' {
				w = n.CPUs
			}
			t += w
			switch strings.ToLower(n.State) {
			case "mixed":
				if kind == 'C' && n.AllocCPUs > 0 {
					// CPUs of a shared node: held ones allocated, the rest idle.
					a += n.AllocCPUs
					i += w - n.AllocCPUs
				} else {
					a += w
				}
			case "allocated", "completing":
				a += w
			case "idle", "reserved", "maint": // flags on an idle node
				i += w
			default:
				o += w
			}
		}
		return fmt.Sprintf("%d/%d/%d/%d", a, i, o, t)
	}
	return ""
}

// groups builds the output lines: per partition (configuration order), the
// nodes grouped on the displayed per-node fields; with perNode, one line per
// node and partition (-N). Partitions without nodes still get a line.
func (v *sinfoView) groups(fields []siField, perNode bool, onlyParts []string) []siGroup {
	byName := map[string]*api.Node{}
	for i := range v.nodes {
		byName[v.nodes[i].Name] = &v.nodes[i]
	}
	var out []siGroup
	if perNode {
		for i := range v.nodes {
			n := &v.nodes[i]
			for _, pn := range n.Partitions {
				p := v.findPart(pn)
				if p == nil || (len(onlyParts) > 0 && !slices.Contains(onlyParts, p.Name)) {
					continue
				}
				out = append(out, siGroup{p, []*api.Node{n}})
			}
		}
		// -N sorts by node name, numbers compared as numbers (sinfo.1: "N").
		slices.SortStableFunc(out, func(a, b siGroup) int { return naturalCompare(a.nodes[0].Name, b.nodes[0].Name) })
		return out
	}
	for i := range v.parts {
		p := &v.parts[i]
		if len(onlyParts) > 0 && !slices.Contains(onlyParts, p.Name) {
			continue
		}
		var gs []siGroup
		var keys []string
		for _, name := range p.Nodes {
			n := byName[name]
			if n == nil {
				continue
			}
			var k strings.Builder
			for _, f := range fields {
				if f.kind != 0 && !strings.ContainsRune(sinfoAggregate, rune(f.kind)) {
					k.WriteString(v.nodeValue(f.kind, p, n))
					k.WriteByte(0)
				}
			}
			idx := slices.Index(keys, k.String())
			if idx < 0 {
				keys = append(keys, k.String())
				gs = append(gs, siGroup{part: p})
				idx = len(gs) - 1
			}
			gs[idx].nodes = append(gs[idx].nodes, n)
		}
		if len(gs) == 0 {
			gs = append(gs, siGroup{part: p})
		}
		// Default sort "#P,-t" (sinfo.1): within a partition, decreasing
		// node state value.
		slices.SortStableFunc(gs, func(a, b siGroup) int { return groupStateValue(b) - groupStateValue(a) })
		out = append(out, gs...)
	}
	return out
}

// nodeStateValues are Slurm's node_state numbers (base state plus flags,
// slurm.h) that sinfo's "-t" sort compares.
var nodeStateValues = map[string]int{
	"unknown": 0, "down": 1, "idle": 2, "allocated": 3, "fail": 0x2001, "failing": 0x2003,
	"mixed": 5, "future": 6, "reserved": 0x22, "drained": 0x202, "draining": 0x203, "completing": 0x403,
}

func groupStateValue(g siGroup) int {
	if len(g.nodes) == 0 {
		return -1
	}
	return nodeStateValues[strings.ToLower(g.nodes[0].State)]
}

// naturalCompare orders host names as sinfo does: at the first difference,
// digit runs compare as numbers ("n2" < "n10").
func naturalCompare(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		if isDigit(a[i]) && isDigit(b[i]) {
			// Equal numbers end the comparison as equal, as in sinfo.
			return cmp.Compare(leadingNumber(a[i:]), leadingNumber(b[i:]))
		}
		return strings.Compare(a[i:], b[i:])
	}
	return len(a) - len(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func leadingNumber(s string) int64 {
	var n int64
	for i := 0; i < len(s) && isDigit(s[i]) && i < 18; i++ {
		n = n*10 + int64(s[i]-'0')
	}
	return n
}

func (v *sinfoView) findPart(name string) *api.Partition {
	for i := range v.parts {
		if v.parts[i].Name == name {
			return &v.parts[i]
		}
	}
	return nil
}

func (v *sinfoView) value(kind byte, g *siGroup) string {
	if strings.ContainsRune(sinfoAggregate, rune(kind)) {
		return v.aggValue(kind, g)
	}
	var n *api.Node
	if len(g.nodes) > 0 {
		n = g.nodes[0]
	}
	return v.nodeValue(kind, g.part, n)
}

// writeSinfo prints the groups. '#' columns get the width of their longest
// value, at least 9 (the width of PARTITION), left-justified.
func writeSinfo(w io.Writer, v *sinfoView, fields []siField, groups []siGroup, header bool) error {
	rows := make([][]string, len(groups))
	for gi := range groups {
		rows[gi] = make([]string, len(fields))
		for fi, f := range fields {
			if f.kind != 0 {
				rows[gi][fi] = v.value(f.kind, &groups[gi])
			}
		}
	}
	for fi := range fields {
		f := &fields[fi]
		if !f.auto {
			continue
		}
		wd := 9
		for _, r := range rows {
			wd = max(wd, len(r[fi]))
		}
		f.col = listing.Column{Width: wd, Trunc: true, Right: f.col.Right}
	}
	bw := bufio.NewWriter(w)
	var line []byte
	emit := func(vals []string) {
		line = line[:0]
		for fi, f := range fields {
			if f.kind == 0 {
				line = append(line, f.text...)
				continue
			}
			line = listing.AppendCol(line, vals[fi], f.col)
			line = append(line, f.suffix...)
		}
		line = append(line, '\n')
		bw.Write(line)
	}
	if header {
		h := make([]string, len(fields))
		for fi, f := range fields {
			h[fi] = sinfoHeader(f.kind)
		}
		emit(h)
	}
	for _, r := range rows {
		emit(r)
	}
	return bw.Flush()
}

// reasonGroups builds the -R lines: nodes that are down, drained or
// draining, or have a reason, grouped by reason.
func (v *sinfoView) reasonGroups() []siGroup {
	var out []siGroup
	var reasons []string
	for i := range v.nodes {
		n := &v.nodes[i]
		switch strings.ToLower(n.State) {
		case "down", "drained", "draining", "fail", "failing":
		default:
			if n.Reason == "" {
				continue
			}
		}
		idx := slices.Index(reasons, n.Reason)
		if idx < 0 {
			reasons = append(reasons, n.Reason)
			out = append(out, siGroup{})
			idx = len(out) - 1
		}
		out[idx].nodes = append(out[idx].nodes, n)
	}
	return out
}

// sinfoMain reports partitions and nodes (COMPAT.md §5.1).
func sinfoMain(ctx context.Context, env *Env, args []string) int {
	p, err := sbatch.Getopt(sinfoOpts, args, false)
	if err != nil {
		return usageError(env, err)
	}
	has := func(k string) bool { _, ok := p.Last(k); return ok }
	switch {
	case has("help"):
		fmt.Fprint(env.Stdout, sinfoHelp)
		return 0
	case has("usage"):
		fmt.Fprint(env.Stdout, sinfoUsage)
		return 0
	case has("version"):
		return printVersion(env)
	}
	// sinfo 22.05.8 ignores operands (checked), so hora does too.
	long, perNode := has("long"), has("Node")
	format := sinfoDefaultFormat
	switch {
	case has("format"):
		v, _ := p.Last("format")
		format = v.Val
	case has("Format"):
		v, _ := p.Last("Format")
		var bad []string
		format, bad = sinfoFormatFromNames(v.Val)
		for _, b := range bad {
			// sinfo 22.05.8's text, "job" included (opts.c).
			fmt.Fprintf(env.Stderr, "%s: error: Invalid job format specification: %s\n", env.Prog, b)
		}
	case env.Getenv("SINFO_FORMAT") != "":
		format = env.Getenv("SINFO_FORMAT")
	case has("list-reasons"):
		format = sinfoReasonFormat
	case has("summarize"):
		format = sinfoSummarize
	case perNode && long:
		format = sinfoNodeLong
	case perNode:
		format = sinfoNodeFormat
	case long:
		format = sinfoLongFormat
	}
	fields, bad := parseSinfoFormat(format)
	for _, b := range bad {
		// Printed without the program name, and sinfo goes on (22.05.8).
		fmt.Fprintf(env.Stderr, "Invalid node format specification: %s\n", b)
	}
	var onlyParts []string
	if v, ok := p.Last("partition"); ok {
		onlyParts = splitList(v.Val)
	} else if s := env.Getenv("SINFO_PARTITION"); s != "" {
		onlyParts = splitList(s)
	}

	cl := dial(env)
	if cl == nil {
		return 1
	}
	ctx = ctxOrBackground(ctx)
	view := &sinfoView{now: nowFunc()}
	if view.parts, err = cl.Partitions(ctx); err == nil {
		view.nodes, err = cl.Nodes(ctx)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "slurm_load_partitions: %s\n", apiErrText(err))
		return 1
	}
	if v, ok := p.Last("states"); ok {
		keep, bad := sinfoStateFilter(v.Val)
		if bad != "" {
			fmt.Fprintf(env.Stderr, "%s: error: Bad state string: \"%s\"\n", env.Prog, bad)
			fmt.Fprintf(env.Stderr, "%s: error: valid states: %s\n", env.Prog, sinfoValidStates)
			return 1
		}
		view.nodes = slices.DeleteFunc(view.nodes, func(n api.Node) bool { return !keep(&n) })
	}
	if v, ok := p.Last("nodes"); ok {
		names, err := sbatch.ExpandHostlist(v.Val)
		if err != nil {
			fmt.Fprintf(env.Stderr, "%s: error: Invalid node name specified: %s\n", env.Prog, v.Val)
			return 1
		}
		view.nodes = slices.DeleteFunc(view.nodes, func(n api.Node) bool { return !slices.Contains(names, n.Name) })
	}
	var groups []siGroup
	if has("list-reasons") && !has("format") {
		groups = view.reasonGroups()
	} else {
		groups = view.groups(fields, perNode, onlyParts)
	}
	if has("states") {
		// Partitions left without a node of the asked states are not shown.
		groups = slices.DeleteFunc(groups, func(g siGroup) bool { return len(g.nodes) == 0 })
	}
	header := !has("noheader")
	if header && long {
		fmt.Fprintln(env.Stdout, ctimeLine(view.now))
	}
	if err := writeSinfo(env.Stdout, view, fields, groups, header); err != nil {
		return 1
	}
	return 0
}

const sinfoUsage = `Usage: sinfo [-abdelNRrsTv] [-i seconds] [-t states] [-p partition] [-n nodes]
             [-S fields] [-o format] [-O Format] [--federation] [--local]
`

const sinfoHelp = `Usage: sinfo [OPTIONS]
  -a, --all                  show all partitions (including hidden and those
                             not accessible)
  -d, --dead                 show only non-responding nodes
  -e, --exact                group nodes only on exact match of configuration
  -h, --noheader             no headers on output
  -i, --iterate=seconds      specify an iteration period
  -l, --long                 long output - displays more information
  -M, --clusters=names       clusters to issue commands to.
  -n, --nodes=NODES          report on specific node(s)
  -N, --Node                 Node-centric format
  -o, --format=format        format specification
  -O, --Format=format        long format specification
  -p, --partition=PARTITION  report on specific partition
  -r, --responding           report only responding nodes
  -R, --list-reasons         list reason nodes are down or drained
  -s, --summarize            report state summary only
  -S, --sort=fields          comma separated list of fields to sort on
  -t, --states=node_state    specify the what states of nodes to view
  -v, --verbose              verbosity level
  -V, --version              output version information and exit

Help options:
  --help                     show this help message
  --usage                    display brief usage message

hora: -d, -e, -i, -r, -S, -t and -M are accepted and ignored.
`
