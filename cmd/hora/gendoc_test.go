package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite man/ and contrib/completions/ from the option tables")

// repoRoot is the checkout, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestGeneratedDocsUpToDate: the committed man pages and completions are
// exactly what `hora gendoc` writes (run `make man` after changing an
// option), and no stale generated file is left behind.
func TestGeneratedDocsUpToDate(t *testing.T) {
	files, err := generatedDocs()
	if err != nil {
		t.Fatal(err)
	}
	root := repoRoot(t)
	for name, want := range files {
		path := filepath.Join(root, name)
		if *updateDocs {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v (run `make man`)", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what `hora gendoc` writes (run `make man`)", name)
		}
		if len(want) > 100_000 {
			t.Errorf("%s: %d bytes; generated files stay small", name, len(want))
		}
	}
	for _, dir := range []string{"man", "contrib/completions"} {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			// hora-replay.1 and hora-compare.1 come from hora-sim's flags
			// (replay's TestManPages), which the client does not link.
			elsewhere := e.Name() == "hora-replay.1" || e.Name() == "hora-compare.1"
			if _, ok := files[dir+"/"+e.Name()]; !ok && strings.HasSuffix(e.Name(), ".1") && !elsewhere {
				t.Errorf("%s/%s is not generated any more", dir, e.Name())
			}
		}
	}
}

// TestManPagesLint runs the real mandoc over every generated page.
func TestManPagesLint(t *testing.T) {
	mandoc, err := exec.LookPath("mandoc")
	if err != nil {
		t.Fatal("mandoc not found: run `make deps`")
	}
	files, err := generatedDocs()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, b := range files {
		if !strings.HasPrefix(name, "man/") {
			continue
		}
		p := filepath.Join(dir, filepath.Base(name))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(mandoc, "-Tlint", "-Werror", p).CombinedOutput(); err != nil {
			t.Errorf("mandoc -Tlint %s: %v\n%s", name, err, out)
		}
		// The page renders, and every option of the command is in it.
		out, err := exec.Command(mandoc, "-Tascii", p).Output()
		if err != nil {
			t.Fatalf("mandoc -Tascii %s: %v", name, err)
		}
		out = overstrike.ReplaceAll(out, nil)
		if !bytes.Contains(out, []byte("NAME")) || !bytes.Contains(out, []byte("SEE ALSO")) {
			t.Errorf("%s renders without NAME or SEE ALSO", name)
		}
	}
}

// overstrike is how mandoc -Tascii prints bold and underline: c\bc, _\bc.
var overstrike = regexp.MustCompile(".\x08")

// TestManPageHasEveryOption: sbatch.1 documents every option sbatch takes,
// says which ones hora ignores, and lists its environment variables.
func TestManPageHasEveryOption(t *testing.T) {
	files, err := generatedDocs()
	if err != nil {
		t.Fatal(err)
	}
	page := string(files["man/sbatch.1"])
	for _, want := range []string{`\fB\-\-account\fR=\fIname\fR`, `\fB\-J\fR, \fB\-\-job\-name\fR=\fIname\fR`,
		`\fB\-\-cluster\fR`, `\fBSBATCH_TIMELIMIT\fR`, ".SH INPUT ENVIRONMENT VARIABLES", ".SH OUTPUT ENVIRONMENT VARIABLES",
		".SH EXIT STATUS", ".SH EXAMPLES", "ignores it", `\fBSLURM_JOB_ID\fR`} {
		if !strings.Contains(page, want) {
			t.Errorf("sbatch.1 lacks %q", want)
		}
	}
	if strings.Contains(string(files["man/srun.1"]), `\-\-parsable`) {
		t.Error("srun.1 documents sbatch's --parsable")
	}
}

