// Package sshtest starts a cluster of real OpenSSH servers, one per network
// namespace, for tests of the SSH executor and of horad end to end.
//
// Each host is a network namespace hora-<k>-<i> with a veth pair onto a
// bridge hora-br<k> in the root namespace; the bridge has 10.213.<k>.254/24
// and host i has 10.213.<k>.i. Every host runs its own sshd (port 22, its
// own ed25519 host key, root login with the cluster's test key) started as
// `sshd -D -e -f <cfg>` from a temporary directory. The namespaces share
// this machine's filesystem and process table, so a path written on one
// host is visible on all: the shared filesystem that batch systems assume.
// Everything is removed when the test ends, failed or not.
//
// Needs root and /usr/sbin/sshd (`make deps`).
package sshtest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// SSHD is the OpenSSH server the cluster runs.
const SSHD = "/usr/sbin/sshd"

// Cluster is a set of test hosts.
type Cluster struct {
	Dir          string // temporary directory with keys and configs
	KnownHosts   string // known_hosts with every host's key
	IdentityFile string // private key authorized for root on every host
	Hosts        []*Host
	Subnet       int    // k in 10.213.k.0/24
	Bridge       string // hora-br<k>

	t testing.TB
}

// Host is one test host.
type Host struct {
	Name    string // n1, n2, ...
	Addr    string // 10.213.k.i
	NS      string // network namespace
	Veth    string // root-namespace end of its link
	KeyFile string // host key
	// Systemd is set for a host started WithSystemd: systemd is the init
	// of its own PID, mount and cgroup namespaces and runs its sshd.
	Systemd bool

	c       *Cluster
	init    *exec.Cmd     // systemd's namespace holder (Systemd hosts)
	initPID int           // systemd's pid as this machine sees it
	inited  chan struct{} // closed when init has exited
	cgroup  string        // the cgroup v2 directory systemd owns
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	log     string // sshd's log file
	cfg     string
}

// Option changes how StartCluster builds a host.
type Option func(*options)

type options struct{ systemd map[int]bool }

// WithSystemd makes host i (1-based) boot a real systemd as the init of its
// own PID, mount and cgroup namespaces (private /run, a cgroup v2 tree of
// its own), with the host's sshd as its unit hora-sshd.service, so that
// systemd-run works on it as on a systemd node. See systemd.go.
func WithSystemd(i int) Option {
	return func(o *options) { o.systemd[i] = true }
}

