package sbatch

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
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
