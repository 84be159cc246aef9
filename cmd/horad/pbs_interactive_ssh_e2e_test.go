package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"hora/nodes/ssh/sshtest"
)

// TestQsubInteractiveOnSSHNodeEndToEnd runs qsub -I, as an ordinary user on
// a real terminal, against a horad whose nodes are real sshd hosts (each in
// its own network namespace). The shell runs on a pty of the job's node:
// what is typed there runs on that node (its address), as the job's owner,
// on a terminal of the node; the terminal's size is the caller's and
// follows it when it changes; the shell's exit status becomes the job's,
// and qsub prints OpenPBS's lines and exits 0. The owner's home is
// /nonexistent (nobody's): the allocation holds all the same, and the
// shell starts in /tmp.
func TestQsubInteractiveOnSSHNodeEndToEnd(t *testing.T) {
	cl, c, home := sshClusterForNobody(t, "[pbs]\nflavour = \"openpbs\"\nserver = \"headnode\"\n")

	term := startOnTerminal(t, c, 65534, home, []string{"SHELL=/bin/sh", "TERM=dumb", "HOME=" + home, "USER=nobody", "LOGNAME=nobody"},
		"qsub", "-I", "-N", "remote")
	seq := term.find(regexp.MustCompile(`qsub: job (\d+)\.headnode ready\r?\n`), "")[1]
	m := term.find(regexp.MustCompile(`U=(\d+) T=(\S+) S=(\d+ \d+) A=(.*?) E=(\S*)\r?\n`),
		"echo \"U=$(id -u) T=$(tty) S=$(stty size) A=$(ip -4 -o addr show scope global | tr -s ' ' | cut -d' ' -f4 | tr '\\n' ,) E=$PBS_ENVIRONMENT\"\n")
	if m[1] != "65534" || !strings.HasPrefix(m[2], "/dev/pts/") || m[3] != "30 101" || m[5] != "PBS_INTERACTIVE" {
		t.Errorf("the shell answered uid %s, tty %s, size %q, PBS_ENVIRONMENT %q; want 65534, /dev/pts/N, \"30 101\", PBS_INTERACTIVE:\n%s",
			m[1], m[2], m[3], m[5], term.out.String())
	}
	checkOnNode(t, cl, m[4])
	// The caller's window grows: the kernel signals qsub (SIGWINCH), which
	// passes the size on to the node's pty.
	term.resize(42, 133)
	term.find(regexp.MustCompile(`R=42 133\r?\n`), "echo \"R=$(stty size)\"\n")
	term.type_("exit 7\n")
	term.qsubCompleted(seq + ".headnode")
	c.waitState(seq, "COMPLETED", "FAILED")
	if r := c.run(65534, home, "qstat", "-x", "-f", seq); !strings.Contains(r.stdout, "    Exit_status = 7\n") ||
		!strings.Contains(r.stdout, "    Job_Owner = nobody@") {
		t.Errorf("the shell's status is not the job's (%s):\n%s", c.state(seq), r.stdout)
	}
}

// sshClusterForNobody starts three sshd nodes and a horad on them (top
// added to its configuration), and gives a directory of nobody's.
func sshClusterForNobody(t *testing.T, top string) (*sshtest.Cluster, *cluster, string) {
	t.Helper()
	requireRoot(t)
	cl := sshtest.StartCluster(t, 3)
	c := newClusterWith(t, sshConfig(cl, top, ""))
	dir := filepath.Join(c.dir, "nobody")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return cl, c, dir
}

// checkOnNode fails unless addrs (a shell's global IPv4 addresses, "a/24,"
// each) is exactly one SSH node's address: the shell ran in that node's
// network namespace, not on the submit host.
func checkOnNode(t *testing.T, cl *sshtest.Cluster, addrs string) {
	t.Helper()
	for _, h := range cl.Hosts {
		if addrs == h.Addr+"/24," {
			return
		}
	}
	t.Errorf("the shell's network is %q, no SSH node's: it did not run on a node", addrs)
}

// TestSrunPtyOnSSHNodeEndToEnd: srun --pty (outside an allocation, as a
// user at a login node) runs its task on a pty of the SSH node it was
// given, as the user, and returns the task's exit status.
func TestSrunPtyOnSSHNodeEndToEnd(t *testing.T) {
	cl, c, dir := sshClusterForNobody(t, "")
	term := startOnTerminal(t, c, 65534, dir, []string{"TERM=dumb"}, "srun", "--pty", "-N1", "/bin/sh", "-i")
	m := term.find(regexp.MustCompile(`U=(\d+) T=(\S+) S=(\d+ \d+) A=(.*?) J=(\d+)\.(\d+)\r?\n`),
		"echo \"U=$(id -u) T=$(tty) S=$(stty size) A=$(ip -4 -o addr show scope global | tr -s ' ' | cut -d' ' -f4 | tr '\\n' ,) J=$SLURM_JOB_ID.$SLURM_STEP_ID\"\n")
	if m[1] != "65534" || !strings.HasPrefix(m[2], "/dev/pts/") || m[3] != "30 101" {
		t.Errorf("the task answered uid %s, tty %s, size %q; want 65534, /dev/pts/N, \"30 101\":\n%s", m[1], m[2], m[3], term.out.String())
	}
	checkOnNode(t, cl, m[4])
	term.type_("exit 3\n")
	if code := term.exit(); code != 3 {
		t.Errorf("srun --pty exit %d, want the task's 3:\n%s", code, term.out.String())
	}
	c.waitState(m[5], "COMPLETED", "FAILED")
	if r := c.run(65534, dir, "sacct", "-j", m[5], "-n", "-P", "-o", "JobID,State,ExitCode"); !strings.Contains(r.stdout, m[5]+"."+m[6]+"|FAILED|3:0") {
		t.Errorf("sacct:\n%s", r.stdout)
	}
}