// StartCluster creates n hosts and waits until each sshd accepts
// connections. It fails the test (never skips it) when it cannot.
func StartCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	o := options{systemd: map[int]bool{}}
	for _, f := range opts {
		f(&o)
	}
	for i := range o.systemd {
		if i < 1 || i > n {
			t.Fatalf("sshtest: WithSystemd(%d): the cluster has hosts 1..%d", i, n)
		}
	}
	if n < 1 || n > 250 {
		t.Fatalf("sshtest: %d hosts: want 1..250", n)
	}
	if _, err := os.Stat(SSHD); err != nil {
		t.Fatalf("sshtest: %s not found: run `make deps` (it installs openssh-server and iproute2)", SSHD)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatalf("sshtest: ip(8) not found: run `make deps` (it installs iproute2)")
	}
	if os.Geteuid() != 0 {
		t.Fatalf("sshtest: creating network namespaces needs root (uid %d)", os.Geteuid())
	}
	// sshd insists on its privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatalf("sshtest: %v", err)
	}
	dir, err := os.MkdirTemp("", "hora-sshtest-")
	if err != nil {
		t.Fatal(err)
	}
	// Searchable by the jobs' users (nobody), like a real /var/lib.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Dir: dir, t: t}
	t.Cleanup(c.teardown)

	c.Subnet, c.Bridge = allocateBridge(t)

	// The test's client key.
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	c.IdentityFile = filepath.Join(dir, "id_ed25519")
	writeKey(t, c.IdentityFile, priv)
	sshPub, err := gossh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	auth := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(auth, gossh.MarshalAuthorizedKey(sshPub), 0o600); err != nil {
		t.Fatal(err)
	}
	var known strings.Builder
	for i := 1; i <= n; i++ {
		h := &Host{
			Name:    "n" + strconv.Itoa(i),
			Addr:    fmt.Sprintf("10.213.%d.%d", c.Subnet, i),
			NS:      fmt.Sprintf("hora-%d-%d", c.Subnet, i),
			Veth:    fmt.Sprintf("hora%dv%d", c.Subnet, i),
			Systemd: o.systemd[i],
			c:       c,
		}
		c.Hosts = append(c.Hosts, h)
		hdir := filepath.Join(dir, h.Name)
		if err := os.Mkdir(hdir, 0o755); err != nil {
			t.Fatal(err)
		}
		h.KeyFile = filepath.Join(hdir, "ssh_host_ed25519_key")
		known.WriteString(h.Addr + " " + string(gossh.MarshalAuthorizedKey(h.newKey(t))))
		h.cfg = filepath.Join(hdir, "sshd_config")
		cfg := fmt.Sprintf(`Port 22
ListenAddress %s
HostKey %s
PidFile none
AuthorizedKeysFile %s
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
MaxStartups 100:30:200
LogLevel ERROR
# bash sources ~/.bashrc for commands run by sshd only when SHLVL < 2: the
# development machine's root ~/.bashrc is not what a node would run.
SetEnv SHLVL=2
`, h.Addr, h.KeyFile, auth)
		if err := os.WriteFile(h.cfg, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		c.netns(h)
		if h.Systemd {
			h.bootSystemd()
		}
		h.StartSSHD()
	}
	c.KnownHosts = filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(c.KnownHosts, []byte(known.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

func writeKey(t testing.TB, path string, priv ed25519.PrivateKey) {
	t.Helper()
	blk, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
}

// newKey writes a fresh host key and returns its public half.
func (h *Host) newKey(t testing.TB) gossh.PublicKey {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	writeKey(t, h.KeyFile, priv)
	p, err := gossh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t testing.TB, argv ...string) {
	t.Helper()
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("sshtest: %s: %v: %s", strings.Join(argv, " "), err, out)
	}
}

// allocateBridge claims a free subnet by creating its bridge (creation is
// atomic, so concurrent test processes never share one). A bridge whose
// creator process is gone is reclaimed.
func allocateBridge(t testing.TB) (int, string) {
	t.Helper()
	for k := 0; k < 250; k++ {
		br := "hora-br" + strconv.Itoa(k)
		out, err := exec.Command("ip", "link", "add", br, "type", "bridge").CombinedOutput()
		if err != nil {
			if !strings.Contains(string(out), "exists") || !stale(br) {
				continue
			}
			removeSubnet(k)
			if exec.Command("ip", "link", "add", br, "type", "bridge").Run() != nil {
				continue
			}
		}
		run(t, "ip", "link", "set", br, "alias", "hora-sshtest pid="+strconv.Itoa(os.Getpid()))
		run(t, "ip", "addr", "add", fmt.Sprintf("10.213.%d.254/24", k), "dev", br)
		run(t, "ip", "link", "set", br, "up")
		return k, br
	}
	t.Fatal("sshtest: no free subnet 10.213.k.0/24 (250 bridges hora-br<k> exist)")
	return 0, ""
}

// stale reports whether the bridge's creator (from its alias) is gone.
func stale(br string) bool {
	b, err := os.ReadFile("/sys/class/net/" + br + "/ifalias")
	if err != nil {
		return false
	}
	_, pid, ok := strings.Cut(strings.TrimSpace(string(b)), "hora-sshtest pid=")
	if !ok {
		return false
	}
	p, err := strconv.Atoi(pid)
	if err != nil {
		return false
	}
	return syscall.Kill(p, 0) == syscall.ESRCH
}

// removeSubnet deletes what a dead test process left of subnet k.
func removeSubnet(k int) {
	for i := 1; i <= 250; i++ {
		ns := fmt.Sprintf("hora-%d-%d", k, i)
		if _, err := os.Stat("/run/netns/" + ns); err == nil {
			killNamespace(ns)
			_ = exec.Command("ip", "netns", "del", ns).Run()
		}
		removeCgroup(ns)
	}
	// The host ends of the namespaces' veths go with the namespaces, but
	// later: the kernel frees a deleted namespace in a work queue. A test
	// that took the subnet at once failed "ip link add hora2v2 ...: File
	// exists" (make test right after a killed one): they go here.
	if ifs, err := net.Interfaces(); err == nil {
		prefix := "hora" + strconv.Itoa(k) + "v"
		for _, ifc := range ifs {
			if n, ok := strings.CutPrefix(ifc.Name, prefix); ok && n != "" && strings.Trim(n, "0123456789") == "" {
				_ = exec.Command("ip", "link", "del", ifc.Name).Run()
			}
		}
	}
	_ = exec.Command("ip", "link", "del", "hora-br"+strconv.Itoa(k)).Run()
}

func (c *Cluster) netns(h *Host) {
	t := c.t
	run(t, "ip", "netns", "add", h.NS)
	run(t, "ip", "link", "add", h.Veth, "type", "veth", "peer", "name", "eth0", "netns", h.NS)
	run(t, "ip", "link", "set", h.Veth, "master", c.Bridge, "up")
	run(t, "ip", "-n", h.NS, "addr", "add", h.Addr+"/24", "dev", "eth0")
	run(t, "ip", "-n", h.NS, "link", "set", "eth0", "up")
	run(t, "ip", "-n", h.NS, "link", "set", "lo", "up")
}

// StartSSHD starts the host's sshd and waits until it accepts connections.
func (h *Host) StartSSHD() {
	t := h.c.t
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.Systemd {
		h.startSystemdSSHD()
		return
	}
	if h.cmd != nil {
		t.Fatalf("sshtest: sshd of %s already running", h.Name)
	}
	// A file, not a pipe: sshd's session processes inherit its stderr, and
	// a pipe would keep cmd.Wait waiting for all of them.
	logf, err := os.OpenFile(filepath.Join(filepath.Dir(h.cfg), "sshd.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("sshtest: %v", err)
	}
	defer logf.Close()
	h.log = logf.Name()
	cmd := exec.Command("ip", "netns", "exec", h.NS, SSHD, "-D", "-e", "-f", h.cfg)
	if _, err := os.Stat("/sys/fs/cgroup/memory/cgroup.procs"); err == nil {
		// ip netns exec mounts a sysfs of the namespace over /sys, which
		// hides the cgroup mounts below it: the host's cgroup v1 memory
		// (devices, cpuset) hierarchies are mounted again in sshd's mount
		// namespace, so that the node sees them as a real node of this
		// kernel would.
		cmd = exec.Command("ip", "netns", "exec", h.NS, "/bin/sh", "-c",
			`mount -t tmpfs -o mode=0755 cgroup /sys/fs/cgroup && mkdir /sys/fs/cgroup/memory &&
mount -t cgroup -o memory cgroup /sys/fs/cgroup/memory || exit 1
for c in $1; do
	mkdir /sys/fs/cgroup/$c && mount -t cgroup -o $c cgroup /sys/fs/cgroup/$c || exit 1
done
shift
exec "$@"`, "sshtest-sshd", otherV1(), SSHD, "-D", "-e", "-f", h.cfg)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("sshtest: starting sshd on %s: %v", h.Name, err)
	}
	h.cmd = cmd
	exited := make(chan struct{})
	h.exited = exited
	go func() { _ = cmd.Wait(); close(exited) }()
	h.waitSSHD(exited)
}

// waitSSHD waits until the host's sshd accepts connections; exited (if not
// nil) closes when it is known to have died.
func (h *Host) waitSSHD(exited chan struct{}) {
	t := h.c.t
	t.Helper()
	addr := net.JoinHostPort(h.Addr, "22")
	for i := 0; ; i++ {
		select {
		case <-exited:
			t.Fatalf("sshtest: sshd on %s exited: %s", h.Name, h.readLog())
		default:
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return
		}
		if i == 200 {
			t.Fatalf("sshtest: sshd on %s does not accept connections on %s: %v; log: %s", h.Name, addr, err, h.readLog())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// StopSSHD kills the host's sshd and the per-connection sshd processes it
// forked, which cuts existing connections as a crash would. Jobs started
// through it live on (they are in sessions of their own).
func (h *Host) StopSSHD() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.Systemd {
		h.stopSystemdSSHD()
		return
	}
	if h.cmd == nil {
		return
	}
	pid := h.cmd.Process.Pid
	tree := descendants(pid)
	_ = h.cmd.Process.Kill()
	for _, c := range tree {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	<-h.exited
	h.cmd = nil
}

// InMountNS runs argv in the host's mount namespace, where its sshd and
// the commands it runs see their files: `ip netns exec` gives sshd a mount
// namespace of its own, so a mount made outside it after sshd started
// (a small tmpfs over the node's state directory) is not the node's.
func (h *Host) InMountNS(argv ...string) ([]byte, error) {
	h.mu.Lock()
	pid := 0
	switch {
	case h.Systemd:
		pid = h.initPID
	case h.cmd != nil:
		pid = h.cmd.Process.Pid
	}
	h.mu.Unlock()
	if pid == 0 {
		return nil, fmt.Errorf("sshtest: %s has no sshd running", h.Name)
	}
	return exec.Command("nsenter", append([]string{"-t", strconv.Itoa(pid), "-m", "--"}, argv...)...).CombinedOutput()
}

// Log is what the host's sshd has written to stderr.
func (h *Host) Log() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.readLog()
}

func (h *Host) readLog() string {
	if h.log == "" {
		return ""
	}
	b, _ := os.ReadFile(h.log)
	return string(b)
}

// descendants lists the sshd's session processes: its children and theirs,
// but not the jobs, which left for sessions of their own.
func descendants(pid int) []int {
	var out []int
	for _, c := range childrenOf(pid) {
		if strings.HasPrefix(comm(c), "sshd") {
			out = append(out, c)
			out = append(out, descendants(c)...)
		}
	}
	return out
}

func comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// LinkDown cuts the host off the network (packets are dropped, nothing is
// refused), as a pulled cable does.
func (h *Host) LinkDown() { run(h.c.t, "ip", "-n", h.NS, "link", "set", "eth0", "down") }

// LinkUp reconnects the host.
func (h *Host) LinkUp() {
	run(h.c.t, "ip", "-n", h.NS, "link", "set", "eth0", "up")
	run(h.c.t, "ip", "-n", h.NS, "addr", "replace", h.Addr+"/24", "dev", "eth0")
}

// NewHostKey gives the host a new host key (known_hosts keeps the old one)
// and restarts its sshd, as a reinstalled or impersonated host would look.
func (h *Host) NewHostKey() {
	h.StopSSHD()
	h.newKey(h.c.t)
	h.StartSSHD()
}

// killNamespace kills every process in the network namespace: all of them
// were started by the test (its sshd, the jobs launched through it).
func killNamespace(ns string) {
	for range 20 {
		out, err := exec.Command("ip", "netns", "pids", ns).Output()
		if err != nil {
			return
		}
		pids := strings.Fields(string(out))
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			if n, err := strconv.Atoi(p); err == nil && n > 1 {
				_ = syscall.Kill(n, syscall.SIGKILL)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *Cluster) teardown() {
	var errs []error
	for _, h := range c.Hosts {
		if c.t.Failed() {
			if l := h.Log(); l != "" {
				c.t.Logf("sshd log of %s:\n%s", h.Name, l)
			}
		}
		h.StopSSHD()
		killNamespace(h.NS)
		if h.Systemd {
			if err := h.stopSystemd(); err != nil {
				errs = append(errs, err)
			}
		}
		if out, err := exec.Command("ip", "netns", "del", h.NS).CombinedOutput(); err != nil && !strings.Contains(string(out), "No such file") {
			errs = append(errs, fmt.Errorf("ip netns del %s: %v: %s", h.NS, err, out))
		}
		_ = exec.Command("ip", "link", "del", h.Veth).Run() // gone with the namespace, normally
	}
	if c.Bridge != "" {
		if out, err := exec.Command("ip", "link", "del", c.Bridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip link del %s: %v: %s", c.Bridge, err, out))
		}
	}
	c.removeNodeGroups()
	if err := os.RemoveAll(c.Dir); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		c.t.Errorf("sshtest: teardown: %v", err)
	}
}

// otherV1 lists the cgroup v1 devices and cpuset hierarchies this machine
// has (sshd's hosts then get them too, beside memory), blank-separated.
func otherV1() string {
	var hs []string
	for _, f := range []string{"devices/devices.deny", "cpuset/cpuset.cpus"} {
		if _, err := os.Stat("/sys/fs/cgroup/" + f); err == nil {
			hs = append(hs, path.Dir(f))
		}
	}
	return strings.Join(hs, " ")
}

// removeNodeGroups removes the cgroup v1 groups the launcher made for the
// cluster's plain hosts and left behind (a step never forgotten: a test
// that ended with a job running). The launcher names a node's groups
// hora-node-<cksum of its state directory>; a state directory is
// <dir>/<host name> for any directory below Dir.
func (c *Cluster) removeNodeGroups() {
	dirs, _ := os.ReadDir(c.Dir)
	for _, d := range dirs {
		for _, h := range c.Hosts {
			nd := filepath.Join(c.Dir, d.Name(), h.Name)
			if st, err := os.Stat(nd); err != nil || !st.IsDir() {
				continue
			}
			for _, hier := range []string{"memory", "devices", "cpuset"} {
				_ = removeTree(filepath.Join("/sys/fs/cgroup", hier, "hora-node-"+strconv.FormatUint(uint64(cksum([]byte(nd))), 10)))
			}
		}
	}
}

// cksum is POSIX cksum's CRC of b (what "printf %s B | cksum" prints
// first), the launcher's name for a node's groups.
func cksum(b []byte) uint32 {
	var crc uint32
	add := func(c byte) {
		crc ^= uint32(c) << 24
		for range 8 {
			if crc&0x80000000 != 0 {
				crc = crc<<1 ^ 0x04C11DB7
			} else {
				crc <<= 1
			}
		}
	}
	for _, c := range b {
		add(c)
	}
	for n := len(b); n > 0; n >>= 8 {
		add(byte(n))
	}
	return ^crc
}
