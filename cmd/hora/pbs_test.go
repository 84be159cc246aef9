package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hora/api"
	"hora/sbatch"
)

// TestPBSGolden runs the PBS commands against the fake horad in both
// flavours; the layouts and texts follow COMPAT.md §6 (OpenPBS and Torque
// sources).
func TestPBSGolden(t *testing.T) {
	cases := []struct {
		name string
		cmd  Command
		prog string
		args []string
		// torqueArgs replaces args in the torque flavour, where -x is XML
		// and finished jobs show as C for keep_completed seconds.
		torqueArgs []string
	}{
		{"qstat_default", qstatMain, "qstat", nil, nil},
		{"qstat_wide", qstatMain, "qstat", []string{"-w"}, nil},
		{"qstat_ids", qstatMain, "qstat", []string{"101", "103.srv", "102"}, nil},
		{"qstat_alt_nodes", qstatMain, "qstat", []string{"-a", "-n", "-1"}, nil},
		{"qstat_alt_user", qstatMain, "qstat", []string{"-u", "alice", "-s"}, nil},
		{"qstat_full_running", qstatMain, "qstat", []string{"-f", "101"}, nil},
		{"qstat_full_history", qstatMain, "qstat", []string{"-x", "-f", "105", "106"}, []string{"-f", "-1", "104", "106"}},
		{"qstat_json", qstatMain, "qstat", []string{"-f", "-F", "json", "101"}, nil},
		{"qstat_history", qstatMain, "qstat", []string{"-x"}, []string{}},
		{"qstat_finished_without_x", qstatMain, "qstat", []string{"104"}, nil},
		{"qstat_unknown", qstatMain, "qstat", []string{"999"}, nil},
		{"qstat_malformed", qstatMain, "qstat", []string{"12x"}, nil},
		{"qstat_queues", qstatMain, "qstat", []string{"-Q"}, nil},
		{"qstat_bad_option", qstatMain, "qstat", []string{"-Y"}, nil},
		{"qselect_running", qselectMain, "qselect", []string{"-s", "R"}, nil},
		{"qselect_user_held", qselectMain, "qselect", []string{"-u", "bob", "-s", "HQ"}, nil},
		{"qdel_unknown", commands["qdel"], "qdel", []string{"999"}, nil},
		{"qdel_other_user", commands["qdel"], "qdel", []string{"107"}, nil},
		{"qdel_malformed", commands["qdel"], "qdel", []string{"abc"}, nil},
		{"qdel_ok", commands["qdel"], "qdel", []string{"101.srv", "103"}, nil},
		{"qhold_finished", commands["qhold"], "qhold", []string{"104"}, nil},
		{"qalter_hold", commands["qalter"], "qalter", []string{"-h", "u", "103"}, nil},
		{"qalter_walltime", commands["qalter"], "qalter", []string{"-l", "walltime=1:00:00", "-N", "renamed", "103"}, nil},
		{"qalter_bad_walltime", commands["qalter"], "qalter", []string{"-l", "walltime=banana", "103"}, nil},
		{"qalter_unknown", commands["qalter"], "qalter", []string{"-N", "x", "999"}, nil},
		{"qalter_bad_attribute", commands["qalter"], "qalter", []string{"-o", "/tmp/x", "103"}, nil},
		{"qalter_depend", commands["qalter"], "qalter", []string{"-W", "depend=afterok:101.srv:102", "103"}, nil},
		{"qalter_bad_depend", commands["qalter"], "qalter", []string{"-W", "depend=before:101", "103"}, nil},
		{"qalter_other_user", commands["qalter"], "qalter", []string{"-h", "n", "107"}, nil},
		{"pbsnodes_all", pbsnodesMain, "pbsnodes", []string{"-a"}, nil},
		{"pbsnodes_json", pbsnodesMain, "pbsnodes", []string{"-a", "-F", "json", "n1", "n5"}, nil},
		{"pbsnodes_list", pbsnodesMain, "pbsnodes", []string{"-l"}, nil},
	}
	for _, fl := range []string{sbatch.FlavourOpenPBS, sbatch.FlavourTorque} {
		for _, c := range cases {
			t.Run(fl+"_"+c.name, func(t *testing.T) {
				f := startFake(t)
				f.flavour = fl
				args := c.args
				if fl == sbatch.FlavourTorque && c.torqueArgs != nil {
					args = c.torqueArgs
					// Keep the fixture's finished jobs (ended up to two
					// hours before the test clock) as C.
					defer func(k int) { pbsKeepCompleted = k }(pbsKeepCompleted)
					pbsKeepCompleted = 3 * 3600
				}
				runGolden(t, c.cmd, c.prog, "pbs_"+fl+"_"+c.name, nil, args...)
			})
		}
	}
}

