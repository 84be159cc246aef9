package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hora/store"
)

// The golden suite (issue 12 item 7): testdata/golden/script.txt holds
// command lines over sbatch, srun, salloc, squeue, scancel, sinfo, scontrol
// and sacct. scripts/record-golden.sh runs them against a real Slurm 22.05
// (the oracle of ../shared/tools/slurm-oracle.sh) with -golden.record and
// stores the normalised results in testdata/golden/slurm.txt; TestGolden
// replays the same lines against a real horad, normalises the same way and
// compares. Every command line whose result differs must be listed, with its
// reason, in docs/compat.md ("Golden differences"); the test fails on any
// other difference. CI has no Slurm: it replays from the stored file only.

var goldenRecord = flag.Bool("golden.record", false, "run testdata/golden/script.txt against the Slurm on PATH and rewrite testdata/golden/slurm.txt")

const (
	goldenScript = "testdata/golden/script.txt"
	goldenSlurm  = "testdata/golden/slurm.txt"
	goldenFiles  = "testdata/golden/files"
	compatDoc    = "../../docs/compat.md"
)

// goldenStep is one line of the script:
//
//	cmd args...            run it and record exit status, stdout and stderr
//	VAR = cmd args...      the same, and keep the first number of stdout as $VAR
//	wait $VAR STATE        poll squeue -h -t all -j ID -o %T until it says STATE
//	waitacct $VAR STATE    poll sacct -X -n -P -j ID -o State until it says STATE
//
// $VAR and ${VAR} are replaced by job ids kept earlier; other $ words stay
// (they belong to the job's shell). Quoting is the shell's: '...', "...", \.
type goldenStep struct {
	line   int
	kind   string // run, wait, waitacct
	assign string
	text   string // the command line as written (the key of its record)
}

func parseGoldenScript(t testing.TB) []goldenStep {
	t.Helper()
	f, err := os.Open(goldenScript)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var steps []goldenStep
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	assign := regexp.MustCompile(`^([A-Z][A-Z0-9]*) = (.*)$`)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := goldenStep{line: n, kind: "run", text: line}
		if m := assign.FindStringSubmatch(line); m != nil {
			s.assign, s.text = m[1], m[2]
		} else if w := strings.Fields(line); w[0] == "wait" || w[0] == "waitacct" {
			if len(w) != 3 {
				t.Fatalf("%s:%d: want %s $VAR STATE", goldenScript, n, w[0])
			}
			s.kind = w[0]
		}
		{
			if p, ok := seen[s.text]; ok {
				t.Fatalf("%s:%d: the command line of line %d again (each line is a record's key)", goldenScript, n, p)
			}
			seen[s.text] = n
		}
		steps = append(steps, s)
	}
	return steps
}

// goldenResult is what one command line gave.
type goldenResult struct {
	code           int
	stdout, stderr string
}

func (r goldenResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit %d\n", r.code)
	for _, p := range []struct{ mark, text string }{{"1", r.stdout}, {"2", r.stderr}} {
		if p.text == "" {
			continue
		}
		text := p.text
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
			fmt.Fprintf(&b, "%s-noeol\n", p.mark)
		}
		for _, l := range strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n") {
			fmt.Fprintf(&b, "%s %s\n", p.mark, strings.TrimSuffix(l, "\n"))
		}
	}
	return b.String()
}

// goldenSystem is the system the script runs against: Slurm's commands
// found on PATH (recording) or hora's called by path (replay).
type goldenSystem struct {
	t        testing.TB
	command  func(name string) string // absolute path of a client command
	env      []string
	dir      string // work directory the commands run in
	vars     map[string]string
	replay   bool     // against hora: a failed submission or wait is a difference, not a fatal error
	diverged bool     // the replay has hung once: later bounds are short
	order    []string // job ids in the order they were kept
}

// noJob stands for the id of a submission that failed in the replay.
const noJob = "NOJOB"

var goldenVar = regexp.MustCompile(`\$\{([A-Z][A-Z0-9]*)\}|\$([A-Z][A-Z0-9]*)`)

