package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hora/api"
	"hora/cmd/hora/listing"
)

func TestSqueueGolden(t *testing.T) {
	startFake(t)
	cases := []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"default", nil, nil},
		{"all_letters", nil, []string{"-t", "all", "-o", "%i %t %T %j %u %M %l %D %R %P %S %e %V %r %C %Q"}},
		{"long", nil, []string{"-l"}},
		{"noheader_nextflow", nil, []string{"--noheader", "-o", "%i %t", "-t", "all", "-p", "debug", "-u", "alice"}},
		{"prefix_suffix", nil, []string{"-o", "job:%i %%T|%.3j|%5u.", "-S", "i"}},
		{"reframe_double_percent", nil, []string{"-h", "-j", "101,106", "-o", "%%i|%%T|%%N|%%r"}},
		{"Format_psij", nil, []string{"-O", "JobArrayID,StateCompact,Reason", "-t", "all", "-j", "101,104"}},
		{"Format_sizes", nil, []string{"--Format=jobid:.6,name:10|,timeused,exit_code:4", "-t", "all"}},
		{"start", nil, []string{"--start"}},
		{"sort_id_desc", nil, []string{"-S", "-i", "-t", "all"}},
		{"states_list", nil, []string{"-t", "cd,F,cancelled", "-o", "%i %T %R"}},
		{"states_bad", nil, []string{"-t", "running,bogus"}},
		{"one_unknown_id", nil, []string{"-j", "999"}},
		{"two_unknown_ids", nil, []string{"-j", "999,998"}},
		{"known_id_filtered_out", nil, []string{"-j", "104", "-t", "R"}},
		{"finished_id", nil, []string{"--jobs", "104"}},
		{"jobs_attached", nil, []string{"-j101", "-h"}},
		{"me", nil, []string{"--me", "-h", "-o", "%i %u"}},
		{"name", nil, []string{"-n", "wait,compute", "-h", "-o", "%i %j"}},
		{"time_format_epoch", map[string]string{"SLURM_TIME_FORMAT": "%s"}, []string{"-o", "%i %S %e %V", "-t", "all"}},
		{"env_format", map[string]string{"SQUEUE_FORMAT": "%i:%t", "SQUEUE_STATES": "all", "SQUEUE_USERS": "bob"}, nil},
		{"env_format2", map[string]string{"SQUEUE_FORMAT2": "jobid:5,state", "SQUEUE_PARTITION": "batch"}, nil},
		{"bad_letter", nil, []string{"-o", "%i %!|%t"}},
		{"bad_user", nil, []string{"-u", "nosuchuser"}},
		// Checked against squeue 22.05.8 (offline, option parsing only):
		{"states_all_in_list", nil, []string{"-t", "all,CF"}},
		{"states_slurm_only", nil, []string{"-t", "CF,stage_out", "-h"}},
		{"iterate_zero", nil, []string{"-i", "0"}},
		{"operand", nil, []string{"foo"}},
		{"bad_job_id", nil, []string{"-j", "abc"}},
		{"misc_letters", nil, []string{"-t", "all", "-S", "i", "-o", "%A %F %K %U %g %G %L %N %q %a %v %Z %E %o %k %m %c %d %f %B %Y %y %w %W %p"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runGolden(t, squeueMain, "squeue", "squeue_"+c.name, c.env, c.args...)
		})
	}
}

// TestSqueueRequests checks what squeue asks horad for: finished jobs only
// when -t names a finished state (or all) or ids are given.
func TestSqueueRequests(t *testing.T) {
	f := startFake(t)
	runCmd(t, squeueMain, "squeue", nil)
	runCmd(t, squeueMain, "squeue", nil, "-t", "all")
	runCmd(t, squeueMain, "squeue", nil, "-t", "PD,R", "-u", "alice")
	runCmd(t, squeueMain, "squeue", nil, "-j", "5")
	runCmd(t, squeueMain, "squeue", nil, "-r")
	runCmd(t, squeueMain, "squeue", nil, "-j", "7_[1-2]")
	// Pending array tasks are folded by horad unless -r or tasks are named.
	want := []string{"fold=1", "all=1&fold=1", "fold=1&state=PENDING&state=RUNNING&user=alice", "all=1&fold=1&id=5",
		"", "all=1&id=7"}
	if fmt.Sprint(f.queries) != fmt.Sprint(want) {
		t.Errorf("queries %q, want %q", f.queries, want)
	}
}

