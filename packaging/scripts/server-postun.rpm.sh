#!/bin/sh
# hora-server %postun (RPM): reload systemd; on an upgrade restart horad
# (%systemd_postun_with_restart), which re-attaches the running jobs.
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || :
	if [ "$1" -ge 1 ]; then
		systemctl try-restart horad.service >/dev/null 2>&1 || :
	fi
fi
exit 0
