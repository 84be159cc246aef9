package sbatch

import (
	"errors"
	"io/fs"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"hora/api"
)

const script = "#!/bin/sh\necho hi\n"

// submit runs BuildSpec in a fake world: files maps absolute paths to
// contents, the cwd is /home/u and the clock testNow.
func submit(argv, env []string, files map[string]string, stdin string) (*api.JobSpec, *Flags, error) {
	return BuildSpec(Input{
		Argv: argv, Env: env, Cwd: "/home/u", Stdin: strings.NewReader(stdin),
		ReadFile: func(p string) ([]byte, error) {
			if b, ok := files[p]; ok {
				return []byte(b), nil
			}
			return nil, fs.ErrNotExist
		},
		Now: testNow, Hostname: "login1",
	})
}

func TestBuildSpecScriptFile(t *testing.T) {
	body := "#!/bin/sh\n#SBATCH -J named\n#SBATCH -t 10\necho $1\n"
	spec, flags, err := submit([]string{"job.sh", "a", "-t", "5"}, []string{"PATH=/bin", "HOME=/home/u"},
		map[string]string{"/home/u/job.sh": body}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := api.JobSpec{
		Name: "named", Script: body, Command: "/home/u/job.sh", Args: []string{"a", "-t", "5"},
		WorkDir: "/home/u", Env: []string{"PATH=/bin", "HOME=/home/u"}, TimeLimit: 600,
		SubmitHost: "login1",
	}
	if !equalSpec(*spec, want) {
		t.Errorf("spec = %+v\nwant   %+v", *spec, want)
	}
	if flags.Parsable || flags.TestOnly || flags.Wait || flags.Quiet || len(flags.Warnings) != 0 {
		t.Errorf("flags = %+v", flags)
	}
}

func equalSpec(a, b api.JobSpec) bool {
	return reflect.DeepEqual(a, b)
}

func TestBuildSpecScriptLookup(t *testing.T) {
	files := map[string]string{
		"/home/u/job.sh":    script,
		"/opt/bin/tool":     script,
		"/home/u/sub/x.sh":  script,
		"/home/x.sh":        script,
		"/abs/dir/y.sh":     script,
		"/opt/bin/only-dir": script,
	}
	env := []string{"PATH=/usr/bin:/opt/bin"}
	cases := []struct{ arg, command, name string }{
		{"job.sh", "/home/u/job.sh", "job.sh"},
		{"./job.sh", "/home/u/job.sh", "job.sh"},
		{"tool", "/opt/bin/tool", "tool"},
		{"sub/x.sh", "/home/u/sub/x.sh", "x.sh"},
		{"../x.sh", "/home/x.sh", "x.sh"},
		{"/abs/dir/y.sh", "/abs/dir/y.sh", "y.sh"},
	}
	for _, c := range cases {
		spec, _, err := submit([]string{c.arg}, env, files, "")
		if err != nil {
			t.Errorf("%s: %v", c.arg, err)
			continue
		}
		if spec.Command != c.command || spec.Name != c.name {
			t.Errorf("%s: command %q name %q, want %q %q", c.arg, spec.Command, spec.Name, c.command, c.name)
		}
	}
	// ./ and names with a slash are never looked up along $PATH.
	for _, arg := range []string{"./tool", "bin/only-dir"} {
		if _, _, err := submit([]string{arg}, []string{"PATH=/opt"}, files, ""); err == nil {
			t.Errorf("%s found along PATH", arg)
		}
	}
}

func TestBuildSpecWrapAndStdin(t *testing.T) {
	spec, _, err := submit([]string{"--wrap", "sleep 10; echo done"}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "#!/bin/sh\n# This script was created by sbatch --wrap.\n\nsleep 10; echo done\n"; spec.Script != want {
		t.Errorf("wrap script %q, want %q", spec.Script, want)
	}
	if spec.Name != "wrap" || spec.Command != "" {
		t.Errorf("wrap name %q command %q", spec.Name, spec.Command)
	}
	spec, _, err = submit(nil, nil, nil, "#!/bin/sh\n#SBATCH --time=1:00:00\nhostname\n")
	if err != nil {
		t.Fatal(err)
	}
	if spec.Name != "sbatch" || spec.TimeLimit != 3600 || !strings.Contains(spec.Script, "hostname") {
		t.Errorf("stdin spec %+v", spec)
	}
}

// Precedence: script directives < #PBS < SBATCH_* environment < command line.
func TestBuildSpecPrecedence(t *testing.T) {
	files := map[string]string{
		"/home/u/j.sh":   "#!/bin/sh\n#SBATCH -t 10 -p script -J sname\ntrue\n",
		"/home/u/pbs.sh": "#!/bin/sh\n#SBATCH -J sname -t 10\n#PBS -N pname -l walltime=00:20:00\ntrue\n",
	}
	cases := []struct {
		argv      []string
		env       []string
		name      string
		limit     int64
		partition string
	}{
		{[]string{"j.sh"}, nil, "sname", 600, "script"},
		{[]string{"j.sh"}, []string{"SBATCH_TIMELIMIT=20", "SBATCH_PARTITION=env"}, "sname", 1200, "env"},
		{[]string{"-t", "30", "j.sh"}, []string{"SBATCH_TIMELIMIT=20"}, "sname", 1800, ""},
		{[]string{"-p", "cli", "j.sh"}, []string{"SBATCH_PARTITION=env", "SBATCH_JOB_NAME=ename"}, "ename", 600, "cli"},
		{[]string{"pbs.sh"}, nil, "pname", 1200, ""},
		{[]string{"--ignore-pbs", "pbs.sh"}, nil, "sname", 600, ""},
		{[]string{"pbs.sh"}, []string{"SBATCH_IGNORE_PBS=yes"}, "sname", 600, ""},
		// Slurm tests only that SBATCH_IGNORE_PBS exists.
		{[]string{"pbs.sh"}, []string{"SBATCH_IGNORE_PBS=0"}, "sname", 600, ""},
		{[]string{"pbs.sh"}, []string{"SBATCH_TIMELIMIT=5"}, "pname", 300, ""},
	}
	for _, c := range cases {
		spec, _, err := submit(c.argv, c.env, files, "")
		if err != nil {
			t.Errorf("%q %q: %v", c.argv, c.env, err)
			continue
		}
		if spec.Name != c.name || spec.TimeLimit != c.limit || (c.partition != "" && spec.Partition != c.partition) {
			t.Errorf("%q %q: name %q limit %d partition %q; want %q %d %q", c.argv, c.env,
				spec.Name, spec.TimeLimit, spec.Partition, c.name, c.limit, c.partition)
		}
	}
}

func TestBuildSpecOptions(t *testing.T) {
	cases := []struct {
		argv  []string
		env   []string
		check func(*api.JobSpec, *Flags) bool
	}{
		{[]string{"-N", "2-4"}, nil, func(s *api.JobSpec, _ *Flags) bool { return s.Nodes == 2 && s.NodesMax == 4 }},
		{[]string{"-N", "0-3"}, nil, func(s *api.JobSpec, _ *Flags) bool { return s.Nodes == 1 && s.NodesMax == 3 }},
		{[]string{"-o", "none", "-e", "NONE", "-i", "None"}, nil, func(s *api.JobSpec, _ *Flags) bool {
			return s.Stdout == "/dev/null" && s.Stderr == "/dev/null" && s.Stdin == "/dev/null"
		}},
		{[]string{"--open-mode=Tr"}, nil, func(s *api.JobSpec, _ *Flags) bool { return !s.OpenAppend }},
		{[]string{"--open-mode=a"}, nil, func(s *api.JobSpec, _ *Flags) bool { return s.OpenAppend }},
		{[]string{"--mail-type=begin,End", "--mail-type=FAIL", "--mail-user=ops"}, nil, func(s *api.JobSpec, _ *Flags) bool {
			return s.MailType == "BEGIN,END,FAIL" && s.MailUser == "ops"
		}},
		{[]string{"-N3"}, nil, func(s *api.JobSpec, _ *Flags) bool { return s.Nodes == 3 && s.NodesMax == 0 }},
		{[]string{"--nodes=1k"}, nil, func(s *api.JobSpec, _ *Flags) bool { return s.Nodes == 1024 }},
		{[]string{"-n", "8", "-c", "2"}, nil, func(s *api.JobSpec, _ *Flags) bool { return s.NTasks == 8 && s.CPUsPerTask == 2 }},
		{[]string{"-N", "2", "--ntasks-per-node=4"}, nil, func(s *api.JobSpec, _ *Flags) bool { return s.NTasks == 8 }},
		{[]string{"--mem=4G"}, nil, func(s *api.JobSpec, _ *Flags) bool { return s.MemMB == 4096 }},
		{[]string{"--mem-per-cpu=100", "-c", "4", "-n", "2"}, nil, func(s *api.JobSpec, _ *Flags) bool { return s.MemMB == 0 && s.MemPerCPU == 100 }},
		{[]string{"--mem-per-cpu=100", "--mem=50"}, nil, func(s *api.JobSpec, _ *Flags) bool { return s.MemMB == 50 }},
		{[]string{"-D", "sub/dir"}, nil, func(s *api.JobSpec, _ *Flags) bool { return s.WorkDir == "/home/u/sub/dir" }},
		{[]string{"--chdir=/scratch/"}, nil, func(s *api.JobSpec, _ *Flags) bool { return s.WorkDir == "/scratch" }},
		{[]string{"--begin=now+1hour"}, nil, func(s *api.JobSpec, _ *Flags) bool { return s.Begin == testNow.Unix()+3600 }},
		{[]string{"--deadline=tomorrow"}, nil, func(s *api.JobSpec, _ *Flags) bool {
			return s.Deadline == time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC).Unix()
		}},
		{[]string{"-t", "UNLIMITED", "--time-min=1:30"}, nil, func(s *api.JobSpec, _ *Flags) bool { return s.TimeLimit == api.NoLimit && s.TimeMin == 120 }},
		{[]string{"-o", "out-%j.txt", "-e", "err-%j", "-i", "in.txt"}, nil, func(s *api.JobSpec, _ *Flags) bool {
			return s.Stdout == "out-%j.txt" && s.Stderr == "err-%j" && s.Stdin == "in.txt" && s.Input == ""
		}},
		{[]string{"--load=1.5G", "--input=data.bin", "-D", "/d"}, nil, func(s *api.JobSpec, _ *Flags) bool {
			return s.Load == 1.5e9 && s.Input == "/d/data.bin"
		}},
		{[]string{"-H", "--no-requeue", "--open-mode=append"}, nil, func(s *api.JobSpec, _ *Flags) bool { return s.Hold && !s.Requeue && s.NoRequeue && s.OpenAppend }},
		{[]string{"--no-requeue", "--requeue"}, nil, func(s *api.JobSpec, _ *Flags) bool { return s.Requeue && !s.NoRequeue }},
		{[]string{"--requeue", "--no-requeue"}, nil, func(s *api.JobSpec, _ *Flags) bool { return !s.Requeue && s.NoRequeue }},
		{nil, nil, func(s *api.JobSpec, _ *Flags) bool { return !s.Requeue && !s.NoRequeue }},
		{nil, []string{"SBATCH_NO_REQUEUE="}, func(s *api.JobSpec, _ *Flags) bool { return !s.Requeue && s.NoRequeue }},
		{[]string{"-J", "n", "-A", "acct", "--comment=c c", "--reservation=r1", "-q", "high", "-p", "p1,p2"}, nil,
			func(s *api.JobSpec, _ *Flags) bool {
				return s.Name == "n" && s.Account == "acct" && s.Comment == "c c" && s.Reservation == "r1" && s.QOS == "high" && s.Partition == "p1,p2"
			}},
		{[]string{"--parsable", "--test-only", "-W", "-Q"}, nil, func(_ *api.JobSpec, f *Flags) bool {
			return f.Parsable && f.TestOnly && f.Wait && f.Quiet
		}},
		{nil, []string{"SBATCH_WAIT=no"}, func(_ *api.JobSpec, f *Flags) bool { return !f.Wait }},
		{nil, []string{"SBATCH_WAIT=1"}, func(_ *api.JobSpec, f *Flags) bool { return f.Wait }},
		{[]string{"--pars"}, nil, func(_ *api.JobSpec, f *Flags) bool { return f.Parsable }},
		{[]string{"--exclusive", "--gres=gpu:1", "-C", "avx", "--mail-type=END", "--signal=B:USR1@60", "-w", "n[1-2]", "--dependency="}, nil,
			func(s *api.JobSpec, _ *Flags) bool { return s.Name == "wrap" }},
	}
	for _, c := range cases {
		argv := append(append([]string(nil), c.argv...), "--wrap=true")
		spec, flags, err := submit(argv, c.env, nil, "")
		if err != nil {
			t.Errorf("%q: %v", c.argv, err)
			continue
		}
		if !c.check(spec, flags) {
			t.Errorf("%q %q: unexpected spec %+v flags %+v", c.argv, c.env, spec, flags)
		}
	}
}

func TestBuildSpecExport(t *testing.T) {
	env := []string{"PATH=/bin", "FOO=1", "SLURM_CONF=/etc/slurm.conf", "BAR=2"}
	cases := []struct {
		export string
		want   []string
	}{
		{"", env},
		{"ALL", env},
		{"NONE", []string{"SLURM_CONF=/etc/slurm.conf"}},
		{"NIL", []string{"SLURM_CONF=/etc/slurm.conf"}},
		{"ALL,FOO=9,NEW=x", []string{"PATH=/bin", "FOO=9", "SLURM_CONF=/etc/slurm.conf", "BAR=2", "NEW=x"}},
		{"FOO,NEW=x,MISSING", []string{"SLURM_CONF=/etc/slurm.conf", "FOO=1", "NEW=x"}},
	}
	for _, c := range cases {
		argv := []string{"--wrap=true"}
		if c.export != "" {
			argv = append(argv, "--export="+c.export)
		}
		spec, _, err := submit(argv, env, nil, "")
		if err != nil {
			t.Errorf("%q: %v", c.export, err)
			continue
		}
		if !slices.Equal(spec.Env, c.want) || spec.Export != c.export {
			t.Errorf("--export=%q: env %q export %q, want %q", c.export, spec.Env, spec.Export, c.want)
		}
	}
}

func TestBuildSpecErrors(t *testing.T) {
	files := map[string]string{
		"/home/u/empty.sh":     "",
		"/home/u/blank.sh":     " \n\t\n",
		"/home/u/noshe.sh":     "echo hi\n",
		"/home/u/crlf.sh":      "#!/bin/sh\r\necho hi\r\n",
		"/home/u/nul.sh":       "#!/bin/sh\necho \x00\n",
		"/home/u/baddir.sh":    "#!/bin/sh\n#SBATCH --bogus=1\ntrue\n",
		"/home/u/badword.sh":   "#!/bin/sh\n#SBATCH -J x stray\ntrue\n",
		"/home/u/badval.sh":    "#!/bin/sh\n\n#SBATCH -J x\n#SBATCH --time=bogus\ntrue\n",
		"/home/u/badshort.sh":  "#!/bin/sh\n#SBATCH -t bogus\ntrue\n",
		"/home/u/wrapdir.sh":   "#!/bin/sh\n#SBATCH --wrap=x\ntrue\n",
		"/home/u/quote.sh":     "#!/bin/sh\n#SBATCH -J 'x\ntrue\n",
		"/home/u/sub/quote.sh": "#!/bin/sh\n#SBATCH -J 'x\ntrue\n",
		"/home/u/het.sh":       "#!/bin/sh\n#SBATCH -N 1\n#SBATCH hetjob\n#SBATCH -N 2\ntrue\n",
	}
	cases := []struct {
		argv []string
		env  []string
		msg  string
		exit int
	}{
		{[]string{"--time=bogus", "--wrap=x"}, nil, "error: Invalid --time specification", 255},
		{[]string{"--bogus", "job.sh"}, nil, "unrecognized option '--bogus'\nTry \"sbatch --help\" for more information", 255},
		{[]string{"-Z"}, nil, "invalid option -- 'Z'\nTry \"sbatch --help\" for more information", 255},
		{[]string{"--time"}, nil, "option '--time' requires an argument\nTry \"sbatch --help\" for more information", 255},
		{[]string{"/nonexistent.sh"}, nil, "error: Unable to open file /nonexistent.sh", 1},
		{[]string{"--wrap=x", "arg"}, nil, "error: Script arguments not permitted with --wrap option", 1},
		{[]string{"empty.sh"}, nil, "error: Batch script is empty!", 1},
		{nil, nil, "error: Batch script is empty!", 1},
		{[]string{"blank.sh"}, nil, "error: Batch script contains only whitespace!", 1},
		{[]string{"noshe.sh"}, nil, "error: This does not look like a batch script.  The first\n" +
			"error: line must start with #! followed by the path to an interpreter.\n" +
			"error: For instance: #!/bin/sh", 1},
		{[]string{"crlf.sh"}, nil, "error: Batch script contains DOS line breaks (\\r\\n)\n" +
			"error: instead of expected UNIX line breaks (\\n).", 1},
		{[]string{"nul.sh"}, nil, "error: The Slurm controller does not allow scripts that\nerror: contain a NULL character '\\0'.", 1},
		{[]string{"baddir.sh"}, nil, "error: Invalid directive found in batch script: --bogus=1", 255},
		{[]string{"badword.sh"}, nil, "error: Invalid directive found in batch script: stray", 255},
		{[]string{"wrapdir.sh"}, nil, "error: Invalid directive found in batch script: --wrap", 255},
		{[]string{"badval.sh"}, nil, "error: Invalid --time specification\nerror: at badval.sh:4: --time=bogus", 255},
		{[]string{"badshort.sh"}, nil, "error: Invalid --time specification\nerror: at badshort.sh:2: -t bogus", 255},
		{[]string{"quote.sh"}, nil, "fatal: quote.sh: line 2: Unmatched `'` in [#SBATCH -J 'x]", 1},
		{[]string{"--wrap=x"}, []string{"SBATCH_TIMELIMIT=1h"}, "error: Invalid --time specification\nerror: at environment variable SBATCH_TIMELIMIT: --time=1h", 255},
		{[]string{"-N", "0", "--wrap=x"}, nil, "error: Batch job submission failed: Node count specification invalid", 1},
		{[]string{"-N", "2x", "--wrap=x"}, nil, "error: \"2x\" is not a valid node count", 255},
		{[]string{"-N", "1-y", "--wrap=x"}, nil, "error: \"y\" is not a valid node count", 255},
		{[]string{"-N", "4-2", "--wrap=x"}, nil, "error: Maximum node count 2 is less than minimum node count 4", 255},
		{[]string{"--mem=12X", "--wrap=x"}, nil, "error: Invalid --mem specification", 255},
		{[]string{"--begin=someday", "--wrap=x"}, nil, "error: Invalid --begin specification", 255},
		{[]string{"--deadline=13/45", "--wrap=x"}, nil, "error: Invalid --deadline specification", 255},
		{[]string{"--open-mode=x", "--wrap=x"}, nil, "error: Invalid --open-mode specification", 255},
		{[]string{"-n", "0", "--wrap=x"}, nil, "error: Invalid numeric value \"0\" for --ntasks.", 1},
		{[]string{"-c", "two", "--wrap=x"}, nil, "error: Invalid numeric value \"two\" for --cpus-per-task.", 1},
		{[]string{"het.sh"}, nil, "error: het.sh:3: hora does not support heterogeneous jobs (#SBATCH hetjob)", 255},
		{nil, nil, "fatal: stdin: line 2: Unmatched `\"` in [#SBATCH -J \"x]", 1},
		{[]string{"sub/quote.sh"}, nil, "fatal: quote.sh: line 2: Unmatched `'` in [#SBATCH -J 'x]", 1},
		{[]string{"--load=lots", "--wrap=x"}, nil, "error: Invalid --load specification", 255},
		{[]string{"--kill-on-invalid-dep=maybe", "--wrap=x"}, nil, "error: Invalid --kill-on-invalid-dep specification", 255},
		{[]string{"--export=ALL,=x", "--wrap=x"}, nil, "error: Invalid --export specification: ALL,=x", 255},
	}
	for _, c := range cases {
		stdin := ""
		if c.argv == nil && strings.HasPrefix(c.msg, "fatal") {
			stdin = "#!/bin/sh\n#SBATCH -J \"x\ntrue\n"
		}
		_, _, err := submit(c.argv, c.env, files, stdin)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%q: err = %v, want *Error", c.argv, err)
			continue
		}
		if e.Msg != c.msg || e.Exit != c.exit {
			t.Errorf("%q:\n got %q exit %d\nwant %q exit %d", c.argv, e.Msg, e.Exit, c.msg, c.exit)
		}
	}
}