func TestSqueueFormatParse(t *testing.T) {
	fields, bad := parseSqueueFormat("x%%i|%.5t%20j")
	if len(bad) != 0 || len(fields) != 4 || fields[0].Text != "x" || fields[1].Field.Letter != 'i' ||
		fields[1].Suffix != "|" || !fields[2].Col.Right || fields[2].Col.Width != 5 || fields[3].Col.Width != 20 {
		t.Errorf("parse: %+v %v", fields, bad)
	}
	if _, bad := parseSqueueFormat2("jobid,nosuch"); len(bad) != 1 || bad[0] != "nosuch" {
		t.Errorf("bad -O names: %v", bad)
	}
}

// benchJobs is a queue of n pending jobs, as in the performance target
// (squeue on 10,000 pending jobs).
func benchJobs(n int) []api.Job {
	jobs := make([]api.Job, n)
	for i := range jobs {
		jobs[i] = api.Job{ID: int64(1000 + i), User: "alice", UID: 1000, State: api.StatePending,
			Reason: "Priority", Priority: int64(n - i), SubmitTime: testNow.Unix() - 60,
			Spec: api.JobSpec{Name: "job" + fmt.Sprint(i), Partition: "debug", TimeLimit: 3600}}
	}
	return jobs
}

func TestSqueueManyPendingRowCount(t *testing.T) {
	jobs := benchJobs(10000)
	fields, _ := parseSqueueFormat(squeueDefaultFormat)
	keys, _ := parseSort(squeueDefaultSort)
	rows := jobPtrs(jobs)
	sortJobs(rows, keys, testNow.Unix())
	var b bytes.Buffer
	if err := writeSqueue(&b, rows, fields, true, testNow, ""); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if len(lines) != 10002 || lines[1] != "              1000     debug     job0    alice PD       0:00      1 (Priority)" {
		t.Errorf("%d lines, first row %q", len(lines), lines[1])
	}
}

func jobPtrs(jobs []api.Job) []*api.Job {
	p := make([]*api.Job, len(jobs))
	for i := range jobs {
		p[i] = &jobs[i]
	}
	return p
}

func BenchmarkSqueue10000Pending(b *testing.B) {
	jobs := benchJobs(10000)
	fields, _ := parseSqueueFormat(squeueDefaultFormat)
	keys, _ := parseSort(squeueDefaultSort)
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		work := jobPtrs(jobs)
		sortJobs(work, keys, testNow.Unix())
		writeSqueue(&buf, work, fields, true, testNow, "")
	}
}

// notifyWriter records output and says when the first write arrived.
type notifyWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan struct{}
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() == 0 {
		close(w.first)
	}
	return w.buf.Write(p)
}

