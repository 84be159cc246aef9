package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The advance-reservation interface through real horad and the real
// clients: create → show → a job with --reservation runs inside it → a job
// without it cannot take the reserved nodes in the window → update →
// SIGKILL and restart, the reservation is still there and still booked →
// delete; a user who is not an operator is refused.
func TestReservationUIEndToEnd(t *testing.T) {
	requireRootWaiting(t)
	c := newClusterWith(t, resConfig)
	work := c.workDir()
	const nobody = 65534
	expect := func(what string, r result, code int, stdout, stderr string) {
		t.Helper()
		if r.code != code || (stdout != "*" && r.stdout != stdout) || (stderr != "*" && r.stderr != stderr) {
			t.Errorf("%s: exit %d stdout %q stderr %q; want exit %d stdout %q stderr %q", what, r.code, r.stdout, r.stderr, code, stdout, stderr)
		}
	}

	// Create: two named nodes for two minutes from now+8 s, for root.
	t0 := time.Now().Unix()
	r := c.run(0, work, "scontrol", "create", "reservation", "ReservationName=win", "StartTime=now+8",
		"Duration=2", "Nodes=local[1-2]", "Users=root", "PartitionName=res", "Flags=MAINT")
	expect("create", r, 0, "Reservation created: win\n", "")
	// A user who is not an operator may not create one (reservation_access = operators).
	r = c.run(nobody, work, "scontrol", "create", "res", "StartTime=now+600", "Duration=1", "NodeCnt=1", "Users=nobody")
	expect("create as nobody", r, 1, "", "Error creating the reservation: Access/permission denied\n")
	// Overlapping the first on its nodes: refused with the earliest window.
	r = c.run(0, work, "scontrol", "create", "res", "StartTime=now+10", "Duration=1", "Nodes=local1", "Users=root")
	if r.code != 1 || !regexp.MustCompile(`^Error creating the reservation: Requested nodes are busy \(earliest feasible start \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\)\n$`).MatchString(r.stderr) {
		t.Errorf("overlapping create: %+v", r)
	}
	// Batch partitions plan no future: refused, naming why.
	r = c.run(0, work, "scontrol", "create", "res", "StartTime=now+10", "Duration=1", "NodeCnt=1", "Users=root", "PartitionName=batch")
	expect("create on batch", r, 1, "", `Error creating the reservation: Partition batch has policy "batch"; reservations and the range search need a partition with policy "reserve"`+"\n")

	// Show.
	r = c.run(0, work, "scontrol", "show", "reservation", "win")
	showRe := regexp.MustCompile(`^ReservationName=win StartTime=(\S+) EndTime=(\S+) Duration=00:02:00\n` +
		`   Nodes=local\[1-2\] NodeCnt=2 CoreCnt=\d+ Features=\(null\) PartitionName=res Flags=MAINT\n` +
		`   TRES=cpu=\d+\n   AllowedPartitions=\(null\) QOS=\(null\)\n` +
		`   Users=root Groups=\(null\) Accounts=\(null\) Licenses=\(null\) State=INACTIVE BurstBuffer=\(null\)\n` +
		`   MaxStartDelay=\(null\)\n\n$`)
	m := showRe.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("show reservation: %+v", r)
	}
	start, err := time.ParseInLocation("2006-01-02T15:04:05", m[1], time.UTC)
	if err != nil || start.Unix() < t0+8 || start.Unix() > time.Now().Unix()+8 {
		t.Errorf("reservation start %s, created at %d for now+8", m[1], t0)
	}

	// The range search sees the reserved nodes taken for the window.
	r = c.run(0, work, "hora", "free", "-p", "res", "-h", "--from", "now+10", "--to", "now+60")
	if r.code != 0 || !regexp.MustCompile(`^res +\S+ +\S+ +2/4 +local\[3-4\]\n$`).MatchString(r.stdout) {
		t.Errorf("hora free in the window: %+v", r)
	}

	// A job of the reservation (no -p: it runs in the reservation's
	// partition) runs on its nodes, not before its start.
	id := c.submit(work, "--reservation=win", "-N", "2", "-t", "1", "-o", "in-%j.out", "--wrap", "date +%s; echo $SLURM_JOB_NODELIST $SLURM_JOB_RESERVATION")
	if got := c.run(0, work, "squeue", "-h", "-R", "win", "-o", "%i %P %v %r").stdout; got != id+" res win Reservation\n" {
		t.Errorf("squeue -R win: %q", got)
	}
	// A job without it cannot take the reserved nodes in the window: three
	// nodes in [now+8, now+70] do not exist outside the reservation.
	r = c.run(0, work, "sbatch", "-p", "res", "-N", "3", "-t", "1", "--begin=now+8", "--deadline=now+70", "--wrap", "true")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "sbatch: error: Batch job submission failed: Job can not be booked by its deadline (earliest feasible start ") {
		t.Errorf("job outside the reservation took its nodes: %+v", r)
	}
	// Only its users may use it.
	r = c.run(nobody, work, "sbatch", "--reservation=win", "-t", "1", "--wrap", "true")
	expect("sbatch as nobody", r, 1, "", "sbatch: error: Batch job submission failed: Access denied to requested reservation\n")
	r = c.run(0, work, "sbatch", "--reservation=nope", "-t", "1", "--wrap", "true")
	expect("unknown reservation", r, 1, "", "sbatch: error: Batch job submission failed: Requested reservation is invalid\n")
	// A reservation with a job booked in it is in use.
	r = c.run(0, work, "scontrol", "delete", "ReservationName=win")
	expect("delete in use", r, 1, "", "delete_reservation ReservationName=win: Requested reservation is in use\n")

	c.waitState(id, "COMPLETED")
	out, _ := os.ReadFile(filepath.Join(work, "in-"+id+".out"))
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	ran, err := strconv.ParseInt(lines[0], 10, 64)
	if err != nil || ran < start.Unix() || len(lines) != 2 || lines[1] != "local[1-2] win" {
		t.Errorf("job in the reservation: output %q, reservation starts %d", out, start.Unix())
	}
	if got := c.run(0, work, "sacct", "-j", id, "-X", "-P", "-n", "-o", "Reservation,NodeList").stdout; got != "win|local[1-2]\n" {
		t.Errorf("sacct Reservation: %q", got)
	}

	// Update: users-only, then the length (no job is booked in it any more).
	r = c.run(0, work, "scontrol", "update", "ReservationName=win", "Users+=nobody")
	expect("update users", r, 0, "Reservation updated.\n", "")
	r = c.run(0, work, "scontrol", "update", "ReservationName=win", "Duration=5")
	expect("update duration", r, 0, "Reservation updated.\n", "")
	r = c.run(nobody, work, "scontrol", "update", "ReservationName=win", "Duration=6")
	expect("update as nobody", r, 1, "", "Error updating the reservation: Access/permission denied\n")
	r = c.run(0, work, "scontrol", "update", "ReservationName=win", "Bogus=1")
	expect("update bad key", r, 1, "", "scontrol: error: Unknown parameter Bogus=1.  No reservation update.\n")
	before := c.run(0, work, "scontrol", "show", "-o", "reservation", "win").stdout
	if !strings.Contains(before, " Duration=00:05:00 ") || !strings.Contains(before, " Users=root,nobody ") {
		t.Errorf("after update: %q", before)
	}

	// A job booked late in the window (asked for by #SBATCH) survives the
	// restart inside it.
	script := writeScript(t, work, "late.sh", "#!/bin/sh\n#SBATCH --reservation=win\n#SBATCH -t 1\ntrue\n")
	late := c.submit(work, "--begin=now+200", script)

	// SIGKILL and restart: the reservation is still there and still booked.
	c.kill9()
	c.start()
	if got := c.run(0, work, "squeue", "-h", "-j", late, "-o", "%T %r %v %P").stdout; got != "PENDING Reservation win res\n" {
		t.Errorf("job of the reservation after restart: %q", got)
	}
	r = c.run(0, work, "scontrol", "delete", "ReservationName=win")
	expect("delete in use after restart", r, 1, "", "delete_reservation ReservationName=win: Requested reservation is in use\n")
	if r := c.run(0, work, "scancel", late); r.code != 0 {
		t.Fatalf("scancel: %+v", r)
	}
	after := c.run(0, work, "scontrol", "show", "-o", "reservation", "win").stdout
	if strings.ReplaceAll(after, "State=INACTIVE", "State=ACTIVE") != strings.ReplaceAll(before, "State=INACTIVE", "State=ACTIVE") {
		t.Errorf("after restart:\n%q\nbefore:\n%q", after, before)
	}
	r = c.run(0, work, "hora", "free", "-p", "res", "-h", "-N", "3", "--to", "now+60")
	if r.code != 1 || !regexp.MustCompile(`^res +\S+ +\S+ +2/4 +local\[3-4\]\n$`).MatchString(r.stdout) ||
		r.stderr != "free: 3 nodes asked for, 2 free\n" {
		t.Errorf("hora free after restart: %+v", r)
	}
	// nobody was added to the users: they may now use it.
	r = c.run(nobody, work, "sbatch", "--reservation=win", "-t", "1", "--test-only", "--wrap", "true")
	if r.code != 0 || !strings.Contains(r.stderr, "in partition res") {
		t.Errorf("test-only as an added user: %+v", r)
	}

	// Delete.
	r = c.run(nobody, work, "scontrol", "delete", "ReservationName=win")
	expect("delete as nobody", r, 1, "", "delete_reservation ReservationName=win: Access/permission denied\n")
	r = c.run(0, work, "scontrol", "delete", "ReservationName=win")
	expect("delete", r, 0, "", "")
	r = c.run(0, work, "scontrol", "show", "reservation", "win")
	expect("show deleted", r, 1, "Reservation win not found\n", "")
	r = c.run(0, work, "scontrol", "delete", "ReservationName=win")
	expect("delete again", r, 1, "", "delete_reservation ReservationName=win: Requested reservation is invalid\n")
	r = c.run(0, work, "scontrol", "show", "reservations")
	expect("show none", r, 0, "No reservations in the system\n", "")
	r = c.run(0, work, "hora", "free", "-p", "res", "-h", "--to", "now+60")
	if r.code != 0 || !regexp.MustCompile(`^res +\S+ +\S+ +4/4 +local\[1-4\]\n$`).MatchString(r.stdout) {
		t.Errorf("hora free after delete: %+v", r)
	}

	// An expired reservation is purged by horad itself.
	r = c.run(0, work, "scontrol", "create", "res", "StartTime=now", "EndTime=now+2", "NodeCnt=1", "Users=root")
	expect("short reservation", r, 0, "Reservation created: root_1\n", "")
	deadline := time.Now().Add(15 * time.Second)
	for {
		r = c.run(0, work, "scontrol", "show", "res", "root_1")
		if r.code == 1 && r.stdout == "Reservation root_1 not found\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("expired reservation still shown: %+v", r)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
