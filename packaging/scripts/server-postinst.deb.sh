#!/bin/sh
# hora-server postinst (Debian). Enables horad.socket and horad.service the
# way debhelper's dh_installsystemd does (deb-systemd-helper records the
# enablement so that purge can undo it), then starts them, or restarts
# horad on an upgrade: running jobs keep running (docs/operations.md).
set -e
units="horad.socket horad.service"
case "$1" in
configure | abort-upgrade | abort-deconfigure | abort-remove)
	for u in $units; do
		deb-systemd-helper unmask "$u" >/dev/null || true
		# was-enabled is true on a first installation: enable then.
		if deb-systemd-helper --quiet was-enabled "$u"; then
			deb-systemd-helper enable "$u" >/dev/null || true
		else
			deb-systemd-helper update-state "$u" >/dev/null || true
		fi
	done
	if [ -d /run/systemd/system ]; then
		systemctl --system daemon-reload >/dev/null || true
		deb-systemd-invoke start horad.socket >/dev/null || true
		if [ -n "$2" ]; then
			deb-systemd-invoke restart horad.service >/dev/null || true
		else
			deb-systemd-invoke start horad.service >/dev/null || true
		fi
	else
		echo "hora-server: systemd is not running here (no /run/systemd/system), so horad was not started." >&2
		echo "hora-server: the client commands work; start horad by hand: /usr/sbin/horad --config /etc/hora/hora.toml" >&2
	fi
	;;
esac
exit 0
