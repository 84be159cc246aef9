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
		{"qdel_unknown", lookup("qdel"), "qdel", []string{"999"}, nil},
		{"qdel_other_user", lookup("qdel"), "qdel", []string{"107"}, nil},
		{"qdel_malformed", lookup("qdel"), "qdel", []string{"abc"}, nil},
		{"qdel_ok", lookup("qdel"), "qdel", []string{"101.srv", "103"}, nil},
		{"qhold_finished", lookup("qhold"), "qhold", []string{"104"}, nil},
		{"qalter_hold", lookup("qalter"), "qalter", []string{"-h", "u", "103"}, nil},
		{"qalter_walltime", lookup("qalter"), "qalter", []string{"-l", "walltime=1:00:00", "-N", "renamed", "103"}, nil},
		{"qalter_bad_walltime", lookup("qalter"), "qalter", []string{"-l", "walltime=banana", "103"}, nil},
		{"qalter_unknown", lookup("qalter"), "qalter", []string{"-N", "x", "999"}, nil},
		{"qalter_bad_attribute", lookup("qalter"), "qalter", []string{"-o", "/tmp/x", "103"}, nil},
		{"qalter_depend", lookup("qalter"), "qalter", []string{"-W", "depend=afterok:101.srv:102", "103"}, nil},
		{"qalter_bad_depend", lookup("qalter"), "qalter", []string{"-W", "depend=before:101", "103"}, nil},
		{"qalter_other_user", lookup("qalter"), "qalter", []string{"-h", "n", "107"}, nil},
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
		rows[i] = pbsRow{Job: &jobs[i], s: s}
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

// arrayFixture is a job array 110[1-4] of alice's: task 1 running, task 2
// finished, tasks 3 and 4 queued (job ids 110-113, as horad gives them).
func arrayFixture() []api.Job {
	var out []api.Job
	for i, st := range []api.JobState{api.StateRunning, api.StateCompleted, api.StatePending, api.StatePending} {
		id := int64(110 + i)
		j := api.Job{ID: id, User: "alice", UID: 1000, Group: "alice", GID: 1000, State: st, Reason: "None",
			CancelledBy: -1, SubmitTime: ts("2026-11-22T11:00:00"), EligibleTime: ts("2026-11-22T11:00:00"),
			ArrayJobID: 110, ArrayTaskID: int64(i + 1),
			Spec: api.JobSpec{Name: "arr", Partition: "debug", WorkDir: "/home/alice", TimeLimit: 600,
				Command: "/home/alice/arr.sh", Array: "1-4%2"}}
		switch st {
		case api.StateRunning:
			j.StartTime, j.Nodes = ts("2026-11-22T11:50:00"), []string{"n2"}
		case api.StateCompleted:
			j.StartTime, j.EndTime, j.Nodes = ts("2026-11-22T11:00:05"), ts("2026-11-22T11:10:00"), []string{"n1"}
		case api.StatePending:
			j.Reason = "JobArrayTaskLimit"
		}
		out = append(out, j)
	}
	return out
}

