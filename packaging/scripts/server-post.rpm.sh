#!/bin/sh
# hora-server %post (RPM): what %systemd_post does (the preset decides
# whether the units are enabled), then start the socket on a first install.
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || :
	if [ "$1" -eq 1 ]; then
		systemctl preset horad.socket horad.service >/dev/null 2>&1 || :
		systemctl start horad.socket >/dev/null 2>&1 || :
	fi
else
	echo "hora-server: systemd is not running here, so horad was not started; the client commands work." >&2
fi
exit 0
