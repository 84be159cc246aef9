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
	mailArrayTask = "ARRAY_TASKS"
)

// timeWarnings are the --mail-type warnings sent while a job runs, at the
// percentage of its time limit each names, latest first. Slurm sends each
// once per run.
var timeWarnings = []struct {
	event string
	pct   int64
}{{"TIME_LIMIT_90", 90}, {"TIME_LIMIT_80", 80}, {"TIME_LIMIT_50", 50}}

// mailWanted says whether the job's --mail-type asks for event. ALL is
// Slurm's BEGIN, END, FAIL, REQUEUE (and INVALID_DEPEND, STAGE_OUT): none of
// the time limit events.
func mailWanted(types, event string) bool {
	for _, t := range strings.Split(types, ",") {
		switch t {
		case event:
			return true
		case "ALL":
			if !strings.HasPrefix(event, mailTimeLimit) {
				return true
			}
		}
	}
	return false
}

// mailEventText is what Slurm's subject says of the event.
func mailEventText(event string) string {
	switch event {
	case mailBegin:
		return "Began"
	case mailEnd:
		return "Ended"
	case mailFail:
		return "Failed"
	case mailRequeue:
		return "Requeued"
	case mailTimeLimit:
		return "Reached time limit"
	}
	for _, w := range timeWarnings {
		if w.event == event {
			return fmt.Sprintf("Reached %d%% of time limit", w.pct)
		}
	}
	return "unknown"
}

// mailSubject is Slurm's subject line for the event of a job, or of an
// array task sent on its own (--mail-type ARRAY_TASKS, or an event other
// than the array's begin and end).
func mailSubject(j *job, event string, now int64) string {
	head := fmt.Sprintf("Slurm Job_id=%d Name=%s ", j.ID, j.Spec.Name)
	if j.ArrayJobID != 0 {
		head = fmt.Sprintf("Slurm Array Task Job_id=%d_%d (%d) Name=%s ", j.ArrayJobID, j.ArrayTaskID, j.ID, j.Spec.Name)
	}
	run := sbatch.FormatLongDuration(max(0, now-j.StartTime))
	text := head + mailEventText(event)
	switch event {
	case mailBegin:
		return text + ", Queued time " + sbatch.FormatLongDuration(max(0, j.StartTime-j.SubmitTime))
	case mailEnd, mailFail:
		return fmt.Sprintf("%s, Run time %s, %s, ExitCode %d", text, run, j.State, j.ExitCode)
	case mailRequeue:
		return text
	}
	return text + ", Run time " + run // the time limit events
}

// arraySummarySubject is Slurm's subject for an array's one begin or end
// message (no ARRAY_TASKS): the end says the tasks' exit codes from the
// lowest to the highest, "Mixed" when some were zero and some not, and the
// highest signal when a task was killed by one.
func arraySummarySubject(a *arrayInfo, arrayID int64, name, event, state string) string {
	text := fmt.Sprintf("Slurm Array Summary Job_id=%d_* (%d) Name=%s %s", arrayID, arrayID, name, mailEventText(event))
	if event != mailEnd && event != mailFail {
		return text
	}
	switch {
	case a.maxSignal != 0:
		return fmt.Sprintf("%s, Mixed, MaxSignal [%d]", text, a.maxSignal)
	case a.minExit == 0 && a.maxExit > 0:
		state = "Mixed"
	}
	return fmt.Sprintf("%s, %s, ExitCode [%d-%d]", text, state, a.minExit, a.maxExit)
}

