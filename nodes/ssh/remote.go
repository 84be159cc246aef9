package ssh

// The node-side half of the executor: POSIX sh run by /bin/sh on the node,
// as root (or through sudo -n). Nothing is installed on a node; every
// command carries the functions it needs. Arguments arrive as positional
// parameters, each quoted by Quote, never spliced into the script text.
//
// Layout (mirrors nodes/local, see README.md): <state_dir>/<node>/<job>.<step>.r<run>/
//   shepherd    root  {"pid","start_ticks","uid","gid","started","run"} of the wrapper
//   terminate   root  grace of a pending Terminate, in nanoseconds
//   limit       root  a moved time limit in seconds from the start (SetTimeLimit; USR1 to the wrapper)
//   wrapper.err root  the wrapper's own stderr (diagnostics of a failed start)
//   user/       the job's user, 0700
//     run       root-generated: cd, exact environment, exec of the script
//     script    the batch script, 0700
//     pid       wrapper: the job's process group id, in place of the blanks
//               it reserved before starting the job (blank: never started)
//     timedout  wrapper: present once the time limit fired
//     status    wrapper, atomically: {"exit_code","signal","timed_out","pid","started","ended","err"}

// shLib holds the functions shared by the commands below.
//
// alive D: the wrapper named by D/shepherd still runs (same pid and start
// time, not a zombie) and was started for the run D is named for (its
// "run"; a name without a run is a step of a horad that did not number
// runs); sets wp and rec, and otherrun when the record is of another run.
// pidfile D: sets _q to the digits D/user/pid starts with (the job's
// process group; none while it holds the blanks reserved before the job
// started); false when there are none or the file is not a regular file.
// jobpg D WP: sets pg to the job's process group from D/user/pid, only if
// the kernel confirms it is a group led by a child of WP (the file is the
// user's to edit, so it is never trusted alone).
// report D NAME ALL: one line per ended step, "E NAME <status json>" or
// "L NAME <pgid> <reason>" (pgid 0: the job's process never started); with
// ALL=1 also "R NAME <pgid> <shepherd json>".
// scope WP: sets sp to the cgroup.procs of WP's systemd scope, only if WP
// is in a hora-job-*.scope (launched under systemd-run); the kernel's
// /proc/WP/cgroup says where, and only root may move a process out.
// sigscope SIG WP: sends SIG to every process of WP's scope outside WP's
// own process group (the wrapper and its timers), so that processes the job
// moved to sessions of their own are reached too. Only root can move a
// process into a cgroup, so every member descends from the wrapper.
// unitgone UNIT: kills what is left in a step's scope and stops it (a
// scope outlives its step while a process that left the job's group runs).
// gpuallow: the systemd properties that deny the GPUs not given (below).
// cpuset NAME CPUS MODE: the step's cgroup v1 cpuset group where systemd
// does not pin its CPUs (sets cg, empty when none is needed).
const shLib = `
nl='
'
alive() {
	wp= rec= otherrun=
	[ -f "$1/shepherd" ] || return 1
	IFS= read -r rec < "$1/shepherd" || [ -n "$rec" ] || return 1
	case ${1##*/} in
	*.r*)
		_r=0
		case $rec in *'"run":'*) _r=${rec#*\"run\":}; _r=${_r%%[!0-9]*};; esac
		[ "$_r" = "${1##*.r}" ] || { otherrun=$_r; return 1; }
		;;
	esac
	_p=${rec#*\"pid\":}; _p=${_p%%[!0-9]*}
	_t=${rec#*\"start_ticks\":}; _t=${_t%%[!0-9]*}
	[ -n "$_p" ] && [ "$_p" -gt 1 ] || return 1
	_s=
	IFS= read -r _s 2>/dev/null < "/proc/$_p/stat" || [ -n "$_s" ] || return 1
	_s=${_s##*") "}
	set -- $_s
	[ "$1" != Z ] && [ "${20}" = "$_t" ] || return 1
	wp=$_p
}
pidfile() {
	_q=
	[ -f "$1/user/pid" ] && [ ! -L "$1/user/pid" ] || return 1
	_q=$(dd if="$1/user/pid" iflag=nonblock,nofollow bs=32 count=1 2>/dev/null)
	_q=${_q%%[!0-9]*}
	[ -n "$_q" ]
}
jobpg() {
	pg=
	_w=$2
	pidfile "$1" || return 1
	[ "$_q" -gt 1 ] || return 1
	_s=
	IFS= read -r _s 2>/dev/null < "/proc/$_q/stat" || [ -n "$_s" ] || return 1
	_s=${_s##*") "}
	set -- $_s
	[ "$2" = "$_w" ] && [ "$3" = "$_q" ] || return 1
	pg=$_q
}
ended() {
	[ -f "$1/user/status" ] && [ ! -L "$1/user/status" ] || return 1
	printf 'E %s ' "$2"
	dd if="$1/user/status" iflag=nonblock,nofollow bs=65536 count=1 2>/dev/null | tr '\n\r' '  '
	echo
}
scope() {
	sp= sg=
	while IFS=: read -r _n _c _g; do
		case $_g in */hora-job-*.scope) ;; *) continue;; esac
		for _m in /sys/fs/cgroup /sys/fs/cgroup/unified /sys/fs/cgroup/systemd; do
			if [ -f "$_m$_g/cgroup.procs" ]; then sp=$_m$_g/cgroup.procs sg=$_g; return 0; fi
		done
	done <<EOF
$(cat "/proc/$1/cgroup" 2>/dev/null)
EOF
	return 1
}
sigscope() {
	scope "$2" || return 0
	for _q in $(cat "$sp" 2>/dev/null); do
		_s=
		IFS= read -r _s 2>/dev/null < "/proc/$_q/stat" || continue
		_s=${_s##*") "}
		set -- "$1" "$2" $_s
		[ "$5" != "$2" ] || continue
		# Still in the scope (not a reused pid): checked just before the kill.
		case "$nl$(cat "/proc/$_q/cgroup" 2>/dev/null)$nl" in
		*":$sg$nl"*) kill -s "$1" "$_q" 2>/dev/null;;
		esac
	done
	return 0
}
rmgroup() {
	# A cgroup v1 group of a step: what is left in it is killed, as at a
	# step's end; the group (and its node's, when empty) removed.
	_i=0
	while [ -d "$1" ] && [ "$_i" -lt 50 ]; do
		for _q in $(cat "$1/cgroup.procs" 2>/dev/null); do kill -s KILL "$_q" 2>/dev/null; done
		rmdir -- "$1" 2>/dev/null || sleep 0.1
		_i=$((_i+1))
	done
	rmdir -- "${1%/*}" 2>/dev/null
	return 0
}
cpuset() {
	# cg: the cgroup v1 cpuset group $1 (below the node's hora-node
	# group) with CPUs $2, where systemd does not pin them: no systemd
	# ($3 = setsid), or a hybrid or legacy one (AllowedCPUs= is v2 only in
	# systemd 252). Empty when not needed; status 1 when it cannot be made.
	cg=
	[ -n "$2" ] && [ -f /sys/fs/cgroup/cpuset/cpuset.cpus ] || return 0
	[ "$3" = setsid ] || [ ! -f /sys/fs/cgroup/cgroup.controllers ] || return 0
	_c=/sys/fs/cgroup/cpuset/hora-node-$(printf '%s' "$nd" | cksum | cut -d' ' -f1)
	# A new cpuset group has no CPUs or memory nodes: the node's group
	# takes the machine's, the step's its own CPUs and every memory node.
	mkdir -p -- "$_c/$1" || return 1
	[ -n "$(cat "$_c/cpuset.cpus")" ] || cat /sys/fs/cgroup/cpuset/cpuset.cpus > "$_c/cpuset.cpus" || return 1
	[ -n "$(cat "$_c/cpuset.mems")" ] || cat /sys/fs/cgroup/cpuset/cpuset.mems > "$_c/cpuset.mems" || return 1
	echo "$2" > "$_c/$1/cpuset.cpus" && cat "$_c/cpuset.mems" > "$_c/$1/cpuset.mems" || return 1
	cg=$_c/$1
}
gpunode() {
	# gn: the device nodes of NVIDIA GPU $1 (char 195:$1), /dev/nvidia$1
	# or else every other under /dev (any one that stays is enough);
	# systemd's DeviceAllow= takes a path.
	gn=
	_x=c3:$(printf %x "$1")
	if [ -c "/dev/nvidia$1" ] && [ "$(stat -c %t:%T "/dev/nvidia$1" 2>/dev/null)" = "$_x" ]; then gn=/dev/nvidia$1; return 0; fi
	gn=$(find /dev -xdev -type c -exec stat -c '%t:%T %n' {} + 2>/dev/null | sed -n "s|^$_x \(/dev/[^ ]*\)\$|\1|p")
	[ -n "$gn" ]
}
gpuallow() {
	# Under systemd a device list is an allow-list once set: the GPUs not
	# given ($dg) are denied by allowing everything else, every char
	# group of /proc/devices but NVIDIA's (major 195), every block device,
	# nvidiactl and the GPUs given ($ag). Appended to pargs; expand it
	# with set -f (block-* is systemd's pattern, not the shell's).
	pargs="$pargs -p DevicePolicy=auto -p DeviceAllow=block-*"
	_b=
	while read -r _m _n; do
		case $_m in Block) _b=1;; esac
		[ -z "$_b" ] || continue
		case $_m in ''|*[!0-9]*|195) continue;; esac
		case $_n in ''|*[!A-Za-z0-9/_.:+-]*) continue;; esac
		pargs="$pargs -p DeviceAllow=char-$_n"
	done < /proc/devices
	[ ! -c /dev/nvidiactl ] || pargs="$pargs -p DeviceAllow=/dev/nvidiactl"
	for _g in $(printf '%s' "$ag" | tr ',' ' '); do
		if gpunode "$_g"; then
			for _n in $gn; do pargs="$pargs -p DeviceAllow=$_n"; done
		fi
	done
}
unitgone() {
	case $1 in hora-job-*.scope) ;; *) return 0;; esac
	[ -e "/run/systemd/transient/$1" ] || return 0
	systemctl kill --signal=KILL -- "$1" >/dev/null 2>&1
	systemctl stop -- "$1" >/dev/null 2>&1
	return 0
}
report() {
	ended "$1" "$2" && return 0
	if alive "$1"; then
		[ "$3" = 1 ] || return 0
		_r=$rec
		jobpg "$1" "$wp" || pg=0
		printf 'R %s %s %s\n' "$2" "$pg" "$_r"
		return 0
	fi
	ended "$1" "$2" && return 0
	# The job's process group, if the wrapper started the job: a step lost
	# with none never ran (recovery requeues it whatever its --no-requeue).
	_lp=
	if [ -z "$otherrun" ] && pidfile "$1"; then _lp=$_q; fi
	if [ -n "$otherrun" ]; then
		echo "L $2 0 the wrapper record is of run $otherrun, not of this step's run"
	elif [ -e "$1/user/status" ]; then
		echo "L $2 ${_lp:-0} the status file is not a regular file"
	elif [ -f "$1/shepherd" ]; then
		echo "L $2 ${_lp:-0} the step's wrapper ended without recording its exit status"
	else
		echo "L $2 ${_lp:-0} no wrapper record"
	fi
}
`