// TestQsubThroughFake submits with qsub against the fake horad: the id is
// printed as <seq>.<server>, the spec carries the PBS marks, and bad input
// sends nothing.
func TestQsubThroughFake(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "job.sh")
	os.WriteFile(script, []byte("#!/bin/sh\n#PBS -N fromdir\n#PBS -l walltime=10:00\necho hi\n"), 0o644)
	crlf := filepath.Join(dir, "dos.sh")
	os.WriteFile(crlf, []byte("#!/bin/sh\r\n#PBS -N x\r\necho hi\r\n"), 0o644)
	bad := filepath.Join(dir, "bad.sh")
	os.WriteFile(bad, []byte("#!/bin/sh\n#PBS -Y\necho hi\n"), 0o644)
	run := func(f *fakeHorad, args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		env := &Env{Prog: "qsub", Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Getenv:  func(k string) string { return map[string]string{"HOME": dir, "USER": "alice"}[k] },
			Environ: func() []string { return []string{"PATH=/usr/bin:/bin", "SHELL=/bin/bash", "HOME=" + dir} },
			Getwd:   func() (string, error) { return dir, nil }}
		code := qsubMain(context.Background(), env, args)
		return out.String(), errb.String(), code
	}
	for _, fl := range []string{sbatch.FlavourOpenPBS, sbatch.FlavourTorque} {
		f := startFake(t)
		f.flavour = fl
		out, errs, code := run(f, "-N", "cli", script)
		if code != 0 || out != "201.srv\n" || errs != "" {
			t.Fatalf("%s: qsub: %d %q %q", fl, code, out, errs)
		}
		sp := f.submits[0].Spec
		if sp.Name != "cli" || sp.TimeLimit != 600 || sp.PBS == nil || sp.PBS.Server != "srv" || sp.PBS.Flavour != fl ||
			sp.Stdout != dir+"/cli.o%j" || sp.Stderr != dir+"/cli.e%j" || !strings.Contains(strings.Join(sp.Env, "\n"), "PBS_O_WORKDIR="+dir) {
			t.Errorf("%s: spec %+v", fl, sp)
		}
		// Bad input: the flavour's text and status, nothing submitted.
		for _, c := range []struct {
			args []string
			want string
			code int
		}{
			{[]string{bad}, map[string]string{sbatch.FlavourOpenPBS: "qsub: invalid option -- 'Y'\nqsub: directive error: -Y \n",
				sbatch.FlavourTorque: "qsub: invalid option -- 'Y'\n[exiting]\n\n"}[fl], map[string]int{sbatch.FlavourOpenPBS: 1, sbatch.FlavourTorque: 2}[fl]},
			{[]string{"-l", "walltime=banana", script}, map[string]string{sbatch.FlavourOpenPBS: "qsub: Illegal attribute or resource value\n",
				sbatch.FlavourTorque: "qsub: submit error (Illegal attribute or resource value for Resource_List.walltime)\n"}[fl], 166},
			{[]string{"-l", "select=0:ncpus=1", script}, map[string]string{sbatch.FlavourOpenPBS: "qsub: Illegal attribute or resource value Resource_List.select\n",
				sbatch.FlavourTorque: "qsub: submit error (Illegal attribute or resource value for Resource_List.select)\n"}[fl], 166},
		} {
			_, errs, code := run(f, c.args...)
			if code != c.code || !strings.HasPrefix(errs, c.want) {
				t.Errorf("%s: qsub %v: exit %d, stderr %q; want %d, %q", fl, c.args, code, errs, c.code, c.want)
			}
		}
		_, errs, code = run(f, crlf)
		if fl == sbatch.FlavourOpenPBS && (code != 1 || errs != "qsub: script contains cr, lf\n") {
			t.Errorf("crlf: %d %q", code, errs)
		}
		if fl == sbatch.FlavourTorque && (code != 0 || strings.Contains(f.submits[len(f.submits)-1].Spec.Script, "\r")) {
			t.Errorf("torque crlf: %d %q", code, errs)
		}
		want := 1
		if fl == sbatch.FlavourTorque {
			want = 2 // Torque turns CRLF into LF and submits
		}
		if len(f.submits) != want {
			t.Errorf("%s: %d submissions reached horad, want %d", fl, len(f.submits), want)
		}
	}
}