// mailLocked sends the event's message when the job asked for it. The end
// of a job is one message: "Failed" when it failed and FAIL was asked for,
// else "Ended" when END was. An array without ARRAY_TASKS gets one begin
// message, when its first task starts, and one end message, when its last
// task ends, as Slurm sends them from the array's own record.
func (c *Controller) mailLocked(j *job, event string) {
	a := c.arrays[j.ArrayJobID]
	if a != nil && j.ArrayJobID != 0 && event == mailEnd {
		a.noteEnd(j) // the array's end message sums up every task
	}
	types := j.Spec.MailType
	if types == "" || types == "NONE" {
		return
	}
	summary := j.ArrayJobID != 0 && a != nil && !mailWanted(types, mailArrayTask) && (event == mailBegin || event == mailEnd)
	failed := j.State != api.StateCompleted
	if summary {
		switch {
		case event == mailBegin && a.beganMailed:
			return
		case event == mailBegin:
			a.beganMailed = true
		case !c.arrayFinishedLocked(a):
			return
		default:
			failed = a.anyFailed
		}
	}
	if event == mailEnd && failed && mailWanted(types, mailFail) {
		event = mailFail
	}
	if !mailWanted(types, event) {
		return
	}
	var subject string
	if summary {
		state := j.State
		if first := c.jobs[j.ArrayJobID]; first != nil {
			state = first.State // the array's own record is its first task's
		}
		subject = arraySummarySubject(a, j.ArrayJobID, j.Spec.Name, event, string(state))
	} else {
		subject = mailSubject(j, event, c.now().Unix())
	}
	to := j.Spec.MailUser
	if to == "" {
		to = j.User
	}
	c.sendMail(j.ID, to, subject)
}

// sendMail hands one message to the mail program on its own goroutine.
func (c *Controller) sendMail(id int64, to, subject string) {
	prog := c.cfg.MailProg
	if prog == "" {
		if _, err := os.Stat(defaultMailProg); err != nil {
			return // no mail system on this host: Slurm's MailProg would fail too
		}
		prog = defaultMailProg
	}
	// Header injection: a name or address must not start a header of its own.
	clean := func(s string) string { return strings.Map(noLineBreaks, s) }
	subject = clean(subject)
	msg := "To: " + clean(to) + "\nSubject: " + subject + "\n\n" + subject + "\n"
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

// noteEnd gathers a finished task's exit into its array's end summary.
func (a *arrayInfo) noteEnd(j *job) {
	if a.ended == 0 || j.ExitCode < a.minExit {
		a.minExit = j.ExitCode
	}
	a.maxExit = max(a.maxExit, j.ExitCode)
	a.maxSignal = max(a.maxSignal, j.Signal)
	a.anyFailed = a.anyFailed || j.State != api.StateCompleted
	a.ended++
}

// arrayFinishedLocked says whether every task of the array has ended.
func (c *Controller) arrayFinishedLocked(a *arrayInfo) bool {
	for _, id := range a.ids {
		if t := c.jobs[id]; t != nil && !t.State.Finished() {
			return false
		}
	}
	return true
}

// watchTimeLocked puts a job that just started on the list of jobs whose
// time limit warnings (TIME_LIMIT_90/80/50) are due. Warnings whose time
// has already passed (a job recovered after a restart) are not sent late:
// Slurm sends each at its moment or not at all.
func (c *Controller) watchTimeLocked(j *job) {
	limit := c.timeLimitOf(j)
	if limit <= 0 || !strings.Contains(j.Spec.MailType, mailTimeLimit+"_") {
		return
	}
	j.timeWarned = 0
	elapsed := c.now().Unix() - j.StartTime - j.SuspendedSecs
	for i, w := range timeWarnings {
		if elapsed*100 >= w.pct*limit {
			j.timeWarned |= 1 << i
		}
	}
	c.timeWatch[j.ID] = j
}

// timeWarningsLocked sends the time limit warnings that are due; the tick
// loop calls it at least once a second. Time suspended does not count, as
// it does not count toward the limit.
func (c *Controller) timeWarningsLocked() {
	now := c.now().Unix()
	for id, j := range c.timeWatch {
		switch {
		case j.State == api.StateSuspended:
			continue // its clock is stopped
		case j.State != api.StateRunning || c.jobs[id] != j:
			delete(c.timeWatch, id) // ended, requeued or forgotten
			continue
		}
		elapsed, limit := now-j.StartTime-j.SuspendedSecs, c.timeLimitOf(j)
		for i, w := range timeWarnings {
			if j.timeWarned&(1<<i) != 0 || elapsed*100 < w.pct*limit {
				continue
			}
			// The later warnings cover the earlier ones (timeWarnings is
			// latest first): a job seen past 90% at once gets that message
			// only.
			j.timeWarned |= (1<<len(timeWarnings) - 1) &^ (1<<i - 1)
			c.mailLocked(j, w.event)
			break
		}
	}
}

func noLineBreaks(r rune) rune {
	if r == '\n' || r == '\r' {
		return ' '
	}
	return r
}
