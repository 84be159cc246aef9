#!/bin/sh
# hora-server postrm (Debian). remove: mask the units (as debhelper does);
# purge: forget their enablement and delete horad's state (the job
# database /var/lib/hora, back it up first with `hora admin backup`).
set -e
if [ "$1" = remove ] && command -v deb-systemd-helper >/dev/null; then
	deb-systemd-helper mask horad.socket horad.service >/dev/null || true
fi
if [ "$1" = purge ]; then
	if command -v deb-systemd-helper >/dev/null; then
		deb-systemd-helper purge horad.socket horad.service >/dev/null || true
		deb-systemd-helper unmask horad.socket horad.service >/dev/null || true
	fi
	rm -rf /var/lib/hora
	rmdir /etc/hora 2>/dev/null || true
fi
if [ -d /run/systemd/system ]; then
	systemctl --system daemon-reload >/dev/null || true
fi
exit 0
