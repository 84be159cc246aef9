package ssh

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// shMixAgent is the per-node [mix] agent for tdm and gang (docs/mix.md),
// run by bash (it needs bash's builtin clock and fractional read -t; every
// systemd distribution ships bash). horad gives it a schedule on the
// Unix-time axis once, and the agent keeps it with the node's own clock:
// it sleeps until the next boundary (read -t on its input, so a new
// command wakes it too) and then freezes/thaws with shell builtins only —
// no process is forked at a switch, and no message crosses the network.
// The switch therefore lands when the node's timer fires, whatever the
// round trip to horad; the nodes agree as far as their clocks do (NTP).
//
// Commands, one a line (numbers are whole microseconds):
//
//	tdm P R D          2DCS-TDM (be-rt-mix-2001 §4.2): periods start at multiples of P,
//	                   RT owns [0, R), BE [R, P); each division begins with the sync D
//	gang F Q N r0 … rN-1
//	                   1GS (§4.1): row ⌊t/Q⌋ mod N runs; ri lists the jobs of row i on
//	                   this node ("12,14", "-" for none); the table replaces the one in
//	                   force at the first quantum at or after F (at once if none is)
//	div OWNER          apply one tdm division now (rt, be) and stop scheduling
//	none               thaw everything and stop scheduling
//	clock              answer "clock T" with the node's clock
//
// Answers: "ok", "frozen RT BE" (div, none), "clock T", "error: …".
// Lines it writes on its own: "sw B W A …" after applying the switch due at
// B, W being when it woke for it and A when it was done (the switch lag is
// A−B: the timer's and scheduler's W−B, the cgroup writes' A−W), and "jobs rt:12
// be:14 …" whenever the set of jobs with a scope on the node changes
// (gang mode; once at start). On end of input or a hang-up it thaws
// everything: nothing stays frozen while horad is away.
//
// The tdm rule is mix.TDMFreeze: the other class is frozen only while both
// classes have processes (a division whose owner has nothing is lent); in
// the sync D both are, under the same condition. In gang mode a job's
// scopes (hora-job-J-*.scope in either class slice) are frozen when the
// table knows J and J is not in the row; a job the table does not know yet
// runs. Freezes come before thaws.
const shMixAgent = `c=/sys/fs/cgroup
[ -f $c/cgroup.controllers ] || c=$c/unified # a hybrid node: the v2 tree
c=$c/hora.slice
if [ -n "${EPOCHREALTIME:-}" ]; then
	now() { t=${EPOCHREALTIME/[.,]/}; }
else
	now() { t=$(date +%s%6N); }
fi
num() { case $1 in ''|*[!0-9]*) return 1;; esac; }
pop() {
	local l
	[ -r "$c/hora-$1.slice/cgroup.events" ] || return 1
	while read -r l; do [ "$l" = "populated 1" ] && return 0; done < "$c/hora-$1.slice/cgroup.events"
	return 1
}
frz() { [ ! -f "$1/cgroup.freeze" ] || { echo "$2" > "$1/cgroup.freeze"; } 2>/dev/null; }
setcls() {
	local bad=0
	[ "$1" = 1 ] && { frz "$c/hora-rt.slice" 1 || bad=1; }
	[ "$2" = 1 ] && { frz "$c/hora-be.slice" 1 || bad=1; }
	[ "$1" = 0 ] && { frz "$c/hora-rt.slice" 0 || bad=1; }
	[ "$2" = 0 ] && { frz "$c/hora-be.slice" 0 || bad=1; }
	fr=$1 fb=$2
	return $bad
}
scopes() { sc=("$c"/hora-rt.slice/hora-job-*.scope "$c"/hora-be.slice/hora-job-*.scope); }
jobof() { j=${1##*/hora-job-}; j=${j%%-*}; }
thawall() {
	local d
	scopes
	for d in "${sc[@]}"; do [ -d "$d" ] && frz "$d" 0; done
	setcls 0 0
}
jobsnow() {
	local d l
	js=
	scopes
	for d in "${sc[@]}"; do
		[ -d "$d" ] || continue
		jobof "$d"
		case $d in */hora-rt.slice/*) l=rt;; *) l=be;; esac
		case " $js " in *" $l:$j "*) continue;; esac
		js="${js:+$js }$l:$j"
	done
}
tdmat() {
	local s=$(( t - t % P )) ds de
	if (( R > 0 && t < s + R )); then own=rt ds=$s de=$((s + R)); else own=be ds=$((s + R)) de=$((s + P)); fi
	if (( t < ds + D )); then syn=1 bnd=$ds nxt=$((ds + D)); else syn=0 bnd=$((ds + D)) nxt=$de; fi
}
tdmapply() {
	local r=0 b=0
	if pop rt && pop be; then
		if (( syn )); then r=1 b=1; elif [ $own = rt ]; then b=1; else r=1; fi
	fi
	setcls $r $b
}
gangapply() {
	local d pass want row=" ${rows[$1]} "
	scopes
	for pass in 1 0; do
		for d in "${sc[@]}"; do
			[ -d "$d" ] || continue
			jobof "$d"
			want=0
			case " $known " in *" $j "*) case $row in *" $j "*) ;; *) want=1;; esac;; esac
			[ $want = $pass ] && frz "$d" $want
		done
	done
}
trap 'thawall; exit 0' HUP TERM INT PIPE
mode=idle done= target= rep= chk=
jobsnow; lastjs=$js; echo "jobs $js"
while :; do
	now
	to=
	case $mode in
	tdm)
		tdmat
		if [ "$bnd" != "$done" ]; then
			w=$t; tdmapply; now; done=$bnd
			[ "$bnd" = "$target" ] && rep="sw $bnd $w $t $own $syn $fr $fb"
			tdmat
		fi
		;;
	gang)
		if [ -n "$pend" ] && (( t >= pfrom )); then
			rows=("${prows[@]}") known=$pknown N=$pn Q=$pq pend= done=
		fi
		k=$(( t / Q )) bnd=$(( t / Q * Q ))
		nxt=$(( bnd + Q ))
		[ -n "$pend" ] && (( pfrom < nxt )) && nxt=$pfrom
		if [ "$bnd" != "$done" ]; then
			w=$t; gangapply $(( k % N )); now; done=$bnd
			[ "$bnd" = "$target" ] && rep="sw $bnd $w $t row $(( k % N ))"
			chk=1
		fi
		;;
	esac
	if [ $mode != idle ]; then
		# Reports wait for the middle of the division: at a boundary every
		# node's CPU time goes to the switch, not to sshd and horad.
		now
		mid=$(( bnd + (nxt - bnd) / 2 ))
		if [ -n "$rep$chk" ] && (( t >= mid )); then
			[ -n "$rep" ] && echo "$rep"
			if [ -n "$chk" ]; then jobsnow; [ "$js" = "$lastjs" ] || { lastjs=$js; echo "jobs $js"; }; fi
			rep= chk=
			now
		fi
		target=$nxt wake=$nxt
		[ -n "$rep$chk" ] && wake=$mid
		d=$(( wake - t ))
		(( d < 0 )) && d=0
		printf -v to '%d.%06d' $(( d / 1000000 )) $(( d % 1000000 ))
	fi
	if [ -n "$to" ]; then read -r -t "$to" line; rc=$?; else read -r line; rc=$?; fi
	(( rc > 128 )) && continue
	(( rc == 0 )) || { thawall; exit 0; }
	set -f; set -- $line; set +f
	case $1 in
	tdm)
		if ! num "$2" || ! num "$3" || ! num "$4" || (( $2 == 0 || $3 > $2 )); then echo "error: tdm $2 $3 $4: want P > 0, 0 ≤ R ≤ P, D ≥ 0 (µs)"; continue; fi
		[ $mode = gang ] && thawall
		P=$2 R=$3 D=$4 mode=tdm done= target=
		echo ok;;
	gang)
		if ! num "$2" || ! num "$3" || ! num "$4" || (( $3 == 0 || $4 == 0 || $# != $4 + 4 )); then echo "error: gang: want F Q N and N rows"; continue; fi
		pfrom=$2 pq=$3 pn=$4 prows=() pknown=
		shift 4
		for r in "$@"; do
			[ "$r" = - ] && r=
			case $r in *[!0-9,]*) echo "error: gang row $r: want job ids"; continue 2;; esac
			prows+=(" ${r//,/ } "); pknown="$pknown ${r//,/ }"
		done
		[ $mode = tdm ] && setcls 0 0
		if [ $mode != gang ]; then pfrom=0 mode=gang; fi
		pend=1 done= target=
		echo ok;;
	div)
		case $2 in rt|be) own=$2;; *) echo "error: division owner $2: want rt, be or none"; continue;; esac
		[ $mode = gang ] && thawall
		mode=idle syn=0
		if tdmapply; then echo "frozen $fr $fb"; else echo "error: cannot write cgroup.freeze under $c"; fi;;
	none)
		mode=idle
		if thawall; then echo "frozen 0 0"; else echo "error: cannot write cgroup.freeze under $c"; fi;;
	clock) now; echo "clock $t";;
	*) echo "error: unknown command $1";;
	esac
done
`

