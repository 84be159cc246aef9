// Package config reads hora.toml: strict (an unknown key is an error naming
// the key and its line), validated as a whole (Validate reports every problem
// at once, not the first), with defaults that run a single machine: four local
// nodes, one partition, state under the working directory.
//
// horad and `hora replay --config` share it, so a site replays exactly the
// partitions and policies it runs.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"hora/api"
	"hora/sbatch"
	"hora/scheduler"
	"hora/scheduler/mix"
)

// Config is the whole of hora.toml. Durations are strings in Slurm's --time
// syntax ("30", "1:00:00", "UNLIMITED") or seconds where the key says _s.
type Config struct {
	ClusterName string   `toml:"cluster_name"`
	StateDir    string   `toml:"state_dir"` // hora.db and node-side state of local nodes
	Socket      string   `toml:"socket"`
	Operators   []string `toml:"operators"`     // users (names or uids) who may act on any job
	KillWaitS   int      `toml:"kill_wait_s"`   // grace between TERM and KILL (Slurm KillWait)
	MinJobAgeS  int      `toml:"min_job_age_s"` // finished jobs stay in squeue -t all this long
	Executor    string   `toml:"executor"`      // "local" (default), "ssh", or "emulated" (benchmarks: no processes)
	// MailProg is the sendmail(8)-compatible program --mail-type messages
	// are handed to ("" = /usr/sbin/sendmail when it exists, else none).
	MailProg string `toml:"mail_prog"`
	// ReservationAccess says who may create, update and delete advance
	// reservations: "operators" (default: root and Operators, as Slurm's
	// root/SlurmUser) or "users" (also any user, for reservations whose only
	// user is themselves).
	ReservationAccess string `toml:"reservation_access"`
	// ReturnToService is Slurm's ReturnToService: 0 = a DOWN node stays down
	// until `scontrol update State=RESUME`; 1 = a node set DOWN for not
	// responding returns when it answers again; 2 = any DOWN node returns
	// when it answers. Default 1, as Slurm's.
	ReturnToService *int `toml:"return_to_service"`
	// JobRequeue is Slurm's JobRequeue: 1 = a batch job whose node fails is
	// requeued unless submitted with --no-requeue; 0 = only with --requeue.
	// Default 1, as Slurm's.
	JobRequeue *int `toml:"job_requeue"`
	// MaxArraySize is Slurm's MaxArraySize: array task ids run from 0 to
	// MaxArraySize-1. Default 1001, as Slurm's.
	MaxArraySize int `toml:"max_array_size"`
	// FirstJobID is Slurm's FirstJobId: the first id horad gives out. Raising
	// it later moves the next id up; ids are never reused, so lowering it
	// has no effect. Default 1.
	FirstJobID int64 `toml:"first_job_id"`
	// KillOnInvalidDep is the default of sbatch --kill-on-invalid-dep
	// (Slurm's DependencyParameters=kill_invalid_depend): a job whose
	// dependency can never be satisfied is cancelled instead of staying
	// pending with reason DependencyNeverSatisfied.
	KillOnInvalidDep bool `toml:"kill_on_invalid_dep"`

	Nodes      []Node      `toml:"node"`
	Partitions []Partition `toml:"partition"`
	SSH        SSH         `toml:"ssh"`
	PBS        PBS         `toml:"pbs"`
	Mix        Mix         `toml:"mix"`
	Limits     Limits      `toml:"limits"`

	// probed holds what SetProbed learnt of nodes over SSH at start-up.
	probed map[string]Probed

	// path is the file the config came from, for messages ("" = embedded default).
	path string
	// lines maps a dotted key path to the line it was found on.
	lines map[string]int
}

