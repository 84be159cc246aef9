package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"hora/nodes/ssh/sshtest"
	"hora/store/storetest"
)

// The fault harness's faults of the environment (issue 16 item 1): a full
// disk, SSH nodes cut off, and clock jumps. Each draws from the nemesis's
// seeded generator, so a seed replays the same faults in the same order.

// diskSize is the tmpfs under horad's state directory in the local
// topology: small enough to fill in a moment, with room for the store a
// run of this length writes. The store keeps every job (sacct reads
// them), and the harness's jobs carry the test's environment: about 9 KB
// a job, 1.5 MB a minute at the harness's pace. A fixed 48 MiB filled up
// with the store itself after 27 minutes of the first two-hour run, and
// the cluster then sat on a full disk that emptying the filler could not
// free (docs/robustness.md).
func diskSize(duration time.Duration) string {
	return strconv.Itoa(48+4*int(duration.Minutes())) + "m"
}

// diskSetup mounts a tmpfs on horad's state directory before horad first
// starts (newClusterSeeded's hook). The store, its WAL and the local
// nodes' step directories all live there, as on a machine whose /var
// fills up.
func (h *harness) diskSetup(varDir string) {
	// Registered before the cluster's own cleanups, so the unmount runs
	// after them (horad stopped, its processes gone).
	storetest.MountTmpfs(h.t, varDir, diskSize(h.duration))
	h.diskDir = varDir
	h.diskFull = map[string]int{}
}

func (h *harness) fill() {
	if err := storetest.Fill(h.diskDir); err != nil {
		h.t.Errorf("filling the disk: %v", err)
	}
}

