package sshtest

// A host started WithSystemd runs a real systemd (the machine's own
// /usr/lib/systemd/systemd) as the init of the host's namespaces:
//
//	sh: join the cgroup v2 directory <v2 root>/hora-sshtest-<ns>
//	  ip netns exec <ns>                      the host's network
//	    unshare --pid --mount --cgroup --fork --mount-proc --kill-child
//	      sh: private /run (tmpfs) with the units, cgroup2 on /sys/fs/cgroup
//	        exec systemd --system --unit=hora-node.target
//
// The cgroup namespace makes the host's directory the root of systemd's
// cgroup tree, so systemd manages it as a container's and nothing of the
// machine's. Only the two units below are loaded as wanted (the machine's
// /etc and /lib unit files stay visible but nothing pulls them in). sshd is
// hora-sshd.service: its sessions live in that service's cgroup, and
// stopping it (KillMode=control-group, the default) kills every process
// still in it — so a job survives StopSSHD only if systemd-run moved it
// into a scope of its own.
//
// Works on a pure cgroup v2 machine and on a hybrid one (v1 controllers,
// the v2 tree on /sys/fs/cgroup/unified) such as the development VM.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Systemd is the init a WithSystemd host boots.
const Systemd = "/usr/lib/systemd/systemd"

// bootScript runs inside the new namespaces as root; $1 is the unit directory.
const bootScript = `set -e
mount --make-rprivate /
mount -t tmpfs -o mode=0755 hora-run /run
mkdir -p /run/systemd/system /run/sshd
cp "$1"/* /run/systemd/system/
umount -R /sys/fs/cgroup 2>/dev/null || :
mount -t cgroup2 cgroup2 /sys/fs/cgroup
exec ` + Systemd + ` --system --unit=hora-node.target
`

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
	root, err := cgroupV2Root()
	if err != nil {
		t.Fatalf("sshtest: %s with systemd: %v", h.Name, err)
	}
	h.cgroup = filepath.Join(root, cgroupName(h.NS))
	if err := os.Mkdir(h.cgroup, 0o755); err != nil {
		t.Fatalf("sshtest: %s with systemd: %v", h.Name, err)
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
	cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$1/cgroup.procs" && exec ip netns exec "$2" unshare --pid --mount --cgroup --fork --mount-proc --kill-child /bin/sh -c "$3" hora-boot "$4"`,
		"hora-sshtest", h.cgroup, h.NS, bootScript, units)
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

// removeCgroup kills whatever is left in a host's cgroup and removes the
// tree, deepest directories first (rmdir fails while a process remains).
func removeCgroup(ns string) error {
	root, err := cgroupV2Root()
	if err != nil {
		return nil
	}
	dir := filepath.Join(root, cgroupName(ns))
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