// shMixAgentStart runs shMixAgent ($1) under bash.
//
// The agent runs under SCHED_FIFO (chrt, util-linux, like setpriv) when the
// node allows it: at a boundary it must preempt the jobs it freezes, which
// may keep every CPU busy; it runs for well under a millisecond per
// switch. Where real-time scheduling is refused it runs at nice -10, else
// as it is.
const shMixAgentStart = `command -v bash >/dev/null 2>&1 || { echo "error: [mix] tdm and gang need bash on the node"; exit 1; }
if chrt -f 10 true 2>/dev/null; then exec chrt -f 10 bash -c "$1" hora; fi
if nice -n -10 true 2>/dev/null; then exec nice -n -10 bash -c "$1" hora; fi
exec bash -c "$1" hora
`

// MixSchedule is what a node's [mix] agent keeps on its own clock.
type MixSchedule struct {
	Mode string // "tdm", "gang", or "none" (everything thawed)
	// tdm (be-rt-mix-2001 §4.2): periods start at multiples of Period on
	// the Unix-time axis, RT owns the first RTLen, each division begins
	// with Sync (δ) during which neither class runs.
	Period, RTLen, Sync time.Duration
	// gang (§4.1): row ⌊t/Quantum⌋ mod len(Rows) runs; Rows[i] lists the
	// jobs of row i on this node. The table takes over at the first
	// quantum at or after From, so that every node changes table at the
	// same boundary.
	Quantum time.Duration
	Rows    [][]int64
	From    time.Time
}