// Node declares one node or, with a hostlist name ("local[1-4]"), several alike.
type Node struct {
	Name     string  `toml:"name"`
	Address  string  `toml:"address"`   // ssh: host or host:port; default = name
	CPUs     int     `toml:"cpus"`      // 0 = sockets×cores×threads, else this machine's CPU count (local)
	MemoryMB int64   `toml:"memory_mb"` // RealMemory jobs may use; 0 = MemTotal − mem_reserve_mb (local)
	Rate     float64 `toml:"rate"`      // relative speed; 0 = 1
	// Sockets × CoresPerSocket × ThreadsPerCore = CPUs (Slurm's node
	// layout); 0 = 1 socket, CPUs cores, 1 thread.
	Sockets        int `toml:"sockets"`
	CoresPerSocket int `toml:"cores_per_socket"`
	ThreadsPerCore int `toml:"threads_per_core"`
	// MemReserveMB is kept for the system when memory_mb is probed.
	MemReserveMB int64 `toml:"mem_reserve_mb"`
	// Gres: "gpu:a100:2,nvme:1" (Slurm's Gres=); "" = the local GPUs
	// (/dev/nvidia0…) of a local node.
	Gres     string   `toml:"gres"`
	Features []string `toml:"features"` // -C/--constraint matches these
	// ssh: login user and key for this node (defaults in [ssh])
	User         string `toml:"user"`
	IdentityFile string `toml:"identity_file"`
}

// SSH holds the defaults of nodes reached over SSH (executor = "ssh"); see
// docs/operations.md for preparing the nodes.
type SSH struct {
	KnownHosts   string `toml:"known_hosts"`   // required: host keys are always verified
	IdentityFile string `toml:"identity_file"` // default key
	User         string `toml:"user"`          // default login user (root)
	StateDir     string `toml:"state_dir"`     // node-side state; default /var/lib/hora-node
	Launcher     string `toml:"launcher"`      // auto, systemd or setsid
	// The health prober marks a node down after ProbeMisses failed probes
	// ProbeIntervalS apart (defaults 5 s and 3).
	ProbeIntervalS int `toml:"probe_interval_s"`
	ProbeMisses    int `toml:"probe_misses"`
}

// PBS configures the PBS front end (qsub, qstat, ...): which PBS the
// commands pass for, and the server name in job ids (`<seq>.<server>`).
type PBS struct {
	Flavour string `toml:"flavour"` // "openpbs" (default) or "torque"
	Server  string `toml:"server"`  // "" = this machine's host name
}

// Limits bound what horad accepts (docs/limits.md); 0 is no limit.
type Limits struct {
	// MaxJobCount is Slurm's MaxJobCount: jobs horad holds in memory
	// (pending, running, and finished ones younger than min_job_age_s).
	// A submission beyond it is refused for now; sbatch retries.
	MaxJobCount int `toml:"max_job_count"`
	// MaxSubmitJobsPerUser is Slurm's MaxSubmitJobs of an association:
	// pending and running jobs of one user. Operators are exempt.
	MaxSubmitJobsPerUser int `toml:"max_submit_jobs_per_user"`
	// RateLimitBucket and RateLimitRefill are Slurm's RPC rate limit
	// (SlurmctldParameters rl_bucket_size, rl_refill_rate per second): a
	// token bucket per uid, root and horad's own user exempt. A request
	// finding the bucket empty is refused with "Rate limit exceeded, please
	// retry momentarily"; the clients sleep and retry. 0: no rate limit.
	RateLimitBucket int     `toml:"rate_limit_bucket"`
	RateLimitRefill float64 `toml:"rate_limit_refill"`
	// MaxConnections bounds the connections horad serves at once; beyond
	// it, connections wait and are taken in turn by uid, so one user's
	// flood does not starve another's command. MaxConnectionsPerUser
	// bounds one uid's connections in service (root exempt).
	MaxConnections        int `toml:"max_connections"`
	MaxConnectionsPerUser int `toml:"max_connections_per_user"`
}

// Mix is the fairness ratio between the real-time and best-effort classes
// and how nodes enforce it (DESIGN.md §1, papers/be-rt-mix-2001).
type Mix struct {
	// Ratio "x:y": RT is guaranteed s = x/(x+y) of every node while both
	// classes have work. Default "1:0": RT owns the nodes, BE fills what it
	// leaves.
	Ratio   string  `toml:"ratio"`
	Mode    string  `toml:"mode"`    // ps (default), tdm or gang
	Period  float64 `toml:"period"`  // tdm: Υ in seconds, default 3
	Quantum float64 `toml:"quantum"` // gang: Q in seconds, default 0.5
	Rows    int     `toml:"rows"`    // gang: M, default 6
	Sync    float64 `toml:"sync"`    // tdm: δ in seconds at the start of each division, default 0
}

// Share is the RT share s of the configured ratio (1 for "1:0").
func (m Mix) Share() float64 {
	r, err := mix.ParseRatio(m.Ratio)
	if err != nil {
		return 1
	}
	return r.Share(mix.RT)
}