func (g *goldenSystem) expand(s string) string {
	return goldenVar.ReplaceAllStringFunc(s, func(m string) string {
		name := strings.Trim(m, "${}")
		if v, ok := g.vars[name]; ok {
			return v
		}
		return m
	})
}

func (g *goldenSystem) exec(argv []string) goldenResult {
	g.t.Helper()
	path := argv[0]
	if slurmCommands[path] {
		path = g.command(path)
	} else if p, err := exec.LookPath(path); err == nil {
		path = p // cat, to read a job's output file
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = g.env
	cmd.Dir = g.dir
	cmd.Stdin = strings.NewReader("")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return goldenResult{code: 127, stderr: fmt.Sprintf("%s: %v\n", argv[0], err)}
	}
	go func() { done <- cmd.Wait() }()
	var err error
	bound := 90 * time.Second
	if g.diverged {
		bound = 15 * time.Second
	}
	select {
	case err = <-done:
	case <-time.After(bound):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		if !g.replay {
			g.t.Fatalf("%q hung for %v (stdout %q stderr %q)", argv, bound, o.String(), e.String())
		}
		// In the replay a hang is a difference like any other (an
		// "sbatch --wait" whose job never starts).
		g.diverged = true
		return goldenResult{code: -1, stdout: o.String(), stderr: e.String() + fmt.Sprintf("(killed after %v)\n", bound)}
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		g.t.Fatalf("%q: %v", argv, err)
	}
	return goldenResult{code, o.String(), e.String()}
}

var (
	firstNumber  = regexp.MustCompile(`\d+`)
	submittedJob = regexp.MustCompile(`(?:Submitted batch job|Granted job allocation) (\d+)`)
)

var slurmCommands = map[string]bool{"sbatch": true, "srun": true, "salloc": true, "squeue": true,
	"scancel": true, "sinfo": true, "scontrol": true, "sacct": true}

// goldenTag makes the job names that name filters (squeue -n, sacct
// --name, singleton) select unique to one run: Slurm's accounting keeps
// earlier recordings' jobs. The normaliser turns it back into TAGTAG.
func goldenTag() string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 6)
	for i, n := 0, time.Now().UnixNano(); i < len(b); i, n = i+1, n/26 {
		b[i] = letters[n%26]
	}
	return string(b)
}