// shLaunch prepares the step directory, writes the run file (first stdin
// line, printf %b encoded) and the script (rest of stdin, through cat),
// starts the wrapper in its own session as the job's user and waits for its
// handshake. Args: NODEDIR NAME UID GID MODE UNIT STARTED WRAPPER RUN PROPS
// MIX, then the wrapper's own arguments; PROPS is ";"-separated systemd
// properties of the scope (the step's AllowedCPUs, MemoryMax,
// MemorySwapMax), words without blanks, or "-" for none; MIX is
// "RTW,BEW,class" ([mix] ps: the slices' CPUWeight and the step's class,
// rt or be) or "-". Prints "launched PID" or "error: ...".
const shLaunch = `
nd=$1 name=$2 uid=$3 gid=$4 mode=$5 unit=$6 started=$7 W=$8 run=$9 props=${10} mix=${11}
shift 11
pargs= dg= ag=
if [ "$props" != - ]; then
	set -f; _ifs=$IFS; IFS=';'
	for _p in $props; do
		case $_p in
		HoraDenyGPUs=*) dg=${_p#HoraDenyGPUs=};; # not systemd's: gpuallow or the devices group below
		HoraAllowGPUs=*) ag=${_p#HoraAllowGPUs=};;
		*) pargs="$pargs -p $_p";;
		esac
	done
	IFS=$_ifs; set +f
fi
d=$nd/$name u=$nd/$name/user
umask 022
if [ ! -d "$nd" ]; then
	mkdir -p -- "$nd" && chmod 0755 -- "$nd" || { echo "error: cannot create $nd"; exit 1; }
fi
if [ -e "$d" ]; then
	if [ ! -e "$u/status" ] && alive "$d"; then echo "error: step $name is already running (wrapper pid $wp)"; exit 4; fi
	rm -rf -- "$d" || { echo "error: cannot remove the old $d"; exit 1; }
fi
mkdir -m 0755 -- "$d" && mkdir -m 0700 -- "$u" || { echo "error: cannot create $d"; exit 1; }
hdr=
IFS= read -r hdr || { echo "error: no run file on stdin"; rm -rf -- "$d"; exit 1; }
printf '%b' "$hdr" > "$u/run" && cat > "$u/script" && chmod 0700 "$u/script" ||
	{ echo "error: cannot write the script into $u"; rm -rf -- "$d"; exit 1; }
if [ "$uid" != 0 ] || [ "$gid" != 0 ]; then
	chown "$uid:$gid" "$u" "$u/run" "$u/script" || { echo "error: cannot give $u to $uid:$gid"; rm -rf -- "$d"; exit 1; }
fi
if [ "$mode" = auto ]; then
	mode=setsid
	[ -d /run/systemd/system ] && command -v systemd-run >/dev/null 2>&1 && mode=systemd
fi
if [ "$mix" != - ]; then
	# [mix] ps: the step's scope goes into its class's slice, whose weight
	# is set first (idempotent; the slice need not exist yet).
	[ "$mode" = systemd ] || { echo "error: [mix] needs systemd on the node to enforce the ratio (launcher $mode)"; rm -rf -- "$d"; exit 1; }
	rtw=${mix%%,*} _r=${mix#*,}; bew=${_r%%,*} cls=${_r#*,}
	systemctl set-property --runtime hora-rt.slice "CPUWeight=$rtw" &&
		systemctl set-property --runtime hora-be.slice "CPUWeight=$bew" ||
		{ echo "error: cannot set the CPUWeight of hora-rt.slice and hora-be.slice"; rm -rf -- "$d"; exit 1; }
	pargs="$pargs --slice=hora-$cls.slice"
fi
if [ "$mode" = systemd ]; then
	# A scope of the same name still loaded holds what an earlier run of
	# this step left behind (its wrapper is gone, checked above): systemd
	# would refuse the name.
	unitgone "$unit.scope"
	echo "$unit.scope" > "$d/unit"
	[ -z "$dg" ] || gpuallow
	# The scope's memory group holds the step's oom_kill count: the
	# wrapper, in it, reads its own at the end.
	case ";$props;" in *";MemoryMax="*) echo scope > "$d/memcg";; esac
fi
# Without systemd, a step's memory is enforced with a cgroup v1 memory
# group where the node has that hierarchy (limit = memsw: no swap), and the
# wrapper reads its oom_kill count at the end (d/memcg names it).
mg=
if [ "$mode" = setsid ] && [ -f /sys/fs/cgroup/memory/cgroup.procs ]; then
	case ";$props;" in
	*";MemoryMax="*)
		mb=${props#*MemoryMax=}; mb=${mb%%;*}
		mg=/sys/fs/cgroup/memory/hora-node-$(printf '%s' "$nd" | cksum | cut -d' ' -f1)/$name
		{ mkdir -p -- "$mg" && echo "$mb" > "$mg/memory.limit_in_bytes" &&
			{ [ ! -f "$mg/memory.memsw.limit_in_bytes" ] || echo "$mb" > "$mg/memory.memsw.limit_in_bytes"; } &&
			echo "$mg" > "$d/memcg"; } || { echo "error: cannot set up the memory cgroup $mg"; rm -rf -- "$d"; exit 1; }
		;;
	esac
fi
# Without systemd, the GPUs of the node the step was not given are denied
# with a cgroup v1 devices group (NVIDIA's major 195, minor = index), as on
# a local node; forget removes it (d/devcg names it).
dgp=
if [ "$mode" = setsid ] && [ -n "$dg" ]; then
	[ -f /sys/fs/cgroup/devices/devices.deny ] ||
		{ echo "error: the step has GPUs to isolate, and the cgroup v1 devices hierarchy is not mounted"; rm -rf -- "$d"; exit 1; }
	dgp=/sys/fs/cgroup/devices/hora-node-$(printf '%s' "$nd" | cksum | cut -d' ' -f1)/$name
	_ok=
	if mkdir -p -- "$dgp" && echo "$dgp" > "$d/devcg"; then
		_ok=1
		for _g in $(printf '%s' "$dg" | tr ',' ' '); do
			echo "c 195:$_g rwm" > "$dgp/devices.deny" || _ok=
		done
	fi
	[ -n "$_ok" ] || { echo "error: cannot set up the devices cgroup $dgp"; rm -rf -- "$d"; exit 1; }
fi
# The step's CPUs, where systemd does not pin them: a cgroup v1 cpuset
# group (d/cpucg names it) the wrapper is started in.
cpus=
case ";$props;" in *";AllowedCPUs="*) cpus=${props#*AllowedCPUs=}; cpus=${cpus%%;*};; esac
if ! cpuset "$name" "$cpus" "$mode"; then echo "error: cannot set up the cpuset group of CPUs $cpus"; rm -rf -- "$d"; exit 1; fi
[ -z "$cg" ] || echo "$cg" > "$d/cpucg"
# The wrapper record's space is taken before the wrapper starts (and the
# record written in place once it has): on a full disk a wrapper whose
# record could not be written ran its job with horad told the launch had
# failed, so nothing watched it and its CPUs went to other jobs.
printf '%255s\n' '' > "$d/shepherd.tmp" ||
	{ echo "error: cannot write the wrapper record into $d"; rm -rf -- "$d"; exit 1; }
set -f
hs=$(
	if [ "$mode" = systemd ]; then
		(exec setsid /bin/sh -c '[ -z "$1" ] || echo $$ > "$1/cgroup.procs" || exit 1; shift; exec "$@"' hora-join "$cg" \
			systemd-run --scope --quiet --collect $pargs --unit="$unit" -- \
			setpriv --reuid="$uid" --regid="$gid" --init-groups -- /bin/sh -c "$W" hora-wrapper "$d" "$@" \
			</dev/null 2>"$d/wrapper.err") &
	else
		(exec setsid /bin/sh -c 'for g in "$1" "$2" "$3"; do [ -z "$g" ] || echo $$ > "$g/cgroup.procs" || exit 1; done; shift 3; exec "$@"' hora-join "$mg" "$dgp" "$cg" \
			setpriv --reuid="$uid" --regid="$gid" --init-groups -- /bin/sh -c "$W" hora-wrapper "$d" "$@" \
			</dev/null 2>"$d/wrapper.err") &
	fi
	p=$! t=0 s=
	if IFS= read -r s 2>/dev/null < "/proc/$p/stat"; then s=${s##*") "}; set -- $s; t=${20}; fi
	echo "pid $p $t"
)
ok= p= t=0
while read -r a b c; do
	case $a in ok) ok=1;; pid) p=$b t=$c;; esac
done <<HS
$hs
HS
if [ -z "$ok" ] || [ -z "$p" ]; then
	if jobpg "$d" "$p"; then kill -s KILL -- "-$pg" 2>/dev/null; fi
	msg=$(head -c 2000 "$d/wrapper.err" 2>/dev/null | tr '\n' ' ')
	rm -rf -- "$d"
	echo "error: the step's wrapper did not start ($mode): ${msg:-no message}"
	exit 1
fi
printf '{"pid":%d,"start_ticks":%s,"uid":%d,"gid":%d,"started":"%s","run":%d}\n' "$p" "${t:-0}" "$uid" "$gid" "$started" "$run" 1<>"$d/shepherd.tmp" &&
	mv -f "$d/shepherd.tmp" "$d/shepherd" || { echo "error: cannot record the wrapper"; exit 1; }
echo "launched $p"
`

