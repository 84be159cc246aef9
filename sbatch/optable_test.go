package sbatch

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"hora/api"
)

// TestOptionRegistry walks the one option table: every record has a help
// line and a man entry, and within one command no short letter, long name
// or environment variable is used twice.
func TestOptionRegistry(t *testing.T) {
	envPrefixes := map[Command][]string{
		Sbatch: {"SBATCH_", "SLURM_"},
		Srun:   {"SLURM_", "SRUN_", "SLURMD_"},
		Salloc: {"SALLOC_", "SLURM_"},
	}
	for i := range Options {
		o := &Options[i]
		name := "--" + o.Long
		switch {
		case o.Long == "" || strings.HasPrefix(o.Long, "-"):
			t.Errorf("record %d: bad long name %q", i, o.Long)
		case o.Cmds == 0:
			t.Errorf("%s: accepted by no command", name)
		case strings.TrimSpace(o.Help) == "":
			t.Errorf("%s: no help line", name)
		case strings.TrimSpace(o.Man) == "":
			t.Errorf("%s: no man entry", name)
		case len(o.Help) > 49 || strings.ContainsAny(o.Help, "\n\t"):
			t.Errorf("%s: help %q is not one short line (at most 49 bytes)", name, o.Help)
		case !strings.HasSuffix(o.Man, "."):
			t.Errorf("%s: man entry is not a sentence: %q", name, o.Man)
		case (o.Arg == NoArg) != (o.ArgName == ""):
			t.Errorf("%s: argument kind %d with argument name %q", name, o.Arg, o.ArgName)
		case o.Arg == NoArg && len(o.Values) > 0:
			t.Errorf("%s: takes no argument but lists values", name)
		case o.Command && o.Set != nil:
			t.Errorf("%s: handled by the command and by a setter", name)
		}
		if i > 0 && Options[i-1].Long > o.Long {
			t.Errorf("%s: out of alphabetical order after --%s", name, Options[i-1].Long)
		}
		for _, c := range Commands {
			for _, v := range o.Env.For(c) {
				if o.Cmds&c == 0 {
					t.Errorf("%s: %s variable %s but %s does not take the option", name, c, v, c)
				}
				if !slices.ContainsFunc(envPrefixes[c], func(p string) bool { return strings.HasPrefix(v, p) }) {
					t.Errorf("%s: %s variable %s has a foreign prefix", name, c, v)
				}
			}
		}
	}
	for _, c := range Commands {
		shorts := map[rune]string{}
		longs := map[string]bool{}
		vars := map[string]string{}
		for _, o := range OptionsOf(c) {
			if o.Short != 0 {
				if prev, dup := shorts[o.Short]; dup {
					t.Errorf("%s: -%c is both --%s and --%s", c, o.Short, prev, o.Long)
				}
				shorts[o.Short] = o.Long
			}
			for _, l := range append([]string{o.Long}, o.Aliases...) {
				if longs[l] {
					t.Errorf("%s: --%s defined twice", c, l)
				}
				longs[l] = true
			}
			for _, v := range o.Env.For(c) {
				if prev, dup := vars[v]; dup {
					t.Errorf("%s: %s sets both --%s and --%s", c, v, prev, o.Long)
				}
				vars[v] = o.Long
			}
		}
	}
}

// slurmClient returns the path of Debian's real Slurm 22.05 client c and
// an environment with a minimal configuration, enough for option parsing,
// --help and --usage (nothing reaches a controller).
func slurmClient(t *testing.T, c Command) (string, []string) {
	t.Helper()
	path, err := exec.LookPath(c.String())
	if err != nil {
		t.Fatalf("%s not found: run `make deps` (installs slurm-client)", c)
	}
	if real, err := filepath.EvalSymlinks(path); err == nil && strings.HasSuffix(real, "/hora") {
		t.Fatalf("%s is hora, not Slurm's client", path)
	}
	conf := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=oracle\nSlurmctldHost=localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, []string{"PATH=" + os.Getenv("PATH"), "SLURM_CONF=" + conf, "HOME=" + t.TempDir()}
}