// run carries out the script; for each command line it returns the raw
// result (normalise later, once every job id is known).
func (g *goldenSystem) run(steps []goldenStep) map[string]goldenResult {
	g.t.Helper()
	g.vars = map[string]string{"TAG": goldenTag()}
	out := map[string]goldenResult{}
	for _, s := range steps {
		switch s.kind {
		case "wait", "waitacct":
			w := strings.Fields(s.text)
			id := g.expand(w[1])
			argv := []string{"squeue", "-h", "-t", "all", "-j", id, "-o", "%T"}
			if s.kind == "waitacct" {
				argv = []string{"sacct", "-X", "-n", "-P", "-j", id, "-o", "State"}
			}
			// A wait that never ends is a result like any other (Slurm's
			// are all "exit 0"): the comparison reports it, and the lines
			// after it show what differs.
			out[s.text] = goldenResult{}
			if strings.Contains(id, noJob) {
				out[s.text] = goldenResult{code: 1, stderr: "no such job: its submission failed\n"}
				continue
			}
			// 45 s for a loaded machine; once the replay has gone its own
			// way (a wait or a command hung), the rest only shows how, so
			// later waits give up sooner.
			bound := 45 * time.Second
			if g.diverged {
				bound = 5 * time.Second
			}
			deadline := time.Now().Add(bound)
			for {
				got := g.exec(argv)
				if f := strings.Fields(got.stdout); len(f) > 0 && f[0] == w[2] { // "CANCELLED by 0"
					break
				}
				if time.Now().After(deadline) && !g.replay {
					g.t.Fatalf("%s:%d: %s: still %q after 45 s (stderr %q)", goldenScript, s.line, s.text, got.stdout, got.stderr)
				}
				if time.Now().After(deadline) {
					out[s.text] = goldenResult{code: 1, stderr: fmt.Sprintf("still %q after the wait\n", got.stdout)}
					g.diverged = true
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		default:
			argv, err := shellWords(g.expand(s.text))
			if err != nil {
				g.t.Fatalf("%s:%d: %v", goldenScript, s.line, err)
			}
			r := g.exec(argv)
			out[s.text] = r
			if s.assign != "" {
				id := firstNumber.FindString(r.stdout)
				if m := submittedJob.FindStringSubmatch(r.stderr); id == "" && m != nil {
					id = m[1] // salloc says its id on stderr
				}
				if r.code != 0 && !strings.HasPrefix(s.text, "salloc") {
					id = "" // an error text's number is no job id
				}
				if id == "" && g.replay {
					id = noJob // the submission failed: its record shows how
				} else if id == "" {
					g.t.Fatalf("%s:%d: %s: no job id: exit %d stdout %q stderr %q", goldenScript, s.line, s.text, r.code, r.stdout, r.stderr)
				}
				g.vars[s.assign] = id
				g.order = append(g.order, id)
			} else if m := submittedJob.FindStringSubmatch(r.stdout + r.stderr); m != nil && !g.replay {
				// Ids are matched by the order of the script's names.
				g.t.Fatalf("%s:%d: %s made job %s: name it (VAR = ...)", goldenScript, s.line, s.text, m[1])
			}
		}
	}
	return out
}

// shellWords splits a command line as sh would, without expansions.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if in {
				words, in = append(words, cur.String()), false
				cur.Reset()
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %s", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i, in = i+1+j, true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`"\$`, s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated \" in %s", s)
			}
			in = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			in = true
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// goldenNormaliser maps what differs between two runs of the same script
// and is not the software's doing: job ids (same width on both sides: the
// replay starts its store at the recording's first id), dates, elapsed times, the work directory, the host name.
type goldenNormaliser struct {
	ids  map[string]string
	dir  string
	host string
	tag  string
}

func newGoldenNormaliser(order []string, dir, tag string) *goldenNormaliser {
	n := &goldenNormaliser{ids: map[string]string{}, dir: dir, tag: tag}
	n.host, _ = os.Hostname()
	for i, id := range order {
		// A token as wide as the id keeps columns aligned as they were.
		tok := fmt.Sprintf("J%0*d", max(len(id)-1, 1), i+1)
		n.ids[id] = tok
	}
	return n
}

var (
	normDate   = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d`)
	normCDate  = regexp.MustCompile(`(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d \d{4}`)
	normEpoch  = regexp.MustCompile(`\b1[7-9]\d{8}\b`)
	normNumber = regexp.MustCompile(`(^|[^A-Za-z\d])(\d+)`) // not x86
	// Lines that say how long srun or salloc waited, and salloc's "revoked"
	// (printed or not as slurmctld's message races the exit): timing, not
	// behaviour.
	normWaiting = regexp.MustCompile(`(?m)^2 (srun|salloc): (job \d+ queued and waiting for resources|job \d+ has been allocated resources|Pending job allocation \d+|Waiting for resource configuration|Nodes \S+ are ready for job|Job allocation \d+ has been revoked\.)\n`)
	normSid     = regexp.MustCompile(`(AllocNode:Sid=[^:\s]+):\d+`)
	normMinSec  = regexp.MustCompile(`(^|[^:\d])\d:\d\d([^:\d]|$)`)
	normHMS     = regexp.MustCompile(`\b00:0\d:\d\d\b`)
	normRunTime = regexp.MustCompile(`(RunTime|Elapsed)=\S+`)
)

