package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"hora/config"
)

// manPage renders horad(8) from the app's own flag definitions (the same
// ones horad parses), plus the sections a daemon's page needs. man_test.go
// keeps man/horad.8 equal to it.
func manPage(a *cli.App) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	text := func(s string) { p("%s", config.RoffText(s)) }
	p(`.\" Generated from cmd/horad's flags by its TestManPage -update; do not edit.`)
	p(`.TH HORAD 8 %s hora "System Administration"`, config.ManDate)
	p(".SH NAME")
	p(`horad \- %s`, config.Roff(a.Usage))
	p(".SH SYNOPSIS")
	p(".B horad")
	for _, f := range a.Flags {
		name := f.Names()[0]
		if df, ok := f.(cli.DocGenerationFlag); ok && df.TakesValue() {
			_, arg := argName(df.GetUsage())
			p(`.RB [ \-\-%s\~\fI%s\fP ]`, config.Roff(name), arg)
		} else {
			p(`.RB [ \-\-%s ]`, config.Roff(name))
		}
	}
	p(".SH DESCRIPTION")
	text(a.Description)
	p(".PP")
	text("horad keeps every job and event in one SQLite file, hora.db in the state directory, and writes an " +
		"event to it before it answers a client or acts on a node, so nothing acknowledged is lost when it " +
		"is killed. At start it recovers: pending jobs are queued again, running jobs are re-attached, jobs " +
		"that ended while it was away are recorded with their real exit status. Jobs do not depend on " +
		"horad: they keep running while it is stopped or restarted.")
	p(".PP")
	text("Clients talk to horad over a Unix socket with HTTP and JSON; the caller is identified by the kernel " +
		"(SO_PEERCRED). Every local user may connect; a user acts only on their own jobs, root and the " +
		"configured operators on all.")
	p(".SH OPTIONS")
	for _, f := range a.Flags {
		name := f.Names()[0]
		usage := ""
		arg := ""
		def := ""
		if df, ok := f.(cli.DocGenerationFlag); ok {
			usage = df.GetUsage()
			if df.TakesValue() {
				usage, arg = argName(usage)
				if v := df.GetDefaultText(); v != "" {
					def = v
				} else if v := df.GetValue(); v != "" {
					def = v
				}
			}
		}
		p(".TP")
		if arg != "" {
			p(`.BI \-\-%s " %s"`, config.Roff(name), arg)
		} else {
			p(`.B \-\-%s`, config.Roff(name))
		}
		if def != "" {
			usage += " (default " + def + ")"
		}
		text(usage + ".")
	}
	p(".TP")
	p(`.B \-\-help`)
	text("Print a summary of the options and exit.")
	p(".SH SYSTEMD")
	text("horad is made to run under systemd as horad.service, started by the first client connection " +
		"to horad.socket (ListenStream=/run/hora/horad.sock). With socket activation it takes the listening " +
		"socket from systemd; clients that connect while it recovers wait and are answered once recovery is " +
		"done. It sends READY=1 only after recovery, a STATUS= line with the pending, running and suspended " +
		"jobs, the nodes down and the last scheduling pass every few seconds, and WATCHDOG=1 from its " +
		"scheduling loop (WatchdogSec=), so a wedged loop is restarted.")
	p(".PP")
	text("Under systemd every job step on the local executor runs in a transient service of its own, " +
		"hora-step-NODE-STEP.service (e.g. hora-step-local1-42.batch.r0.service), as its owner, outside horad's cgroup and sandbox: systemctl restart " +
		"horad does not touch running jobs.")
	p(".SH SIGNALS")
	p(".TP")
	p(".B SIGHUP")
	text("Re-read the --config file (systemctl reload horad) and apply nodes, partitions, limits and " +
		"operators without dropping a job. A file with errors, or one that removes a node a job runs on or a " +
		"partition a job is in, is refused as a whole and logged with file:line; horad keeps the configuration " +
		"it runs. state_dir, socket and executor change only at the next start.")
	p(".TP")
	p("%s", `.BR SIGTERM ", " SIGINT`)
	text("Stop serving and exit. Running jobs keep running; the next horad re-attaches them.")
	p(".SH ENVIRONMENT")
	p(".TP")
	p(".B NOTIFY_SOCKET")
	text("Set by systemd: readiness, status and watchdog notifications go there.")
	p(".TP")
	p("%s", `.BR LISTEN_FDS ", " LISTEN_PID`)
	text("Set by systemd's socket activation: horad serves the passed socket instead of creating one.")
	p(".TP")
	p(".B INVOCATION_ID")
	text("Set by systemd for a service: local job steps are then started with systemd-run in units of their own.")
	p(".SH FILES")
	for _, f := range [][2]string{
		{"/etc/hora/hora.toml", "Configuration, see hora.toml(5)."},
		{"/var/lib/hora/hora.db", "The SQLite state: every job, event, node state and reservation. Back it up with hora admin backup while horad runs."},
		{"/var/lib/hora/nodes/", "Step directories of the local executor."},
		{"/run/hora/horad.sock", "The clients' socket."},
		{"/usr/lib/systemd/system/horad.service, horad.socket", "The systemd units."},
	} {
		p(".TP")
		p(".I %s", config.Roff(f[0]))
		text(f[1])
	}
	p(".SH EXIT STATUS")
	text("0 after a clean stop or a valid --check-config; 1 when the configuration is invalid (every problem " +
		"is printed with file:line), the state cannot be opened or recovered, or the socket cannot be served.")
	p(".SH EXAMPLES")
	text("Run the embedded single-machine default in the current directory:")
	p(".PP")
	p(".EX")
	p("horad")
	p(".EE")
	p(".PP")
	text("Check a configuration, then apply it to the running daemon:")
	p(".PP")
	p(".EX")
	p(`horad \-\-check\-config \-\-config /etc/hora/hora.toml && systemctl reload horad`)
	p(".EE")
	p(".PP")
	text("Follow horad's log and status:")
	p(".PP")
	p(".EX")
	p("journalctl \\-u horad \\-f")
	p("systemctl status horad")
	p(".EE")
	p(".SH SEE ALSO")
	p(".BR hora.toml (5),")
	p(".BR sbatch (1),")
	p(".BR squeue (1),")
	p(".BR scontrol (1),")
	p(".BR systemd.service (5),")
	p(".BR systemd.socket (5)")
	return b.Bytes()
}

// argName splits urfave/cli's usage convention, where the argument's name
// is the back-quoted word: "read `FILE` (...)" → ("read FILE (...)", "FILE").
func argName(usage string) (string, string) {
	i := strings.Index(usage, "`")
	if i < 0 {
		return usage, "VALUE"
	}
	j := strings.Index(usage[i+1:], "`")
	if j < 0 {
		return usage, "VALUE"
	}
	name := usage[i+1 : i+1+j]
	return usage[:i] + name + usage[i+2+j:], name
}
