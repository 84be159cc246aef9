package controller

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"hora/api"
)

// --mail-type hands one message per asked-for event to mail_prog, run as
// `prog -oi -t` with the message on stdin: BEGIN and END for a job that
// completes; "Failed" (not "Ended") for one that fails with FAIL asked for;
// nothing for a job that asked for no mail. A recipient with a line break
// cannot add a header.
func TestMailOnJobEvents(t *testing.T) {
	f := newFixture(t)
	spool := f.mailSpool(t)
	c := f.controller(t)
	submit := func(script, types, user string) int64 {
		s := f.spec(script)
		s.Name, s.MailType, s.MailUser = "mailer", types, user
		r, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: s})
		if err != nil {
			t.Fatal(err)
		}
		return r.JobID
	}
	ok := submit("true", "BEGIN,END", "ops@example.org")
	bad := submit("exit 3", "FAIL", "ops\nBcc: victim@example.org")
	quiet := submit("true", "", "")
	runFor(t, c, "three jobs end", func() bool { return c.finishedLocked(ok, bad, quiet) })

	all := strings.Join(waitMail(t, spool, 3), "\n---\n")
	for _, want := range []string{
		"argv: -oi -t\nTo: ops@example.org\nSubject: Slurm Job_id=" + itoa(ok) + " Name=mailer Began, Queued time ",
		"Subject: Slurm Job_id=" + itoa(ok) + " Name=mailer Ended, Run time ",
		", COMPLETED, ExitCode 0\n",
		"To: ops Bcc: victim@example.org\nSubject: Slurm Job_id=" + itoa(bad) + " Name=mailer Failed, Run time ",
		", FAILED, ExitCode 3\n",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no message with %q in:\n%s", want, all)
		}
	}
	if strings.Contains(all, "Job_id="+itoa(quiet)+" ") || strings.Contains(all, "\nBcc:") {
		t.Errorf("a message that should not exist:\n%s", all)
	}
	// No fourth message comes later (the quiet job, or an Ended beside
	// the Failed).
	time.Sleep(200 * time.Millisecond)
	if files, _ := filepath.Glob(spool + ".*"); len(files) != 3 {
		t.Errorf("%d messages, want 3", len(files))
	}
}

