package main

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hora/nodes/ssh/sshtest"
)

// horad with executor = "ssh" on three real OpenSSH hosts (network
// namespaces made by the test): a job of nobody runs on the hosts as
// nobody; a host lost in the middle of a job makes the job NODE_FAIL and the
// node "down" in sinfo, and the node returns to service when it answers again.
func TestSSHNodesEndToEnd(t *testing.T) {
	requireRootWaiting(t)
	cl := sshtest.StartCluster(t, 3)
	c := newClusterWith(t, sshConfig(cl, "", ""))

	dir := c.nobodyDir()
	r := c.run(65534, dir, "sbatch", "-N", "2", "--wrap", `echo "$(id -u) $SLURMD_NODENAME $SLURM_JOB_NODELIST"`)
	m := submitted.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("sbatch as nobody: %+v", r)
	}
	c.waitState(m[1], "COMPLETED")
	if out, _ := os.ReadFile(filepath.Join(dir, "slurm-"+m[1]+".out")); string(out) != "65534 n1 n[1-2]\n" {
		t.Errorf("job on ssh nodes wrote %q", out)
	}

	// Lose n1 (sshd killed, link down) while a 3-node job runs its script there.
	started := filepath.Join(c.dir, "started")
	id := c.submit(c.dir, "-N", "3", "--no-requeue", "-o", "/dev/null", "--wrap", "touch "+started+"; sleep 300")
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s never started", id)
		}
	}
	cl.Hosts[0].StopSSHD()
	cl.Hosts[0].LinkDown()
	c.waitState(id, "NODE_FAIL")
	nodeState := func() string {
		return c.run(0, c.dir, "sinfo", "-N", "-h", "-o", "%N %t").stdout
	}
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(nodeState(), "n1 down") {
		if time.Now().After(deadline) {
			t.Fatalf("sinfo after losing n1:\n%s", nodeState())
		}
		time.Sleep(100 * time.Millisecond)
	}
	cl.Hosts[0].LinkUp()
	cl.Hosts[0].StartSSHD()
	for strings.Contains(nodeState(), "n1 down") {
		if time.Now().After(deadline.Add(90 * time.Second)) {
			t.Fatalf("n1 did not return:\n%s", nodeState())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Node loss on the three-host cluster with return_to_service = 0: of two
// jobs whose nodes are lost mid-run, the requeue-able one goes back to the
// queue and completes on the remaining host (Restarts=1), the --no-requeue
// one ends NODE_FAIL; the lost hosts stay down after sshd comes back until
// an operator resumes them.
func TestSSHRequeueAndReturnToService(t *testing.T) {
	requireRootWaiting(t)
	cl := sshtest.StartCluster(t, 3)
	c := newClusterWith(t, sshConfig(cl, "return_to_service = 0\n", ""))
	work := c.workDir()
	out := filepath.Join(work, "requeued.out")
	waitFile := func(p string) {
		t.Helper()
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(p); err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never appeared", p)
			}
		}
	}
	// The first run waits; the run after a requeue finishes at once.
	rq := c.submit(work, "-o", out, "--open-mode=append", "--wrap",
		`echo "run $SLURM_RESTART_COUNT on $SLURMD_NODENAME"; echo $$ > `+work+`/rq-pid-$SLURM_RESTART_COUNT; touch `+work+`/rq-$SLURM_RESTART_COUNT; `+
			`[ "$SLURM_RESTART_COUNT" -ge 1 ] || sleep 300`)
	waitFile(filepath.Join(work, "rq-0"))
	nf := c.submit(work, "--no-requeue", "-o", "/dev/null", "--wrap", "echo $$ > "+work+"/nf-pid; touch "+work+"/nf; sleep 300")
	waitFile(filepath.Join(work, "nf"))
	show := func(kind, id string) string { return c.run(0, c.dir, "scontrol", "show", kind, id).stdout }
	if s := show("job", nf); !strings.Contains(s, "Requeue=0 Restarts=0") {
		t.Fatalf("--no-requeue job:\n%s", s)
	}
	if s := show("job", rq); !strings.Contains(s, "Requeue=1 Restarts=0") || !strings.Contains(s, "NodeList=n1\n") {
		t.Fatalf("requeue-able job:\n%s", s)
	}

	for _, h := range cl.Hosts[:2] {
		h.StopSSHD()
		h.LinkDown()
	}
	c.waitState(nf, "NODE_FAIL")
	c.waitState(rq, "COMPLETED")
	if s := show("job", rq); !strings.Contains(s, "Requeue=1 Restarts=1") || !strings.Contains(s, "NodeList=n3\n") {
		t.Fatalf("requeued job after its rerun:\n%s", s)
	}
	if b, _ := os.ReadFile(out); string(b) != "run 0 on n1\nrun 1 on n3\n" {
		t.Fatalf("requeued job output %q", b)
	}

	nodeLine := func(n string) string {
		return strings.TrimSpace(c.run(0, c.dir, "sinfo", "-h", "-N", "-n", n, "-o", "%N %t").stdout)
	}
	waitFor(t, "n1 down*", func() bool { return nodeLine("n1") == "n1 down*" })
	for _, h := range cl.Hosts[:2] {
		h.LinkUp()
		h.StartSSHD()
	}
	// It answers again (no "*"), and return_to_service = 0 keeps it down.
	waitFor(t, "n1 answering", func() bool { return nodeLine("n1") == "n1 down" })
	// The runs given up while the hosts were cut off (a partition: their
	// processes kept running) are stopped once the hosts answer.
	for _, f := range []string{"rq-pid-0", "nf-pid"} {
		b, err := os.ReadFile(filepath.Join(work, f))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			t.Fatalf("%s: %q %v", f, b, err)
		}
		waitFor(t, "the old run's process "+f+" to end", func() bool { return syscall.Kill(pid, 0) == syscall.ESRCH })
	}
	time.Sleep(2 * time.Second) // two more probe rounds change nothing
	if l := nodeLine("n1"); l != "n1 down" {
		t.Fatalf("with return_to_service = 0 after sshd returned: %q", l)
	}
	if s := show("node", "n1"); !strings.Contains(s, "State=DOWN ") || !strings.Contains(s, "Reason=") {
		t.Fatalf("scontrol show node n1:\n%s", s)
	}
	if r := c.run(0, c.dir, "scontrol", "update", "NodeName=n1", "State=RESUME"); r.code != 0 {
		t.Fatalf("resume n1: %+v", r)
	}
	if l := nodeLine("n1"); l != "n1 idle" {
		t.Fatalf("after resume: %q", l)
	}
	if l := nodeLine("n2"); l != "n2 down" {
		t.Fatalf("n2, not resumed: %q", l)
	}
}

