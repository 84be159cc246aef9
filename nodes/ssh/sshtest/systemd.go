package sshtest

// A host started WithSystemd runs a real systemd (the machine's own
// /usr/lib/systemd/systemd) as the init of the host's namespaces:
//
//	sh: join the host's cgroup directories hora-sshtest-<ns> (v2, and on a
//	    hybrid machine the v1 memory, devices and name=systemd ones too)
//	  ip netns exec <ns>                      the host's network
//	    unshare --pid --mount --cgroup --fork --mount-proc --kill-child
//	      sh: private /run (tmpfs) with the units, the cgroup mounts
//	        exec systemd --system --unit=hora-node.target
//
// The cgroup namespace makes the host's directories the roots of systemd's
// cgroup trees, so systemd manages them as a container's and nothing of the
// machine's. Only the two units below are loaded as wanted (the machine's
// /etc and /lib unit files stay visible but nothing pulls them in). sshd is
// hora-sshd.service: its sessions live in that service's cgroup, and
// stopping it (KillMode=control-group, the default) kills every process
// still in it — so a job survives StopSSHD only if systemd-run moved it
// into a scope of its own.
//
// The host's systemd sees the cgroup layout of this machine. On a pure
// cgroup v2 machine it gets cgroup2 on /sys/fs/cgroup (the unified mode).
// On a hybrid one such as the development VM and CI (memory and devices
// are v1 hierarchies, the v2 tree on /sys/fs/cgroup/unified has no
// controller) it boots in hybrid mode: tmpfs on /sys/fs/cgroup, the
// machine's v1 hierarchies below it (memory, devices, name=systemd, and
// whatever else is mounted) and cgroup2 on
// /sys/fs/cgroup/unified, so that MemoryMax= becomes the scope's
// memory.limit_in_bytes and DevicePolicy=/DeviceAllow= its devices.deny
// and devices.allow, as on a real hybrid node.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Systemd is the init a WithSystemd host boots.
const Systemd = "/usr/lib/systemd/systemd"

// bootScript runs inside the new namespaces as root; $1 is the unit
// directory, $2 "unified" or "hybrid" followed by the v1 hierarchies to
// mount (v1Hierarchies: directory name, mount options).
const bootScript = `set -e
mount --make-rprivate /
mount -t tmpfs -o mode=0755 hora-run /run
mkdir -p /run/systemd/system /run/sshd
cp "$1"/* /run/systemd/system/
umount -R /sys/fs/cgroup 2>/dev/null || :
if [ "$2" = hybrid ]; then
	mount -t tmpfs -o mode=0755 cgroup /sys/fs/cgroup
	shift 2
	while [ $# -ge 2 ]; do
		mkdir /sys/fs/cgroup/$1
		mount -t cgroup -o "$2" cgroup /sys/fs/cgroup/$1
		shift 2
	done
	mkdir /sys/fs/cgroup/unified
	mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified
else
	mount -t cgroup2 cgroup2 /sys/fs/cgroup
fi
exec ` + Systemd + ` --system --unit=hora-node.target
`

// v1Hierarchy is a cgroup v1 hierarchy of this machine: its directory
// under /sys/fs/cgroup and the options that mount it ("memory",
// "cpu,cpuacct", "none,name=systemd").
type v1Hierarchy struct{ dir, opts string }

// neededV1 are the v1 hierarchies a host's systemd needs in hybrid mode:
// the memory and devices controllers it applies MemoryMax= and
// DeviceAllow= to, and its own named hierarchy.
var neededV1 = []string{"memory", "devices", "systemd"}

// v1Hierarchies lists the cgroup v1 hierarchies mounted under
// /sys/fs/cgroup. A host in hybrid mode gets a directory of its own in
// every one of them: systemd mounts every controller it finds, and one it
// found at the machine's root would put the units of every test host into
// the same directories there.
func v1Hierarchies() []v1Hierarchy {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var hs []v1Hierarchy
	for _, l := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(l, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 || g[0] != "cgroup" || path.Dir(f[4]) != "/sys/fs/cgroup" {
			continue
		}
		var opts []string
		for _, o := range strings.Split(g[2], ",") {
			switch {
			case strings.HasPrefix(o, "name="):
				opts = append([]string{"none"}, o)
			case o == "rw" || o == "ro" || o == "xattr" || o == "noprefix" || o == "clone_children" || o == "cpuset_v2_mode" || strings.Contains(o, "="):
			default:
				opts = append(opts, o)
			}
		}
		hs = append(hs, v1Hierarchy{path.Base(f[4]), strings.Join(opts, ",")})
	}
	return hs
}

