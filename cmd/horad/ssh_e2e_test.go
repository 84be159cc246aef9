package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hora/nodes/ssh/sshtest"
)

// horad with executor = "ssh" on three real OpenSSH hosts (network
// namespaces made by the test): a job of nobody runs on the hosts as
// nobody; a host lost in the middle of a job makes the job NODE_FAIL and the
// node "down" in sinfo, and the node returns to service when it answers again.
func TestSSHNodesEndToEnd(t *testing.T) {
	requireRoot(t)
	cl := sshtest.StartCluster(t, 3)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "executor = \"ssh\"\n")
	for _, h := range cl.Hosts {
		fmt.Fprintf(&cfg, "[[node]]\nname = %q\naddress = %q\n", h.Name, h.Addr)
	}
	fmt.Fprintf(&cfg, "[[partition]]\nname = \"batch\"\nnodes = \"n[1-3]\"\ndefault = true\n")
	fmt.Fprintf(&cfg, "[ssh]\nknown_hosts = %q\nidentity_file = %q\nstate_dir = %q\nprobe_interval_s = 1\nprobe_misses = 2\n",
		cl.KnownHosts, cl.IdentityFile, filepath.Join(cl.Dir, "node-state"))
	c := newClusterWith(t, cfg.String())

	dir := filepath.Join(c.dir, "nobody")
	os.MkdirAll(dir, 0o755)
	os.Chown(dir, 65534, 65534)
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
	id := c.submit(c.dir, "-N", "3", "-o", "/dev/null", "--wrap", "touch "+started+"; sleep 300")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
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
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(nodeState(), "n1 down") {
		if time.Now().After(deadline) {
			t.Fatalf("sinfo after losing n1:\n%s", nodeState())
		}
		time.Sleep(100 * time.Millisecond)
	}
	cl.Hosts[0].LinkUp()
	cl.Hosts[0].StartSSHD()
	for strings.Contains(nodeState(), "n1 down") {
		if time.Now().After(deadline.Add(30 * time.Second)) {
			t.Fatalf("n1 did not return:\n%s", nodeState())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