// TestPBSJobIDs checks the id forms the PBS commands accept.
func TestPBSJobIDs(t *testing.T) {
	for id, want := range map[string]int64{"12": 12, "12.srv": 12, "12.srv.example.org": 12, "12[]": 12, "12[3].srv": 12,
		"abc": 0, "12x": 0, "12.": 0, "12[": 0, ".12": 0, "0": 0} {
		got, ok := parsePBSJobID(id)
		if (want != 0) != ok || got != want {
			t.Errorf("parsePBSJobID(%q) = %d, %v; want %d", id, got, ok, want)
		}
	}
}

// TestFoldAttr pins prt_attr's folding: pieces kept while under the
// limit, a long first piece cut in place, later ones on tab lines.
func TestFoldAttr(t *testing.T) {
	v := "PBS_O_HOME=/home/alice,PBS_O_LOGNAME=alice,PBS_O_PATH=/usr/local/bin:/usr/bin:/bin,PBS_O_SHELL=/bin/bash"
	got := string(foldAttr(nil, "Variable_List", v, 78))
	want := "    Variable_List = PBS_O_HOME=/home/alice,PBS_O_LOGNAME=alice,\n" +
		"\tPBS_O_PATH=/usr/local/bin:/usr/bin:/bin,PBS_O_SHELL=/bin/bash\n"
	if got != want {
		t.Errorf("fold:\n%q\nwant\n%q", got, want)
	}
	if got := string(foldAttr(nil, "a", "x", 78)); got != "    a = x\n" {
		t.Errorf("short %q", got)
	}
}

func BenchmarkQstatFull10000(b *testing.B) {
	jobs := benchJobs(10000)
	s := &pbsSession{flavour: sbatch.FlavourOpenPBS, server: "srv", now: testNow}
	rows := make([]pbsRow, len(jobs))
	for i := range jobs {
		jobs[i].Spec.Env = []string{"PBS_O_HOME=/home/alice", "PBS_O_WORKDIR=/home/alice/w", "PATH=/bin"}
		rows[i] = pbsRow{&jobs[i], s}
	}
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		writeQstatFull(&buf, s, rows, newPBSCtx(), false, "", false)
	}
}

func BenchmarkQselect100000(b *testing.B) {
	jobs := benchJobs(100000)
	s := &pbsSession{flavour: sbatch.FlavourOpenPBS, server: "srv", now: testNow}
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		writeQselect(&buf, s, jobs, "Q", nil, false, nil, testNow)
	}
}

func TestQselectManyJobs(t *testing.T) {
	jobs := benchJobs(1000)
	jobs[5].State = api.StateRunning
	s := &pbsSession{flavour: sbatch.FlavourOpenPBS, server: "srv", now: testNow}
	var buf bytes.Buffer
	writeQselect(&buf, s, jobs, "R", nil, false, nil, testNow)
	if buf.String() != fmt.Sprintf("%d.srv\n", jobs[5].ID) {
		t.Errorf("qselect -s R: %q", buf.String())
	}
}