// MixEnforced reports whether the file has a [mix] table: horad then
// enforces the ratio on its nodes (without one, RT owns the nodes, 1:0,
// and nothing is enforced).
func (c *Config) MixEnforced() bool { return c.lines["mix"] > 0 }

// ClassOf is the class of a partition's jobs: RT for the policies that
// give guarantees (dlt, reserve), BE for the rest. An unknown partition is BE.
func (c *Config) ClassOf(partition string) mix.Class {
	for _, p := range c.Partitions {
		if p.Name == partition && (p.Policy == "dlt" || p.Policy == "reserve") {
			return mix.RT
		}
	}
	return mix.BE
}

// Partition declares a partition and its scheduling policy.
type Partition struct {
	Name        string `toml:"name"`
	Nodes       string `toml:"nodes"` // hostlist
	Default     bool   `toml:"default"`
	Policy      string `toml:"policy"`   // batch (default), dlt, reserve
	Backfill    string `toml:"backfill"` // batch: easy (default) or fcfs
	MaxTime     string `toml:"max_time"`
	DefaultTime string `toml:"default_time"`
	// DefMemPerCPU (MiB) is the memory of a job that names none, per
	// CPU; 0 = such a job's memory is neither counted nor limited.
	// MaxMemPerNode (MiB, 0 = none) refuses larger jobs at submit.
	DefMemPerCPU  int64             `toml:"def_mem_per_cpu"`
	MaxMemPerNode int64             `toml:"max_mem_per_node"`
	OverSubscribe string            `toml:"oversubscribe"` // NO (default), EXCLUSIVE, YES[:N], FORCE[:N]
	Params        map[string]string `toml:"params"`        // policy-specific settings
}

// Default returns the embedded default: what `horad` runs with no config file.
func Default() *Config {
	c := &Config{}
	c.fillDefaults()
	return c
}

func (c *Config) fillDefaults() {
	if c.ClusterName == "" {
		c.ClusterName = "hora"
	}
	if c.StateDir == "" {
		c.StateDir = "./var"
	}
	if c.Socket == "" {
		c.Socket = strings.TrimSuffix(c.StateDir, "/") + "/horad.sock"
	}
	if c.KillWaitS == 0 {
		c.KillWaitS = 30
	}
	if c.MinJobAgeS == 0 {
		c.MinJobAgeS = 300
	}
	if c.Executor == "" {
		c.Executor = "local"
	}
	if c.PBS.Flavour == "" {
		c.PBS.Flavour = "openpbs"
	}
	if c.ReservationAccess == "" {
		c.ReservationAccess = "operators"
	}
	if c.ReturnToService == nil {
		one := 1
		c.ReturnToService = &one
	}
	if c.JobRequeue == nil {
		one := 1
		c.JobRequeue = &one
	}
	if c.MaxArraySize == 0 {
		c.MaxArraySize = 1001
	}
	if c.FirstJobID == 0 {
		c.FirstJobID = 1
	}
	if c.Mix.Ratio == "" {
		c.Mix.Ratio = "1:0"
	}
	if c.Mix.Mode == "" {
		c.Mix.Mode = string(mix.PSMode)
	}
	if c.Mix.Period == 0 {
		c.Mix.Period = 3
	}
	if c.Mix.Quantum == 0 {
		c.Mix.Quantum = 0.5
	}
	if c.Mix.Rows == 0 {
		c.Mix.Rows = 6
	}
	if len(c.Nodes) == 0 {
		c.Nodes = []Node{{Name: "local[1-4]"}}
	}
	if len(c.Partitions) == 0 {
		c.Partitions = []Partition{{Name: "batch", Nodes: c.Nodes[0].Name, Default: true}}
	}
	for i := range c.Partitions {
		if c.Partitions[i].Policy == "" {
			c.Partitions[i].Policy = "batch"
		}
	}
	for i := range c.Nodes {
		if c.Nodes[i].Rate == 0 {
			c.Nodes[i].Rate = 1
		}
	}
	// The SSH executor's defaults are filled here, where hora.toml(5)
	// states them (doc.go), as well as in nodes/ssh for its other callers.
	if c.SSH.User == "" {
		c.SSH.User = "root"
	}
	if c.SSH.StateDir == "" {
		c.SSH.StateDir = "/var/lib/hora-node"
	}
	if c.SSH.Launcher == "" {
		c.SSH.Launcher = "auto"
	}
	if c.SSH.ProbeIntervalS == 0 {
		c.SSH.ProbeIntervalS = 5
	}
	if c.SSH.ProbeMisses == 0 {
		c.SSH.ProbeMisses = 3
	}
}

