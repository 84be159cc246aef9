package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The end of a test's cluster: every job of it ends, then horad, and no
// process of the test may outlive it. Before this, a test that left jobs
// running (a long sleep it had no more use for) left their shepherds and
// scripts running after its directory was removed, loading the machine for
// the tests that followed.

// cleanup is what newClusterSeeded registers with t.Cleanup. A horad still
// serving cancels every active job and is waited on until none is left;
// then it is stopped, and any process of the test that remains — a job of
// a horad the test left down, of a node the test cut off, or one that
// outlived its cancellation — is killed, with its session, until none is
// left. Only a process that survives that fails the test: a leftover of a
// test's own making (a node it cut off) must not turn the suite red, but
// none may outlive the test.
func (c *cluster) cleanup() {
	up := c.daemon != nil && c.daemon.ProcessState == nil
	if up {
		c.daemon.Process.Signal(syscall.SIGCONT) // a test may have left it stopped
		c.endAllJobs()
	}
	c.stop()
	left := c.waitNoProcesses(map[bool]time.Duration{true: 30 * time.Second, false: 0}[up])
	if len(left) == 0 {
		return
	}
	why := "horad was down at the end of the test"
	if up {
		why = "every job cancelled and horad stopped"
	}
	c.killed = describe(left)
	c.t.Logf("processes of the test remain (%s); killing them:\n%s", why, strings.Join(c.killed, "\n"))
	// Killed until none is found: a shepherd killed while it forks its job
	// leaves the job behind, found by the next scan.
	deadline := time.Now().Add(30 * time.Second)
	for len(left) > 0 && time.Now().Before(deadline) {
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
		left = c.processes()
	}
	if len(left) > 0 {
		c.t.Errorf("processes of the test survive SIGKILL for 30 s:\n%s", strings.Join(describe(left), "\n"))
	}
}

// endAllJobs cancels every job horad has not finished and waits until
// squeue lists none. Clients here use a short message timeout: a horad that
// does not answer is dealt with by the process sweep that follows.
func (c *cluster) endAllJobs() {
	env := []string{"HORA_MESSAGE_TIMEOUT=15"}
	deadline := time.Now().Add(90 * time.Second)
	for {
		// -r: one line per array task ("7_3"), never a folded
		// "7_[0-9%2]" that scancel may refuse.
		r := c.runEnv(0, c.dir, env, "squeue", "-h", "-r", "-o", "%i")
		if r.code != 0 {
			c.t.Logf("cleanup: squeue: exit %d: %s", r.code, r.stderr)
			return
		}
		ids := strings.Fields(r.stdout)
		if len(ids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			// A node the test cut off cannot end its jobs: the process
			// sweep that follows deals with what runs here.
			c.t.Logf("cleanup: jobs %v still active 90 s after scancel", ids)
			return
		}
		// Held and suspended jobs are cancelled too; a job already
		// ending just answers that it is.
		c.runEnv(0, c.dir, env, "scancel", ids...)
		time.Sleep(100 * time.Millisecond)
	}
}

// waitNoProcesses waits up to bound for the test's processes to end and
// returns those left.
func (c *cluster) waitNoProcesses(bound time.Duration) []int {
	deadline := time.Now().Add(bound)
	for {
		left := c.processes()
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processes lists the processes of this cluster: those whose command line
// or working directory is in the cluster's directory (horad, shepherds,
// job scripts under the state directory, jobs run from the work directory),
// and every process in the session of one of them (a shepherd's setsid
// session holds its job and the job's children, wherever they run). The
// test's own session is never counted.
func (c *cluster) processes() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	own, _ := unix.Getsid(0)
	type proc struct{ pid, sid int }
	var all []proc
	marked := map[int]bool{}   // pids of the test
	sessions := map[int]bool{} // their sessions
	dir := c.dir + "/"
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		sid := statField(stat, 6)
		if sid < 0 {
			continue
		}
		if statState(stat) == 'Z' {
			continue // a zombie holds nothing but its pid until reaped
		}
		all = append(all, proc{pid, sid})
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if bytes.Contains(cmdline, []byte(dir)) || strings.HasPrefix(cwd+"/", dir) {
			marked[pid] = true
			if sid != own && sid > 1 {
				sessions[sid] = true
			}
		}
	}
	var out []int
	for _, p := range all {
		if marked[p.pid] || sessions[p.sid] {
			out = append(out, p.pid)
		}
	}
	sort.Ints(out)
	return out
}

// statField returns the n-th field (1-based, as in proc(5)) of a
// /proc/PID/stat line, for the numeric fields after the command name.
func statField(stat []byte, n int) int {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(stat[i+1:])) // field 3 onwards
	if n-3 >= len(f) || n < 4 {
		return -1
	}
	v, err := strconv.Atoi(f[n-3])
	if err != nil {
		return -1
	}
	return v
}

func statState(stat []byte) byte {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0
	}
	return stat[i+2]
}

func describe(pids []int) []string {
	var out []string
	for _, pid := range pids {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, fmt.Sprintf("  pid %d: %s", pid, strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")))
	}
	return out
}

// The harness's cleanup ends what a test leaves running: a job still
// running when the test returns (horad up) is cancelled, and the jobs of a
// horad the test killed are killed; no process of either cluster remains.
func TestCleanupEndsLeftJobs(t *testing.T) {
	requireRoot(t)
	var clusters []*cluster
	for _, horadUp := range []bool{true, false} {
		t.Run(fmt.Sprintf("horad_up=%v", horadUp), func(t *testing.T) {
			c := newClusterWith(t, "kill_wait_s = 2\n"+localBatch)
			clusters = append(clusters, c)
			work := c.workDir()
			id := c.submit(work, "-o", "/dev/null", "--wrap", "sleep 987654")
			c.waitState(id, "RUNNING")
			held := c.submit(work, "--hold", "-o", "/dev/null", "--wrap", "true")
			// The job's own process, found by the sweep (not only its
			// shepherd, which may not have forked it yet).
			for deadline := time.Now().Add(90 * time.Second); !strings.Contains(strings.Join(describe(c.processes()), "\n"), "sleep 987654"); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("job %s runs but its sleep is not found among the test's processes: %v", id, describe(c.processes()))
				}
			}
			if !horadUp {
				c.kill9()
			} else if c.state(held) != "PENDING" {
				t.Fatalf("held job %s: %q", held, c.state(held))
			}
		})
	}
	for i, c := range clusters {
		if left := c.processes(); len(left) > 0 {
			t.Errorf("cluster %d: processes left after its test ended:\n%s", i, strings.Join(describe(left), "\n"))
		}
	}
	// With horad up the cancellation alone ended the job; with horad down
	// only killing could.
	if len(clusters) == 2 && (len(clusters[0].killed) > 0 || len(clusters[1].killed) == 0) {
		t.Errorf("killed with horad up: %q (want none: scancel ends the job); with horad down: %q (want the job's processes)",
			clusters[0].killed, clusters[1].killed)
	}
}
