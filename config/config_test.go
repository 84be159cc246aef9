package config

import (
	"hora/scheduler"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"hora/scheduler/mix"
)

func TestDefault(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	names := c.NodeNames()
	if strings.Join(names, " ") != "local1 local2 local3 local4" {
		t.Fatalf("default nodes %v", names)
	}
	sc := c.Scheduler()
	if len(sc.Partitions) != 1 || sc.Partitions[0].Name != "batch" || !sc.Partitions[0].Default ||
		sc.Partitions[0].Policy != "batch" || len(sc.Partitions[0].Nodes) != 4 {
		t.Fatalf("default partition %+v", sc.Partitions)
	}
	if c.Socket != "./var/horad.sock" || c.StateDir != "./var" {
		t.Fatalf("default paths %q %q", c.Socket, c.StateDir)
	}
	for _, n := range c.ExpandedNodes() {
		if n.CPUs < 1 {
			t.Fatalf("node %s has %d cpus", n.Name, n.CPUs)
		}
	}
}

const good = `cluster_name = "site"
state_dir = "/var/lib/hora"

[[node]]
name = "n[01-04]"
cpus = 8

[[node]]
name = "big1"
rate = 2.0

[[partition]]
name = "batch"
nodes = "n[01-04]"
default = true
max_time = "1-00:00:00"

[[partition]]
name = "rt"
nodes = "n[03-04],big1"
policy = "dlt"
[partition.params]
cms = "1"
cps = "1000"
`

func TestParseGood(t *testing.T) {
	c, err := Parse([]byte(good), "hora.toml")
	if err != nil {
		t.Fatal(err)
	}
	sc := c.Scheduler()
	if got := len(sc.Nodes); got != 5 {
		t.Fatalf("nodes %d", got)
	}
	if sc.Partitions[0].MaxTime != 86400 {
		t.Fatalf("max_time %v", sc.Partitions[0].MaxTime)
	}
	if sc.Partitions[1].Params["cps"] != "1000" || sc.Partitions[1].Policy != "dlt" {
		t.Fatalf("rt partition %+v", sc.Partitions[1])
	}
	if c.Socket != "/var/lib/hora/horad.sock" {
		t.Fatalf("socket %q", c.Socket)
	}
}