// Problem is one thing wrong with a config file, located by key and line.
type Problem struct {
	File string
	Line int // 0 = unknown
	Key  string
	Msg  string
}

func (p Problem) String() string {
	loc := p.File
	if loc == "" {
		loc = "(default config)"
	}
	if p.Line > 0 {
		loc += ":" + strconv.Itoa(p.Line)
	}
	if p.Key != "" {
		return fmt.Sprintf("%s: %s: %s", loc, p.Key, p.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, p.Msg)
}

// Problems is every problem found; it is the error Load and Validate return.
type Problems []Problem

func (ps Problems) Error() string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, "\n")
}

// Load reads and validates a config file.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b, path)
}

// Parse decodes TOML text strictly and validates it. name is used in messages.
func Parse(b []byte, name string) (*Config, error) {
	c := &Config{path: name}
	md, err := toml.NewDecoder(bytes.NewReader(b)).Decode(c)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, Problems{{File: name, Line: pe.Position.Line, Msg: pe.Message}}
		}
		return nil, Problems{{File: name, Msg: err.Error()}}
	}
	c.lines = keyLines(b)
	// BurntSushi/toml matches keys to fields case-insensitively and reports
	// unknown keys only through Undecoded, without lines: check every key
	// against the exact tag names ourselves so "Name" or "nodez" is an error.
	var probs Problems
	valid := validKeys(reflect.TypeOf(Config{}), "")
	reported := map[string]bool{}
	type located struct {
		key  string
		line int
	}
	var found []located
	for k, l := range c.lines {
		found = append(found, located{k, l})
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].line != found[j].line {
			return found[i].line < found[j].line
		}
		return found[i].key < found[j].key
	})
	for _, f := range found {
		pat := keyPattern(strings.Split(f.key, "."))
		if !valid[pat] && !reported[pat] {
			reported[pat] = true
			probs = append(probs, Problem{File: name, Line: f.line, Key: f.key, Msg: "unknown key"})
		}
	}
	// The decoder's own key list catches forms the line scanner does not
	// follow (inline tables, dotted keys).
	for _, k := range md.Keys() {
		pat := keyPattern(k)
		if !valid[pat] && !reported[pat] {
			reported[pat] = true
			probs = append(probs, Problem{File: name, Line: c.line(k.String()), Key: k.String(), Msg: "unknown key"})
		}
	}
	if len(probs) > 0 {
		return nil, probs
	}
	c.fillDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// keyPattern turns partition.0.params.cms into partition.params.* so it can be
// checked against the struct's tag tree (array indexes and map keys are free).
func keyPattern(k []string) string {
	var parts []string
	for i := 0; i < len(k); i++ {
		p := k[i]
		if _, err := strconv.Atoi(p); err == nil {
			continue
		}
		parts = append(parts, p)
		if p == "params" && i+1 < len(k) {
			parts = append(parts, "*")
			break
		}
	}
	return strings.Join(parts, ".")
}

func validKeys(t reflect.Type, prefix string) map[string]bool {
	out := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("toml")
		if tag == "" || tag == "-" {
			continue
		}
		path := prefix + tag
		out[path] = true
		ft := f.Type
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
			for k := range validKeys(ft.Elem(), path+".") {
				out[k] = true
			}
		}
		if ft.Kind() == reflect.Struct {
			for k := range validKeys(ft, path+".") {
				out[k] = true
			}
		}
		if ft.Kind() == reflect.Map {
			out[path+".*"] = true
		}
	}
	return out
}

