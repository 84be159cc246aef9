package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"hora/nodes"
)

// taskUnit names the scope of one task: the step's unit name plus the task.
func taskUnit(spec nodes.TaskSpec) string {
	return unitName(spec.Key) + "-t" + strconv.Itoa(spec.Task)
}

// shTask runs one task in its session: in its own systemd scope where
// systemd runs (AllowedCPUs/MemoryMax from props), as the job's owner
// (setpriv), in its working directory (entered as the owner, so a
// directory the owner cannot enter is refused), with exactly the given
// environment and default signal dispositions. Its stdout and stderr are
// the session's, and so is its stdin when $6 is 1 or pty (else /dev/null). The
// task runs in the background of this (root) shell, which records its pid
// in $7 (root's, under the node's state directory) while it runs, so that
// signalTask can reach it, and removes the record once it has reaped it.
// A task killed by signal N is reported by the shell killing itself with
// N, so sshd sends exit-signal rather than exit-status 128+N.
//
// Without systemd, a step with its own --mem ($8 bytes, 0 for none) puts
// its tasks on the node in one cgroup v1 memory group, $9 under the
// node's hora-node group (limit = memsw: no swap): this root shell joins
// it before it starts the task, which inherits it; stepMemEnd reads its
// oom_kill count and removes it at the step's end.
//
// Likewise the node's GPUs the job was not given (HoraDenyGPUs= in props,
// taken out of systemd's properties) are denied with a cgroup v1 devices
// group of the same name, joined the same way.
//
// $1 uid, $2 gid, $3 unit, $4 props ("-" for none), $5 workdir, $6 stdin
// (1, 0, or pty: the session's pty), $7 pid file, $8 step memory, $9 the
// node's state directory, ${10} the step's group name, then the environment
// entries, then argv (whose first word has no "=", or env would take it for
// one more entry: RunTask refuses such a program name).
const shTask = `
KEEP='o=$1; shift
` + shOwnOOMFile + `
echo "$of" > "$o"
(sleep 2147483647 </dev/null >/dev/null 2>&1 &)
exec "$@"'
uid=$1 gid=$2 unit=$3 props=$4 dir=$5 input=$6 pidf=$7 smem=$8 nd=$9 sname=${10}
shift 10
pargs= dg= ag=
if [ "$props" != - ]; then
	set -f; _ifs=$IFS; IFS=';'
	for _p in $props; do
		case $_p in
		HoraDenyGPUs=*) dg=${_p#HoraDenyGPUs=};;
		HoraAllowGPUs=*) ag=${_p#HoraAllowGPUs=};;
		*) pargs="$pargs -p $_p";;
		esac
	done
	IFS=$_ifs; set +f
fi
run= keep= oomf=
if [ -d /run/systemd/system ] && command -v systemd-run >/dev/null 2>&1; then
	unitgone "$unit.scope"
	[ -z "$dg" ] || gpuallow
	run="systemd-run --scope --quiet --collect $pargs --unit=$unit --"
	# A scope with a memory bound (the step's --mem, or the job's): a root
	# shell in it records where the scope counts OOM kills ($oomf) and
	# leaves a sleeper (not the task's child) that holds the scope after
	# the task, so that the count is read here before systemd removes the
	# group.
	case ";$props;" in *";MemoryMax="*) keep=1 oomf=${pidf%.pid}.oomf;; esac
elif [ "$smem" != 0 ] && [ -f /sys/fs/cgroup/memory/cgroup.procs ]; then
	mg=/sys/fs/cgroup/memory/hora-node-$(printf '%s' "$nd" | cksum | cut -d' ' -f1)/$sname
	{ mkdir -p -- "$mg" && echo "$smem" > "$mg/memory.limit_in_bytes" &&
		{ [ ! -f "$mg/memory.memsw.limit_in_bytes" ] || echo "$smem" > "$mg/memory.memsw.limit_in_bytes"; } &&
		echo $$ > "$mg/cgroup.procs"; } ||
		{ echo "slurmstepd: error: cannot set up the step's memory cgroup $mg" >&2; exit 1; }
fi
# The step's CPUs where systemd does not pin them: the tasks of the step
# on this node share a cgroup v1 cpuset group, which this shell joins
# (under systemd, the task's scope leaves cpuset v1 alone).
cpus=
case ";$props;" in *";AllowedCPUs="*) cpus=${props#*AllowedCPUs=}; cpus=${cpus%%;*};; esac
_m=setsid
[ -z "$run" ] || _m=systemd
{ cpuset "$sname" "$cpus" "$_m" && { [ -z "$cg" ] || echo $$ > "$cg/cgroup.procs"; }; } ||
	{ echo "slurmstepd: error: cannot set up the step's cpuset group of CPUs $cpus" >&2; exit 1; }
if [ -z "$run" ] && [ -n "$dg" ]; then
	[ -f /sys/fs/cgroup/devices/devices.deny ] ||
		{ echo "slurmstepd: error: the step has GPUs to isolate, and the cgroup v1 devices hierarchy is not mounted" >&2; exit 1; }
	dgp=/sys/fs/cgroup/devices/hora-node-$(printf '%s' "$nd" | cksum | cut -d' ' -f1)/$sname
	_ok=
	if mkdir -p -- "$dgp"; then
		_ok=1
		for _g in $(printf '%s' "$dg" | tr ',' ' '); do
			echo "c 195:$_g rwm" > "$dgp/devices.deny" || _ok=
		done
		echo $$ > "$dgp/cgroup.procs" || _ok=
	fi
	[ -n "$_ok" ] || { echo "slurmstepd: error: cannot set up the step's devices cgroup $dgp" >&2; exit 1; }
fi
# An asynchronous command's stdin is /dev/null before its redirections are
# applied: the session's stdin goes through fd 3.
if [ "$input" = 0 ]; then exec 3</dev/null; else exec 3<&0; fi
mkdir -p -- "${pidf%/*}"
set -f
$run ${keep:+/bin/sh -c "$KEEP" hora-keep "$oomf"} setpriv --reuid="$uid" --regid="$gid" --init-groups -- /bin/sh -c '
	cd -- "$1" 2>/dev/null || { printf "slurmstepd: error: couldn\047t chdir to \140%s\047: No such file or directory: going to /tmp instead\n" "$1" >&2; cd /tmp || exit 1; }
	shift
	if env --default-signal true 2>/dev/null; then ds=--default-signal; else ds=; fi
	exec env $ds -i "$@"
' hora-task "$dir" "$@" <&3 3<&- &
pid=$!
exec 3<&-
# On a pty (pty.go) this shell shares the terminal's foreground group
# with the task: ^C and ^\ typed there are the task's alone.
if [ "$input" = pty ]; then trap '' INT QUIT; fi
echo "$pid" > "$pidf.tmp" && mv -f -- "$pidf.tmp" "$pidf"
wait "$pid"; rc=$?
rm -f -- "$pidf"
if [ -n "$keep" ]; then
	# The scope's count joins the step's (stepMemEnd sums them); the
	# sleeper goes with the scope.
	_f=$(cat -- "$oomf" 2>/dev/null) _n=
	[ -z "$_f" ] || _n=$(sed -n 's/^oom_kill //p' "$_f" 2>/dev/null)
	case $_n in ''|0|*[!0-9]*) ;; *) echo "$_n" >> "$nd/tasks/$sname.oom";; esac
	rm -f -- "$oomf"
	unitgone "$unit.scope"
fi
if [ "$rc" -gt 128 ] && [ "$rc" -lt 160 ]; then
	trap - "$((rc-128))" 2>/dev/null
	kill -s "$((rc-128))" $$ 2>/dev/null
fi
exit "$rc"
`