// Slurm's defaults apply when the keys are absent, and 0 is kept as given
// (it is a meaningful value, not "unset").
func TestReturnToServiceAndRequeueDefaults(t *testing.T) {
	c := Default()
	if *c.ReturnToService != 1 || *c.JobRequeue != 1 {
		t.Fatalf("defaults: return_to_service %d, job_requeue %d", *c.ReturnToService, *c.JobRequeue)
	}
	c, err := Parse([]byte("return_to_service = 0\njob_requeue = 0\n"), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	if *c.ReturnToService != 0 || *c.JobRequeue != 0 {
		t.Fatalf("explicit zeros: return_to_service %d, job_requeue %d", *c.ReturnToService, *c.JobRequeue)
	}
	c, err = Parse([]byte("return_to_service = 2\n"), "t.toml")
	if err != nil || *c.ReturnToService != 2 {
		t.Fatalf("return_to_service = 2: %v", err)
	}
}

func TestParseErrorsNameKeyAndLine(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // substrings that must all appear
	}{
		{"unknown top key", "clustr_name = \"x\"\n", []string{"t.toml:1: clustr_name: unknown key"}},
		{"wrong case", "[[node]]\nName = \"a\"\n", []string{"t.toml:2: node.0.Name: unknown key"}},
		{"unknown node key", "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\ncpuz = 3\n", []string{"t.toml:5: node.1.cpuz: unknown key"}},
		{"bad hostlist", "[[node]]\nname = \"n[1-\"\n", []string{"t.toml:2: node.0.name: invalid node name"}},
		{"every problem", "executor = \"rsh\"\nkill_wait_s = -1\n[[node]]\nname = \"a\"\n[[partition]]\nname = \"p\"\nnodes = \"b\"\npolicy = \"lottery\"\nmax_time = \"soon\"\n",
			[]string{"t.toml:1: executor", "t.toml:2: kill_wait_s", "t.toml:7: partition.0.nodes: node b is not declared",
				"t.toml:8: partition.0.policy: unknown policy", "t.toml:9: partition.0.max_time: invalid time"}},
		{"duplicate node", "[[node]]\nname = \"a[1-2]\"\n[[node]]\nname = \"a2\"\n", []string{"t.toml:4: node.1.name: node a2 already declared"}},
		{"syntax", "cluster_name = \n", []string{"t.toml:1:"}},
		{"type", "kill_wait_s = \"ten\"\n", []string{"t.toml"}},
		{"ssh without known_hosts", "executor = \"ssh\"\n[ssh]\nuser = \"root\"\nlauncher = \"rsh\"\n",
			[]string{"ssh.known_hosts: required", "t.toml:4: ssh.launcher: must be auto"}},
		{"unknown ssh key", "[ssh]\nknown_host = \"x\"\n", []string{"t.toml:2: ssh.known_host: unknown key"}},
		{"reservation access", "cluster_name = \"x\"\nreservation_access = \"everyone\"\n",
			[]string{`t.toml:2: reservation_access: must be "operators" or "users", got "everyone"`}},
		{"reservation access type", "reservation_access = true\n", []string{"t.toml"}},
		{"return_to_service out of range", "cluster_name = \"x\"\nreturn_to_service = 3\njob_requeue = 2\n",
			[]string{"t.toml:2: return_to_service: must be 0, 1 or 2", "t.toml:3: job_requeue: must be 0 or 1"}},
		{"pbs flavour", "[pbs]\nserver = \"head\"\nflavour = \"lsf\"\n", []string{`t.toml:3: pbs.flavour: must be "openpbs" or "torque", got "lsf"`}},
		{"pbs server", "[pbs]\nserver = \"a@b\"\n", []string{`t.toml:2: pbs.server: must be a host name`}},
		{"unknown pbs key", "[pbs]\nflavor = \"torque\"\n", []string{"t.toml:2: pbs.flavor: unknown key"}},
		{"limits", "[limits]\nmax_job_count = -1\nmax_submit_jobs_per_user = -5\n",
			[]string{"t.toml:2: limits.max_job_count: must be ≥ 0", "t.toml:3: limits.max_submit_jobs_per_user: must be ≥ 0 (0: no limit), got -5"}},
		{"rate limit", "[limits]\nrate_limit_bucket = 30\nmax_connections = -1\n",
			[]string{"t.toml:3: limits.max_connections: must be ≥ 0", "limits.rate_limit_refill: must be a number of requests per second greater than 0 when rate_limit_bucket is set, got 0"}},
		{"unknown limits key", "[limits]\nmax_jobs = 10\n", []string{"t.toml:2: limits.max_jobs: unknown key"}},
		{"return_to_service negative", "return_to_service = -1\n", []string{"t.toml:1: return_to_service: must be 0, 1 or 2"}},
		{"node resources", "[[node]]\nname = \"a\"\ncpus = 6\nsockets = 2\ncores_per_socket = 2\ngres = \"gpu:-1\"\nfeatures = [\"a&b\"]\nmemory_mb = -5\n" +
			"[[partition]]\nname = \"p\"\nnodes = \"a\"\noversubscribe = \"maybe\"\ndef_mem_per_cpu = -1\n",
			[]string{"t.toml:3: node.0.cpus: 6 is not sockets × cores_per_socket × threads_per_core = 4",
				`t.toml:6: node.0.gres: invalid gres "gpu:-1"`, `t.toml:7: node.0.features: invalid feature "a&b"`,
				"t.toml:8: node.0.memory_mb: memory_mb and mem_reserve_mb must be ≥ 0",
				`t.toml:12: partition.0.oversubscribe: must be NO, YES[:N], FORCE[:N] or EXCLUSIVE, got "maybe"`,
				"t.toml:13: partition.0.def_mem_per_cpu"}},
		{"oversubscribe count", "[[node]]\nname = \"a\"\n[[partition]]\nname = \"p\"\nnodes = \"a\"\noversubscribe = \"FORCE:0\"\n",
			[]string{`t.toml:6: partition.0.oversubscribe: invalid job count "0" after FORCE: (1 to 32767)`}},
		{"mix ratio 0:0", "[mix]\nratio = \"0:0\"\n", []string{`t.toml:2: mix.ratio: ratio "0:0": x and y cannot both be 0`}},
		{"mix ratio negative", "[mix]\nmode = \"tdm\"\nratio = \"-1:2\"\n", []string{`t.toml:3: mix.ratio: ratio "-1:2"`}},
		{"mix ratio three parts", "[mix]\nratio = \"2:1:3\"\n", []string{`t.toml:2: mix.ratio: ratio "2:1:3": want x:y`}},
		{"mix mode", "cluster_name = \"x\"\n[mix]\nratio = \"2:1\"\nmode = \"fifo\"\n", []string{`t.toml:4: mix.mode: mode "fifo": want ps, tdm or gang`}},
		{"mix settings", "[mix]\nratio = \"2:1\"\nmode = \"gang\"\nperiod = -3.0\nquantum = -1.0\nrows = 1\n",
			[]string{"t.toml:4: mix.period: must be seconds", "t.toml:5: mix.quantum: must be seconds", "t.toml:6: mix.rows: ratio 2:1 gives each class a row"}},
		{"mix unknown key", "[mix]\nratios = \"2:1\"\n", []string{"t.toml:2: mix.ratios: unknown key"}},
		{"mix share twice", "[mix]\nratio = \"2:1\"\n[[node]]\nname = \"a\"\n[[partition]]\nname = \"rt\"\nnodes = \"a\"\npolicy = \"dlt\"\n[partition.params]\nshare = \"0.5\"\n",
			[]string{"t.toml:10: partition.0.params.share: share \"0.5\" is set by [mix] ratio"}},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.src), "t.toml")
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error\n%v\ndoes not contain %q", c.name, err, w)
			}
		}
	}
}