// Rules added after the recording was made apply to both sides when they
// are compared (normStable), and are part of every new recording.
var (
	// The version line prints the build's package name: Debian's
	// "slurm-wlm 22.05.8", upstream's (and hora's) "slurm 22.05.8".
	normPackage = regexp.MustCompile(`(?m)^1 slurm-wlm (\d+\.\d+\.\d+)$`)
	// priority/basic's priority is 0xFFFF0000 minus a count of the jobs the
	// controller has seen (Slurm: since its queue was last empty; hora: the
	// job id): history, like the job ids.
	normBasicPrio = regexp.MustCompile(`\bPriority=429(?:48|49)\d{5}\b`)
	// A node's load and free memory are measured at the moment.
	normLoad = regexp.MustCompile(`\b(CPULoad|FreeMem)=[\d.]+`)
	// A node's kernel is the recording machine's.
	normKernel = regexp.MustCompile(`\bOS=Linux [^\n]*[^\n ]`)
	// The submit host: slurmctld names it by the address the request came
	// from (loopback: localhost), hora by sbatch's host name.
	normAllocNode = regexp.MustCompile(`AllocNode:Sid=(?:localhost|HOSTNAME):SID`)
)

func normStable(s string) string {
	s = normPackage.ReplaceAllString(s, "1 slurm $1")
	s = normBasicPrio.ReplaceAllString(s, "Priority=BASICPRIO")
	s = normLoad.ReplaceAllString(s, "${1}=MEASURED")
	s = normKernel.ReplaceAllString(s, "OS=Linux KERNEL")
	return normAllocNode.ReplaceAllString(s, "AllocNode:Sid=SUBMITHOST:SID")
}

func (n *goldenNormaliser) text(s string) string {
	if n.dir != "" {
		s = strings.ReplaceAll(s, n.dir, "/WORKDIR")
	}
	if n.tag != "" {
		s = strings.ReplaceAll(s, n.tag, "TAGTAG")
	}
	if n.host != "" {
		s = regexp.MustCompile(`\b`+regexp.QuoteMeta(n.host)+`\b`).ReplaceAllString(s, "HOSTNAME")
	}
	s = normDate.ReplaceAllString(s, "YYYY-MM-DDTHH:MM:SS")
	s = normCDate.ReplaceAllString(s, "Day Mon DD HH:MM:SS YYYY")
	s = normEpoch.ReplaceAllString(s, "EPOCHEPOCH")
	s = normWaiting.ReplaceAllString(s, "")
	s = normSid.ReplaceAllString(s, "${1}:SID")
	s = normNumber.ReplaceAllStringFunc(s, func(m string) string {
		sub := normNumber.FindStringSubmatch(m)
		if tok, ok := n.ids[sub[2]]; ok {
			return sub[1] + tok
		}
		return m
	})
	s = normStable(s)
	s = normRunTime.ReplaceAllString(s, "${1}=ELAPSED")
	s = normHMS.ReplaceAllString(s, "00:0M:SS")
	// M:SS is squeue's elapsed TIME (the script writes its limits as H:MM:SS).
	for i := 0; i < 2; i++ { // adjacent matches share a separator
		s = normMinSec.ReplaceAllString(s, "${1}M:SS${2}")
	}
	return s
}

func (n *goldenNormaliser) result(r goldenResult) string {
	return n.text(r.String())
}

// Slurm's record file: a header, then per command line "@@ <line>" and its
// normalised result.
func writeGoldenSlurm(t testing.TB, steps []goldenStep, results map[string]goldenResult, n *goldenNormaliser, firstID string) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Recorded by scripts/record-golden.sh from Slurm on %s; do not edit.\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&b, "first_job_id %s\n", firstID)
	for _, s := range steps {
		fmt.Fprintf(&b, "@@ %s\n%s", s.text, n.result(results[s.text]))
	}
	if err := os.WriteFile(goldenSlurm, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readGoldenSlurm(t testing.TB) (firstID int64, recs map[string]string) {
	t.Helper()
	data, err := os.ReadFile(goldenSlurm)
	if err != nil {
		t.Fatal(err)
	}
	recs = map[string]string{}
	var key string
	var cur strings.Builder
	for _, l := range strings.SplitAfter(string(data), "\n") {
		switch {
		case l == "" || strings.HasPrefix(l, "# "):
		case strings.HasPrefix(l, "first_job_id "):
			firstID, err = strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(l, "first_job_id ")), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", goldenSlurm, err)
			}
		case strings.HasPrefix(l, "@@ "):
			if key != "" {
				recs[key] = cur.String()
			}
			key = strings.TrimSuffix(strings.TrimPrefix(l, "@@ "), "\n")
			cur.Reset()
		default:
			cur.WriteString(l)
		}
	}
	if key != "" {
		recs[key] = cur.String()
	}
	return firstID, recs
}