// mailSpool points mail_prog at a script that writes each message into a
// file of its own (its argv on the first line, then stdin) and returns
// the files' common prefix.
func (f *fixture) mailSpool(t *testing.T) string {
	spool := filepath.Join(f.dir, "spool")
	prog := filepath.Join(f.dir, "sendmail")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nf="+spool+".$$\n{ echo \"argv: $*\"; cat; } > \"$f.tmp\" && mv \"$f.tmp\" \"$f\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.cfg.MailProg = prog
	return spool
}

// waitMail waits for n messages in the spool and returns them.
func waitMail(t *testing.T, spool string, n int) []string {
	t.Helper()
	var msgs []string
	deadline := time.Now().Add(60 * time.Second)
	for len(msgs) < n {
		msgs = msgs[:0]
		files, _ := filepath.Glob(spool + ".*")
		for _, p := range files {
			if strings.HasSuffix(p, ".tmp") {
				continue
			}
			b, _ := os.ReadFile(p)
			msgs = append(msgs, string(b))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages after 60 s, want %d: %q", len(msgs), n, msgs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return msgs
}

// subjects are the messages' subject lines, sorted.
func subjects(msgs []string) []string {
	var out []string
	for _, m := range msgs {
		for _, l := range strings.Split(m, "\n") {
			if s, ok := strings.CutPrefix(l, "Subject: "); ok {
				out = append(out, s)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TIME_LIMIT_50 and TIME_LIMIT_90 mail the job when it has run that share
// of its limit, once each, with the run time so far; TIME_LIMIT_80, not
// asked for, sends nothing. The controller's clock is set to those
// moments (the job's own limit on the node runs on real time and is far).
func TestMailTimeLimitWarnings(t *testing.T) {
	f := newFixture(t)
	spool := f.mailSpool(t)
	c := f.controller(t)
	s := f.spec("sleep 600")
	s.Name, s.MailType, s.TimeLimit = "warned", "TIME_LIMIT_50,TIME_LIMIT_90", 200
	r, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	var start time.Time
	skip := func(secs int64) {
		c.mu.Lock()
		at := start.Add(time.Duration(secs) * time.Second)
		c.now = func() time.Time { return at }
		c.mu.Unlock()
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitJob(t, c, "the job runs", func() bool { return c.jobs[r.JobID].State == api.StateRunning })
	c.mu.Lock()
	start = time.Unix(c.jobs[r.JobID].StartTime, 0)
	c.mu.Unlock()
	skip(101) // half of 200 s, and a second
	got := subjects(waitMail(t, spool, 1))
	skip(181)
	got = subjects(waitMail(t, spool, 2))
	want := []string{
		"Slurm Job_id=" + itoa(r.JobID) + " Name=warned Reached 50% of time limit, Run time 00:01:41",
		"Slurm Job_id=" + itoa(r.JobID) + " Name=warned Reached 90% of time limit, Run time 00:03:01",
	}
	if !slices.Equal(got, want) {
		t.Errorf("subjects\n got %q\nwant %q", got, want)
	}
	if _, err := c.cancel(t.Context(), root, api.CancelRequest{IDs: []int64{r.JobID}}); err != nil {
		t.Fatal(err)
	}
	waitJob(t, c, "the job ends", func() bool { return c.jobs[r.JobID].State.Finished() })
	time.Sleep(200 * time.Millisecond)
	if files, _ := filepath.Glob(spool + ".*"); len(files) != 2 {
		t.Errorf("%d messages, want 2 (no 80%%, no end)", len(files))
	}
}

// An array without ARRAY_TASKS is mailed as a whole: one "Array Summary"
// when its first task begins and one when its last task ends, with the
// tasks' exit codes from lowest to highest ("Mixed" when some failed). With
// ARRAY_TASKS each task is mailed on its own.
func TestMailArrays(t *testing.T) {
	f := newFixture(t)
	spool := f.mailSpool(t)
	c := f.controller(t)
	submit := func(types string) int64 {
		s := f.spec("exit $SLURM_ARRAY_TASK_ID")
		s.Name, s.MailType, s.Array = "arr", types, "0-2"
		r, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: s})
		if err != nil {
			t.Fatal(err)
		}
		return r.JobID
	}
	whole := submit("BEGIN,END")
	tasks := submit("END,ARRAY_TASKS")
	runFor(t, c, "six tasks end", func() bool {
		return c.finishedLocked(whole, whole+1, whole+2, tasks, tasks+1, tasks+2)
	})
	got := subjects(waitMail(t, spool, 5))
	a, b := itoa(whole), itoa(tasks)
	want := []string{
		"Slurm Array Summary Job_id=" + a + "_* (" + a + ") Name=arr Began",
		"Slurm Array Summary Job_id=" + a + "_* (" + a + ") Name=arr Ended, Mixed, ExitCode [0-2]",
		"Slurm Array Task Job_id=" + b + "_0 (" + b + ") Name=arr Ended, Run time ",
		"Slurm Array Task Job_id=" + b + "_1 (" + itoa(tasks+1) + ") Name=arr Ended, Run time ",
		"Slurm Array Task Job_id=" + b + "_2 (" + itoa(tasks+2) + ") Name=arr Ended, Run time ",
	}
	if len(got) != len(want) {
		t.Fatalf("subjects %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("subject %d\n got %q\nwant %q...", i, got[i], want[i])
		}
	}
	for i, exit := range []string{", COMPLETED, ExitCode 0", ", FAILED, ExitCode 1", ", FAILED, ExitCode 2"} {
		if !strings.HasSuffix(got[2+i], exit) {
			t.Errorf("subject %q does not end in %q", got[2+i], exit)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if files, _ := filepath.Glob(spool + ".*"); len(files) != 5 {
		t.Errorf("%d messages, want 5", len(files))
	}
}

// waitJob waits, under the lock, for cond while the controller runs.
func waitJob(t *testing.T, c *Controller, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c.mu.Lock()
		ok := cond()
		c.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}