// shWrapper supervises one step as the job's user, like the shepherd of
// nodes/local: it opens the job's files, starts the job in its own session,
// says "ok" on stdout (the launcher's handshake pipe), enforces the time
// limit and records how the job ended. Args: STEPDIR LIMIT KILLWAIT APPEND
// (0, 1 or shared) OUT ERR IN WORKDIR (seconds, rounded up).
const shWrapper = `
d=$1 limit=$2 killwait=$3 append=$4 out=$5 err=$6 in=$7 wd=$8
u=$d/user pid=0 timers= lt= ef=
umask 022
cd / || exit 1
now() { date -u +%Y-%m-%dT%H:%M:%S.%NZ; }
esc() { printf '%s' "$1" | tr '\n\r\t' '   ' | sed 's/\\/\\\\/g; s/"/\\"/g'; }
record() {
	_e=
	[ -z "$4" ] || _e=$(esc "$4")
	printf '{"exit_code":%d,"signal":%d,"timed_out":%s,"oom":%s,"pid":%d,"started":"%s","ended":"%s","err":"%s"}\n' \
		"$1" "$2" "$3" "${oomj:-false}" "$pid" "$started" "$(now)" "$_e" > "$u/status.tmp" &&
		sync "$u/status.tmp" 2>/dev/null
	mv -f "$u/status.tmp" "$u/status"
}
fail() {
	[ -z "$ef" ] || printf 'hora: error: %s\n' "$1" >&4
	record 1 0 false "$1"
	echo ok
	exit 0
}
why() {
	if [ -d "$1" ]; then echo "is a directory"
	elif [ ! -d "$(dirname -- "$1")" ]; then echo "no such file or directory"
	else echo "permission denied"; fi
}
started=$(now) t0=$(date +%s)
# USR1 says that horad left a new limit in $d/limit; it is passed on to
# the limit watcher (below), which reads the file once it runs.
trap 'kill -s WINCH "$lt" 2>/dev/null' USR1
[ -n "$out" ] || out=/dev/null
# append=shared (another step writes the same file: a divisible job's
# chunks): truncated, then opened again appending, so that every write
# goes to the end and none overwrites a line another step appended.
openout() {
	case $append in
	1) command exec 3>>"$1";;
	shared) command exec 3>"$1" && command exec 3>>"$1";;
	*) command exec 3>"$1";;
	esac
}
openerr() {
	case $append in
	1) command exec 4>>"$1";;
	shared) command exec 4>"$1" && command exec 4>>"$1";;
	*) command exec 4>"$1";;
	esac
}
openout "$out" || fail "cannot open output file $out: $(why "$out")"
if [ -z "$err" ] || [ "$err" = "$out" ]; then
	exec 4>&3
else openerr "$err"; fi ||
	fail "cannot open error file $err: $(why "$err")"
ef=1
[ -n "$in" ] || in=/dev/null
if ! command exec 5<"$in"; then
	if [ -e "$in" ]; then fail "cannot open input file $in: permission denied"; fi
	fail "cannot open input file $in: no such file or directory"
fi
if [ -n "$wd" ]; then
	if [ ! -e "$wd" ]; then fail "cannot chdir to working directory $wd: no such file or directory"
	elif [ ! -d "$wd" ]; then fail "cannot chdir to working directory $wd: not a directory"
	elif [ ! -x "$wd" ]; then fail "cannot chdir to working directory $wd: permission denied"; fi
fi
# The pid file's space is taken before the job starts, and the pid written
# in place once it has: a full disk then stops the job from starting rather
# than leaving a job that ran without a record of it (the same fault as on
# local nodes, docs/robustness.md).
printf '%31s\n' '' > "$u/pid" || fail "cannot record the job's pid"
setsid /bin/sh "$u/run" <&5 >&3 2>&4 3>&- 4>&- 5>&- &
pid=$!
exec 3>&- 4>&- 5>&-
ef=
printf '%s\n' "$pid" 1<>"$u/pid" || { kill -s KILL -- "-$pid"; wait "$pid"; fail "cannot record the job's pid"; }
echo ok
exec >/dev/null
# timer SECONDS ACTION runs ACTION after SECONDS unless stopped first.
timer() {
	( trap 'kill -s KILL "$!" 2>/dev/null; exit 0' TERM
	  sleep "$1" & sp=$!
	  wait "$sp" || exit 0
	  eval "$2" ) 2>/dev/null &
	timers="$timers $!"
}
endjob() {
	kill -s TERM -- "-$pid" 2>/dev/null
	kill -s CONT -- "-$pid" 2>/dev/null
	timer "$1" 'kill -s KILL -- "-$pid"'
}
trap 'endjob "$killwait"' TERM
trap '' HUP INT
# The limit watcher, one process: it sleeps until the time limit, counted
# from the start (t0): the launch limit (0: none), or the one horad last
# left in $d/limit (SetTimeLimit: a resumed job's suspended time does not
# count). At the limit: TERM and CONT to the job's group, KILL after
# killwait. A new limit comes as WINCH, whose default is to be ignored, so
# one that arrives before the watcher's trap is set cannot kill it; the
# watcher reads the file after setting the trap, and again after each
# sleep it starts, so no limit written before a signal is missed.
# Traps only stop the sleep and decide nothing: in dash a trap run while
# another trap's command runs sets $? to what it was before the outer
# trap, so an && or || inside a trap can take the wrong branch (a USR1
# handler that rearmed a timer itself killed jobs long before their
# limit under a storm of USR1s; TestMovedLimitHoldsUnderSignals).
# Its sleeps (and a timer's) are killed with KILL: a TERM that reaches the
# forked child before it has exec'd sleep is taken by the shell's handler
# still installed there and lost, and the sleep lived on for a day (in a
# step's systemd scope, holding it): 5-10 % of steps that end at once
# (TestStepEndLeavesNoWatcherSleep). The TERM trap kills $!, which is the
# sleep from its fork on ($sp is set a moment later). The helpers run as
# the job's owner, so a stale pid could only name one of its processes.
limitread() {
	_l=$(cat "$d/limit" 2>/dev/null)
	case $_l in ''|*[!0-9]*) ;; *) L=$_l;; esac
}
( trap 'kill -s KILL "$sp" 2>/dev/null' WINCH
  trap 'kill -s KILL "$!" 2>/dev/null; exit 0' TERM
  L=$limit sp=
  limitread
  while :; do
	if [ "$L" -gt 0 ]; then
		_n=$(date +%s)
		case $_n in ''|*[!0-9]*) sleep 1; continue;; esac
		_r=$((L - (_n - t0)))
		[ "$_r" -gt 0 ] || break
	else
		_r=86400
	fi
	sleep "$_r" & sp=$!
	_w=$L
	limitread
	[ "$L" != "$_w" ] || wait "$sp"
	kill -s KILL "$sp" 2>/dev/null
	limitread
  done
  trap '' WINCH
  : > "$u/timedout"
  kill -s TERM -- "-$pid"
  kill -s CONT -- "-$pid"
  sleep "$killwait" & sp=$!
  wait "$sp" || exit 0
  kill -s KILL -- "-$pid" ) 2>/dev/null &
lt=$!
timers="$timers $lt"
kill -s WINCH "$lt" 2>/dev/null
# wait returns early, with 128 + its number, when a trapped signal comes
# (USR1, TERM) while the job runs; a status above 128 is the job's own only
# once its process is gone. dash may have reaped it meanwhile and keeps its
# status for the next wait (which bash gives once: then 127).
while :; do
	wait "$pid"
	rc=$?
	[ "$rc" -gt 128 ] || break
	if ! kill -0 "$pid" 2>/dev/null; then
		wait "$pid"
		_s=$?
		[ "$_s" = 127 ] || rc=$_s
		break
	fi
done
for t in $timers; do kill -s TERM "$t" 2>/dev/null; done
kill -s KILL -- "-$pid" 2>/dev/null
sig=0
if [ "$rc" -gt 128 ] && [ "$rc" -le 192 ]; then sig=$((rc - 128)) rc=0; fi
to=false
[ ! -e "$u/timedout" ] || to=true
# A memory group (d/memcg, written by root: a v1 group, or "scope" for the
# systemd scope the wrapper runs in): the kernel's oom_kill count there
# makes the step OUT_OF_MEMORY, with slurmstepd's line in its error file
# (task/cgroup's text).
if [ -f "$d/memcg" ]; then
	_mg=$(cat "$d/memcg")
	if [ "$_mg" = scope ]; then
		` + shOwnOOMFile + `
	else
		of=$_mg/memory.oom_control
	fi
	_oom=
	[ -z "$of" ] || _oom=$(sed -n 's/^oom_kill //p' "$of" 2>/dev/null)
	if [ -n "$_oom" ] && [ "$_oom" -gt 0 ]; then
		oomj=true _ev=event _sid=${d##*/}
		[ "$_oom" = 1 ] || _ev=events
		_sid=${_sid%.r*}
		_ep=${err:-$out}
		if [ -n "$_ep" ]; then
			printf 'slurmstepd: error: Detected %s oom_kill %s in StepId=%s. Some of the step tasks have been OOM Killed.\n' "$_oom" "$_ev" "$_sid" >> "$_ep"
		fi
	fi
fi
record "$rc" "$sig" "$to" ""
# Last, with the end recorded: what is left of the wrapper's own helpers
# goes with its process group, which it leads (the job has a session of
# its own). A TERM can be lost in a forked dash before the child has set
# its trap or exec'd: a limit watcher that missed its TERM went on
# sleeping a day at a time, in the step's systemd scope, holding it
# (TestStepEndLeavesNoWatcherSleep: 1-7 of 60 steps that end at once).
_s=
IFS= read -r _s < "/proc/$$/stat"
_s=${_s##*") "}
set -- $_s
[ "$3" != $$ ] || kill -s KILL -- "-$$"
`