// TestPBSArrayGolden lists a job array as each flavour's qstat does: one
// row <seq>[] (state B / R), subjobs <seq>[i] under -t (OpenPBS also -J,
// -J -t; Torque names subjobs NAME-i), -f with the array attributes, and
// subjob ids in qstat and qdel.
func TestPBSArrayGolden(t *testing.T) {
	cases := []struct {
		name string
		cmd  Command
		prog string
		args []string
	}{
		{"array_default", qstatMain, "qstat", nil},
		{"array_t", qstatMain, "qstat", []string{"-t"}},
		{"array_J", qstatMain, "qstat", []string{"-J"}},
		{"array_Jt", qstatMain, "qstat", []string{"-J", "-t"}},
		{"array_full", qstatMain, "qstat", []string{"-f", "110[]"}},
		{"array_subjob_full", qstatMain, "qstat", []string{"-f", "110[3].srv"}},
		{"array_subjob_unknown", qstatMain, "qstat", []string{"110[9]"}},
		{"array_qselect", qselectMain, "qselect", []string{"-s", "QR"}},
		{"array_qselect_J", qselectMain, "qselect", []string{"-J"}},
		{"array_qselect_T", qselectMain, "qselect", []string{"-T", "-s", "QR"}},
		{"array_qselect_T_brief", qselectMain, "qselect", []string{"-T", "-A", ""}},
		// OpenPBS: the array is B (a subjob has begun), never R or Q, and
		// -l tests it too; -T tests subjobs, the finished one is X.
		{"array_qselect_B", qselectMain, "qselect", []string{"-s", "B"}},
		{"array_qselect_Q", qselectMain, "qselect", []string{"-s", "Q"}},
		{"array_qselect_B_l", qselectMain, "qselect", []string{"-s", "BQ", "-l", "walltime.eq.00:10:00"}},
		{"array_qselect_T_X", qselectMain, "qselect", []string{"-T", "-s", "X"}},
		{"array_qdel_subjob", lookup("qdel"), "qdel", []string{"110[3]"}},
		{"array_qdel_unknown_subjob", lookup("qdel"), "qdel", []string{"110[9]"}},
	}
	for _, fl := range []string{sbatch.FlavourOpenPBS, sbatch.FlavourTorque} {
		for _, c := range cases {
			if fl == sbatch.FlavourTorque && strings.Contains(c.name, "_J") {
				continue // Torque's qstat has no -J
			}
			t.Run(fl+"_"+c.name, func(t *testing.T) {
				f := startFake(t)
				f.flavour = fl
				f.jobs = append(f.jobs, arrayFixture()...)
				runGolden(t, c.cmd, c.prog, "pbs_"+fl+"_"+c.name, nil, c.args...)
				if c.name == "array_qdel_subjob" {
					// The subjob's own job (task 3 is job 112), not the array.
					if len(f.cancels) != 1 || fmt.Sprint(f.cancels[0].IDs) != "[112]" || len(f.cancels[0].Tasks) != 0 {
						t.Errorf("qdel 110[3] sent %+v", f.cancels)
					}
				}
				if c.name == "array_qdel_unknown_subjob" && len(f.cancels) != 0 {
					t.Errorf("qdel of an unknown subjob cancelled %+v", f.cancels)
				}
			})
		}
	}
}

// resources_used.cput, .mem and .cpupercent and the Time Use column come
// from what the node measured at the job's end (sacct's TotalCPU and
// MaxRSS), in both flavours.
func TestPBSResourcesUsed(t *testing.T) {
	j := fixtureJobs()[3] // 104: ran 10:00:05-11:01:07 (3662 s)
	j.TotalCPUMs, j.MaxRSSKB = 1831000, 20480
	for _, fl := range []string{sbatch.FlavourOpenPBS, sbatch.FlavourTorque} {
		s := &pbsSession{flavour: fl, server: "srv", now: testNow}
		r := &pbsRow{Job: &j, s: s}
		table := openpbsJobAttrs.Get()
		if fl == sbatch.FlavourTorque {
			table = torqueJobAttrs.Get()
		}
		got := map[string]string{}
		for _, a := range table.AppendAttrs(nil, newPBSCtx(), r) {
			got[a.Name] = a.Value
		}
		if got["resources_used.cput"] != "00:30:31" || got["resources_used.mem"] != "20480kb" {
			t.Errorf("%s: cput %q mem %q", fl, got["resources_used.cput"], got["resources_used.mem"])
		}
		if fl == sbatch.FlavourOpenPBS && got["resources_used.cpupercent"] != "50" {
			t.Errorf("cpupercent %q", got["resources_used.cpupercent"])
		}
		if tu := pbsTimeUse(r); tu != "00:30:31" {
			t.Errorf("%s: Time Use %q", fl, tu)
		}
	}
}