// hybrid reports whether this machine is a cgroup hybrid: v1 hierarchies
// under a tmpfs /sys/fs/cgroup and the v2 tree on /sys/fs/cgroup/unified.
// A hybrid without one of neededV1 is an error naming it.
func hybrid() (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil || st.Type == unix.CGROUP2_SUPER_MAGIC {
		return false, nil
	}
	hs := v1Hierarchies()
	for _, n := range neededV1 {
		if !slices.ContainsFunc(hs, func(h v1Hierarchy) bool { return h.dir == n }) {
			return false, fmt.Errorf("this machine mounts cgroup v1 hierarchies on /sys/fs/cgroup but not /sys/fs/cgroup/%s, which a systemd node in hybrid mode needs (%s)", n, strings.Join(neededV1, ", "))
		}
	}
	return true, nil
}

// hostCgroups are the cgroup directories of host ns on this machine: the
// v2 one first, then the v1 ones of a hybrid machine.
func hostCgroups(ns string) []string {
	root, err := cgroupV2Root()
	if err != nil {
		return nil
	}
	dirs := []string{filepath.Join(root, cgroupName(ns))}
	if hy, _ := hybrid(); hy {
		for _, h := range v1Hierarchies() {
			dirs = append(dirs, filepath.Join("/sys/fs/cgroup", h.dir, cgroupName(ns)))
		}
	}
	return dirs
}

// cgroupV2Root finds where this machine mounts the cgroup v2 tree.
func cgroupV2Root() (string, error) {
	for _, p := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		var st unix.Statfs_t
		if unix.Statfs(p, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return p, nil
		}
	}
	return "", fmt.Errorf("no cgroup v2 hierarchy on /sys/fs/cgroup or /sys/fs/cgroup/unified")
}

func cgroupName(ns string) string { return "hora-sshtest-" + ns }