// shSignalTask signals a running task by the pid its shell recorded: $1
// the pid file, $2 the signal's name. Exit 3: not recorded (not started
// yet, or ended).
const shSignalTask = `
[ -s "$1" ] || exit 3
kill -s "$2" "$(cat -- "$1")" 2>/dev/null || exit 3
`

// RunTask runs one task of a step on spec.Node over the node's pooled
// connection, copying its stdout and stderr to the writers as they come,
// and returns how it ended. Cancelling ctx kills the task's scope (where
// systemd runs; without systemd, closing the session leaves the task to
// its next write). Arguments and environment go to the node as quoted
// words; the owner's uid and gid are horad's record.
func (e *Executor) RunTask(ctx context.Context, spec nodes.TaskSpec, stdout, stderr io.Writer) (nodes.TaskExit, error) {
	h, err := e.host(spec.Node)
	if err != nil {
		return nodes.TaskExit{}, err
	}
	if len(spec.Argv) == 0 {
		return nodes.TaskExit{}, fmt.Errorf("task %d of step %s: no program", spec.Task, spec.Key.Name())
	}
	if strings.Contains(spec.Argv[0], "=") {
		return nodes.TaskExit{}, fmt.Errorf("task %d of step %s: program name %q contains \"=\"", spec.Task, spec.Key.Name(), spec.Argv[0])
	}
	for _, a := range append(append([]string{spec.WorkDir}, spec.Env...), spec.Argv...) {
		if err := checkNoNUL("task argument", a); err != nil {
			return nodes.TaskExit{}, err
		}
	}
	var env []string
	for _, kv := range spec.Env {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
			env = append(env, kv)
		}
	}
	c, err := h.conn(ctx, false)
	if err != nil {
		return nodes.TaskExit{}, err
	}
	sess, err := h.session(ctx, c)
	if err != nil {
		return nodes.TaskExit{}, err
	}
	defer sess.Close()
	sess.Stdout, sess.Stderr = stdout, stderr
	input := "0"
	if spec.Stdin != nil {
		sess.Stdin, input = spec.Stdin, "1"
	}
	var resize <-chan nodes.Winsize
	if spec.Pty != nil {
		if err := requestPty(sess, spec.Pty); err != nil {
			return nodes.TaskExit{}, &UnreachableError{h.node.Name, err}
		}
		input, resize = "pty", spec.Pty.Resize
	}
	unit := taskUnit(spec)
	pidf := path.Join(h.dir, "tasks", unit+".pid")
	mem := spec.MemMB
	if spec.StepMemMB > 0 && (mem == 0 || spec.StepMemMB < mem) {
		mem = spec.StepMemMB // under systemd: per task (docs/steps.md)
	}
	args := []string{strconv.FormatUint(uint64(spec.UID), 10), strconv.FormatUint(uint64(spec.GID), 10),
		unit, scopeProps(nodes.LaunchSpec{CPUs: spec.CPUs, MemMB: mem, GPUs: spec.GPUs, NodeGPUs: spec.NodeGPUs}), orRoot(spec.WorkDir), input, pidf,
		strconv.FormatInt(max(spec.StepMemMB, 0)<<20, 10), h.dir, stepMemGroup(spec.Key)}
	args = append(append(args, env...), spec.Argv...)
	done := make(chan error, 1)
	go func() { done <- sess.Run(h.command(shTask, args)) }()
	err = nil
