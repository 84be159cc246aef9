#!/usr/bin/env bash
# make package-test: installs the built packages into a clean Debian root
# booted with a real systemd, and does what an admin does with them:
# install, enable horad.socket, submit and list as an ordinary user, reload
# (good and broken file), restart with a job running, upgrade keeping the
# state and an edited conffile, the socket-activation benchmark, remove,
# purge; then installs on a root without systemd, and the .rpm with
# rpm --root. Slow (minutes): not part of make test.
#
# The Debian root is made once with debootstrap from Debian's mirror and
# kept in /var/tmp/hora-pkgtest-base (HORA_PKGTEST_BASE); each run works on
# a copy under /var/tmp that it removes at the end (HORA_PKGTEST_KEEP=1
# keeps it). systemd boots as PID 1 of its own PID, mount, cgroup, network,
# UTS and IPC namespaces, chrooted into the copy, as nodes/ssh/sshtest
# boots its systemd hosts. Needs root.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
base=${HORA_PKGTEST_BASE:-/var/tmp/hora-pkgtest-base}
bench_jobs=${HORA_PKGTEST_BENCH_JOBS:-100000}
say() { printf 'package-test: %s\n' "$*" >&2; }
fail() {
	printf 'package-test: FAIL: %s\n' "$*" >&2
	if [ -n "${HORA_PKGTEST_DEBUG:-}" ] && [ -n "${init:-}" ]; then
		say "HORA_PKGTEST_DEBUG: the booted root stays up for $HORA_PKGTEST_DEBUG s: nsenter -t $init -m -p -n -u -i -C -r -w"
		sleep "$HORA_PKGTEST_DEBUG"
	fi
	exit 1
}
[ "$(id -u)" = 0 ] || fail "needs root (namespaces, chroot, debootstrap)"
for t in debootstrap unshare nsenter rpm dpkg-deb; do
	command -v "$t" >/dev/null || fail "$t is missing: apt-get install debootstrap rpm util-linux"
done

