package main

import (
	"strings"
	"testing"
)

func TestSacctGolden(t *testing.T) {
	startFake(t)
	cases := []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"default_window_own_jobs", nil, nil},
		{"all_users", nil, []string{"-a"}},
		{"jobs_parsable2_submitit", nil, []string{"-o", "JobID,State,NodeList", "--parsable2", "-j", "101", "-j", "105,102"}},
		{"snakemake7", nil, []string{"-X", "--parsable2", "--noheader", "--format=JobIdRaw,State", "--name", "chunks"}},
		{"parsl_fixed", nil, []string{"-X", "--noheader", "--format=jobid,state%20", "--job", "105,106"}},
		{"reframe_epoch", map[string]string{"SLURM_TIME_FORMAT": "%s"}, []string{"-S", "2026-11-22T00:00:00", "-P", "-j", "104,106,101", "-o", "jobid,state,exitcode,end,nodelist"}},
		{"parsable_trailing", nil, []string{"-p", "-j", "108"}},
		{"delimiter", nil, []string{"-P", "--delimiter=,", "-j", "108", "-b"}},
		{"truncation", nil, []string{"-j", "102,105", "-o", "jobname%8,state,elapsed%-12,timelimit"}},
		{"case_and_abbrev", nil, []string{"-j", "101", "-o", "JOBIDRAW,user,uid,nnodes,ncpus,alloccpus,workdir%-12,reservation,account,partition,submit,start,end"}},
		{"long", nil, []string{"-l", "-j", "104"}},
		{"state_filter", nil, []string{"-a", "-s", "CD", "-S", "2026-11-22T00:00:00", "-X"}},
		{"state_without_start", nil, []string{"-a", "-s", "CD", "-X"}},
		{"end_before", nil, []string{"-a", "-X", "-S", "2026-11-22T10:00:00", "-E", "2026-11-22T09:00:00"}},
		{"unknown_job", nil, []string{"-j", "999"}},
		{"unknown_job_noheader", nil, []string{"-n", "-j", "999"}},
		{"bad_field", nil, []string{"-o", "jobid,bogus"}},
		{"step_selection", nil, []string{"-P", "-b", "-j", "108.1,104.batch", "-j", "101"}},
		{"bad_job_id", nil, []string{"-j", "abc"}},
		{"bad_state", nil, []string{"-s", "bogus"}},
		{"bad_time", nil, []string{"-S", "bogus"}},
		{"env_format", map[string]string{"SACCT_FORMAT": "jobid,elapsed"}, []string{"-j", "107"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runGolden(t, sacctMain, "sacct", "sacct_"+c.name, c.env, c.args...)
		})
	}
}

// TestSacctRequests checks the history query: History always, the id
// filter, and the start of the default window (today's midnight).
func TestSacctRequests(t *testing.T) {
	f := startFake(t)
	runCmd(t, sacctMain, "sacct", nil)
	runCmd(t, sacctMain, "sacct", nil, "-j", "5")
	want := []string{"all=1&history=1&since=1795305600&user=1000", "all=1&history=1&id=5"}
	if strings.Join(f.queries, " ") != strings.Join(want, " ") {
		t.Errorf("queries %q, want %q", f.queries, want)
	}
}

func TestSacctRootSeesAll(t *testing.T) {
	f := startFake(t)
	defer func(old func() string) { currentUID = old }(currentUID)
	currentUID = func() string { return "0" }
	runCmd(t, sacctMain, "sacct", nil, "-X")
	if len(f.queries) != 1 || strings.Contains(f.queries[0], "user=") {
		t.Errorf("root's sacct filtered by user: %q", f.queries)
	}
}

func TestSacctFieldLookup(t *testing.T) {
	for in, want := range map[string]string{"jobid": "JobID", "JOBIDRAW": "JobIDRaw", "jobn": "JobName",
		"st": "State", "ncpu": "NCPUS", "timelimit": "Timelimit", "node": "NodeList"} {
		if f := findSacctField(in); f == nil || f.name != want {
			t.Errorf("findSacctField(%q) = %v, want %s", in, f, want)
		}
	}
	if findSacctField("bogus") != nil || findSacctField("") != nil {
		t.Error("bogus field accepted")
	}
}

func TestSacctUnits(t *testing.T) {
	for _, c := range []struct {
		mb   float64
		unit string
		want string
	}{{100, "G", "0.10G"}, {2048, "g", "2G"}, {1, "K", "1024K"}, {100, "M", "100M"}, {3 << 20, "T", "3T"}} {
		u, ok := sacctUnit(c.unit)
		if !ok {
			t.Fatalf("unit %q refused", c.unit)
		}
		if got := inUnit(c.mb, 'M', u); got != c.want {
			t.Errorf("%vM in %s = %q, want %q", c.mb, c.unit, got, c.want)
		}
	}
	for _, bad := range []string{"", "X", "b"} {
		if _, ok := sacctUnit(bad); ok {
			t.Errorf("unit %q accepted", bad)
		}
	}
}