func runClient(path string, env []string, args ...string) string {
	cmd := exec.Command(path, args...)
	cmd.Args[0] = filepath.Base(path)
	cmd.Env = env
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// TestOptionTableAgainstSlurm checks the table against the real sbatch,
// srun and salloc: every option Slurm's --help lists is in the command's
// table, and every option of the table (but hora's own) is accepted by
// the real command with the same argument kind, long and short form.
// Each probe ends in a getopt error or --usage, so nothing is submitted.
func TestOptionTableAgainstSlurm(t *testing.T) {
	listed := regexp.MustCompile(`(?m)^  (?:-(\w),? |    )--([a-z0-9-]+)`)
	for _, c := range []Command{Sbatch, Srun, Salloc} {
		path, env := slurmClient(t, c)
		help := runClient(path, env, "--help")
		for _, m := range listed.FindAllStringSubmatch(help, -1) {
			o := Lookup(c, m[2])
			if o == nil {
				t.Errorf("%s: Slurm lists --%s, the table does not", c, m[2])
				continue
			}
			if m[1] != "" && string(o.Short) != m[1] {
				t.Errorf("%s --%s: Slurm's short form -%s, the table's %q", c, m[2], m[1], o.Short)
			}
		}
		for _, o := range OptionsOf(c) {
			if o.Section == secHora {
				continue
			}
			for _, long := range append([]string{o.Long}, o.Aliases...) {
				probe(t, c, path, env, "--"+long, o.Arg, "option '--"+long+"'")
			}
			if o.Short != 0 {
				probe(t, c, path, env, "-"+string(o.Short), o.Arg, "-- '"+string(o.Short)+"'")
			}
		}
	}
}

// probe runs the real command with one option so that getopt's answer
// shows the argument kind: a required argument missing at the end, an
// argument given to a flag, or an optional one left out before --usage.
func probe(t *testing.T, c Command, path string, env []string, opt string, kind ArgKind, quoted string) {
	t.Helper()
	var args []string
	var want string
	switch kind {
	case RequiredArg:
		args, want = []string{opt}, "requires an argument"
	case NoArg:
		if strings.HasPrefix(opt, "--") {
			args, want = []string{opt + "=1"}, "doesn't allow an argument"
		} else {
			args = []string{opt, "--usage"}
		}
	case OptionalArg:
		args = []string{opt, "--usage"}
	}
	out := runClient(path, env, args...)
	for _, bad := range []string{"unrecognized option", "invalid option", "is ambiguous"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s %q: Slurm refuses it: %s", c, args, firstLine(out))
			return
		}
	}
	if want != "" && !strings.Contains(out, quoted) || !strings.Contains(out, want) {
		t.Errorf("%s %q: Slurm answers %q, want %q (argument kind differs)", c, args, firstLine(out), want)
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// TestGetoptErrorsAsSlurm compares, byte for byte, what hora and the real
// sbatch, srun and salloc print for a malformed command line, and the exit
// status (255).
func TestGetoptErrorsAsSlurm(t *testing.T) {
	lines := [][]string{
		{"--foo"}, {"--foo=bar"}, {"-y"}, {"--ti"}, {"--ti=5"}, {"--mem-p=1"}, {"--no"}, {"--time"},
		{"-t"}, {"--hold=1"}, {"--exc"}, {"--=x"}, {"--clu"}, {"--w"}, {"--g"}, {"--co"}, {"-Hy"},
		{"--gpus-per"}, {"--cpus-per-task"}, {"--exact=1"}, {"--ntasks-per"},
	}
	for _, c := range []Command{Sbatch, Srun, Salloc} {
		path, env := slurmClient(t, c)
		for _, argv := range lines {
			cmd := exec.Command(path, argv...)
			cmd.Args[0] = c.String()
			cmd.Env = env
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			_, gerr := Getopt(GetoptTable(c), argv, true)
			if gerr == nil {
				if strings.Contains(stderr.String(), "option") {
					t.Errorf("%s %q: hora accepts it, Slurm says %q", c, argv, stderr.String())
				}
				continue
			}
			got := c.String() + ": " + UsageErrorText(c, gerr.Error()) + "\n"
			for _, o := range OptionsOf(c) {
				if o.Section == secHora { // hora's additions are not Slurm's
					got = strings.Replace(got, " '--"+o.Long+"'", "", 1)
				}
			}
			if got != stderr.String() || code != exitOption {
				t.Errorf("%s %q:\nhora  %q (exit %d)\nslurm %q (exit %d)", c, argv, got, exitOption, stderr.String(), code)
			}
		}
	}
}

// TestHelpLayoutAsSlurm: every line of hora's --help and --usage has the
// shape of a line of Slurm's (same synopsis line, same section headings
// in the same order, options in column 2 or 6, descriptions in column 30),
// and sbatch's BuildSpec sends --help and --usage to the command.
func TestHelpLayoutAsSlurm(t *testing.T) {
	heading := regexp.MustCompile(`(?m)^[A-Z][^ ].*:( \(.*\))?$`)
	for _, c := range []Command{Sbatch, Srun, Salloc} {
		path, env := slurmClient(t, c)
		real := runClient(path, env, "--help")
		ours := Help(c)
		if firstLine(real) != firstLine(ours) {
			t.Errorf("%s --help synopsis:\nhora  %q\nslurm %q", c, firstLine(ours), firstLine(real))
		}
		realHeads := heading.FindAllString(real, -1)
		for _, h := range heading.FindAllString(ours, -1) {
			if h == sectionTitles[secHora] {
				continue
			}
			i := slices.IndexFunc(realHeads, func(r string) bool { return strings.HasPrefix(r, h) })
			if i < 0 {
				t.Errorf("%s --help: heading %q is not Slurm's", c, h)
			} else {
				realHeads = realHeads[i+1:]
			}
		}
		optLine := regexp.MustCompile(`^(  -\w, |      )(--\S+)( +)(\S.*)$`)
		optAlone := regexp.MustCompile(`^(  -\w, |      )--\S+$`)
		for _, l := range strings.Split(strings.TrimSuffix(ours, "\n"), "\n")[1:] {
			m := optLine.FindStringSubmatch(l)
			if len(l) > 80 {
				t.Errorf("%s --help: line wider than 80 columns: %q", c, l)
			}
			switch {
			case l == "" || heading.MatchString(l) || optAlone.MatchString(l):
			case strings.HasPrefix(l, strings.Repeat(" ", 30)) && l[30] != ' ':
			case m != nil:
				// The text starts in column 30, or one blank after a
				// wider option.
				if col := len(m[1]) + len(m[2]) + len(m[3]); col != 30 && (col < 30 || len(m[3]) != 1) {
					t.Errorf("%s --help: text of %q starts in column %d", c, l, col)
				}
			default:
				t.Errorf("%s --help: line %q has no Slurm shape", c, l)
			}
		}
		realUsage := runClient(path, env, "--usage")
		usage := Usage(c)
		if !strings.HasPrefix(usage, "Usage: "+c.String()+" [") || lastLine(usage) != lastLine(realUsage) {
			t.Errorf("%s --usage: first/last lines differ from Slurm's:\n%s", c, usage)
		}
		for _, l := range strings.Split(strings.TrimSuffix(usage, "\n"), "\n") {
			if len(l) > 80 {
				t.Errorf("%s --usage: line longer than 80: %q", c, l)
			}
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestSameSetterEverywhere: for every sbatch option with a setter, the
// command line, an #SBATCH line and each of the option's environment
// variables give the same job (one setter, three sources), and a bad
// value is refused from all three with the same first line.
func TestSameSetterEverywhere(t *testing.T) {
	good := map[string]string{
		"nodes": "3", "ntasks": "4", "cpus-per-task": "2", "ntasks-per-node": "2", "time": "1:00:00",
		"time-min": "30", "begin": "now+1hour", "deadline": "now+2hours", "mem": "2G", "mem-per-cpu": "100",
		"load": "1M", "open-mode": "append", "export": "NONE", "chdir": "/tmp/x", "array": "0-3%2", "dependency": "afterok:1",
		"kill-on-invalid-dep": "yes", "signal": "B:USR1@30",
		"cpus-per-gpu": "2", "exclusive": "user", "gpus": "a100:2", "gpus-per-node": "1", "gpus-per-task": "1",
		"hint": "nomultithread", "mem-per-gpu": "1G", "mincpus": "4", "gres": "gpu:a100:2", "nodelist": "n[1-2]",
		"exclude": "n3", "constraint": "ib&avx", "mail-type": "END,FAIL", "rt-frame": "100ms", "rt-buffer": "4", "rt-work": "10ms",
	}
	bad := map[string]string{
		"nodes": "x", "ntasks": "0", "cpus-per-task": "-1", "ntasks-per-node": "x", "time": "bogus",
		"time-min": "bogus", "begin": "yesterday", "deadline": "yesterday", "mem": "12Q", "mem-per-cpu": "1X",
		"load": "-1", "open-mode": "x", "kill-on-invalid-dep": "maybe", "signal": "USR1@x", "mail-type": "sometimes",
	}
	normal := func(s *api.JobSpec) api.JobSpec {
		c := *s
		c.Script, c.Env = "", nil
		return c
	}
	for _, o := range OptionsOf(Sbatch) {
		if o.Set == nil {
			continue
		}
		v, ok := good[o.Long]
		if !ok {
			v = "val"
		}
		arg := "--" + o.Long
		if o.Arg != NoArg {
			arg += "=" + v
		}
		extra := rtCompanions[o.Long]
		cl, clFlags, err := submit(append([]string{arg, "--wrap=true"}, extra...), nil, nil, "")
		if err != nil {
			t.Errorf("%s: %v", arg, err)
			continue
		}
		script := "#!/bin/sh\n#SBATCH " + arg + "\ntrue\n"
		dir, dirFlags, err := submit(extra, nil, nil, script)
		if err != nil {
			t.Errorf("#SBATCH %s: %v", arg, err)
			continue
		}
		cl.Name, dir.Name = "", "" // --wrap names the job wrap, stdin sbatch
		if o.Long == "job-name" {
			cl.Name, dir.Name = v, v
		}
		if !reflect.DeepEqual(normal(cl), normal(dir)) || !reflect.DeepEqual(clFlags, dirFlags) {
			t.Errorf("%s: command line %+v, #SBATCH %+v", arg, normal(cl), normal(dir))
		}
		for _, name := range o.Env.For(Sbatch) {
			ev := name + "=" + v
			if o.Arg == NoArg {
				ev = name + "=1"
			}
			env, envFlags, err := submit(append([]string{"--wrap=true"}, extra...), []string{ev}, nil, "")
			if err != nil {
				t.Errorf("%s: %v", ev, err)
				continue
			}
			if o.Long != "job-name" {
				env.Name = ""
			}
			if !reflect.DeepEqual(normal(cl), normal(env)) || !reflect.DeepEqual(clFlags, envFlags) {
				t.Errorf("%s: command line %+v, environment %+v", ev, normal(cl), normal(env))
			}
		}
		b, ok := bad[o.Long]
		if !ok {
			continue
		}
		_, _, clErr := submit([]string{"--" + o.Long + "=" + b, "--wrap=true"}, nil, nil, "")
		_, _, dirErr := submit(nil, nil, nil, "#!/bin/sh\n#SBATCH --"+o.Long+"="+b+"\ntrue\n")
		if clErr == nil || dirErr == nil {
			t.Errorf("--%s=%s accepted (command line %v, #SBATCH %v)", o.Long, b, clErr, dirErr)
			continue
		}
		if firstLine(clErr.Error()) != firstLine(dirErr.Error()) {
			t.Errorf("--%s=%s: command line %q, #SBATCH %q", o.Long, b, clErr, dirErr)
		}
		for _, name := range o.Env.For(Sbatch) {
			_, _, envErr := submit([]string{"--wrap=true"}, []string{name + "=" + b}, nil, "")
			if envErr == nil || firstLine(envErr.Error()) != firstLine(clErr.Error()) {
				t.Errorf("%s=%s: %v, command line %q", name, b, envErr, clErr)
			}
		}
	}
}