// squeue -i installs its own interrupt handling: SIGINT ends the loop and
// the command exits 0 (main no longer installs one for every command).
func TestSqueueIterateEndsOnInterrupt(t *testing.T) {
	startFake(t)
	out := &notifyWriter{first: make(chan struct{})}
	env := &Env{Prog: "squeue", Stdin: strings.NewReader(""), Stdout: out, Stderr: io.Discard,
		Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		Getwd: func() (string, error) { return "/tmp", nil }}
	done := make(chan int)
	go func() { done <- squeueMain(context.Background(), env, []string{"-i", "30"}) }()
	select {
	case <-out.first: // the handler is installed before the first listing
	case <-time.After(10 * time.Second):
		t.Fatal("squeue -i printed nothing")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("squeue -i exited %d on SIGINT, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("squeue -i did not end on SIGINT")
	}
}

// listingInParts encodes jobs as horad sends a large listing: k parts,
// each a contiguous share.
func listingInParts(jobs []api.Job, k int) []byte {
	var body []byte
	table := make([]api.ListingPart, k)
	for p := range k {
		start := len(body)
		lo, hi := p*len(jobs)/k, (p+1)*len(jobs)/k
		for i := lo; i < hi; i++ {
			body = api.AppendListingJob(body, &jobs[i])
		}
		table[p] = api.ListingPart{Jobs: hi - lo, Bytes: len(body) - start}
	}
	return append(api.AppendListingHeader(nil, table), body...)
}

// squeue prints the same lines in the same order from a listing sent in
// parts, which it reads one goroutine per part, as from the same jobs in
// one part; a filter, a sort key over the parts and -j's "found" work
// across them (go test -race checks the goroutines share nothing they write).
func TestSqueueReadsPartsAsOne(t *testing.T) {
	var jobs []api.Job
	states := []api.JobState{api.StatePending, api.StateRunning, api.StateSuspended, api.StateCompleted}
	for i := range 500 {
		j := api.Job{ID: int64(100 + i), UID: uint32(1000 + i%3), User: []string{"alice", "bob", "carol"}[i%3],
			State: states[i%len(states)], Reason: "None", Priority: int64(1000 - i%17), CancelledBy: -1,
			SubmitTime: testNow.Unix() - int64(i), Spec: api.JobSpec{Name: "job" + strconv.Itoa(i%11),
				Partition: []string{"batch", "debug"}[i%2], Nodes: 1, TimeLimit: int64(60 * (i%5 + 1))}}
		if j.State == api.StateRunning || j.State == api.StateSuspended {
			j.StartTime, j.Nodes = testNow.Unix()-int64(7*i), []string{"n" + strconv.Itoa(i%4)}
		}
		jobs = append(jobs, j)
	}
	for _, c := range []struct {
		format, sort string
		q            squeueQuery
	}{
		{squeueDefaultFormat, squeueDefaultSort, squeueQuery{}},
		{"%i %u %T %M %l %R", "-t,u,-p", squeueQuery{users: []string{"bob"}}},
		{"%.8i %j", "j,-i", squeueQuery{ids: []int64{577}}},
	} {
		fields, unknown := parseSqueueFormat(c.format)
		if len(unknown) > 0 {
			t.Fatal(unknown)
		}
		keys, err := parseSort(c.sort)
		if err != nil {
			t.Fatal(err)
		}
		print := func(data []byte) (string, bool) {
			lr, err := api.NewListingReader(data)
			if err != nil {
				t.Fatal(err)
			}
			rows, lines, found, err := selectSqueueParts(lr, &c.q, keys, fields,
				func() *listing.Ctx { return squeueCtx(testNow, "") }, testNow.Unix())
			if err != nil {
				t.Fatal(err)
			}
			rows.sort(keys)
			var out bytes.Buffer
			if err := writeSqueueRows(&out, rows, lines, fields, true); err != nil {
				t.Fatal(err)
			}
			return out.String(), found
		}
		want, wantFound := print(api.AppendListing(nil, jobs))
		if n := strings.Count(want, "\n"); n < 2 {
			t.Fatalf("%s: the case lists %d lines", c.format, n)
		}
		for _, k := range []int{2, 3, 8} {
			got, found := print(listingInParts(jobs, k))
			if got != want || found != wantFound {
				t.Errorf("%s -S %s in %d parts (found %v, want %v):\n%s\nwant:\n%s", c.format, c.sort, k, found, wantFound, got, want)
			}
		}
	}
}

// BenchmarkSqueue100k: the client's side of `squeue` over 100,000 pending
// jobs, as horad sends them (issue 16: squeue of 100,000 jobs ≤ 0.2 s):
// decoding the listing, filtering, sorting by squeue's default keys and
// formatting the default columns.
func BenchmarkSqueue100k(b *testing.B) {
	jobs := make([]api.Job, 100000)
	for i := range jobs {
		jobs[i] = api.Job{ID: int64(i + 1), User: "root", Group: "root", State: api.StatePending,
			Reason: "JobHeldUser", Priority: 0, SubmitTime: testNow.Unix() - 60, CancelledBy: -1,
			Spec: api.JobSpec{Name: "fill" + strconv.Itoa(i), Partition: "batch", Script: "#!/bin/sh\ntrue\n",
				WorkDir: "/tmp", Hold: true, Nodes: 1, SubmitHost: "login1"}}
	}
	// In parts, as horad sends it: one per processor.
	data := listingInParts(jobs, runtime.GOMAXPROCS(0))
	fields, _ := parseSqueueFormat(squeueDefaultFormat)
	keys, _ := parseSort(squeueDefaultSort)
	q := &squeueQuery{}
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		lr, err := api.NewListingReader(data)
		if err != nil {
			b.Fatal(err)
		}
		rows, lines, _, err := selectSqueueParts(lr, q, keys, fields, func() *listing.Ctx { return squeueCtx(testNow, "") }, testNow.Unix())
		if err != nil || len(rows.rows) != len(jobs) {
			b.Fatal(err, len(rows.rows))
		}
		rows.sort(keys)
		if err := writeSqueueRows(&buf, rows, lines, fields, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(data)), "listing-bytes")
	b.ReportMetric(float64(buf.Len()), "output-bytes")
}