// line is the agent's command for s; key is the same without the
// activation time, so that an unchanged table is not sent again.
func (s MixSchedule) line() (line, key string, err error) {
	us := func(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) }
	switch s.Mode {
	case "none":
		return "none", "none", nil
	case "tdm":
		if s.Period <= 0 || s.RTLen < 0 || s.RTLen > s.Period || s.Sync < 0 {
			return "", "", fmt.Errorf("mix schedule: tdm period %v, RT %v, sync %v: want 0 ≤ RT ≤ period, sync ≥ 0", s.Period, s.RTLen, s.Sync)
		}
		l := "tdm " + us(s.Period) + " " + us(s.RTLen) + " " + us(s.Sync)
		return l, l, nil
	case "gang":
		if s.Quantum < time.Microsecond || len(s.Rows) == 0 {
			return "", "", fmt.Errorf("mix schedule: gang quantum %v and %d rows: want a quantum and a row", s.Quantum, len(s.Rows))
		}
		var b strings.Builder
		b.WriteString(us(s.Quantum) + " " + strconv.Itoa(len(s.Rows)))
		for _, row := range s.Rows {
			b.WriteByte(' ')
			if len(row) == 0 {
				b.WriteByte('-')
			}
			for i, j := range row {
				if j <= 0 {
					return "", "", fmt.Errorf("mix schedule: gang job id %d", j)
				}
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(strconv.FormatInt(j, 10))
			}
		}
		from := max(s.From.UnixMicro(), 0)
		return "gang " + strconv.FormatInt(from, 10) + " " + b.String(), "gang " + b.String(), nil
	}
	return "", "", fmt.Errorf("mix schedule: mode %q: want tdm, gang or none", s.Mode)
}