// goldenDifferences reads docs/compat.md's list of accepted differences:
// lines "- `command line` — reason" under the heading "Golden differences".
func goldenDifferences(t testing.TB) map[string]string {
	t.Helper()
	data, err := os.ReadFile(compatDoc)
	if err != nil {
		t.Fatal(err)
	}
	item := regexp.MustCompile("^- `(.+?)` — (.+)$")
	out := map[string]string{}
	in := false
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "# ") || strings.HasPrefix(l, "## ") { // ### groups stay inside
			in = strings.Contains(l, "Golden differences")
			continue
		}
		if m := item.FindStringSubmatch(l); in && m != nil {
			out[m[1]] = m[2]
		}
	}
	return out
}

func copyGoldenFiles(t testing.TB, dst string) {
	t.Helper()
	ents, err := os.ReadDir(goldenFiles)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(goldenFiles, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// cleanEnv is the caller's environment without Slurm's input variables, so
// that neither side is steered by what the shell running the test set.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SLURM_") || strings.HasPrefix(k, "SBATCH_") || strings.HasPrefix(k, "SQUEUE_") ||
			strings.HasPrefix(k, "SALLOC_") || strings.HasPrefix(k, "SRUN_") || strings.HasPrefix(k, "SACCT_") ||
			strings.HasPrefix(k, "SINFO_") || strings.HasPrefix(k, "SCONTROL_") || k == "TZ" || k == "PATH" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// goldenConfig makes horad look like the oracle: cluster "oracle", one
// node "localhost" with 64 CPUs and 20000 MB, partition "debug" (default,
// no time limit).
func goldenConfig() string {
	return `cluster_name = "oracle"

[[node]]
name = "localhost"
cpus = 64
# slurm.conf's "CPUs=64" alone: Slurm counts 64 sockets of one core.
sockets = 64
cores_per_socket = 1
threads_per_core = 1
memory_mb = 20000

[[partition]]
name = "debug"
nodes = "localhost"
default = true
`
}

// seedFirstJobID makes a new store give out ids from first on (as Slurm's
// FirstJobId), so that hora's ids are as wide as the recording's.
func seedFirstJobID(t testing.TB, first int64) func(varDir string) {
	return func(varDir string) {
		ctx := context.Background()
		st, err := store.Open(ctx, filepath.Join(varDir, "hora.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if err := st.SetMeta(ctx, "next_job_id", strconv.FormatInt(first, 10)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGoldenRecord is the recorder's half (scripts/record-golden.sh): with
// -golden.record it runs the script against the Slurm found on PATH and
// rewrites the recording; without, it checks the recording against the
// script.
func TestGoldenRecord(t *testing.T) {
	steps := parseGoldenScript(t)
	if !*goldenRecord {
		// Without a Slurm: the stored recording must match the script (a
		// line edited without recording again fails here, not in a replay),
		// and the script must cover what issue 12 asks.
		_, recs := readGoldenSlurm(t)
		per := map[string]int{}
		for _, s := range steps {
			if _, ok := recs[s.text]; !ok {
				t.Errorf("%s:%d: %s has no recording: run scripts/record-golden.sh", goldenScript, s.line, s.text)
			}
			delete(recs, s.text)
			if w := strings.Fields(s.text); s.kind == "run" && slurmCommands[w[0]] {
				per[w[0]]++
			}
		}
		for k := range recs {
			t.Errorf("%s records %q, which the script no longer has", goldenSlurm, k)
		}
		total := 0
		for name := range slurmCommands {
			total += per[name]
			if per[name] == 0 {
				t.Errorf("the script has no %s line", name)
			}
		}
		if total < 150 {
			t.Errorf("the script has %d command lines of Slurm's commands, want at least 150", total)
		}
		t.Logf("%d command lines: %v", total, per)
		return
	}
	work := t.TempDir()
	os.Chmod(work, 0o755)
	copyGoldenFiles(t, work)
	g := &goldenSystem{t: t, dir: work, env: cleanEnv("TZ=UTC", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
		command: func(name string) string {
			p, err := exec.LookPath(name)
			if err != nil {
				t.Fatalf("recording needs Slurm's %s on PATH: %v", name, err)
			}
			return p
		}}
	t.Cleanup(func() {
		// Leave the oracle as found: cancel what the script left behind.
		if len(g.order) > 0 {
			g.exec(append([]string{"scancel"}, g.order...))
		}
	})
	results := g.run(steps)
	if len(g.order) == 0 {
		t.Fatal("the script kept no job id")
	}
	n := newGoldenNormaliser(g.order, work, g.vars["TAG"])
	for i := 1; i < len(g.order); i++ {
		if len(g.order[i]) != len(g.order[0]) {
			t.Errorf("Slurm's job ids changed width (%s … %s): columns will not line up with hora's; record again", g.order[0], g.order[i])
		}
	}
	writeGoldenSlurm(t, steps, results, n, g.order[0])
	t.Logf("recorded %d results (command lines and waits) into %s", len(results), goldenSlurm)
}

// TestGolden replays the script against a real horad and compares with
// Slurm's recording.
func TestGolden(t *testing.T) {
	requireRoot(t)
	steps := parseGoldenScript(t)
	firstID, slurm := readGoldenSlurm(t)
	accepted := goldenDifferences(t)
	c := newClusterSeeded(t, goldenConfig(), seedFirstJobID(t, firstID))
	for _, name := range []string{"srun", "salloc"} {
		if _, err := os.Lstat(filepath.Join(c.bin, name)); err != nil {
			os.Symlink("hora", filepath.Join(c.bin, name))
		}
	}
	work := c.workDir()
	copyGoldenFiles(t, work)
	g := &goldenSystem{t: t, dir: work, replay: true,
		env:     cleanEnv("TZ=UTC", "HORA_SOCKET="+c.sock, "PATH="+c.bin+":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
		command: func(name string) string { return filepath.Join(c.bin, name) }}
	results := g.run(steps)
	n := newGoldenNormaliser(g.order, work, g.vars["TAG"])

	total, same, lines, sameLines := 0, 0, 0, 0
	var report strings.Builder
	for _, s := range steps {
		counted := s.kind == "run" && slurmCommands[strings.Fields(s.text)[0]]
		if counted {
			total++
		}
		want, ok := slurm[s.text]
		if !ok {
			t.Errorf("%s:%d: %s: no recording in %s; run scripts/record-golden.sh", goldenScript, s.line, s.text, goldenSlurm)
			continue
		}
		want = normStable(want)
		got := n.result(results[s.text])
		if counted {
			wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
			lines += len(wl) - 1
			for i := range wl[:len(wl)-1] {
				if i < len(gl) && gl[i] == wl[i] {
					sameLines++
				}
			}
		}
		reason, listed := accepted[s.text]
		if got == want {
			if counted {
				same++
			}
			if listed && !strings.Contains(reason, "pending") {
				t.Errorf("%s:%d: %s is now identical to Slurm's: remove it from docs/compat.md", goldenScript, s.line, s.text)
			}
			continue
		}
		fmt.Fprintf(&report, "@@ %s\n--- slurm\n%s+++ hora\n%s", s.text, want, got)
		if !listed {
			t.Errorf("%s:%d: %s differs from Slurm and is not listed in docs/compat.md:\n--- slurm\n%s+++ hora\n%s", goldenScript, s.line, s.text, want, got)
		}
	}
	if out := os.Getenv("HORA_GOLDEN_DIFF"); out != "" {
		os.WriteFile(out, []byte(report.String()), 0o644)
	}
	for k := range accepted {
		if _, ok := slurm[k]; !ok {
			t.Errorf("docs/compat.md lists %q, which is not a command line of %s", k, goldenScript)
		}
	}
	t.Logf("golden: %d/%d command lines identical to Slurm 22.05 (%.1f%%); %d/%d output lines (%.1f%%)",
		same, total, 100*float64(same)/float64(total), sameLines, lines, 100*float64(sameLines)/float64(max(lines, 1)))
}
