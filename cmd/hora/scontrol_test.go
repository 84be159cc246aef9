package main

import (
	"fmt"
	"testing"
)

func TestScontrolGolden(t *testing.T) {
	startFake(t)
	cases := []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"show_job_running", nil, []string{"show", "job", "101"}},
		{"show_job_pending", nil, []string{"show", "job", "102"}},
		{"show_job_finished_oneliner", nil, []string{"-o", "show", "job", "105"}},
		{"show_job_eq", nil, []string{"show", "JobId=107"}},
		{"show_job_unknown", nil, []string{"show", "job", "999"}},
		{"show_job_bad_id", nil, []string{"show", "job", "abc"}},
		{"show_job_epoch", map[string]string{"SLURM_TIME_FORMAT": "%s"}, []string{"show", "job", "104"}},
		{"show_nodes", nil, []string{"show", "nodes"}},
		{"show_node_one", nil, []string{"show", "node", "n5"}},
		{"show_node_unknown", nil, []string{"show", "node", "zz"}},
		{"show_partitions_reframe", nil, []string{"-a", "show", "-o", "partitions"}},
		{"show_partition_one", nil, []string{"show", "partition", "debug"}},
		{"hostnames", nil, []string{"show", "hostnames", "n[1-3],x"}},
		{"hostlist", nil, []string{"show", "hostlist", "n1,n2,n3"}},
		{"hold_unknown", nil, []string{"hold", "101,999"}},
		{"release_ok", nil, []string{"release", "101", "102"}},
		{"show_nothing", nil, []string{"show"}},
		{"show_bogus", nil, []string{"show", "bogus"}},
		{"hold_bad_id", nil, []string{"hold", "abc"}},
		{"hostnames_from_job_env", map[string]string{"SLURM_JOB_NODELIST": "c[01-02]"}, []string{"show", "hostnames"}},
		{"hostnames_empty", nil, []string{"show", "hostnames"}},
		{"bad_keyword", nil, []string{"frobnicate"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runGolden(t, scontrolMain, "scontrol", "scontrol_"+c.name, c.env, c.args...)
		})
	}
}

func TestScontrolNoJobs(t *testing.T) {
	f := startFake(t)
	f.jobs = nil
	out, _, code := runCmd(t, scontrolMain, "scontrol", nil, "show", "job")
	if code != 0 || out != "No jobs in the system\n" {
		t.Errorf("empty queue: %d %q", code, out)
	}
}

func TestScontrolHoldRequests(t *testing.T) {
	f := startFake(t)
	runCmd(t, scontrolMain, "scontrol", nil, "hold", "5,6", "7")
	runCmd(t, scontrolMain, "scontrol", nil, "uhold", "8")
	runCmd(t, scontrolMain, "scontrol", nil, "release", "JobId=9")
	want := "[/v1/jobs/hold[5 6 7] /v1/jobs/hold[8] /v1/jobs/release[9]]"
	if got := fmt.Sprint(f.controls); got != want {
		t.Errorf("controls %s, want %s", got, want)
	}
}

// Bad job ids of hold/release/suspend/resume/requeue are refused before any
// daemon is asked (none runs here), with scontrol 22.05.8's texts: hold adds
// slurm_perror's second line, suspend and its siblings do not.
func TestScontrolJobIDWords(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"hold", "abc"}, "Invalid job id specified for job abc\nslurm_suspend error: Invalid job id specified\n"},
		{[]string{"release", "JobId=12,x7"}, "Invalid job id specified for job x7\nslurm_suspend error: Invalid job id specified\n"},
		{[]string{"suspend", "1,abc"}, "Invalid job id specified for job abc\n"},
		{[]string{"requeue", "jobid=zz"}, "Invalid job id specified for job zz\n"},
		{[]string{"resume"}, "too few arguments for keyword:resume\n"},
		{[]string{"uhold"}, "too few arguments for keyword:uhold\n"},
	}
	for _, c := range cases {
		out, errs, code := runCmd(t, scontrolMain, "scontrol", nil, c.args...)
		if code != 1 || out != "" || errs != c.want {
			t.Errorf("scontrol %q: exit %d, stdout %q, stderr %q; want exit 1, stderr %q", c.args, code, out, errs, c.want)
		}
	}
}
