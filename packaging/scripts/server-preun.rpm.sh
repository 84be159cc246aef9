#!/bin/sh
# hora-server %preun (RPM): on the last removal, disable and stop horad
# (%systemd_preun). Jobs keep running.
if [ "$1" -eq 0 ] && [ -d /run/systemd/system ]; then
	systemctl --no-reload disable --now horad.socket horad.service >/dev/null 2>&1 || :
fi
exit 0