// Divisible jobs on three real sshd hosts: a staged --input job of nobody
// (data streamed over SSH into each chunk's node) tiles its file; then a
// host is lost while a job holds all three nodes: the waiting job that can
// no longer be guaranteed, and the running one, show reason NodeDown in
// squeue and scontrol; when the host returns the waiting one is
// guaranteed again.
func TestSSHRealTimeStagingAndNodeLoss(t *testing.T) {
	requireRootWaiting(t)
	cl := sshtest.StartCluster(t, 3)
	c := newClusterWith(t, sshConfig(cl, "", "[[partition]]\nname = \"rt\"\nnodes = \"n[1-3]\"\npolicy = \"dlt\"\n[partition.params]\ncms = \"0.00001\"\ncps = \"0.01\"\nunit_bytes = \"100\"\n"))
	work := c.workDir()

	// 3,000 units take 30 s on one node: a 20 s deadline needs two chunks.
	data := make([]byte, 300_000)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(work, "in.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := c.run(65534, work, "sbatch", "-p", "rt", "--deadline=now+20", "--load=3k", "--input=in.bin", "-o", "s-%j.out",
		"--wrap", `echo "$HORA_CHUNK_FILE_OFFSET $HORA_CHUNK_FILE_SIZE $(sha256sum < "$HORA_CHUNK_FILE" | cut -d' ' -f1) $(stat -c %u "$HORA_CHUNK_FILE") $SLURMD_NODENAME"`)
	m := submitted.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("sbatch as nobody: %+v", r)
	}
	c.waitState(m[1], "COMPLETED")
	out, _ := os.ReadFile(filepath.Join(work, "s-"+m[1]+".out"))
	covered, lines := 0, strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, l := range lines {
		var off, size int
		var sum, uid, node string
		if _, err := fmt.Sscan(l, &off, &size, &sum, &uid, &node); err != nil || off+size > len(data) {
			t.Fatalf("chunk line %q: %v", l, err)
		}
		if want := fmt.Sprintf("%x", sha256.Sum256(data[off:off+size])); sum != want || uid != "65534" {
			t.Errorf("chunk on %s [%d,+%d): sum %s uid %s, want %s 65534", node, off, size, sum, uid, want)
		}
		covered += size
	}
	if covered != len(data) || len(lines) < 2 {
		t.Errorf("%d chunks cover %d of %d bytes", len(lines), covered, len(data))
	}

	// Job X: 10,000 units by now+40 need all three nodes (two give 7,800 at
	// most); its chunks sleep past their planned ends. Job Y: 6,000 units
	// by now+65 fit on three nodes after X (≈ 34 + 20 s), not on two after
	// X's chunks (≈ 40 + 30 s), so it waits, guaranteed, until n1 is lost
	// (the prober needs about 10 s to say so).
	x := c.submit(work, "-p", "rt", "--deadline=now+40", "--load=10000", "-o", "/dev/null", "--wrap", "sleep 300")
	y := c.submit(work, "-p", "rt", "--deadline=now+65", "--load=6000", "-o", "/dev/null", "--wrap", "true")
	reason := func(id string) string {
		return strings.TrimSpace(c.run(0, work, "squeue", "-h", "-j", id, "-o", "%r").stdout)
	}
	if got := reason(y); got != "Resources" {
		t.Fatalf("job Y reason %q before the loss, want Resources", got)
	}
	eventuallyE2E(t, "job X's three chunks running", func() bool {
		pids, _ := filepath.Glob(filepath.Join(cl.Dir, "node-state", "n*", x+".*", "user", "pid"))
		return len(pids) == 3
	})
	cl.Hosts[0].StopSSHD()
	cl.Hosts[0].LinkDown()
	eventuallyE2E(t, "job Y shows NodeDown after n1 is lost", func() bool { return reason(y) == "NodeDown" })
	if r := c.run(0, work, "scontrol", "show", "job", y); !strings.Contains(r.stdout, "JobState=PENDING Reason=NodeDown") {
		t.Errorf("scontrol show job Y:\n%s", r.stdout)
	}
	// X lost a chunk with n1 (the executor reports the node down before its
	// steps lost): its range cannot be sent again by X's deadline, so X
	// runs on best-effort and shows NodeDown too.
	if got := reason(x); got != "NodeDown" {
		t.Errorf("running job X reason %q after losing a chunk, want NodeDown", got)
	}
	cl.Hosts[0].LinkUp()
	cl.Hosts[0].StartSSHD()
	eventuallyE2E(t, "job Y guaranteed again once n1 is back", func() bool { return reason(y) != "NodeDown" })
	c.run(0, work, "scancel", x, y)
}

// sshConfig is horad's configuration for the three-host test cluster:
// executor ssh, nodes n1–n3 at their namespace addresses, the default batch
// partition over all of them, then more partitions, and fast health probes
// (a node is down after two missed probes a second apart). top holds extra
// top-level keys, each ending in a newline.
func sshConfig(cl *sshtest.Cluster, top, partitions string) string {
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "executor = \"ssh\"\n%s", top)
	for _, h := range cl.Hosts {
		fmt.Fprintf(&cfg, "[[node]]\nname = %q\naddress = %q\n", h.Name, h.Addr)
	}
	fmt.Fprintf(&cfg, "[[partition]]\nname = \"batch\"\nnodes = \"n[1-3]\"\ndefault = true\n%s", partitions)
	fmt.Fprintf(&cfg, "[ssh]\nknown_hosts = %q\nidentity_file = %q\nstate_dir = %q\nprobe_interval_s = 1\nprobe_misses = 2\n",
		cl.KnownHosts, cl.IdentityFile, filepath.Join(cl.Dir, "node-state"))
	return cfg.String()
}