wait:
	select {
	case err = <-done:
	case sig := <-spec.Signals:
		if name := signame(sig); name != "" {
			go h.signalTask(ctx, pidf, name)
		}
		goto wait
	case ws := <-resize:
		_ = sess.WindowChange(ws.Rows, ws.Cols)
		goto wait
	case <-ctx.Done():
		// The task outlives the closed session unless its scope is
		// killed: on a fresh context, bounded.
		kctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h.run(kctx, h.ops, false, `unitgone "$1"`, nil, unit+".scope")
		sess.Close()
		return nodes.TaskExit{}, ctx.Err()
	}
	var ee *gossh.ExitError
	switch {
	case err == nil:
		return nodes.TaskExit{}, nil
	case errors.As(err, &ee):
		if s := ee.Signal(); s != "" {
			if n := signum(s); n > 0 {
				return nodes.TaskExit{Signal: n}, nil
			}
		}
		return nodes.TaskExit{Code: ee.ExitStatus()}, nil
	default:
		return nodes.TaskExit{}, &UnreachableError{h.node.Name, err}
	}
}

// signum maps the signal names of RFC 4254 §6.10 (without "SIG") to Linux
// numbers.
func signum(name string) nodes.Signum {
	n := map[string]nodes.Signum{"ABRT": 6, "ALRM": 14, "FPE": 8, "HUP": 1, "ILL": 4, "INT": 2,
		"KILL": 9, "PIPE": 13, "QUIT": 3, "SEGV": 11, "TERM": 15, "USR1": 10, "USR2": 12, "BUS": 7}[name]
	return n
}

