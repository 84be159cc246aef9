package sbatch

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"hora/api"
)

func qsubIn(fl string, script string, argv ...string) QsubInput {
	return QsubInput{
		Argv: argv, Env: []string{"PATH=/usr/bin:/bin", "SHELL=/bin/bash", "LOGNAME=alice", "FOO=bar"},
		Cwd: "/srv/alice/sub", Stdin: strings.NewReader(script),
		ReadFile: func(p string) ([]byte, error) {
			if p == "/srv/alice/sub/job.sh" {
				return []byte(script), nil
			}
			return nil, os.ErrNotExist
		},
		Now:  time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC),
		Home: "/home/alice", User: "alice", Hostname: "login1", Flavour: fl, Server: "srv",
	}
}

func envOf(sp *api.JobSpec, k string) (string, bool) {
	for _, kv := range sp.Env {
		if key, v, ok := strings.Cut(kv, "="); ok && key == k {
			return v, true
		}
	}
	return "", false
}

func TestQsubDirectivesAndPrecedence(t *testing.T) {
	script := "#!/bin/bash\n" +
		"# a comment\n" +
		"   #PBS -N dirname\n" +
		"#PBS -l walltime=1:30:00,mem=2gb \\\n" +
		"   -l ncpus=4\n" +
		": colon lines do not stop the scan\n" +
		"#PBS -q fast -j oe\n" +
		"echo start\n" +
		"#PBS -N ignored_after_command\n"
	sp, fl, err := BuildQsubSpec(qsubIn(FlavourOpenPBS, script, "-l", "walltime=120", "job.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if sp.Name != "dirname" || sp.TimeLimit != 120 || sp.MemMB != 2048 || sp.CPUsPerTask != 4 ||
		sp.Partition != "fast" || sp.PBS.Queue != "fast" || sp.Stderr != "" || sp.Stdout != "/srv/alice/sub/dirname.o%j" ||
		sp.WorkDir != "/home/alice" || sp.Command != "/srv/alice/sub/job.sh" || fl.NoID || fl.Block {
		t.Errorf("spec %+v", sp)
	}
	if v, _ := envOf(sp, "PBS_O_WORKDIR"); v != "/srv/alice/sub" {
		t.Errorf("PBS_O_WORKDIR %q", v)
	}
	if _, ok := envOf(sp, "FOO"); ok {
		t.Errorf("FOO exported without -V")
	}
	if v, _ := envOf(sp, "PBS_O_PATH"); v != "/usr/bin:/bin" {
		t.Errorf("PBS_O_PATH %q", v)
	}
	// -V exports everything; -v adds VAR=val and VAR (from the environment).
	sp, _, err = BuildQsubSpec(qsubIn(FlavourOpenPBS, script, "-V", "-v", "A=1,FOO", "job.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := envOf(sp, "FOO"); v != "bar" {
		t.Errorf("FOO with -V %q", v)
	}
	if v, _ := envOf(sp, "A"); v != "1" {
		t.Errorf("A %q", v)
	}
	// A prefix of one's own (-C), or none at all.
	sp, _, _ = BuildQsubSpec(qsubIn(FlavourOpenPBS, "#!/bin/sh\n#MY -N mine\n#PBS -N other\n", "-C", "#MY", "job.sh"))
	if sp.Name != "mine" {
		t.Errorf("-C prefix: name %q", sp.Name)
	}
	in := qsubIn(FlavourOpenPBS, "#!/bin/sh\n#PBS -N other\n", "job.sh")
	in.Env = append(in.Env, "PBS_DPREFIX=")
	sp, _, _ = BuildQsubSpec(in)
	if sp.Name != "job.sh" {
		t.Errorf("empty PBS_DPREFIX: name %q", sp.Name)
	}
}

func TestQsubForms(t *testing.T) {
	// stdin: name STDIN.
	sp, _, err := BuildQsubSpec(qsubIn(FlavourOpenPBS, "#PBS -l select=2:ncpus=4:mem=1gb:mpiprocs=2\nhostname\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sp.Name != "STDIN" || sp.Nodes != 2 || sp.NTasks != 4 || sp.CPUsPerTask != 2 || sp.MemMB != 1024 {
		t.Errorf("stdin/select: %+v", sp)
	}
	// -- command args.
	sp, _, err = BuildQsubSpec(qsubIn(FlavourOpenPBS, "", "-l", "nodes=2:ppn=3", "--", "/bin/echo", "it's"))
	if err != nil {
		t.Fatal(err)
	}
	if sp.Name != "STDIN" || sp.Script != "#!/bin/sh\nexec '/bin/echo' 'it'\\''s'\n" || sp.Nodes != 2 || sp.NTasks != 6 || sp.PBS.PPN != 3 {
		t.Errorf("-- form: %+v", sp)
	}
	// Torque host lists: hosts become the node list, counts add up.
	for _, c := range []struct {
		nodes, list string
		n, tasks    int
	}{
		{"n1:ppn=2+n2:ppn=2", "n[1-2]", 2, 4},
		{"node7", "node7", 1, 1},
		{"2:ppn=3+gpu01:ppn=3", "gpu01", 3, 9},
	} {
		sp, _, err = BuildQsubSpec(qsubIn(FlavourTorque, "#!/bin/sh\n", "-l", "nodes="+c.nodes, "job.sh"))
		if err != nil {
			t.Errorf("nodes=%s: %v", c.nodes, err)
			continue
		}
		if sp.NodeList != c.list || sp.Nodes != c.n || sp.NTasks != c.tasks || sp.PBS.PPN != c.tasks/c.n {
			t.Errorf("nodes=%s: nodelist %q nodes %d tasks %d", c.nodes, sp.NodeList, sp.Nodes, sp.NTasks)
		}
	}
	// -a: eligible time; hhmm in the past is tomorrow.
	sp, _, _ = BuildQsubSpec(qsubIn(FlavourOpenPBS, "#!/bin/sh\n", "-a", "1130", "job.sh"))
	if time.Unix(sp.Begin, 0).UTC() != time.Date(2026, 11, 23, 11, 30, 0, 0, time.UTC) {
		t.Errorf("-a 1130: %v", time.Unix(sp.Begin, 0).UTC())
	}
	// Torque -d (initial directory) and -w (PBS_O_WORKDIR).
	sp, _, err = BuildQsubSpec(qsubIn(FlavourTorque, "#!/bin/sh\n", "-d", "run", "-w", "/elsewhere", "job.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := envOf(sp, "PBS_O_WORKDIR"); sp.WorkDir != "/srv/alice/sub/run" || v != "/elsewhere" {
		t.Errorf("-d/-w: workdir %q, PBS_O_WORKDIR %q", sp.WorkDir, v)
	}
	if v, _ := envOf(sp, "PBS_O_INITDIR"); v != "/srv/alice/sub/run" {
		t.Errorf("PBS_O_INITDIR %q", v)
	}
	// -z and -W block=true are the command's, not the job's.
	_, fl, _ := BuildQsubSpec(qsubIn(FlavourOpenPBS, "#!/bin/sh\n", "-z", "-W", "block=true", "job.sh"))
	if !fl.NoID || !fl.Block {
		t.Errorf("flags %+v", fl)
	}
	// -o directory, -e path, Torque's $PBS_JOBID.
	in := qsubIn(FlavourTorque, "#!/bin/sh\n#PBS -o /logs/out_${PBS_JOBID}.log\n", "-e", "err/", "job.sh")
	sp, _, err = BuildQsubSpec(in)
	if err != nil {
		t.Fatal(err)
	}
	if sp.Stdout != "/logs/out_%j.srv.log" || sp.Stderr != "/srv/alice/sub/err/%j.srv.ER" {
		t.Errorf("paths %q %q", sp.Stdout, sp.Stderr)
	}
}

// TestQsubBadInput pins each flavour's text and exit status for bad input
// (COMPAT.md §6.1, OP:src/cmds/qsub.c, TQ:src/cmds/qsub_functions.c).
func TestQsubBadInput(t *testing.T) {
	cases := []struct {
		fl, script string
		argv       []string
		text       string
		exit       int
	}{
		{FlavourOpenPBS, "#!/bin/sh\n#PBS -Y\n", []string{"job.sh"}, "qsub: invalid option -- 'Y'\nqsub: directive error: -Y \n", 1},
		{FlavourOpenPBS, "#!/bin/sh\n#PBS -r x -N a\n", []string{"job.sh"}, "qsub: illegal -r value\n", 2},
		{FlavourOpenPBS, "#!/bin/sh\r\necho\r\n", []string{"job.sh"}, "qsub: script contains cr, lf\n", 1},
		{FlavourOpenPBS, "#!/bin/sh\n", []string{"-l", "walltime=banana", "job.sh"}, "qsub: Illegal attribute or resource value\n", 166},
		{FlavourOpenPBS, "#!/bin/sh\n", []string{"-l", "select=0:ncpus=2", "job.sh"}, "qsub: Illegal attribute or resource value Resource_List.select\n", 166},
		{FlavourOpenPBS, "#!/bin/sh\n", []string{"-l", "bogus=1", "job.sh"}, "qsub: Unknown resource Resource_List.bogus\n", 187},
		{FlavourOpenPBS, "#!/bin/sh\n", []string{"-Y", "job.sh"}, "qsub: invalid option -- 'Y'\nusage: qsub", 2},
		{FlavourOpenPBS, "#!/bin/sh\n", []string{"nothere.sh"}, "qsub: script file:: No such file or directory\n", 1},
		{FlavourOpenPBS, "#!/bin/sh\n", []string{"-W", "depend=beforeok:12", "job.sh"}, "qsub: illegal -W value\nusage: qsub", 2},
		{FlavourTorque, "#!/bin/sh\n#PBS -Y\n", []string{"job.sh"}, "qsub: invalid option -- 'Y'\n[exiting]\n\nusage: qsub", 2},
		{FlavourTorque, "#!/bin/sh\n", []string{"-l", "walltime=banana", "job.sh"}, "qsub: submit error (Illegal attribute or resource value for Resource_List.walltime)\n", 166},
		{FlavourTorque, "#!/bin/sh\n", []string{"-l", "bogus=1", "job.sh"}, "qsub: submit error (Unknown resource type  Resource_List.bogus)\n", 187},
		{FlavourTorque, "#!/bin/sh\n", []string{"-l", "nodes=n1+", "job.sh"}, "qsub: submit error (Illegal attribute or resource value for Resource_List.nodes)\n", 166},
		{FlavourTorque, "#!/bin/sh\n", []string{"-l", "nodes=n1:ppn=x", "job.sh"}, "qsub: submit error (Illegal attribute or resource value for Resource_List.nodes)\n", 166},
		{FlavourTorque, "#!/bin/sh\n", []string{"-l", "nodes=n[1-2]", "job.sh"}, "qsub: submit error (Illegal attribute or resource value for Resource_List.nodes)\n", 166},
		{FlavourTorque, "#!/bin/sh\n", []string{"-l", "nodes=n1+n1", "job.sh"}, "qsub: hora: -l nodes=n1+n1: host n1 named twice\n", 2},
		{FlavourTorque, "#!/bin/sh\n", []string{"-l", "nodes=n1:ppn=2+n2:ppn=4", "job.sh"}, "qsub: hora: -l nodes=n1:ppn=2+n2:ppn=4: every part must ask for the same ppn\n", 2},
		{FlavourTorque, "#!/bin/sh\n", []string{"-r", "x", "job.sh"}, "[qsub: illegal -r value]\n\nusage: qsub", 2},
		{FlavourTorque, "#!/bin/sh\n", []string{"nothere.sh"}, "qsub: script file 'nothere.sh' cannot be loaded - No such file or directory\n", 1},
	}
	for _, c := range cases {
		_, _, err := BuildQsubSpec(qsubIn(c.fl, c.script, c.argv...))
		var pe *PBSError
		if !errors.As(err, &pe) {
			t.Errorf("%s %v: err %v", c.fl, c.argv, err)
			continue
		}
		if !strings.HasPrefix(pe.Text, c.text) || pe.Exit != c.exit {
			t.Errorf("%s %v %q:\n got %q exit %d\nwant %q exit %d", c.fl, c.argv, c.script, pe.Text, pe.Exit, c.text, c.exit)
		}
	}
	// Torque turns CRLF into LF and goes on.
	sp, _, err := BuildQsubSpec(qsubIn(FlavourTorque, "#!/bin/sh\r\n#PBS -N crlf\r\necho\r\n", "job.sh"))
	if err != nil || sp.Name != "crlf" || strings.Contains(sp.Script, "\r") {
		t.Errorf("torque crlf: %v %+v", err, sp)
	}
}

func FuzzQsubDirectives(f *testing.F) {
	f.Add("#!/bin/sh\n#PBS -N a -l walltime=1:00\n#PBS -l select=2:ncpus=2\necho\n")
	f.Add("#PBS -W depend=afterok:1\n")
	f.Fuzz(func(t *testing.T, script string) {
		for _, fl := range []string{FlavourOpenPBS, FlavourTorque} {
			sp, _, err := BuildQsubSpec(qsubIn(fl, script, "job.sh"))
			if err == nil && (sp.PBS == nil || sp.Name == "") {
				t.Fatalf("accepted without PBS marks or name: %+v", sp)
			}
		}
	})
}

// TestQsubKnowsEveryPBSSpelling walks the option registry: every record
// that names a PBS spelling must be an option (and, for -l and -W, a
// resource or attribute) that qsub reads, in one flavour at least.
func TestQsubKnowsEveryPBSSpelling(t *testing.T) {
	n := 0
	for _, o := range Options {
		if o.PBS == "" {
			continue
		}
		n++
		f := strings.Fields(o.PBS)
		if len(f[0]) != 2 || f[0][0] != '-' {
			t.Errorf("--%s: PBS spelling %q is not -X [what]", o.Long, o.PBS)
			continue
		}
		letter := rune(f[0][1])
		if !strings.ContainsRune(qsubOptionLetters[FlavourOpenPBS], letter) && !strings.ContainsRune(qsubOptionLetters[FlavourTorque], letter) {
			t.Errorf("--%s: qsub has no option %s", o.Long, f[0])
		}
		if len(f) < 2 {
			continue
		}
		switch letter {
		case 'l':
			if !pbsResourceNames[f[1]] && f[1] != "ppn" {
				t.Errorf("--%s: qsub -l does not know %s", o.Long, f[1])
			}
		case 'r':
			if _, _, err := BuildQsubSpec(qsubIn(FlavourOpenPBS, "#!/bin/sh\n", "-r", f[1], "job.sh")); err != nil {
				t.Errorf("--%s: qsub -r %s: %v", o.Long, f[1], err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no record has a PBS spelling")
	}
	for _, pbs := range []string{"-N", "-q", "-A", "-h", "-r y", "-r n", "-l walltime", "-l ncpus", "-l mem"} {
		if o := OptionByPBS(pbs); o == nil || o.Set == nil {
			t.Errorf("qsub routes %s through the registry, which has no settable record for it", pbs)
		}
	}
}

func TestPBSDependency(t *testing.T) {
	for in, want := range map[string]string{
		"afterok:12.srv:13": "afterok:12:13", "after:5,afterany:6.h.example.org": "after:5,afterany:6",
		"afternotok:7[].srv": "afternotok:7[]", "beforeok:1": "", "on:2": "", "afterok": "", "afterok:x": "",
	} {
		got, ok := pbsDependency(in)
		if ok != (want != "") || got != want {
			t.Errorf("pbsDependency(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// qsub -J / -t and -W depend reach the job as sbatch's --array and
// --dependency (horad checks them as it does for sbatch).
func TestQsubArrayAndDependency(t *testing.T) {
	for _, c := range []struct {
		fl          string
		argv        []string
		array, deps string
	}{
		{FlavourOpenPBS, []string{"-J", "1-10", "job.sh"}, "1-10", ""},
		{FlavourTorque, []string{"-t", "1-10,15%5", "job.sh"}, "1-10,15%5", ""},
		{FlavourOpenPBS, []string{"-W", "depend=afterok:12.srv:13", "job.sh"}, "", "afterok:12:13"},
	} {
		spec, _, err := BuildQsubSpec(qsubIn(c.fl, "#!/bin/sh\n", c.argv...))
		if err != nil {
			t.Errorf("%s %v: %v", c.fl, c.argv, err)
			continue
		}
		if spec.Array != c.array || spec.Dependency != c.deps {
			t.Errorf("%s %v: array %q dependency %q, want %q %q", c.fl, c.argv, spec.Array, spec.Dependency, c.array, c.deps)
		}
	}
}

// failReader fails the test's expectation when read: qsub -I must leave
// stdin (the terminal) to the job.
type failReader struct{ read *bool }

func (f failReader) Read([]byte) (int, error) { *f.read = true; return 0, io.EOF }

// qsub -I makes an allocation and reads no script from stdin; -X needs a
// display and -I; -I with an array is refused (OP qsub.c texts).
func TestQsubInteractive(t *testing.T) {
	read := false
	in := qsubIn(FlavourOpenPBS, "", "-I", "-X", "-N", "inter", "-l", "walltime=10:00")
	in.Stdin = failReader{&read}
	in.Env = append(in.Env, "DISPLAY=:0", "TERM=xterm")
	sp, fl, err := BuildQsubSpec(in)
	if err != nil {
		t.Fatal(err)
	}
	if read || !fl.Interactive || !fl.X11 || !sp.Alloc || sp.Script != "" || sp.Name != "inter" || sp.TimeLimit != 600 {
		t.Errorf("qsub -I: read stdin %v, flags %+v, spec %+v", read, fl, sp)
	}
	if v, _ := envOf(sp, "DISPLAY"); v != ":0" {
		t.Errorf("DISPLAY %q", v)
	}
	if v, _ := envOf(sp, "TERM"); v != "xterm" {
		t.Errorf("TERM %q", v)
	}
	for _, c := range []struct {
		env  []string
		argv []string
		text string
		exit int
	}{
		{nil, []string{"-I", "-X"}, "qsub: DISPLAY not set\nusage: qsub", 2},
		{[]string{"DISPLAY=:0"}, []string{"-X", "job.sh"}, "qsub: X11 Forwarding possible only for interactive jobs\n", 1},
		{nil, []string{"-I", "-J", "1-3"}, "qsub: interactive and array job submission cannot be used together\nusage: qsub", 2},
	} {
		in := qsubIn(FlavourOpenPBS, "#!/bin/sh\n", c.argv...)
		in.Env = append(in.Env, c.env...)
		_, _, err := BuildQsubSpec(in)
		var pe *PBSError
		if !errors.As(err, &pe) || !strings.HasPrefix(pe.Text, c.text) || pe.Exit != c.exit {
			t.Errorf("%v: %v", c.argv, err)
		}
	}
}