func TestBuildSpecHelpVersion(t *testing.T) {
	for argv, want := range map[string]error{"--help": ErrHelp, "-h": ErrHelp, "--usage": ErrUsage, "-V": ErrVersion} {
		if _, _, err := submit([]string{"-t", "5", argv, "job.sh"}, nil, nil, ""); err != want {
			t.Errorf("%s: err = %v, want %v", argv, err, want)
		}
	}
}

func TestBuildSpecSlurmPrefixWarning(t *testing.T) {
	spec, flags, err := submit([]string{"j.sh"}, nil, map[string]string{
		"/home/u/j.sh": "#!/bin/sh\n#SLURM -J old\n#SLURM -t 5\ntrue\n"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if spec.Name != "old" || spec.TimeLimit != 300 {
		t.Errorf("#SLURM directives not applied: %+v", spec)
	}
	if !slices.Equal(flags.Warnings, []string{slurmPrefixWarning}) {
		t.Errorf("warnings %q", flags.Warnings)
	}
}

// Every option of the table reaches a handler: a missing case in apply
// would make BuildSpec fail with an internal error.
func TestEveryOptionHandled(t *testing.T) {
	values := map[string]string{
		"nodes": "1", "ntasks": "1", "cpus-per-task": "1", "ntasks-per-node": "1", "time": "5",
		"time-min": "5", "begin": "now", "deadline": "now+1hour", "mem": "1", "mem-per-cpu": "1",
		"load": "1k", "open-mode": "append", "export": "ALL", "chdir": "/tmp", "array": "", "dependency": "", "kill-on-invalid-dep": "yes", "signal": "B:USR1@30",
		"cpus-per-gpu": "1", "gpus": "1", "gpus-per-node": "a100:1", "gpus-per-task": "1", "hint": "nomultithread",
		"mem-per-gpu": "1G", "mincpus": "2", "mail-type": "END", "rt-frame": "1", "rt-buffer": "2", "rt-work": "1ms",
	}
	for _, o := range GetoptTable(Sbatch) {
		switch o.Key {
		case "help", "usage", "version", "wrap":
			continue
		}
		arg := "--" + o.Long
		if o.Arg == RequiredArg {
			v, ok := values[o.Key]
			if !ok {
				v = "x"
			}
			arg += "=" + v
		}
		if _, _, err := submit(append([]string{arg, "--wrap=true"}, rtCompanions[o.Key]...), nil, nil, ""); err != nil {
			t.Errorf("%s: %v", arg, err)
		}
	}
}

// Every option COMPAT.md §1.3 lists is in the table, with its short form.
func TestOptionTableCoversCompat(t *testing.T) {
	want := map[string]rune{
		"job-name": 'J', "output": 'o', "error": 'e', "input": 'i', "nodes": 'N', "ntasks": 'n',
		"cpus-per-task": 'c', "mem": 0, "mem-per-cpu": 0, "mem-per-gpu": 0, "time": 't', "time-min": 0,
		"begin": 'b', "deadline": 0, "partition": 'p', "reservation": 0, "qos": 'q', "account": 'A',
		"chdir": 'D', "export": 0, "wrap": 0, "parsable": 0, "array": 'a', "dependency": 'd', "hold": 'H',
		"test-only": 0, "wait": 'W', "quiet": 'Q', "open-mode": 0, "signal": 0, "no-requeue": 0,
		"requeue": 0, "constraint": 'C', "nodelist": 'w', "exclude": 'x', "exclusive": 0, "gres": 0,
		"gpus": 'G', "gpus-per-node": 0, "ntasks-per-node": 0, "comment": 0, "wckey": 0, "clusters": 'M',
		"mail-type": 0, "mail-user": 0, "load": 0, "ignore-pbs": 0, "help": 'h', "version": 'V',
	}
	have := map[string]Opt{}
	for _, o := range GetoptTable(Sbatch) {
		if _, dup := have[o.Long]; dup {
			t.Errorf("--%s listed twice", o.Long)
		}
		have[o.Long] = o
	}
	for long, short := range want {
		o, ok := have[long]
		if !ok {
			t.Errorf("--%s missing", long)
			continue
		}
		if o.Short != short {
			t.Errorf("--%s: short -%c, want -%c", long, o.Short, short)
		}
	}
}

// Every SBATCH_* input variable of COMPAT.md §1.2 is read: a valid value
// is accepted and a bad one (where values are checked) is refused.
func TestSbatchEnvVars(t *testing.T) {
	cases := []struct {
		env   string
		check func(*api.JobSpec, *Flags) bool
	}{
		{"SBATCH_ACCOUNT=a1", func(s *api.JobSpec, _ *Flags) bool { return s.Account == "a1" }},
		{"SBATCH_ERROR=e.txt", func(s *api.JobSpec, _ *Flags) bool { return s.Stderr == "e.txt" }},
		{"SBATCH_OUTPUT=o.txt", func(s *api.JobSpec, _ *Flags) bool { return s.Stdout == "o.txt" }},
		{"SBATCH_EXPORT=NONE", func(s *api.JobSpec, _ *Flags) bool { return s.Export == "NONE" && len(s.Env) == 0 }},
		{"SBATCH_JOB_NAME=n1", func(s *api.JobSpec, _ *Flags) bool { return s.Name == "n1" }},
		{"SBATCH_MEM_PER_NODE=2G", func(s *api.JobSpec, _ *Flags) bool { return s.MemMB == 2048 }},
		{"SBATCH_MEM_PER_CPU=10", func(s *api.JobSpec, _ *Flags) bool { return s.MemPerCPU == 10 }},
		{"SBATCH_PARTITION=p1", func(s *api.JobSpec, _ *Flags) bool { return s.Partition == "p1" }},
		{"SBATCH_QOS=q1", func(s *api.JobSpec, _ *Flags) bool { return s.QOS == "q1" }},
		{"SBATCH_RESERVATION=r1", func(s *api.JobSpec, _ *Flags) bool { return s.Reservation == "r1" }},
		{"SBATCH_TIMELIMIT=2:00:00", func(s *api.JobSpec, _ *Flags) bool { return s.TimeLimit == 7200 }},
		{"SBATCH_WAIT=yes", func(_ *api.JobSpec, f *Flags) bool { return f.Wait }},
		{"SBATCH_OPEN_MODE=append", func(s *api.JobSpec, _ *Flags) bool { return s.OpenAppend }},
		{"SBATCH_NO_REQUEUE=1", func(s *api.JobSpec, _ *Flags) bool { return !s.Requeue }},
		{"SBATCH_REQUEUE=", func(s *api.JobSpec, _ *Flags) bool { return s.Requeue }},
		{"SBATCH_CONSTRAINT=avx", nil}, {"SBATCH_EXCLUSIVE=user", nil}, {"SBATCH_GPUS=1", nil},
		{"SBATCH_GPUS_PER_NODE=1", nil}, {"SBATCH_GPUS_PER_TASK=1", nil}, {"SBATCH_SIGNAL=USR1@60", nil},
		{"SBATCH_DEBUG=1", nil}, {"SBATCH_WCKEY=w", nil}, {"SBATCH_IGNORE_PBS=", nil},
	}
	for _, c := range cases {
		spec, flags, err := submit([]string{"--wrap=true"}, []string{c.env}, nil, "")
		if err != nil {
			t.Errorf("%s: %v", c.env, err)
			continue
		}
		if c.check != nil && !c.check(spec, flags) {
			t.Errorf("%s: not applied: %+v %+v", c.env, spec, flags)
		}
	}
	for _, env := range []string{"SBATCH_TIMELIMIT=x", "SBATCH_MEM_PER_NODE=x", "SBATCH_OPEN_MODE=x"} {
		if _, _, err := submit([]string{"--wrap=true"}, []string{env}, nil, ""); err == nil {
			t.Errorf("%s accepted", env)
		}
	}
}

// Resource options land in their JobSpec fields; bad values get Slurm's
// texts and exit codes (issue 11: --mem=12Q, -c 0, --gres=gpu:-1).
func TestBuildSpecResources(t *testing.T) {
	good := []struct {
		argv  []string
		check func(*api.JobSpec) bool
	}{
		{[]string{"-n", "4", "-c", "2", "--ntasks-per-node=2"}, func(s *api.JobSpec) bool {
			return s.NTasks == 4 && s.CPUsPerTask == 2 && s.NTasksPerNode == 2 && s.WantsResources()
		}},
		{[]string{"-N", "3", "--ntasks-per-node=2"}, func(s *api.JobSpec) bool { return s.NTasks == 6 }},
		{[]string{"--mem=0"}, func(s *api.JobSpec) bool { return s.MemAll && s.MemMB == 0 }},
		{[]string{"--mem=2G", "--mem-per-gpu=1G"}, func(s *api.JobSpec) bool { return s.MemMB == 0 && s.MemPerGPU == 1024 }},
		{[]string{"--gres=gpu:a100:2,nvme", "--gpus-per-task=1", "--cpus-per-gpu=4"}, func(s *api.JobSpec) bool {
			return s.Gres == "gpu:a100:2,nvme:1" && s.GPUsPerTask == "1" && s.CPUsPerGPU == 4
		}},
		{[]string{"--gres=gres:gpu:3"}, func(s *api.JobSpec) bool { return s.Gres == "gpu:3" }},
		{[]string{"--exclusive"}, func(s *api.JobSpec) bool { return s.Exclusive == "node" && !s.WantsResources() }},
		{[]string{"--exclusive=user", "-s"}, func(s *api.JobSpec) bool { return s.Exclusive == "user" && s.Oversubscribe }},
		{[]string{"-w", "n[1-2],n3", "-x", "n4", "-C", "a100&ib"}, func(s *api.JobSpec) bool {
			return s.NodeList == "n[1-3]" && s.Exclude == "n4" && s.Constraint == "a100&ib"
		}},
		{[]string{"--mincpus=4", "--hint=nomultithread"}, func(s *api.JobSpec) bool { return s.MinCPUs == 4 && s.NoMultithread }},
		{[]string{"-N", "3", "-n", "2"}, func(s *api.JobSpec) bool { return s.Nodes == 2 && s.NTasks == 2 }},
		{nil, func(s *api.JobSpec) bool { return !s.WantsResources() }},
	}
	for _, c := range good {
		spec, _, err := submit(append(c.argv, "--wrap=true"), nil, nil, "")
		if err != nil || !c.check(spec) {
			t.Errorf("%q: %v %+v", c.argv, err, spec)
		}
	}
	bad := []struct {
		argv []string
		msg  string
		exit int
	}{
		{[]string{"--mem=12Q"}, "error: Invalid --mem specification", 255},
		{[]string{"-c", "0"}, `error: Invalid numeric value "0" for --cpus-per-task.`, 1},
		{[]string{"--gres=gpu:-1"}, "error: Batch job submission failed: Invalid generic resource (gres) specification", 1},
		{[]string{"--gres=gpu:0"}, "error: Batch job submission failed: Invalid generic resource (gres) specification", 1},
		{[]string{"--gpus=a100:x"}, "error: Batch job submission failed: Invalid generic resource (gres) specification", 1},
		{[]string{"--exclusive=bogus"}, "error: Invalid --exclusive specification", 255},
		{[]string{"--mail-type=BEGIN,bogus"}, "error: --mail-type=BEGIN,bogus invalid", 255},
		{[]string{"--hint=fast"}, `error: unrecognized --hint argument "fast", see --hint=help`, 255},
		{[]string{"-C", "a&b|c"}, "error: Batch job submission failed: Invalid feature specification", 1},
	}
	for _, c := range bad {
		_, _, err := submit(append(c.argv, "--wrap=true"), nil, nil, "")
		var e *Error
		if !errors.As(err, &e) || e.Msg != c.msg || e.Exit != c.exit {
			t.Errorf("%q: got %v, want %q exit %d", c.argv, err, c.msg, c.exit)
		}
	}
}