// bootSystemd starts systemd for the host and waits until it answers.
func (h *Host) bootSystemd() {
	t := h.c.t
	t.Helper()
	if _, err := os.Stat(Systemd); err != nil {
		t.Fatalf("sshtest: %s not found: a WithSystemd host needs the systemd package", Systemd)
	}
	if _, err := cgroupV2Root(); err != nil {
		t.Fatalf("sshtest: %s with systemd: %v", h.Name, err)
	}
	hy, err := hybrid()
	if err != nil {
		t.Fatalf("sshtest: %s with systemd: %v", h.Name, err)
	}
	mode := []string{"unified"}
	if hy {
		mode = []string{"hybrid"}
		for _, v1 := range v1Hierarchies() {
			mode = append(mode, v1.dir, v1.opts)
		}
	}
	dirs := hostCgroups(h.NS)
	h.cgroup = dirs[0]
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatalf("sshtest: %s with systemd: %v", h.Name, err)
		}
		// A v1 cpuset group starts without CPUs or memory nodes, and
		// nothing can join it until it has the machine's.
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if b, err := os.ReadFile(filepath.Join(filepath.Dir(d), f)); err == nil {
				if err := os.WriteFile(filepath.Join(d, f), b, 0); err != nil {
					t.Fatalf("sshtest: %s with systemd: %v", h.Name, err)
				}
			}
		}
	}
	hdir := filepath.Dir(h.cfg)
	units := filepath.Join(hdir, "units")
	if err := os.Mkdir(units, 0o755); err != nil {
		t.Fatal(err)
	}
	h.log = filepath.Join(hdir, "sshd.log")
	files := map[string]string{
		"hora-node.target": "[Unit]\nDescription=hora test node " + h.Name + "\nDefaultDependencies=no\n",
		"hora-sshd.service": fmt.Sprintf(`[Unit]
Description=sshd of hora test node %s
DefaultDependencies=no
[Service]
ExecStart=%s -D -e -f %s
StandardOutput=append:%s
StandardError=append:%s
`, h.Name, SSHD, h.cfg, h.log, h.log),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(units, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logf, err := os.OpenFile(filepath.Join(hdir, "systemd.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	// The shell joins every directory of the host (the v1 ones in
	// $1, separated by ":"), then becomes the namespaces' parent.
	cmd := exec.Command("/bin/sh", append([]string{"-c", `IFS=:; for d in $1; do echo $$ > "$d/cgroup.procs" || exit 1; done; unset IFS
shift; ns=$1 boot=$2; shift 2
exec ip netns exec "$ns" unshare --pid --mount --cgroup --fork --mount-proc --kill-child /bin/sh -c "$boot" hora-boot "$@"`,
		"hora-sshtest", strings.Join(dirs, ":"), h.NS, bootScript, units}, mode...)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "container=hora-sshtest"}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("sshtest: starting systemd on %s: %v", h.Name, err)
	}
	h.init = cmd
	h.inited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(h.inited) }()
	fail := func(why string) {
		b, _ := os.ReadFile(logf.Name())
		t.Fatalf("sshtest: systemd on %s: %s; its output: %s", h.Name, why, b)
	}
	// unshare's forked child is systemd; it answers once its private bus
	// socket exists.
	for i := 0; ; i++ {
		select {
		case <-h.inited:
			fail("exited")
		default:
		}
		if h.initPID == 0 {
			for _, c := range childrenOf(cmd.Process.Pid) {
				if comm(c) == "systemd" {
					h.initPID = c
				}
			}
		}
		if h.initPID != 0 {
			if _, err := h.Systemctl("is-system-running"); err == nil || strings.Contains(err.Error(), "degraded") {
				return
			}
		}
		if i == 400 {
			fail("not running within 10 s")
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Systemctl runs systemctl against the host's systemd (WithSystemd hosts
// only) and returns its output; a non-zero exit is an error with the output.
func (h *Host) Systemctl(args ...string) (string, error) {
	if !h.Systemd || h.initPID == 0 {
		return "", fmt.Errorf("host %s does not run systemd", h.Name)
	}
	argv := append([]string{"-t", fmt.Sprint(h.initPID), "-m", "-p", "-C", "--", "systemctl", "--no-pager"}, args...)
	out, err := exec.Command("nsenter", argv...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("systemctl %s on %s: %v: %s", strings.Join(args, " "), h.Name, err, out)
	}
	return string(out), nil
}

// Proc is the /proc directory of process pid as the host numbers it: a
// WithSystemd host has a PID namespace of its own, so the pids a node
// reports are not this machine's.
func (h *Host) Proc(pid int) string {
	if h.Systemd {
		return fmt.Sprintf("/proc/%d/root/proc/%d", h.initPID, pid)
	}
	return fmt.Sprintf("/proc/%d", pid)
}

func (h *Host) startSystemdSSHD() {
	t := h.c.t
	t.Helper()
	if _, err := h.Systemctl("start", "hora-sshd.service"); err != nil {
		t.Fatalf("sshtest: %v; log: %s", err, h.readLog())
	}
	h.waitSSHD(nil)
}

// stopSystemdSSHD stops hora-sshd.service: systemd kills every process
// left in its cgroup, which cuts every connection.
func (h *Host) stopSystemdSSHD() {
	if h.initPID == 0 {
		return
	}
	if _, err := h.Systemctl("stop", "hora-sshd.service"); err != nil {
		h.c.t.Logf("sshtest: %v", err)
	}
}

// stopSystemd kills the host's PID namespace (SIGKILL to its init takes
// every process in it) and removes its cgroup.
func (h *Host) stopSystemd() error {
	if h.init == nil {
		return nil
	}
	if h.initPID != 0 {
		_ = syscall.Kill(h.initPID, syscall.SIGKILL)
	}
	_ = h.init.Process.Kill()
	<-h.inited
	h.init = nil
	return removeCgroup(h.NS)
}

// removeCgroup kills whatever is left in a host's cgroups and removes
// their trees, deepest directories first (rmdir fails while a process
// remains).
func removeCgroup(ns string) error {
	var errs []error
	for _, dir := range hostCgroups(ns) {
		if err := removeTree(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func removeTree(dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	var last error
	for range 100 {
		var dirs []string
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		last = nil
		for i := len(dirs) - 1; i >= 0; i-- {
			// A v1 hierarchy has no cgroup.kill: what is left is killed
			// one by one.
			if b, err := os.ReadFile(filepath.Join(dirs[i], "cgroup.procs")); err == nil {
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
			if err := unix.Rmdir(dirs[i]); err != nil && err != unix.ENOENT {
				last = fmt.Errorf("sshtest: removing cgroup %s: %w", dirs[i], err)
			}
		}
		if last == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return last
}

// CgroupDir is the cgroup v2 directory the host's systemd sees as its root
// (a unit's ControlGroup is below it), for tests that read cgroup files.
func (h *Host) CgroupDir() string { return h.cgroup }

// RequireScopeMemory fails t, naming what is missing, when a WithSystemd
// host's scopes could not have a memory controller: on a hybrid machine
// the v1 memory hierarchy (hybrid also checks it), on a unified one the
// memory controller enabled in /sys/fs/cgroup/cgroup.subtree_control.
func RequireScopeMemory(t testing.TB) {
	t.Helper()
	hy, err := hybrid()
	if err != nil {
		t.Fatalf("sshtest: %v", err)
	}
	if hy {
		return
	}
	b, err := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control")
	if err != nil || !slices.Contains(strings.Fields(string(b)), "memory") {
		t.Fatalf("sshtest: a systemd node's scopes need the cgroup v2 memory controller, which /sys/fs/cgroup/cgroup.subtree_control does not enable (%q, %v)", b, err)
	}
}