// MixSwitch is a switch an agent reports: the boundary it was due at, when
// the agent woke for it and when the node had applied it, all on the
// node's clock.
type MixSwitch struct {
	Node               string
	Due, Woke, Applied time.Time
	What               string // "rt 0 0 1" (owner, in sync, frozen RT BE) or "row 2"
}

// MixJob is a job with a step scope on a node, as its agent reports.
type MixJob struct {
	ID int64
	RT bool
}

// mixAgent is a node's running shMixAgent. It holds one of the host's
// session slots while it lives, so sshd's MaxSessions is never exceeded.
type mixAgent struct {
	node    string
	sess    *gossh.Session
	in      io.WriteCloser
	slot    chan struct{}
	replies chan string
	done    chan struct{} // closed when the session has ended
	mu      sync.Mutex    // one command at a time; guards key
	key     string        // the schedule in force (MixSchedule.line's key)
	once    sync.Once
}

func (a *mixAgent) close() {
	a.once.Do(func() {
		a.in.Close()
		a.sess.Close()
	})
}

// agentSlot holds a node's agent; its lock orders starting one, so that
// a node slow to connect delays no other node.
type agentSlot struct {
	mu sync.Mutex
	a  *mixAgent
}

func (e *Executor) slotOf(node string) *agentSlot {
	e.divMu.Lock()
	defer e.divMu.Unlock()
	if e.agents == nil {
		e.agents = map[string]*agentSlot{}
	}
	s := e.agents[node]
	if s == nil {
		s = &agentSlot{}
		e.agents[node] = s
	}
	return s
}

// agent returns node's agent, starting one when there is none.
func (e *Executor) agent(ctx context.Context, node string) (*mixAgent, error) {
	h, err := e.host(node)
	if err != nil {
		return nil, err
	}
	slot := e.slotOf(node)
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if a := slot.a; a != nil {
		select {
		case <-a.done:
		default:
			return a, nil
		}
	}
	select {
	case h.ops <- struct{}{}:
	case <-ctx.Done():
		return nil, &UnreachableError{node, fmt.Errorf("no free session for the mix agent: %w", ctx.Err())}
	}
	release := func(err error) (*mixAgent, error) { <-h.ops; return nil, err }
	c, err := h.conn(ctx, false)
	if err != nil {
		return release(err)
	}
	sess, err := h.session(ctx, c)
	if err != nil {
		return release(err)
	}
	in, err := sess.StdinPipe()
	if err != nil {
		sess.Close()
		return release(err)
	}
	out, err := sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return release(err)
	}
	if err := sess.Start(h.command(shMixAgentStart, []string{shMixAgent})); err != nil {
		sess.Close()
		return release(err)
	}
	a := &mixAgent{node: node, sess: sess, in: in, slot: h.ops, replies: make(chan string, 4), done: make(chan struct{})}
	slot.a = a
	e.wg.Add(1)
	go e.readAgent(a, out)
	return a, nil
}

// readAgent routes the agent's lines until its session ends: reports to
// the Mix hooks, answers to the command waiting for one.
func (e *Executor) readAgent(a *mixAgent, out io.Reader) {
	defer e.wg.Done()
	defer func() {
		a.close()
		_ = a.sess.Wait()
		close(a.done)
		<-a.slot
	}()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "sw "):
			if sw, ok := parseSwitch(a.node, line); ok && e.cfg.Mix != nil && e.cfg.Mix.Switched != nil {
				e.cfg.Mix.Switched(sw)
			}
		case strings.HasPrefix(line, "jobs"):
			jobs := parseJobs(line)
			e.divMu.Lock()
			if e.mixJobs == nil {
				e.mixJobs = map[string][]MixJob{}
			}
			e.mixJobs[a.node] = jobs
			e.divMu.Unlock()
			if e.cfg.Mix != nil && e.cfg.Mix.JobsChanged != nil {
				e.cfg.Mix.JobsChanged(a.node)
			}
		default:
			select {
			case a.replies <- line:
			default: // nobody asked: a stray line
				e.log.Debug("mix agent", "node", a.node, "line", line)
			}
		}
	}
}