// keyLines records, for every key assignment and table header, the line it
// is on, under its full dotted path with array-of-table indexes, as
// md.Keys() spells them (partition.1.nodes).
func keyLines(b []byte) map[string]int {
	lines := map[string]int{}
	counts := map[string]int{}
	table := ""
	for i, raw := range strings.Split(string(b), "\n") {
		ln := strings.TrimSpace(raw)
		if ln == "" || ln[0] == '#' {
			continue
		}
		switch {
		case strings.HasPrefix(ln, "[["):
			name := strings.TrimSpace(strings.Trim(strings.SplitN(ln, "]]", 2)[0], "[ "))
			table = name + "." + strconv.Itoa(counts[name])
			counts[name]++
			lines[table] = i + 1
		case strings.HasPrefix(ln, "["):
			name := strings.TrimSpace(strings.Trim(strings.SplitN(ln, "]", 2)[0], "[ "))
			// a sub-table of the last array element: [partition.params]
			if parent, sub, ok := strings.Cut(name, "."); ok && counts[parent] > 0 {
				name = parent + "." + strconv.Itoa(counts[parent]-1) + "." + sub
			}
			table = name
			lines[table] = i + 1
		default:
			k, _, ok := strings.Cut(ln, "=")
			if !ok {
				continue
			}
			k = strings.Trim(strings.TrimSpace(k), `"'`)
			full := k
			if table != "" {
				full = table + "." + k
			}
			lines[full] = i + 1
		}
	}
	return lines
}

func (c *Config) line(key string) int {
	if c.lines == nil {
		return 0
	}
	if l, ok := c.lines[key]; ok {
		return l
	}
	// fall back to the enclosing table
	for key != "" {
		i := strings.LastIndex(key, ".")
		if i < 0 {
			break
		}
		key = key[:i]
		if l, ok := c.lines[key]; ok {
			return l
		}
	}
	return 0
}

// Problem is a problem with key of this file, at the key's line (or its
// table's): for checks made outside config, such as horad's on a reload.
func (c *Config) Problem(key, format string, a ...any) Problem {
	return c.problem(key, format, a...)
}

func (c *Config) problem(key, format string, a ...any) Problem {
	return Problem{File: c.path, Line: c.line(key), Key: key, Msg: fmt.Sprintf(format, a...)}
}

