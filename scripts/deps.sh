#!/usr/bin/env bash
# Installs, on Debian, what hora's tests need and a fresh machine lacks.
# Idempotent and quiet when everything is present. Not root: says what is
# missing and fails, because the tests would fail later for a worse reason.
set -euo pipefail
need=()
command -v scontrol >/dev/null || need+=(slurm-client)
command -v sshd >/dev/null || [ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ip >/dev/null || need+=(iproute2)
command -v mandoc >/dev/null || need+=(mandoc)
# The fault harness: unshare --time (clock jumps), mount -t tmpfs (a full disk).
command -v unshare >/dev/null || need+=(util-linux)
command -v mount >/dev/null || need+=(mount)
# snakemake 7 drives horad with --slurm in cmd/horad's end-to-end test.
command -v snakemake >/dev/null || need+=(snakemake)
# packaging/ tests: lintian checks the .debs, rpm reads the .rpms.
command -v lintian >/dev/null || need+=(lintian)
command -v rpm >/dev/null || need+=(rpm)
# toil (Debian's, for /usr/bin/python3): cmd/horad TestToilTorqueEndToEnd
/usr/bin/python3 -c 'import toil.batchSystems.torque' 2>/dev/null || need+=(toil)
# The shell completions are tested in the real shells.
command -v zsh >/dev/null || need+=(zsh)
command -v fish >/dev/null || need+=(fish)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing packages: ${need[*]}; install them (as root: apt-get install ${need[*]})" >&2
	exit 1
fi
echo "deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
