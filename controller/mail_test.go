package controller

import (
	"os"
	"path/filepath"
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
	spool := filepath.Join(f.dir, "spool")
	prog := filepath.Join(f.dir, "sendmail")
	// Each message is one file: its argv on the first line, then stdin.
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nf="+spool+".$$\n{ echo \"argv: $*\"; cat; } > \"$f.tmp\" && mv \"$f.tmp\" \"$f\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.cfg.MailProg = prog
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

	var msgs []string
	deadline := time.Now().Add(60 * time.Second)
	for len(msgs) < 3 {
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
			t.Fatalf("%d messages after 60 s, want 3: %q", len(msgs), msgs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	all := strings.Join(msgs, "\n---\n")
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