// Validate checks the whole config and reports every problem found.
func (c *Config) Validate() error {
	var ps Problems
	if c.KillWaitS < 0 {
		ps = append(ps, c.problem("kill_wait_s", "must be ≥ 0, got %d", c.KillWaitS))
	}
	if c.MailProg != "" && !filepath.IsAbs(c.MailProg) {
		ps = append(ps, c.problem("mail_prog", "must be an absolute path, got %q", c.MailProg))
	}
	if c.MinJobAgeS < 0 {
		ps = append(ps, c.problem("min_job_age_s", "must be ≥ 0, got %d", c.MinJobAgeS))
	}
	if c.ReservationAccess != "operators" && c.ReservationAccess != "users" {
		ps = append(ps, c.problem("reservation_access", "must be \"operators\" or \"users\", got %q", c.ReservationAccess))
	}
	if v := c.ReturnToService; v != nil && (*v < 0 || *v > 2) {
		ps = append(ps, c.problem("return_to_service", "must be 0, 1 or 2 (Slurm's ReturnToService), got %d", *v))
	}
	if c.FirstJobID < 1 {
		ps = append(ps, c.problem("first_job_id", "must be ≥ 1 (Slurm's FirstJobId), got %d", c.FirstJobID))
	}
	if c.MaxArraySize < 1 || c.MaxArraySize > 4000001 {
		ps = append(ps, c.problem("max_array_size", "must be between 1 and 4000001 (Slurm's MaxArraySize), got %d", c.MaxArraySize))
	}
	if v := c.JobRequeue; v != nil && *v != 0 && *v != 1 {
		ps = append(ps, c.problem("job_requeue", "must be 0 or 1 (Slurm's JobRequeue), got %d", *v))
	}
	if c.Limits.MaxJobCount < 0 {
		ps = append(ps, c.problem("limits.max_job_count", "must be ≥ 0 (0: no limit), got %d", c.Limits.MaxJobCount))
	}
	if c.Limits.MaxSubmitJobsPerUser < 0 {
		ps = append(ps, c.problem("limits.max_submit_jobs_per_user", "must be ≥ 0 (0: no limit), got %d", c.Limits.MaxSubmitJobsPerUser))
	}
	for _, l := range []struct {
		key string
		v   int
	}{{"limits.rate_limit_bucket", c.Limits.RateLimitBucket}, {"limits.max_connections", c.Limits.MaxConnections},
		{"limits.max_connections_per_user", c.Limits.MaxConnectionsPerUser}} {
		if l.v < 0 {
			ps = append(ps, c.problem(l.key, "must be ≥ 0 (0: no limit), got %d", l.v))
		}
	}
	if r := c.Limits.RateLimitRefill; r < 0 || r > 1e6 || (c.Limits.RateLimitBucket > 0 && r == 0) {
		ps = append(ps, c.problem("limits.rate_limit_refill", "must be a number of requests per second greater than 0 when rate_limit_bucket is set, got %g", r))
	}
	if c.PBS.Flavour != "openpbs" && c.PBS.Flavour != "torque" {
		ps = append(ps, c.problem("pbs.flavour", "must be \"openpbs\" or \"torque\", got %q", c.PBS.Flavour))
	}
	if strings.ContainsAny(c.PBS.Server, " \t@[]/") {
		// The server name ends every job id: '@' and brackets would be
		// read as destination or array syntax.
		ps = append(ps, c.problem("pbs.server", "must be a host name, got %q", c.PBS.Server))
	}
	if c.Executor != "local" && c.Executor != "ssh" && c.Executor != "emulated" {
		ps = append(ps, c.problem("executor", "must be \"local\", \"ssh\" or \"emulated\", got %q", c.Executor))
	}
	if c.Executor == "ssh" {
		if c.SSH.KnownHosts == "" {
			ps = append(ps, c.problem("ssh.known_hosts", "required with executor = \"ssh\": host keys are always verified"))
		}
		switch c.SSH.Launcher {
		case "", "auto", "systemd", "setsid":
		default:
			ps = append(ps, c.problem("ssh.launcher", "must be auto, systemd or setsid, got %q", c.SSH.Launcher))
		}
		if c.SSH.ProbeIntervalS < 0 || c.SSH.ProbeMisses < 0 {
			ps = append(ps, c.problem("ssh", "probe_interval_s and probe_misses must be ≥ 0"))
		}
	}
	seen := map[string]string{}
	for i, n := range c.Nodes {
		key := fmt.Sprintf("node.%d", i)
		names, err := sbatch.ExpandHostlist(n.Name)
		if err != nil || n.Name == "" {
			ps = append(ps, c.problem(key+".name", "invalid node name %q: %v", n.Name, err))
			continue
		}
		for _, name := range names {
			if prev, dup := seen[name]; dup {
				ps = append(ps, c.problem(key+".name", "node %s already declared by %s", name, prev))
			}
			seen[name] = key
		}
		if n.CPUs < 0 {
			ps = append(ps, c.problem(key+".cpus", "must be ≥ 0, got %d", n.CPUs))
		}
		for _, f := range []struct {
			k string
			v int
		}{{"sockets", n.Sockets}, {"cores_per_socket", n.CoresPerSocket}, {"threads_per_core", n.ThreadsPerCore}} {
			if f.v < 0 {
				ps = append(ps, c.problem(key+"."+f.k, "must be ≥ 0, got %d", f.v))
			}
		}
		if l := n.layout(); l > 0 && n.CPUs > 0 && l != n.CPUs {
			ps = append(ps, c.problem(key+".cpus", "%d is not sockets × cores_per_socket × threads_per_core = %d", n.CPUs, l))
		}
		if n.MemoryMB < 0 || n.MemReserveMB < 0 {
			ps = append(ps, c.problem(key+".memory_mb", "memory_mb and mem_reserve_mb must be ≥ 0"))
		}
		if _, err := nodeGres(n.Gres); err != nil {
			ps = append(ps, c.problem(key+".gres", "%v", err))
		}
		for _, f := range n.Features {
			if _, _, err := sbatch.ParseConstraint(f); err != nil || strings.ContainsAny(f, "&|") {
				ps = append(ps, c.problem(key+".features", "invalid feature %q", f))
			}
		}
		if n.Rate < 0 {
			ps = append(ps, c.problem(key+".rate", "must be > 0, got %g", n.Rate))
		}
	}
	defaults := 0
	pnames := map[string]bool{}
	for i, p := range c.Partitions {
		key := fmt.Sprintf("partition.%d", i)
		if p.Name == "" {
			ps = append(ps, c.problem(key+".name", "missing"))
		} else if pnames[p.Name] {
			ps = append(ps, c.problem(key+".name", "partition %s declared twice", p.Name))
		}
		pnames[p.Name] = true
		if p.Default {
			defaults++
		}
		names, err := sbatch.ExpandHostlist(p.Nodes)
		if err != nil || len(names) == 0 {
			ps = append(ps, c.problem(key+".nodes", "invalid node list %q: %v", p.Nodes, err))
		}
		for _, n := range names {
			if _, ok := seen[n]; !ok {
				ps = append(ps, c.problem(key+".nodes", "node %s is not declared in any [[node]]", n))
			}
		}
		switch p.Policy {
		case "batch", "dlt", "reserve":
		default:
			ps = append(ps, c.problem(key+".policy", "unknown policy %q (batch, dlt, reserve)", p.Policy))
		}
		switch p.Backfill {
		case "", "easy", "fcfs":
		default:
			ps = append(ps, c.problem(key+".backfill", "must be \"easy\" or \"fcfs\", got %q", p.Backfill))
		}
		if p.DefMemPerCPU < 0 || p.MaxMemPerNode < 0 {
			ps = append(ps, c.problem(key+".def_mem_per_cpu", "def_mem_per_cpu and max_mem_per_node must be ≥ 0"))
		}
		if _, err := scheduler.ParseOverSubscribe(p.OverSubscribe); err != nil {
			ps = append(ps, c.problem(key+".oversubscribe", "%v", err))
		}
		for _, t := range []struct{ k, v string }{{"max_time", p.MaxTime}, {"default_time", p.DefaultTime}} {
			if t.v == "" {
				continue
			}
			if _, err := sbatch.ParseSlurmDuration(t.v); err != nil {
				ps = append(ps, c.problem(key+"."+t.k, "invalid time %q: %v", t.v, err))
			}
		}
	}
	if defaults > 1 {
		ps = append(ps, c.problem("partition", "%d partitions are marked default; at most one may be", defaults))
	}
	ps = append(ps, c.validateMix()...)
	if len(ps) > 0 {
		return ps
	}
	return nil
}