func parseSwitch(node, line string) (MixSwitch, bool) {
	f := strings.Fields(line)
	if len(f) < 4 {
		return MixSwitch{}, false
	}
	var us [3]int64
	for i := range us {
		var err error
		if us[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return MixSwitch{}, false
		}
	}
	return MixSwitch{Node: node, Due: time.UnixMicro(us[0]), Woke: time.UnixMicro(us[1]), Applied: time.UnixMicro(us[2]),
		What: strings.Join(f[4:], " ")}, true
}

func parseJobs(line string) []MixJob {
	var jobs []MixJob
	for _, f := range strings.Fields(strings.TrimPrefix(line, "jobs")) {
		class, id, ok := strings.Cut(f, ":")
		n, err := strconv.ParseInt(id, 10, 64)
		if ok && err == nil && n > 0 {
			jobs = append(jobs, MixJob{ID: n, RT: class == "rt"})
		}
	}
	return jobs
}

// call sends one command to node's agent and returns its answer. An agent
// that does not answer within ctx is closed (the next call starts one).
func (e *Executor) call(ctx context.Context, node, line string, keep func(a *mixAgent, answer string)) (string, error) {
	a, err := e.agent(ctx, node)
	if err != nil {
		return "", err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := io.WriteString(a.in, line+"\n"); err != nil {
		a.close()
		return "", fmt.Errorf("mix agent on node %s: %w", node, err)
	}
	select {
	case r := <-a.replies:
		if keep != nil {
			keep(a, r)
		}
		if msg, bad := strings.CutPrefix(r, "error: "); bad {
			return r, errors.New(msg)
		}
		return r, nil
	case <-a.done:
		return "", fmt.Errorf("mix agent on node %s ended", node)
	case <-ctx.Done():
		a.close()
		return "", fmt.Errorf("mix agent on node %s: %w", node, ctx.Err())
	}
}

// SetMixSchedule gives node's agent the schedule s unless it already
// keeps it; a node whose agent ended (reconnection, sshd restart) gets a
// new agent. Cheap when nothing changed (no traffic), so drivers call it
// every second for every node.
func (e *Executor) SetMixSchedule(ctx context.Context, node string, s MixSchedule) error {
	line, key, err := s.line()
	if err != nil {
		return err
	}
	if a := e.runningAgent(node); a != nil {
		a.mu.Lock()
		same := a.key == key
		a.mu.Unlock()
		if same {
			return nil
		}
	} else if s.Mode == "none" {
		return nil // no agent: nothing frozen by one
	}
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	_, err = e.call(ctx, node, line, func(a *mixAgent, r string) {
		if r == "ok" || strings.HasPrefix(r, "frozen") {
			a.key = key
		}
	})
	if err != nil {
		return fmt.Errorf("mix schedule on node %s: %w", node, err)
	}
	return nil
}

func (e *Executor) runningAgent(node string) *mixAgent {
	slot := e.slotOf(node)
	slot.mu.Lock()
	defer slot.mu.Unlock()
	a := slot.a
	if a == nil {
		return nil
	}
	select {
	case <-a.done:
		return nil
	default:
		return a
	}
}

// MixJobs is what node's agent last reported of the jobs with a step
// scope on it; ok is false while no agent has reported.
func (e *Executor) MixJobs(node string) (jobs []MixJob, ok bool) {
	e.divMu.Lock()
	defer e.divMu.Unlock()
	jobs, ok = e.mixJobs[node]
	return jobs, ok
}

// MixClock asks node's agent for its clock and returns its offset from
// this machine's (Cristian's estimate: the node's reading against the
// middle of the round trip) and the round trip, which bounds the error.
func (e *Executor) MixClock(ctx context.Context, node string) (offset, rtt time.Duration, err error) {
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	t0 := time.Now()
	r, err := e.call(ctx, node, "clock", nil)
	t1 := time.Now()
	if err != nil {
		return 0, 0, err
	}
	us, ok := strings.CutPrefix(r, "clock ")
	n, perr := strconv.ParseInt(us, 10, 64)
	if !ok || perr != nil {
		return 0, 0, fmt.Errorf("mix agent on node %s: clock: %q", node, r)
	}
	mid := t0.Add(t1.Sub(t0) / 2)
	return time.UnixMicro(n).Sub(mid), t1.Sub(t0), nil
}