// shOwnOOMFile sets of to the file that counts the kernel's OOM kills in
// the calling shell's own memory group (a systemd scope): the v1
// memory.oom_control, or the v2 memory.events; both have "oom_kill N".
// Empty when the group has no memory controller.
const shOwnOOMFile = `of=
	while IFS=: read -r _n _c _g; do
		case ,$_c, in
		*,memory,*) [ ! -f "/sys/fs/cgroup/memory$_g/memory.oom_control" ] || of=/sys/fs/cgroup/memory$_g/memory.oom_control;;
		,,) [ -n "$of" ] || [ ! -f "/sys/fs/cgroup$_g/memory.events" ] || of=/sys/fs/cgroup$_g/memory.events;;
		esac
	done < /proc/self/cgroup`

// shReport reports the ended or lost steps among NAMES (Exits polling).
// Args: NODEDIR NAME...
const shReport = `
nd=$1
shift
for n in "$@"; do report "$nd/$n" "$n" 0; done
`

// shList reports every step of the node (Reattach). Args: NODEDIR.
const shList = `
nd=$1
[ -d "$nd" ] || exit 0
for d in "$nd"/*; do
	[ -d "$d" ] || continue
	report "$d" "${d##*/}" 1
done
`

// shSignal sends SIG to the step's process group. Args: NODEDIR NAME SIG.
// Exit 3: no such step; 4: not running; 5: no verified process group.
const shSignal = `
d=$1/$2
[ -e "$d" ] || exit 3
[ ! -e "$d/user/status" ] || exit 4
alive "$d" || exit 4
jobpg "$d" "$wp" || exit 5
kill -s "$3" -- "-$pg" || exit
sigscope "$3" "$wp"
`