func writeCompletions(t *testing.T) string {
	t.Helper()
	files, err := generatedDocs()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range []string{"hora.bash", "_hora", "hora.fish"} {
		if err := os.WriteFile(filepath.Join(dir, n), files["contrib/completions/"+n], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestBashCompletion loads the generated script into the real bash and
// completes option names, option values (both --opt=val, which bash splits
// at "=", and --opt val) and the options of a listing command.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	dir := writeCompletions(t)
	cases := []struct {
		words []string
		want  []string
	}{
		{[]string{"sbatch", "--par"}, []string{"--parsable", "--partition"}},
		{[]string{"sbatch", "--open-mode", "=", "a"}, []string{"append"}},
		{[]string{"sbatch", "--open-mode", "="}, []string{"append", "truncate"}},
		{[]string{"sbatch", "--open-mode=t"}, []string{"truncate"}},
		{[]string{"sbatch", "--mail-type", "B"}, []string{"BEGIN"}},
		{[]string{"srun", "--lab"}, []string{"--label"}},
		{[]string{"salloc", "--no-"}, []string{"--no-bell", "--no-kill", "--no-shell"}},
		{[]string{"squeue", "--sta"}, []string{"--start", "--states"}},
		{[]string{"sbatch", "-H"}, []string{"-H"}},
	}
	for _, c := range cases {
		script := "source " + filepath.Join(dir, "hora.bash") + "\n" +
			"COMP_WORDS=(" + shellWords(c.words) + "); COMP_CWORD=" + strconv.Itoa(len(c.words)-1) + "\n" +
			"_hora_" + c.words[0] + "\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		out, err := exec.Command(bash, "--norc", "--noprofile", "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", c.words, err, out)
		}
		got := strings.Fields(string(out))
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("bash completes %q to %q, want %q", c.words, got, c.want)
		}
	}
}

// TestFishCompletion asks the real fish to complete with the generated file.
func TestFishCompletion(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Fatal("fish not found: run `make deps`")
	}
	dir := writeCompletions(t)
	for line, want := range map[string][]string{
		"sbatch --par":        {"--parsable", "--partition"},
		"sbatch --open-mode=": {"--open-mode=append", "--open-mode=truncate"},
		"srun --lab":          {"--label"},
	} {
		cmd := exec.Command(fish, "--no-config", "-c", "source "+filepath.Join(dir, "hora.fish")+"; complete -C '"+line+"'")
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("fish %q: %v\n%s", line, err, out)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			w, _, _ := strings.Cut(l, "\t")
			got = append(got, w)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("fish completes %q to %q, want %q", line, got, want)
		}
	}
}

// TestZshCompletion drives an interactive zsh through zsh/zpty: compinit
// with the generated _hora on fpath, then "sbatch --parsa<TAB>" must become
// "sbatch --parsable".
func TestZshCompletion(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Fatal("zsh not found: run `make deps`")
	}
	dir := writeCompletions(t)
	home := t.TempDir()
	script := `
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z 'PS1=""; fpath=(` + dir + ` $fpath); autoload -Uz compinit; compinit -u -d ` + home + `/zcd'
zpty -w z 'bindkey "^I" complete-word; print -r -- READY'
zpty -r z line '*READY*'
zpty -w -n z $'sbatch --parsa\t'
sleep 1
zpty -w z $'\x01print -r -- GOT:\x05'
zpty -r z out '*GOT:*'
print -r -- "$out"
zpty -d z
`
	// zpty -r waits for its pattern; the context bounds a hang.
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, zsh, "-f", "-c", script)
	cmd.Env = append(os.Environ(), "HOME="+home, "TERM=dumb")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zsh: %v\n%s", err, out)
	}
	t.Logf("zsh session:\n%s", out)
	if !strings.Contains(string(out), "--parsable") {
		t.Errorf("zsh did not complete --parsa to --parsable:\n%s", out)
	}
}

func shellWords(ws []string) string {
	var q []string
	for _, w := range ws {
		q = append(q, "'"+strings.ReplaceAll(w, "'", `'\''`)+"'")
	}
	return strings.Join(q, " ")
}

// TestSbatchCommandLineAsSlurm runs hora's sbatch command and the real
// Slurm 22.05 sbatch on the same bad or informational command lines and
// compares exit status and standard error byte for byte (--usage: only
// the exit status and the first word; its content is hora's).
func TestSbatchCommandLineAsSlurm(t *testing.T) {
	real, err := exec.LookPath("sbatch")
	if err != nil {
		t.Fatal("sbatch not found: run `make deps` (installs slurm-client)")
	}
	conf := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=oracle\nSlurmctldHost=localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--bogus"}, {"--par"}, {"-Z"}, {"-t"}, {"--hold=yes"}, {"--mem-p", "1"},
		{"-H", "--wait-all"}, {"--usage"}, {"--help"}} {
		cmd := exec.Command(real, args...)
		cmd.Args[0] = "sbatch"
		cmd.Env = []string{"SLURM_CONF=" + conf, "PATH=" + os.Getenv("PATH")}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		realCode := 0
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatal(err)
			}
			realCode = ee.ExitCode()
		}
		out, errs, code := runCmd(t, sbatchMain, "sbatch", nil, args...)
		if code != realCode || errs != stderr.String() {
			t.Errorf("sbatch %q:\nhora  exit %d %q\nslurm exit %d %q", args, code, errs, realCode, stderr.String())
		}
		if (out == "") != (stdout.Len() == 0) || firstField(out) != firstField(stdout.String()) {
			t.Errorf("sbatch %q: stdout starts %q, Slurm's %q", args, firstField(out), firstField(stdout.String()))
		}
	}
}

func firstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// TestPBSManPages: each PBS command's page documents every option its
// getopt table takes in either flavour, marks a flavour's own options, and
// qsub's page names the sbatch option a letter shares the registry record
// with; an option without a description stops the generator.
func TestPBSManPages(t *testing.T) {
	files, err := generatedDocs()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range pbsDocs() {
		page := string(files["man/"+d.name+".1"])
		if page == "" {
			t.Fatalf("no man/%s.1", d.name)
		}
		for _, fl := range pbsFlavours {
			for _, o := range d.opts(fl) {
				if !strings.Contains(page, ".TP\n\\fB\\-"+string(o.Short)+"\\fR") {
					t.Errorf("%s.1 does not document -%c (%s)", d.name, o.Short, fl)
				}
			}
		}
	}
	qsub := string(files["man/qsub.1"])
	for _, want := range []string{`\fB\-\-job\-name\fR`, `\fBwalltime\fR is \fB\-\-time\fR`, "Only in the Torque flavour", `\fBqstat\fR(1)`} {
		if !strings.Contains(qsub, want) {
			t.Errorf("qsub.1 lacks %q", want)
		}
	}
	if !strings.Contains(string(files["man/qselect.1"]), `\-u`) || strings.Contains(string(files["man/qselect.1"]), `\fBsrun\fR(1)`) {
		t.Error("qselect.1: options or SEE ALSO wrong")
	}
	d := pbsDocs()[0]
	delete(d.text, "N")
	if _, _, err := pbsPage(d); err == nil || !strings.Contains(err.Error(), "-N") {
		t.Errorf("a qsub option without a description: err = %v, want one naming -N", err)
	}
}

// TestHelpOptionLineMatchesRegexps: helpOptionLine reads a --help line as
// the three regular expressions it replaced did (kept here, where linking
// regexp costs no client process anything), over every line of every
// command's --help and variations of their blanks and punctuation.
func TestHelpOptionLineMatchesRegexps(t *testing.T) {
	res := []*regexp.Regexp{
		regexp.MustCompile(`^\s+-(\w) or --([A-Za-z0-9_-]+): (.*)$`),
		regexp.MustCompile(`^\s+(?:-(\w), )?--([A-Za-z0-9_-]+):\s*(.*)$`),
		regexp.MustCompile(`^\s+(?:-(\w),\s+)?--([A-Za-z0-9_-]+)(\S*)(?:\s{2,}(.*))?$`),
	}
	var lines []string
	for _, h := range []string{squeueHelp, scancelHelp, sinfoHelp, scontrolHelp, sacctHelp} {
		lines = append(lines, strings.Split(h, "\n")...)
	}
	lines = append(lines, "", " ", "--x", " --x", " --x ", " --x  ", " --x  y", " --x y", " --x=a  b",
		" -a or --all:", " -a or --all: ", " -a or --all:x", " -ab or --all: x", "\t-a, --b:c", " -a,--b  c",
		" -a,\t--b  c", " -a, --b\t\tc", " -a, --", " -é, --b  c", " ---  x", " --a_b-c:  d", " -a, --b: c")
	matched := 0
	for _, base := range lines {
		for _, l := range []string{base, strings.ReplaceAll(base, "  ", " \t"), strings.ReplaceAll(base, ":", ": "),
			strings.ReplaceAll(base, ", ", ","), strings.TrimRight(base, " ") + "  ", strings.ReplaceAll(base, "=", " ")} {
			var m []string
			for _, re := range res {
				if m = re.FindStringSubmatch(l); m != nil {
					break
				}
			}
			letter, long, text, ok := helpOptionLine(l)
			if ok != (m != nil) {
				t.Errorf("%q: helpOptionLine ok=%v, regexps matched=%v", l, ok, m != nil)
				continue
			}
			if !ok {
				continue
			}
			matched++
			if letter != m[1] || long != m[2] || text != m[len(m)-1] {
				t.Errorf("%q: helpOptionLine = %q %q %q, regexps %q %q %q", l, letter, long, text, m[1], m[2], m[len(m)-1])
			}
		}
	}
	if matched < 100 {
		t.Errorf("only %d option lines seen: the help texts moved?", matched)
	}
}