// signalTask delivers a signal to a running task in a session of its own.
// A task whose pid is not recorded yet (its shell is starting it) is
// tried again for a while; one that has ended is left alone.
func (h *host) signalTask(ctx context.Context, pidf, name string) {
	for try := 0; try < 50 && ctx.Err() == nil; try++ {
		octx, cancel := h.e.opCtx(ctx)
		r, err := h.run(octx, h.ops, false, shSignalTask, nil, pidf, name)
		cancel()
		if err == nil && r.code == 0 {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// signame is the name kill(1) takes for the signals a task may be sent
// (Slurm forwards these), or "".
func signame(n nodes.Signum) string {
	return map[nodes.Signum]string{1: "HUP", 2: "INT", 3: "QUIT", 10: "USR1", 12: "USR2", 14: "ALRM", 15: "TERM",
		18: "CONT", 19: "STOP", 20: "TSTP"}[n]
}

var _ nodes.TaskRunner = (*Executor)(nil)

// stepMemGroup names the memory group of a step's tasks on a node without
// systemd (below the node's hora-node group, beside the batch step's).
func stepMemGroup(k nodes.StepKey) string { return k.Name() + ".tasks" }

// shStepMemEnd reads the oom_kill count of a step's task memory group and
// removes it and the step's devices group, killing what is left in them
// first (as at a step's end), and the node's groups when they were their
// last (and the step's cpuset group); under systemd it sums the counts
// the tasks' shells left in
// tasks/NAME.oom. Prints the count (0 when there is no memory group: no
// --mem, or no task ran there). It also removes the pid files of the
// step's tasks that a killed root shell left: one that wrote its record
// after KillStepTasks had looked (under load, after its task's first
// output) was killed by the cpuset group's removal before it could
// remove the record. Args: NODEDIR NAME UNITPREFIX (hora-job-J-S-rR).
const shStepMemEnd = `
ck=$(printf '%s' "$1" | cksum | cut -d' ' -f1)
mg=/sys/fs/cgroup/memory/hora-node-$ck/$2
n=
[ ! -d "$mg" ] || n=$(sed -n 's/^oom_kill //p' "$mg/memory.oom_control" 2>/dev/null)
n=${n:-0}
rmgroup "$mg"
rmgroup /sys/fs/cgroup/devices/hora-node-$ck/$2
rmgroup /sys/fs/cgroup/cpuset/hora-node-$ck/$2
if [ -f "$1/tasks/$2.oom" ]; then
	while read -r k; do case $k in ''|*[!0-9]*) ;; *) n=$((n + k));; esac; done < "$1/tasks/$2.oom"
	rm -f -- "$1/tasks/$2.oom"
fi
rm -f -- "$1/tasks/$3"-t*.pid "$1/tasks/$3"-t*.pid.tmp
echo "$n"
`

// EndStepMemory returns how many tasks the kernel killed in the memory
// group of a remote step's tasks on node (StepMemMB) and removes it and
// the step's devices group; 0 when the node has none or does not answer
// (logged).
func (e *Executor) EndStepMemory(node string, key nodes.StepKey) int {
	h, err := e.host(node)
	if err != nil {
		return 0
	}
	ctx, cancel := e.opCtx(context.Background())
	defer cancel()
	r, err := h.run(ctx, h.ops, false, shStepMemEnd, nil, h.dir, stepMemGroup(key), unitName(key))
	if err != nil || r.code != 0 {
		e.log.Warn("reading a step's memory group", "node", node, "step", key.Name(), "err", err)
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(r.out)))
	return n
}

// shKillTasks kills every task of a step on the node that a horad started
// and can no longer follow (its session went with it): the task's scope
// (systemd), and every process of the SSH session its root shell leads,
// found from the pid file that shell keeps while the task runs. A pid is
// acted on only while its parent is that shell (its command line names
// the task's unit), so a stale file never kills a stranger. Prints the
// number of tasks found. Args: NODEDIR UNITPREFIX (hora-job-J-S-rR).
const shKillTasks = `
n=0
sessof() {
	sid=
	_s=
	IFS= read -r _s 2>/dev/null < "/proc/$1/stat" || return 1
	_s=${_s##*") "}
	set -- $_s
	ppid=$2 sid=$4
}
for f in "$1/tasks/$2"-t*.pid; do
	[ -f "$f" ] && [ ! -L "$f" ] || continue
	u=${f##*/}; u=${u%.pid}
	n=$((n+1))
	unitgone "$u.scope"
	q=$(cat -- "$f" 2>/dev/null)
	case $q in ''|*[!0-9]*) rm -f -- "$f"; continue;; esac
	if sessof "$q" && [ "$ppid" -gt 1 ] && tr '\0' '\n' < "/proc/$ppid/cmdline" 2>/dev/null | grep -qxF -- "$u"; then
		s=$sid
		for st in /proc/[0-9]*/stat; do
			p=${st#/proc/}; p=${p%/stat}
			sessof "$p" && [ "$sid" = "$s" ] && kill -s KILL "$p" 2>/dev/null
		done
	fi
	rm -f -- "$f" "$1/tasks/$u.oomf"
done
# A task whose shell is gone may still hold its scope.
for f in /run/systemd/transient/"$2"-t*.scope; do
	[ -e "$f" ] || continue
	n=$((n+1))
	unitgone "${f##*/}"
done
echo "$n"
`

// KillStepTasks kills the tasks of a remote step on node whose sessions
// are gone (a horad that ran them was killed): their scopes under systemd,
// else every process of each task's session. It returns how many tasks
// it found. The step's memory and devices groups are EndStepMemory's.
func (e *Executor) KillStepTasks(ctx context.Context, node string, key nodes.StepKey) (int, error) {
	h, err := e.host(node)
	if err != nil {
		return 0, err
	}
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	r, err := h.run(ctx, h.ops, false, shKillTasks, nil, h.dir, unitName(key))
	if err != nil {
		return 0, fmt.Errorf("killing the tasks of step %s on node %s: %w", key.Name(), node, err)
	}
	if r.code != 0 {
		return 0, fmt.Errorf("killing the tasks of step %s on node %s: exit %d: %s", key.Name(), node, r.code, strings.TrimSpace(string(r.errs)))
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(r.out)))
	return n, nil
}