// shSetLimit leaves a new limit (seconds from the step's start) for the
// wrapper and tells it with USR1. Args: NODEDIR NAME SECONDS.
// Exit 3: no such step; 4: not running.
const shSetLimit = `
d=$1/$2
[ -e "$d" ] || exit 3
[ ! -e "$d/user/status" ] || exit 4
alive "$d" || exit 4
printf '%s\n' "$3" > "$d/limit.tmp" && mv -f "$d/limit.tmp" "$d/limit" || exit 1
kill -s USR1 "$wp"
`

// shTerminate records the grace, sends TERM (and CONT, so that a stopped
// job acts on it) to the step's group and leaves a detached root timer that
// sends KILL after the grace if the same step still runs, so the KILL
// happens even if horad goes away. Args: NODEDIR NAME GRACE_NS GRACE_S LIB.
// Exit 0 also when the step has already ended; 3: no such step; 4: lost.
const shTerminate = `
d=$1/$2
[ -e "$d" ] || exit 3
[ ! -e "$d/user/status" ] || exit 0
alive "$d" || exit 4
w=$wp
printf '%s\n' "$3" > "$d/terminate.tmp" && mv -f "$d/terminate.tmp" "$d/terminate" || exit 1
jobpg "$d" "$w" || exit 0
kill -s TERM -- "-$pg" 2>/dev/null
kill -s CONT -- "-$pg" 2>/dev/null
sigscope TERM "$w"
sigscope CONT "$w"
setsid /bin/sh -c "$5"'
sleep "$2"
[ ! -e "$1/user/status" ] && alive "$1" && jobpg "$1" "$wp" || exit 0
kill -s KILL -- "-$pg"
sigscope KILL "$wp"
' hora-killer "$d" "$4" </dev/null >/dev/null 2>&1 &
exit 0
`