// validateMix checks [mix]: the ratio, the mode and the mode's settings.
func (c *Config) validateMix() Problems {
	var ps Problems
	m := c.Mix
	r, err := mix.ParseRatio(m.Ratio)
	if err != nil {
		ps = append(ps, c.problem("mix.ratio", "%v", err))
	}
	mode, err := mix.ParseMode(m.Mode)
	if err != nil {
		ps = append(ps, c.problem("mix.mode", "%v", err))
	}
	if !(m.Period > 0) || m.Period > 86400 {
		ps = append(ps, c.problem("mix.period", "must be seconds in (0, 86400], got %g", m.Period))
	} else if mode == mix.TDMMode && r.X+r.Y > 0 {
		if _, err := mix.NewTDM(r, m.Period, max(m.Sync, 0.001)); err != nil {
			key := "mix.period"
			if m.Sync > 0.001 {
				key = "mix.sync"
			}
			ps = append(ps, c.problem(key, "%v", err))
		}
	}
	if !(m.Sync >= 0) || m.Sync >= 60 {
		ps = append(ps, c.problem("mix.sync", "must be seconds in [0, 60), got %g", m.Sync))
	}
	if !(m.Quantum > 0) || m.Quantum > 3600 {
		ps = append(ps, c.problem("mix.quantum", "must be seconds in (0, 3600], got %g", m.Quantum))
	}
	if m.Rows < 1 || m.Rows > 1024 {
		ps = append(ps, c.problem("mix.rows", "must be 1 to 1024, got %d", m.Rows))
	} else if mode == mix.GangMode && r.X > 0 && r.Y > 0 && m.Rows < 2 {
		ps = append(ps, c.problem("mix.rows", "ratio %s gives each class a row: need at least 2, got %d", r, m.Rows))
	}
	for i, p := range c.Partitions {
		if v, ok := p.Params["share"]; ok && c.lines["mix.ratio"] > 0 {
			ps = append(ps, c.problem(fmt.Sprintf("partition.%d.params.share", i),
				"share %q is set by [mix] ratio (s = x/(x+y)); remove one of them", v))
		}
	}
	return ps
}

// NodeNames expands every [[node]] into node names, in order.
func (c *Config) NodeNames() []string {
	var out []string
	for _, n := range c.Nodes {
		names, _ := sbatch.ExpandHostlist(n.Name)
		out = append(out, names...)
	}
	return out
}