work=$(mktemp -d /var/tmp/hora-pkgtest.XXXXXX)
root=$work/root
init=
unshare_pid=
cg=
cleanup() {
	set +e
	if [ -n "$unshare_pid" ]; then
		kill -KILL "$unshare_pid" 2>/dev/null
		wait "$unshare_pid" 2>/dev/null
	fi
	if [ -n "$cg" ] && [ -d "$cg" ]; then
		echo 1 >"$cg/cgroup.kill" 2>/dev/null
		for _ in $(seq 50); do rmdir "$cg" 2>/dev/null && break; sleep 0.1; done
	fi
	if [ "${HORA_PKGTEST_KEEP:-}" = 1 ]; then
		say "kept $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT

# --- packages: this tree, and a newer build of it for the upgrade ----------
say "building packages"
(cd "$repo" && go run ./packaging/build -out "$work/v1" deb rpm >/dev/null)
v1=$(dpkg-deb -f "$work"/v1/hora-server_*.deb Version)
v2="$v1.1"
(cd "$repo" && go run ./packaging/build -out "$work/v2" -version "$v2" deb >/dev/null)
dpkg --compare-versions "$v2" gt "$v1" || fail "$v2 does not sort after $v1"
(cd "$repo" && CGO_ENABLED=0 go build -o "$work/benchfill" ./packaging/benchfill)

# --- a clean Debian root ------------------------------------------------------
if [ ! -x "$base/lib/systemd/systemd" ]; then
	say "debootstrap bookworm into $base (once)"
	rm -rf "$base.tmp"
	debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,init-system-helpers,procps,sudo \
		bookworm "$base.tmp" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
		fail "debootstrap failed: $(tail -3 "$work/debootstrap.log")"
	mv "$base.tmp" "$base"
fi

# --- installing where systemd does not run: the client still works ----------
say "install without systemd (chroot)"
cp -a "$base" "$work/nosystemd"
cp "$work"/v1/hora-client_*.deb "$work"/v1/hora-server_*.deb "$work/nosystemd/tmp/"
out=$(chroot "$work/nosystemd" sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends /tmp/hora-client_*.deb /tmp/hora-server_*.deb' 2>&1) ||
	fail "apt-get install without systemd: $out"
grep -q "systemd is not running here" <<<"$out" || fail "no word on why horad was not started: $out"
sq=$(chroot "$work/nosystemd" squeue 2>&1) && fail "squeue without horad succeeded: $sq"
grep -q "start horad" <<<"$sq" || fail "squeue without horad says: $sq"
say "  ok: postinst says why horad is not started; squeue says: $sq"
rm -rf "$work/nosystemd"

# --- boot systemd in the copy -------------------------------------------------
cp -a "$base" "$root"
v2root=/sys/fs/cgroup
[ -f /sys/fs/cgroup/cgroup.controllers ] || v2root=/sys/fs/cgroup/unified
[ -f "$v2root/cgroup.controllers" ] || fail "no cgroup v2 hierarchy"
cg=$v2root/hora-pkgtest-$$
mkdir "$cg"
boot='set -e
mount --make-rprivate /
mount --bind "$1" "$1"
mount -t proc proc "$1/proc"
mount --rbind /sys "$1/sys"
umount -R "$1/sys/fs/cgroup" 2>/dev/null || :
mount -t cgroup2 cgroup2 "$1/sys/fs/cgroup"
mount --rbind /dev "$1/dev"
mount -t tmpfs -o mode=0755 tmpfs "$1/run"
mount -t tmpfs -o mode=1777 tmpfs "$1/tmp"
cd "$1"
exec chroot . /lib/systemd/systemd --system'
echo "hora-pkgtest" >"$root/etc/hostname"
sh -c 'echo $$ >"$1/cgroup.procs" && exec env -i container=hora-pkgtest PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	unshare --pid --mount --cgroup --net --uts --ipc --fork --kill-child sh -c "$2" boot "$3"' \
	pkgtest "$cg" "$boot" "$root" >"$work/boot.log" 2>&1 &
unshare_pid=$!
for _ in $(seq 100); do
	init=$(cat "/proc/$unshare_pid/task/$unshare_pid/children" 2>/dev/null | awk '{print $1}')
	[ -n "$init" ] && [ "$(readlink "/proc/$init/exe" 2>/dev/null)" = "$root/usr/lib/systemd/systemd" ] && break
	init=
	sleep 0.1
done
[ -n "$init" ] || fail "systemd did not start: $(tail -5 "$work/boot.log")"

# ct runs a command inside the booted root, as root.
ct() { nsenter -t "$init" -m -p -n -u -i -C -r -w -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
# ctu runs a command inside as the ordinary user alice, in her home.
ctu() { ct setpriv --reuid=alice --regid=alice --init-groups --reset-env sh -c 'cd /home/alice && exec "$@"' sh "$@"; }
for _ in $(seq 300); do
	state=$(ct systemctl is-system-running 2>/dev/null || :)
	case $state in running | degraded) break ;; esac
	sleep 0.2
done
say "systemd booted (pid $init on the host): $state"

# --- install ---------------------------------------------------------------------
ct useradd -m -s /bin/sh alice
cp "$work"/v1/hora-client_*.deb "$work"/v1/hora-server_*.deb "$root/var/tmp/"
ct sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends /var/tmp/hora-client_*.deb /var/tmp/hora-server_*.deb' >"$work/install.log" 2>&1 ||
	fail "install: $(tail -5 "$work/install.log")"
rm -f "$root"/var/tmp/hora-*.deb
for u in horad.socket horad.service; do
	[ "$(ct systemctl is-enabled $u)" = enabled ] || fail "$u is not enabled after install"
done
ct systemctl is-active --quiet horad.socket || fail "horad.socket is not active"
say "installed $v1: horad.socket and horad.service enabled, socket listening"
ct systemctl enable --now horad.socket >/dev/null 2>&1 || fail "systemctl enable --now horad.socket"

# --- submit and list as an ordinary user ---------------------------------------
cat >"$root/home/alice/job.sh" <<'EOF'
#!/bin/sh
echo "hello from $(id -un) in $(cat /proc/self/cgroup | tail -1 | cut -d: -f3)"
touch /tmp/hora-pkgtest-job-tmp && echo "tmp ok"
sleep "${1:-1}"
EOF
ct chown alice:alice /home/alice/job.sh
ct chmod 755 /home/alice/job.sh
sub=$(ctu sbatch job.sh 1) || fail "sbatch as alice: $sub"
id1=${sub##* }
say "alice: $sub"
for _ in $(seq 300); do
	[ -s "$root/home/alice/slurm-$id1.out" ] && grep -q "tmp ok" "$root/home/alice/slurm-$id1.out" && break
	sleep 0.1
done
grep -q "hello from alice in /system.slice/hora-step-" "$root/home/alice/slurm-$id1.out" ||
	fail "job $id1 output: $(cat "$root/home/alice/slurm-$id1.out" 2>&1); horad: $(ct journalctl -u horad --no-pager | tail -5)"
say "  ok: job ran as alice in its own unit: $(head -1 "$root/home/alice/slurm-$id1.out")"
[ "${HORA_PKGTEST_STOP_AFTER:-}" = job1 ] && fail "stopping after job 1 (HORA_PKGTEST_STOP_AFTER)"
sq=$(ctu squeue -t all -h -o "%i %u %T")
grep -q "^$id1 alice" <<<"$sq" || fail "squeue as alice does not list job $id1: $sq"

# --- reload: a good edit applies, a broken file is refused with file:line ----------
ct sed -i 's/^operators = \[\]/operators = ["alice"]/' /etc/hora/hora.toml
grep -q '^operators = \["alice"\]' "$root/etc/hora/hora.toml" || fail "could not edit the conffile"
ct systemctl reload horad
for _ in $(seq 100); do ct journalctl -u horad --no-pager | grep -q "configuration reloaded" && break; sleep 0.1; done
ct journalctl -u horad --no-pager | grep -q "configuration reloaded" || fail "no reload in the journal"
cp "$root/etc/hora/hora.toml" "$work/good.toml"
printf '\n[[partition]]\nname = "x"\nnodez = "local1"\n' >>"$root/etc/hora/hora.toml"
bad_line=$(grep -n '^nodez' "$root/etc/hora/hora.toml" | cut -d: -f1)
ct systemctl reload horad
for _ in $(seq 100); do ct journalctl -u horad --no-pager | grep -q "reload refused" && break; sleep 0.1; done
refusal=$(ct journalctl -u horad --no-pager | grep "reload refused" | tail -1)
grep -q "/etc/hora/hora.toml:$bad_line" <<<"$refusal" || fail "refusal without file:line: $refusal"
ct systemctl is-active --quiet horad || fail "horad is not active after the broken reload"
cp "$work/good.toml" "$root/etc/hora/hora.toml"
ct systemctl reload horad
say "  ok: reload applied; broken file refused: ${refusal#*msg=}"

# --- restart with a job running ----------------------------------------------------
sub=$(ctu sbatch job.sh 20) || fail "sbatch: $sub"
id2=${sub##* }
for _ in $(seq 300); do [ "$(ctu squeue -h -j "$id2" -o %T)" = RUNNING ] && break; sleep 0.1; done
[ "$(ctu squeue -h -j "$id2" -o %T)" = RUNNING ] || fail "job $id2 did not start"
# RUNNING is recorded before the launch: the unit may take a moment to appear.
for _ in $(seq 300); do
	units=$(ct systemctl list-units --all --plain --no-legend 'hora-step-*')
	unit=$(awk -v s="-$id2.batch." 'index($1, s) {print $1}' <<<"$units" | head -1)
	[ -n "$unit" ] && break
	sleep 0.1
done
[ -n "$unit" ] || fail "no hora-step unit for job $id2: $units"
start_before=$(ctu squeue -h -j "$id2" -o %S)
ct systemctl restart horad
[ "$(ctu squeue -h -j "$id2" -o '%T %S')" = "RUNNING $start_before" ] || fail "job $id2 after restart: $(ctu squeue -h -j "$id2" -o '%T %S')"
ct systemctl is-active --quiet "$unit" || fail "$unit died with the restart: $(ct systemctl status "$unit" --no-pager 2>&1 | head -20)"
say "  ok: job $id2 ($unit) kept running through systemctl restart horad"

# --- scancel reaches a job in its own unit ---------------------------------------------
sub=$(ctu sbatch job.sh 300) || fail "sbatch: $sub"
id3=${sub##* }
for _ in $(seq 300); do [ "$(ctu squeue -h -j "$id3" -o %T)" = RUNNING ] && break; sleep 0.1; done
ctu scancel "$id3" || fail "scancel $id3"
for _ in $(seq 300); do [ "$(ctu squeue -h -t all -j "$id3" -o %T)" = CANCELLED ] && break; sleep 0.1; done
[ "$(ctu squeue -h -t all -j "$id3" -o %T)" = CANCELLED ] || fail "job $id3 after scancel: $(ctu squeue -h -t all -j "$id3" -o %T)"
for _ in $(seq 100); do ct systemctl list-units --plain --no-legend "hora-step-*-$id3.batch*" | grep -q . || break; sleep 0.1; done
left=$(ct systemctl list-units --plain --no-legend "hora-step-*-$id3.batch*")
[ -z "$left" ] || fail "job $id3's unit is still there after scancel: $left"
say "  ok: scancel ended job $id3 and its unit"

# --- upgrade, keeping state and the edited conffile ------------------------------------
cp "$work"/v2/hora-client_*.deb "$work"/v2/hora-server_*.deb "$root/var/tmp/"
ct sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends /var/tmp/hora-client_*.deb /var/tmp/hora-server_*.deb' >"$work/upgrade.log" 2>&1 ||
	fail "upgrade: $(tail -5 "$work/upgrade.log")"
[ "$(ct dpkg-query -W -f '${Version}' hora-server)" = "$v2" ] || fail "hora-server is not at $v2"
grep -q '^operators = \["alice"\]' "$root/etc/hora/hora.toml" || fail "the upgrade lost the edited conffile"
ct systemctl is-active --quiet horad || fail "horad is not active after the upgrade"
st=$(ctu squeue -h -j "$id2" -o '%T %S')
[ "$st" = "RUNNING $start_before" ] || [ "$(ctu squeue -h -t all -j "$id2" -o %T)" = COMPLETED ] || fail "job $id2 after upgrade: $st"
ctu sacct -n -X -j "$id1" -o state | grep -q COMPLETED || fail "job $id1 is not in sacct after the upgrade"
say "  ok: upgraded to $v2; conffile edit kept; job $id1 still in sacct; job $id2: ${st:-COMPLETED}"
for _ in $(seq 400); do [ "$(ctu squeue -h -t all -j "$id2" -o %T)" = COMPLETED ] && break; sleep 0.1; done
[ "$(ctu squeue -h -t all -j "$id2" -o %T)" = COMPLETED ] || fail "job $id2 did not complete: $(ctu squeue -h -t all -j "$id2" -o %T)"

# --- hardening score ------------------------------------------------------------------
score=$(ct systemd-analyze security horad.service --no-pager 2>&1 | tail -1)
say "systemd-analyze security horad.service: $score"

# --- benchmark: first squeue after horad was stopped (socket activation) ---------------
cp "$work/benchfill" "$root/usr/local/bin/"
say "submitting $bench_jobs held jobs"
t0=$(date +%s)
ct /usr/local/bin/benchfill -n "$bench_jobs" || fail "benchfill"
say "  submitted in $(($(date +%s) - t0)) s"
for i in 1 2 3; do
	ct systemctl stop horad.service 2>/dev/null
	ct systemctl is-active --quiet horad.service && fail "horad still active"
	ms=$(ct sh -c 't0=$(date +%s%N); squeue -h -u alice >/dev/null; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 ))') ||
		fail "squeue after stop"
	# READY=1 may reach systemd just after squeue got its answer.
	for _ in $(seq 100); do ct systemctl is-active --quiet horad.service && break; sleep 0.1; done
	ct systemctl is-active --quiet horad.service || fail "squeue did not start horad: $(ct systemctl is-active horad.service)"
	say "bench: first squeue -u alice after stop, $bench_jobs stored jobs: $ms ms (run $i)"
done
ms=$(ct sh -c 't0=$(date +%s%N); squeue -h | wc -l >/tmp/n; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 ))')
say "bench: squeue of all $(ct cat /tmp/n) jobs, horad running: $ms ms"
ct systemctl stop horad.service 2>/dev/null
ms=$(ct sh -c 't0=$(date +%s%N); squeue -h | wc -l >/dev/null; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 ))')
say "bench: first full squeue after stop: $ms ms"
say "bench: load average $(cut -d' ' -f1-3 /proc/loadavg)"

# --- remove and purge ---------------------------------------------------------------
ct sh -c 'DEBIAN_FRONTEND=noninteractive apt-get remove -y -q hora-server' >"$work/remove.log" 2>&1 || fail "remove: $(tail -3 "$work/remove.log")"
ct systemctl is-active --quiet horad.socket && fail "horad.socket still active after remove"
[ -f "$root/etc/hora/hora.toml" ] || fail "remove deleted the conffile"
[ -f "$root/var/lib/hora/hora.db" ] || fail "remove deleted the state"
ct sh -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -q hora-server hora-client' >"$work/purge.log" 2>&1 || fail "purge: $(tail -3 "$work/purge.log")"
[ -e "$root/etc/hora" ] && fail "purge left /etc/hora"
[ -e "$root/var/lib/hora" ] && fail "purge left /var/lib/hora"
[ -e "$root/usr/bin/sbatch" ] && fail "purge left /usr/bin/sbatch"
say "  ok: remove kept conffile and state; purge removed both"

# --- the .rpm ------------------------------------------------------------------------
rr=$work/rpmroot
mkdir -p "$rr"
rpm --root "$rr" --initdb
rpm --root "$rr" -i --nodeps --noscripts "$work"/v1/hora-client-*.rpm "$work"/v1/hora-server-*.rpm "$work"/v1/hora-node-*.rpm ||
	fail "rpm -i"
rpm --root "$rr" -q hora-client hora-server hora-node >/dev/null || fail "rpm -q"
[ -x "$rr/usr/sbin/horad" ] && [ -L "$rr/usr/bin/sbatch" ] && [ -f "$rr/etc/hora/hora.toml" ] || fail "rpm files missing"
[ "$(rpm --root "$rr" -qc hora-server)" = /etc/hora/hora.toml ] || fail "rpm config files: $(rpm --root "$rr" -qc hora-server)"
rpm --root "$rr" -V --nodeps hora-client hora-server || fail "rpm -V"
say "  ok: rpm --root installs and verifies $(rpm --root "$rr" -qa | sort | tr '\n' ' ')"
# --- the .rpm with its scripts, where systemd does not run --------------------
# rpm runs the scriptlets chrooted into the root: %post must say why horad
# is not started and succeed; an upgrade (%postun with 1) and the removal
# (%preun and %postun with 0) must succeed and keep an edited conffile as
# .rpmsave. The systemd branch of the scriptlets runs the same systemctl
# calls as the .deb's maintainer scripts, which the booted root above runs.
say "rpm with scriptlets (chroot, no systemd)"
sr=$work/rpmscripts
cp -a "$base" "$sr"
rpm --root "$sr" --initdb
out=$(rpm --root "$sr" -i --nodeps "$work"/v1/hora-client-*.rpm "$work"/v1/hora-server-*.rpm "$work"/v1/hora-node-*.rpm 2>&1) ||
	fail "rpm -i with scriptlets: $out"
grep -q "systemd is not running here" <<<"$out" || fail "rpm %post does not say why horad was not started: $out"
[ -x "$sr/usr/sbin/horad" ] && [ -L "$sr/usr/bin/squeue" ] || fail "rpm with scriptlets: files missing"
echo "# edited by the admin" >>"$sr/etc/hora/hora.toml"
out=$(rpm --root "$sr" -U --nodeps --replacepkgs "$work"/v1/hora-server-*.rpm 2>&1) || fail "rpm -U (reinstall) with scriptlets: $out"
grep -q "edited by the admin" "$sr/etc/hora/hora.toml" || fail "rpm -U replaced the edited conffile"
out=$(rpm --root "$sr" -e hora-node hora-server hora-client 2>&1) || fail "rpm -e with scriptlets: $out"
[ ! -e "$sr/usr/sbin/horad" ] && [ ! -e "$sr/usr/bin/squeue" ] || fail "rpm -e left the binaries"
[ -f "$sr/etc/hora/hora.toml.rpmsave" ] || fail "rpm -e did not keep the edited conffile as hora.toml.rpmsave"
say "  ok: %post says why horad is not started; reinstall keeps the edited conffile; rpm -e runs %preun/%postun and keeps hora.toml.rpmsave"
rm -rf "$sr"

say "PASS"

