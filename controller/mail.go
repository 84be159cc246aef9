package controller

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"hora/api"
	"hora/sbatch"
)

// Mail on job events (--mail-type, --mail-user): horad hands one message per
// event to the local sendmail, as slurmctld hands it to its MailProg. The
// subjects follow Slurm's ("Slurm Job_id=7 Name=x Began, Queued time
// 00:00:01"), which mail filters and users' rules match on. Sending never
// holds the controller's lock: the program runs on its own goroutine.

// defaultMailProg is used when hora.toml sets no mail_prog and it exists.
const defaultMailProg = "/usr/sbin/sendmail"

// Mail events, as --mail-type names them.
const (
	mailBegin     = "BEGIN"
	mailEnd       = "END"
	mailFail      = "FAIL"
	mailRequeue   = "REQUEUE"
	mailTimeLimit = "TIME_LIMIT"
)

// mailWanted says whether the job's --mail-type asks for event. ALL is
// Slurm's BEGIN, END, FAIL, REQUEUE (and INVALID_DEPEND, STAGE_OUT).
func mailWanted(types, event string) bool {
	for _, t := range strings.Split(types, ",") {
		switch t {
		case event:
			return true
		case "ALL":
			if event != mailTimeLimit {
				return true
			}
		}
	}
	return false
}

// mailSubject is Slurm's subject line for the event.
func mailSubject(j *job, event string, now int64) string {
	head := fmt.Sprintf("Slurm Job_id=%d Name=%s", j.ID, j.Spec.Name)
	run := sbatch.FormatLongDuration(max(0, now-j.StartTime))
	switch event {
	case mailBegin:
		return head + " Began, Queued time " + sbatch.FormatLongDuration(max(0, j.StartTime-j.SubmitTime))
	case mailEnd:
		return fmt.Sprintf("%s Ended, Run time %s, %s, ExitCode %d", head, run, j.State, j.ExitCode)
	case mailFail:
		return fmt.Sprintf("%s Failed, Run time %s, %s, ExitCode %d", head, run, j.State, j.ExitCode)
	case mailTimeLimit:
		return head + " Reached time limit, Run time " + run
	}
	return head + " Requeued"
}

// mailLocked sends the event's message when the job asked for it. The end
// of a job is one message: "Failed" when it failed and FAIL was asked for,
// else "Ended" when END was.
func (c *Controller) mailLocked(j *job, event string) {
	types := j.Spec.MailType
	if types == "" || types == "NONE" {
		return
	}
	if event == mailEnd && j.State != api.StateCompleted && mailWanted(types, mailFail) {
		event = mailFail
	}
	if !mailWanted(types, event) {
		return
	}
	prog := c.cfg.MailProg
	if prog == "" {
		if _, err := os.Stat(defaultMailProg); err != nil {
			return // no mail system on this host: Slurm's MailProg would fail too
		}
		prog = defaultMailProg
	}
	to := j.Spec.MailUser
	if to == "" {
		to = j.User
	}
	// Header injection: a name or address must not start a header of its own.
	clean := func(s string) string { return strings.Map(noLineBreaks, s) }
	subject := clean(mailSubject(j, event, c.now().Unix()))
	msg := "To: " + clean(to) + "\nSubject: " + subject + "\n\n" + subject + "\n"
	id := j.ID
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, prog, "-oi", "-t")
		cmd.Stdin = strings.NewReader(msg)
		if out, err := cmd.CombinedOutput(); err != nil {
			c.log.Warn("mail not sent", "job", id, "prog", prog, "err", err, "output", strings.TrimSpace(string(out)))
		}
	}()
}

func noLineBreaks(r rune) rune {
	if r == '\n' || r == '\r' {
		return ' '
	}
	return r
}