// ExpandedNodes returns one Node per node name, with CPUs filled in and,
// for local nodes, memory and GPUs probed on this machine.
func (c *Config) ExpandedNodes() []Node {
	local := c.Executor == "local"
	var out []Node
	for _, n := range c.Nodes {
		names, _ := sbatch.ExpandHostlist(n.Name)
		for _, name := range names {
			m := n
			m.Name = name
			if m.CPUs == 0 {
				m.CPUs = n.layout()
			}
			pr, isProbed := c.probed[name]
			if m.CPUs == 0 && isProbed && pr.CPUs > 0 {
				m.CPUs = pr.CPUs
			}
			if m.MemoryMB == 0 && isProbed {
				m.MemoryMB = max(pr.MemMB-n.MemReserveMB, 0)
			}
			if m.Gres == "" && isProbed && pr.GPUs > 0 {
				m.Gres = "gpu:" + strconv.Itoa(pr.GPUs)
			}
			if m.CPUs == 0 {
				// As before resources: this machine's count, also for SSH
				// and emulated nodes that declare none and were not probed.
				m.CPUs = runtime.NumCPU()
			}
			if m.MemoryMB == 0 && local {
				m.MemoryMB = max(probeMemMB()-n.MemReserveMB, 0)
			}
			if m.Gres == "" && local {
				m.Gres = probeGPUs()
			}
			if m.Rate == 0 {
				m.Rate = 1
			}
			if m.Address == "" {
				m.Address = name
			}
			out = append(out, m)
		}
	}
	return out
}

func seconds(s string) float64 {
	if s == "" {
		return scheduler.Inf
	}
	v, err := sbatch.ParseSlurmDuration(s)
	if err != nil || v == api.NoLimit {
		return scheduler.Inf
	}
	return float64(v)
}

// Scheduler returns the Engine's view of the cluster.
func (c *Config) Scheduler() scheduler.Config {
	var sc scheduler.Config
	for _, n := range c.ExpandedNodes() {
		gres, _ := nodeGres(n.Gres)
		sock, cores, threads := n.Sockets, n.CoresPerSocket, n.ThreadsPerCore
		if sock == 0 && cores == 0 && threads == 0 {
			sock, cores, threads = 1, n.CPUs, 1
		}
		sc.Nodes = append(sc.Nodes, scheduler.NodeSpec{Name: n.Name, CPUs: n.CPUs, Rate: n.Rate,
			Sockets: sock, Cores: cores, Threads: threads, MemMB: n.MemoryMB, Gres: gres, Features: n.Features})
	}
	hasDefault := false
	for _, p := range c.Partitions {
		hasDefault = hasDefault || p.Default
	}
	for i, p := range c.Partitions {
		names, _ := sbatch.ExpandHostlist(p.Nodes)
		params := map[string]string{}
		keys := make([]string, 0, len(p.Params))
		for k := range p.Params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			params[k] = p.Params[k]
		}
		// The RT policies plan with capacity s (DESIGN.md §1): Cps/s for
		// divisible jobs, LEN/s for rigid ones.
		if _, set := params["share"]; !set && (p.Policy == "dlt" || p.Policy == "reserve") && c.Mix.Share() < 1 {
			params["share"] = strconv.FormatFloat(c.Mix.Share(), 'g', -1, 64)
		}
		sc.Partitions = append(sc.Partitions, scheduler.PartitionSpec{
			Name: p.Name, Nodes: names, Policy: p.Policy, Backfill: p.Backfill,
			Default: p.Default || (!hasDefault && i == 0),
			MaxTime: seconds(p.MaxTime), DefaultTime: seconds(p.DefaultTime),
			Params: params, DefMemPerCPU: p.DefMemPerCPU, MaxMemPerNode: p.MaxMemPerNode,
			OverSubscribe: p.OverSubscribe,
		})
	}
	if r, err := mix.ParseRatio(c.Mix.Ratio); err == nil {
		sc.Ratio = r
	}
	if mode, _ := mix.ParseMode(c.Mix.Mode); mode == mix.GangMode && c.MixEnforced() {
		sc.Gang = &scheduler.GangSpec{Rows: c.Mix.Rows, Quantum: c.Mix.Quantum, Sync: c.Mix.Sync}
	}
	return sc
}

// Path is the file the config came from ("" for the embedded default).
func (c *Config) Path() string { return c.path }
