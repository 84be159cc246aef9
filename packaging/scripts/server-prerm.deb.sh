#!/bin/sh
# hora-server prerm (Debian): stop horad before its files go. Jobs started
# by horad keep running; a later installation re-attaches them.
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
	deb-systemd-invoke stop horad.socket horad.service >/dev/null || true
fi
exit 0
