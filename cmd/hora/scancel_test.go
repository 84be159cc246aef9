package main

import (
	"fmt"
	"testing"

	"hora/api"
)

func TestScancelGolden(t *testing.T) {
	startFake(t)
	cases := []struct {
		name string
		args []string
	}{
		{"ids_only_ok", []string{"101", "102"}},
		{"ids_only_unknown_and_finished", []string{"999", "104"}},
		{"ids_only_verbose", []string{"-v", "999", "101"}},
		{"permission", []string{"107"}},
		{"signal_after_id_unknown", []string{"999", "--signal", "USR2"}},
		{"signal_finished_quiet", []string{"-Q", "104", "-s", "SIGTERM"}},
		{"array_and_step_forms", []string{"-b", "999_4", "998.batch"}},
		{"no_ids", nil},
		{"bad_signal", []string{"-s", "FOO", "101"}},
		{"bad_id", []string{"12x"}},
		{"bad_task_list", []string{"7_[1-"}},
		{"user_filter", []string{"-u", "alice", "-n", "compute"}},
		{"bad_state_name", []string{"-t", "bogus", "-u", "root"}},
		{"finished_state_accepted", []string{"-t", "cd", "-u", "alice"}},
		{"signal_zero", []string{"-s", "0", "1"}},
		{"verbose_no_match", []string{"-v", "--me", "-n", "nothing"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runGolden(t, scancelMain, "scancel", "scancel_"+c.name, nil, c.args...)
		})
	}
}

// TestScancelRequests checks the CancelRequest sent for each form,
// especially Filtered, which selects horad's error path.
func TestScancelRequests(t *testing.T) {
	cases := []struct {
		args []string
		want api.CancelRequest
	}{
		{[]string{"5", "6"}, api.CancelRequest{IDs: []int64{5, 6}}},
		{[]string{"5,6_1"}, api.CancelRequest{IDs: []int64{5}, Tasks: []api.TaskSel{{Array: 6, Tasks: []int64{1}}}}},
		{[]string{"7_[1-3,5]"}, api.CancelRequest{Tasks: []api.TaskSel{{Array: 7, Tasks: []int64{1, 2, 3, 5}}}}},
		{[]string{"5", "--signal=usr2"}, api.CancelRequest{IDs: []int64{5}, Signal: 12, Filtered: true}},
		{[]string{"-s", "9", "5"}, api.CancelRequest{IDs: []int64{5}, Signal: 9, Filtered: true}},
		{[]string{"--me"}, api.CancelRequest{Users: []string{"1000"}, Filtered: true}},
		{[]string{"-t", "pd", "-p", "debug", "-u", "bob"}, api.CancelRequest{Users: []string{"bob"},
			Partitions: []string{"debug"}, States: []api.JobState{api.StatePending}, Filtered: true}},
		{[]string{"-f", "5"}, api.CancelRequest{IDs: []int64{5}, Filtered: true}},
	}
	for _, c := range cases {
		f := startFake(t)
		runCmd(t, scancelMain, "scancel", nil, c.args...)
		if len(f.cancels) != 1 || fmt.Sprintf("%+v", f.cancels[0]) != fmt.Sprintf("%+v", c.want) {
			t.Errorf("scancel %v sent %+v, want %+v", c.args, f.cancels, c.want)
		}
	}
}

func TestParseSignal(t *testing.T) {
	for s, want := range map[string]int{"USR2": 12, "sigusr2": 12, "SIGTERM": 15, "kill": 9, "12": 12, "Cont": 18} {
		if got, ok := parseSignal(s); !ok || got != want {
			t.Errorf("parseSignal(%q) = %d, %v", s, got, ok)
		}
	}
	for _, s := range []string{"", "0", "SIGFOO", "-1"} {
		if _, ok := parseSignal(s); ok {
			t.Errorf("parseSignal(%q) accepted", s)
		}
	}
}