// [mix] ratio reaches the RT policies as their share s = x/(x+y): dlt plans
// with Cps/s and reserve books LEN/s (DESIGN.md §1); batch is untouched, and
// the default 1:0 changes nothing.
func TestMixShareReachesRTPolicies(t *testing.T) {
	src := good + "\n[[partition]]\nname = \"res\"\nnodes = \"n01\"\npolicy = \"reserve\"\n[mix]\nratio = \"2:1\"\nmode = \"tdm\"\nperiod = 3\n"
	c, err := Parse([]byte(src), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Mix.Mode != "tdm" || c.Mix.Period != 3 || c.Mix.Rows != 6 || c.Mix.Quantum != 0.5 {
		t.Fatalf("mix %+v", c.Mix)
	}
	sc := c.Scheduler()
	for _, p := range sc.Partitions {
		got, set := p.Params["share"]
		switch p.Policy {
		case "dlt", "reserve":
			if got != "0.6666666666666666" {
				t.Errorf("partition %s (%s): share %q, want 2/3", p.Name, p.Policy, got)
			}
		default:
			if set {
				t.Errorf("partition %s (%s) got a share", p.Name, p.Policy)
			}
		}
	}
	d, _ := Parse([]byte(good), "t.toml")
	for _, p := range d.Scheduler().Partitions {
		if _, set := p.Params["share"]; set {
			t.Errorf("default ratio 1:0 set a share on %s", p.Name)
		}
	}
	if d.Mix.Ratio != "1:0" || d.Mix.Mode != "ps" || d.MixEnforced() {
		t.Errorf("defaults %+v, enforced %t", d.Mix, d.MixEnforced())
	}
	if !c.MixEnforced() || c.ClassOf("rt") != mix.RT || c.ClassOf("res") != mix.RT || c.ClassOf("batch") != mix.BE || c.ClassOf("nope") != mix.BE {
		t.Errorf("enforced %t, classes rt %s res %s batch %s", c.MixEnforced(), c.ClassOf("rt"), c.ClassOf("res"), c.ClassOf("batch"))
	}
}

// The example shipped in contrib/ must stay a valid, complete config.
func TestContribExampleParses(t *testing.T) {
	c, err := Load("../contrib/hora.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	sc := c.Scheduler()
	if len(sc.Partitions) != 3 || sc.Partitions[1].Policy != "dlt" || sc.Partitions[2].Params["strategy"] != "min-lip" {
		t.Fatalf("partitions %+v", sc.Partitions)
	}
	if *c.ReturnToService != 1 || *c.JobRequeue != 1 {
		t.Fatalf("return_to_service %d, job_requeue %d: want Slurm's defaults 1 and 1", *c.ReturnToService, *c.JobRequeue)
	}
	if sc.Partitions[0].DefaultTime != 3600 || c.SSH.ProbeMisses != 3 || c.KillWaitS != 30 {
		t.Fatalf("values not read: default_time %v, probe_misses %d, kill_wait_s %d", sc.Partitions[0].DefaultTime, c.SSH.ProbeMisses, c.KillWaitS)
	}
}

// Every key the config reads appears in the example shipped in contrib/, so
// that an operator finds each one documented there.
func TestContribExampleHasEveryKey(t *testing.T) {
	src, err := os.ReadFile("../contrib/hora.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if _, err := toml.Decode(string(src), &raw); err != nil {
		t.Fatal(err)
	}
	// keys of a table: the first element of an array of tables stands for all.
	keys := func(v any) map[string]bool {
		out := map[string]bool{}
		switch v := v.(type) {
		case map[string]any:
			for k := range v {
				out[k] = true
			}
		case []map[string]any:
			for _, m := range v {
				for k := range m {
					out[k] = true
				}
			}
		}
		return out
	}
	check := func(where string, typ reflect.Type, have map[string]bool) {
		for i := range typ.NumField() {
			tag := typ.Field(i).Tag.Get("toml")
			if tag == "" || tag == "-" {
				continue
			}
			if !have[tag] {
				t.Errorf("contrib/hora.toml.example: %s%s is missing", where, tag)
			}
		}
	}
	check("", reflect.TypeOf(Config{}), keys(raw))
	check("node.", reflect.TypeOf(Node{}), keys(raw["node"]))
	check("partition.", reflect.TypeOf(Partition{}), keys(raw["partition"]))
	check("ssh.", reflect.TypeOf(SSH{}), keys(raw["ssh"]))
	check("mix.", reflect.TypeOf(Mix{}), keys(raw["mix"]))
}

// Node resources reach the Engine: layout, memory, gres and features, and
// the partition's memory settings; local memory is probed less the reserve.
func TestNodeResources(t *testing.T) {
	dir := t.TempDir()
	mi := dir + "/meminfo"
	if err := os.WriteFile(mi, []byte("MemTotal:       8388608 kB\nMemFree: 1 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := procMeminfo
	procMeminfo = mi
	defer func() { procMeminfo = old }()
	src := `
[[node]]
name = "g[1-2]"
sockets = 2
cores_per_socket = 4
threads_per_core = 2
memory_mb = 64000
gres = "gpu:a100:2,nvme"
features = ["ib", "avx512"]
[[node]]
name = "c1"
cpus = 4
mem_reserve_mb = 1024
[[partition]]
name = "p"
nodes = "g[1-2],c1"
def_mem_per_cpu = 500
max_mem_per_node = 60000
oversubscribe = "exclusive"
`
	c, err := Parse([]byte(src), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	sc := c.Scheduler()
	g := sc.Nodes[0]
	if g.CPUs != 16 || g.Sockets != 2 || g.Cores != 4 || g.Threads != 2 || g.MemMB != 64000 ||
		len(g.Gres) != 2 || g.Gres[0] != (scheduler.GresDef{Name: "gpu", Type: "a100", Count: 2}) ||
		g.Gres[1].Name != "nvme" || g.Gres[1].Count != 1 || len(g.Features) != 2 {
		t.Fatalf("g1: %+v", g)
	}
	if c1 := sc.Nodes[2]; c1.CPUs != 4 || c1.MemMB != 8192-1024 || c1.Threads != 1 || c1.Cores != 4 {
		t.Fatalf("c1: %+v", c1)
	}
	if p := sc.Partitions[0]; p.DefMemPerCPU != 500 || p.MaxMemPerNode != 60000 || p.OverSubscribe != "exclusive" {
		t.Fatalf("partition: %+v", p)
	}
}

// What horad probes on SSH nodes fills what hora.toml leaves out, and
// nothing it sets.
func TestSetProbed(t *testing.T) {
	src := `
executor = "ssh"
[ssh]
known_hosts = "/dev/null"
[[node]]
name = "s[1-2]"
mem_reserve_mb = 1000
[[node]]
name = "s3"
cpus = 8
memory_mb = 4000
gres = "gpu:a100:1"
[[partition]]
name = "p"
nodes = "s[1-3]"
`
	c, err := Parse([]byte(src), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	ns := c.ExpandedNodes()
	if !ns[0].NeedsProbe() || ns[2].NeedsProbe() {
		t.Fatalf("NeedsProbe: %v %v", ns[0].NeedsProbe(), ns[2].NeedsProbe())
	}
	for _, n := range []string{"s1", "s3"} {
		c.SetProbed(n, Probed{CPUs: 16, MemMB: 64000, GPUs: 2})
	}
	sc := c.Scheduler()
	if s1 := sc.Nodes[0]; s1.CPUs != 16 || s1.MemMB != 63000 || len(s1.Gres) != 1 || s1.Gres[0].Count != 2 {
		t.Errorf("probed s1: %+v", s1)
	}
	if s2 := sc.Nodes[1]; s2.MemMB != 0 || len(s2.Gres) != 0 {
		t.Errorf("unprobed s2: %+v", s2)
	}
	if s3 := sc.Nodes[2]; s3.CPUs != 8 || s3.MemMB != 4000 || s3.Gres[0].Type != "a100" {
		t.Errorf("s3 configured, not probed: %+v", s3)
	}
}