// empty frees the disk. A disk still full without the filler is the
// store's own size, which no fault undoes: the run would go on with every
// write refused, so it stops, saying so.
func (h *harness) empty() {
	if err := storetest.Empty(h.diskDir); err != nil {
		h.t.Errorf("emptying the disk: %v", err)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(h.diskDir, &fs); err == nil && fs.Bavail*uint64(fs.Bsize) < 1<<20 {
		out, _ := exec.Command("du", "-sh", h.diskDir+"/").CombinedOutput()
		h.t.Fatalf("the disk is still full once the filler is gone: horad's state is %s on a tmpfs of %s (diskSize too small for this run)",
			strings.TrimSpace(string(out)), diskSize(h.duration))
	}
}

// nodeDiskSize is the tmpfs under each SSH node's state directory: its
// step directories are a few kilobytes each.
const nodeDiskSize = "16m"

// nodeDiskSetup mounts a tmpfs on each SSH node's state directory, in the
// node's own mount namespace (where its sshd, and so every command horad
// runs there, see files), before horad first starts. The namespace goes
// with the node's sshd at the end of the test, and the mount with it.
func (h *harness) nodeDiskSetup() {
	h.nodeFull = map[string]bool{}
	for _, host := range h.ssh.Hosts {
		dir := h.nodeDiskDir(host.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			h.t.Fatal(err)
		}
		if out, err := host.InMountNS("mount", "-t", "tmpfs", "-o", "size="+nodeDiskSize+",mode=0755", "hora-node-disk", dir); err != nil {
			h.t.Fatalf("mounting a tmpfs on %s's state directory %s: %v: %s", host.Name, dir, err, out)
		}
	}
}

func (h *harness) nodeDiskDir(node string) string {
	return filepath.Join(h.ssh.Dir, "node-state", node)
}

// nodeDisk fills (full) or empties an SSH node's disk, inside the node.
// A full disk keeps slack pages free: a launch then fails at any of its
// files, not always at the first (the windows between starting the wrapper
// or the job and recording it).
func (h *harness) nodeDisk(host *sshtest.Host, full bool, slack int) {
	f := filepath.Join(h.nodeDiskDir(host.Name), storetest.Filler)
	script := `rm -f -- "$1"`
	if full {
		// dd stops at ENOSPC, having taken what it could; a second pass of
		// small blocks takes the last pages; then slack pages are freed.
		script = `dd if=/dev/zero of="$1" bs=1M 2>/dev/null; dd if=/dev/zero of="$1" bs=512 oflag=append conv=notrunc 2>/dev/null
s=$(stat -c %s "$1") && truncate -s $((s > $2*4096 ? s - $2*4096 : 0)) "$1"`
	}
	if out, err := host.InMountNS("sh", "-c", script, "hora-fill", f, strconv.Itoa(slack)); err != nil {
		h.t.Errorf("%s the disk of %s: %v: %s", map[bool]string{true: "filling", false: "emptying"}[full], host.Name, err, out)
	}
	h.mu.Lock()
	h.nodeFull[host.Name] = full
	h.mu.Unlock()
}

// envFault injects the topology's own fault: on local nodes the disk fills
// (or, if full, empties); on SSH nodes one host's link goes down for 1-6 s
// (packets dropped, nothing refused, its processes live on: a partition),
// or, one time in four, its disk fills (or, if full, empties): launches
// there fail, and steps that end cannot record how.
func (h *harness) envFault(r *rand.Rand) {
	switch h.topo {
	case "local":
		h.mu.Lock()
		full := h.full
		h.mu.Unlock()
		if full {
			h.fault("disk emptied")
			h.empty()
		} else {
			h.fault("disk filled")
			h.fill()
		}
		h.mu.Lock()
		h.full = !full
		h.mu.Unlock()
	case "ssh":
		host := h.ssh.Hosts[r.IntN(len(h.ssh.Hosts))]
		if r.IntN(4) == 0 {
			h.mu.Lock()
			full := h.nodeFull[host.Name]
			h.mu.Unlock()
			h.fault(map[bool]string{false: "node disk filled", true: "node disk emptied"}[full])
			h.nodeDisk(host, !full, r.IntN(6))
			return
		}
		h.fault("SSH link cut")
		host.LinkDown()
		time.Sleep(time.Duration(1000+r.IntN(5000)) * time.Millisecond)
		host.LinkUp()
	}
}

// envRestore undoes lasting faults when the nemesis stops.
func (h *harness) envRestore() {
	if h.ssh != nil {
		for _, host := range h.ssh.Hosts {
			h.nodeDisk(host, false, 0)
		}
	}
	if h.diskDir != "" {
		h.empty()
		h.mu.Lock()
		h.full = false
		h.mu.Unlock()
	}
}

// restart starts horad again after a SIGKILL, in a new time namespace
// whose CLOCK_MONOTONIC and CLOCK_BOOTTIME are jumped forward by up to 30
// days or back by up to what this machine's uptime allows (the kernel
// keeps them non-negative), as after a reboot or a migration. The kernel
// fixes a time namespace's offsets before its first process, so a jump
// happens across a restart, not under a running horad. CLOCK_REALTIME has
// no namespace: jumping it would move every process's clock on the
// machine (docs/robustness.md, "Clock jumps").
func (h *harness) restart(r *rand.Rand) {
	up := uptime()
	var off int64
	switch r.IntN(3) {
	case 0: // the same clocks
	case 1:
		off = 1 + r.Int64N(30*86400)
		h.fault("monotonic clock forward")
	default:
		if up > 600 {
			off = -(1 + int64(r.Float64()*float64(up-300)))
			h.fault("monotonic clock back")
		}
	}
	h.c.wrap = nil
	if off != 0 {
		o := strconv.FormatInt(off, 10)
		h.c.wrap = []string{"unshare", "--time", "--monotonic", o, "--boottime", o}
	}
	h.start()
}

// start starts horad. Recovery writes to the store, so on a full disk
// horad refuses to start, saying why, and exits (systemd's Restart= tries
// again): the harness then checks the message, frees the space as an
// operator would, and starts it again.
func (h *harness) start() {
	if h.tryStart() {
		return
	}
	h.mu.Lock()
	full := h.full
	h.mu.Unlock()
	log := h.c.log.String()
	if !full {
		h.t.Fatalf("horad exited during its start (%v):\n%s", h.c.daemon.ProcessState, log)
	}
	h.fault("horad refused to start on a full disk")
	if !strings.Contains(log, "disk is full") && !strings.Contains(log, "no space left") {
		h.t.Errorf("horad exited on a full disk without saying so:\n%s", log)
	}
	h.empty()
	h.mu.Lock()
	h.full = false
	h.mu.Unlock()
	if !h.tryStart() {
		h.t.Fatalf("horad exited during its start once space returned (%v):\n%s", h.c.daemon.ProcessState, h.c.log.String())
	}
}

// tryStart is cluster.start that reports horad's exit during its start
// instead of failing the test.
func (h *harness) tryStart() bool {
	c := h.c
	c.log = &lockedBuffer{}
	args := []string{"--state-dir", c.varDir, "--socket", c.sock, "--log-level", "debug"}
	if c.config != "" {
		args = append(args, "--config", c.config)
	}
	argv := append(append(append([]string(nil), c.wrap...), filepath.Join(c.bin, "horad")), args...)
	c.daemon = exec.Command(argv[0], argv[1:]...)
	c.daemon.Stderr = c.log
	if h.allLog != nil {
		// Every horad's log, for what a stuck job went through.
		c.daemon.Stderr = io.MultiWriter(c.log, h.allLog)
	}
	c.daemon.Dir = c.dir
	if err := c.daemon.Start(); err != nil {
		h.t.Fatal(err)
	}
	// A recovery starved of CPU (the soak beside a CPU hog: 8,000 jobs took
	// longer than 90 s at a twentieth of the machine) is slow, not hung: past
	// 90 s horad is waited for as long as it keeps using CPU, and a hang is
	// 30 s without any (or 15 minutes in all).
	started := time.Now()
	lastCPU, progress := treeCPU(c.daemon.Process.Pid), started
	for time.Since(started) < 90*time.Second || (time.Since(progress) < 30*time.Second && time.Since(started) < 15*time.Minute) {
		if conn, err := net.Dial("unix", c.sock); err == nil {
			conn.Close()
			if d := time.Since(started); d > 90*time.Second {
				h.t.Logf("fault harness (%s): horad came up after %v, using CPU throughout", h.topo, d.Round(time.Second))
			}
			return true
		}
		if exited(c.daemon.Process.Pid) {
			c.daemon.Wait()
			return false
		}
		if cpu := treeCPU(c.daemon.Process.Pid); cpu != lastCPU {
			lastCPU, progress = cpu, time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.t.Fatalf("horad did not come up in %v (the last %v without CPU):\n%s", time.Since(started).Round(time.Second),
		time.Since(progress).Round(time.Second), c.log)
	return false
}

// treeCPU is the CPU time (clock ticks) of pid and its descendants: horad
// may run under a wrapper that forks (unshare --time).
func treeCPU(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := bytes.LastIndexByte(b, ')')
	if err != nil || i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	var sum int64
	if len(f) > 12 {
		// after the name: state is field 3, utime 14 and stime 15 (proc(5))
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		sum = u + st
	}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		for _, k := range strings.Fields(string(kids)) {
			if n, err := strconv.Atoi(k); err == nil {
				sum += treeCPU(n)
			}
		}
	}
	return sum
}

// exited reports whether pid is a zombie: exited, not yet waited for.
func exited(pid int) bool {
	s := sshtest.ProcState(pid)
	return s == 0 || s == 'Z'
}

// uptime is this machine's CLOCK_BOOTTIME in whole seconds.
func uptime() int64 {
	b, _ := os.ReadFile("/proc/uptime")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	s, _ := strconv.ParseFloat(f[0], 64)
	return int64(s)
}

// submitAnswer sorts what sbatch answered while the disk was full: an
// acknowledgement (the job must then be in the store), a refusal that says
// why, or no answer (horad killed or stopped at the same time). A refusal
// must say something; exit 0 must come with a job id.
func (h *harness) submitAnswer(code int, out, stderr string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.full {
		return
	}
	kind := "acknowledged"
	switch {
	case code == 0 && faultSubmitted.MatchString(out):
	case code == 0:
		h.t.Errorf("sbatch while the disk was full: exit 0 without a job id: %q %q", out, stderr)
		kind = "exit 0 without a job id"
	case strings.Contains(stderr, "cannot reach horad") || strings.Contains(stderr, "Socket timed out") || strings.Contains(stderr, "horad at "):
		kind = "no answer"
	case strings.Contains(stderr, "disk is full") || strings.Contains(stderr, "No space left"):
		kind = "refused: disk full"
		if len(h.refusedAt) < 3 {
			h.refusedAt = append(h.refusedAt, strings.TrimSpace(stderr))
		}
	case strings.TrimSpace(stderr) == "":
		h.t.Errorf("sbatch while the disk was full: exit %d and no message", code)
		kind = "refused without a message"
	default:
		kind = "refused: " + firstLine(stderr)
	}
	h.diskFull[kind]++
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return fmt.Sprintf("%.100s", l)
}

// jobLog is what every horad of the run logged about the given jobs.
func (h *harness) jobLog(ids []string) string {
	if h.allLog == nil {
		return ""
	}
	b, _ := os.ReadFile(h.allLog.Name())
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, id := range ids {
			if strings.Contains(line, " job="+id+" ") || strings.HasSuffix(line, " job="+id) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