// shForget removes an ended step and its staged data. Args: NODEDIR NAME.
// Exit 4: running.
const shForget = `
d=$1/$2
rm -f -- "$1/staged/$2" "$1/staged/$2.tmp"
[ -e "$d" ] || exit 0
if [ ! -e "$d/user/status" ] && alive "$d"; then exit 4; fi
if [ -f "$d/unit" ] && [ ! -L "$d/unit" ]; then
	IFS= read -r un < "$d/unit" && unitgone "$un"
fi
if [ -f "$d/memcg" ] && [ ! -L "$d/memcg" ] && IFS= read -r mg < "$d/memcg"; then
	case $mg in /sys/fs/cgroup/memory/hora-node-*/*) rmgroup "$mg";; esac
fi
if [ -f "$d/devcg" ] && [ ! -L "$d/devcg" ] && IFS= read -r dgp < "$d/devcg"; then
	case $dgp in /sys/fs/cgroup/devices/hora-node-*/*) rmgroup "$dgp";; esac
fi
if [ -f "$d/cpucg" ] && [ ! -L "$d/cpucg" ] && IFS= read -r cg < "$d/cpucg"; then
	case $cg in /sys/fs/cgroup/cpuset/hora-node-*/*) rmgroup "$cg";; esac
fi
rm -rf -- "$d"
`

// shProbe checks that a shell runs with the needed rights and that the
// node's state directory is usable. Args: NODEDIR.
const shProbe = `
[ -d "$1" ] || { mkdir -p -- "$1" && chmod 0755 -- "$1"; } || { echo "cannot create $1"; exit 1; }
[ -w "$1" ] || { echo "$1 is not writable"; exit 1; }
echo hora-probe-ok
echo "os $(uname -s -r -v 2>/dev/null)"
grep '^btime ' /proc/stat 2>/dev/null
`
