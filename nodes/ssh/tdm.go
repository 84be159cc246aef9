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

	gossh "golang.org/x/crypto/ssh"
)

// shDivisionLib defines div OWNER, which applies one 2DCS-TDM division
// (be-rt-mix-2001 §4.2) to the class slices of a systemd node ([mix] mode
// tdm, docs/mix.md) with cgroup v2's cgroup.freeze. OWNER is rt or be, or
// "none" to thaw both. The owner's slice is thawed; the other is frozen
// only while both have processes (mix.TDMFreeze: a division whose owner
// has nothing to run is lent). It prints "frozen RT BE" (0 or 1 each), or
// "error: ...".
const shDivisionLib = `
c=/sys/fs/cgroup/hora.slice
pop() { [ -f "$c/hora-$1.slice/cgroup.events" ] && grep -q '^populated 1' "$c/hora-$1.slice/cgroup.events"; }
frz() { [ ! -f "$c/hora-$1.slice/cgroup.freeze" ] || echo "$2" > "$c/hora-$1.slice/cgroup.freeze"; }
div() {
	case $1 in
	rt) owner=rt other=be;;
	be) owner=be other=rt;;
	none) if frz rt 0 && frz be 0; then echo "frozen 0 0"; else echo "error: cannot write cgroup.freeze under $c"; fi
		return;;
	*) echo "error: division owner $1: want rt, be or none"; return;;
	esac
	f=0
	if pop "$owner" && pop "$other"; then f=1; fi
	if ! { frz "$owner" 0 && frz "$other" "$f"; }; then echo "error: cannot write cgroup.freeze under $c"; return; fi
	if [ "$owner" = rt ]; then echo "frozen 0 $f"; else echo "frozen $f 0"; fi
}
`

// shDivision applies the division $1 once (a session and a shell per call).
const shDivision = shDivisionLib + `div "$1"
`

// shDivisionLoop applies one division per line of its input until the
// input ends: horad's driver keeps one per node, so that a switch costs a
// line each way on an open session rather than a new session and a new
// shell on every node (the switch jitter, docs/benchmarks.md).
const shDivisionLoop = shDivisionLib + `while read -r o; do div "$o"; done
`

// divLoop is a node's running shDivisionLoop. It holds one of the host's
// session slots (ops) while it lives, so that sshd's MaxSessions is never
// exceeded by it.
type divLoop struct {
	mu   sync.Mutex
	sess *gossh.Session
	in   io.WriteCloser
	out  *bufio.Reader
	slot chan struct{}
	dead bool
}

func (l *divLoop) close() {
	if l.dead {
		return
	}
	l.dead = true
	l.in.Close()
	l.sess.Close()
	<-l.slot
}

// TDMDivision applies on node the tdm division owned by owner ("rt", "be",
// or "none" to thaw both classes) and returns which class slices it left
// frozen, RT first. It goes through the node's division loop, opened on
// first use and again after its session ended (a reconnection); when no
// loop can be had (no free session slot) the division runs once in a
// session of its own.
func (e *Executor) TDMDivision(ctx context.Context, node, owner string) (frozen [2]bool, err error) {
	h, err := e.host(node)
	if err != nil {
		return frozen, err
	}
	switch owner {
	case "rt", "be", "none":
	default:
		return frozen, fmt.Errorf("tdm division owner %q: want rt, be or none", owner)
	}
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	out, lerr := e.onDivLoop(ctx, h, node, owner)
	if lerr != nil {
		e.log.Debug("tdm division loop", "node", node, "err", lerr)
		r, err := h.run(ctx, h.ops, false, shDivision, nil, owner)
		if err != nil {
			return frozen, fmt.Errorf("tdm division on node %s: %w", node, err)
		}
		if r.code != 0 {
			return frozen, fmt.Errorf("tdm division on node %s: exit %d: %s", node, r.code, strings.TrimSpace(string(r.errs)))
		}
		out = lastLine(strings.TrimSpace(string(r.out)))
	}
	var rt, be int
	if _, perr := fmt.Sscanf(out, "frozen %d %d", &rt, &be); perr != nil {
		return frozen, fmt.Errorf("tdm division on node %s: %s", node, strings.TrimPrefix(out, "error: "))
	}
	return [2]bool{rt == 1, be == 1}, nil
}

// onDivLoop sends owner to node's division loop and returns its answer.
// A loop that fails or does not answer within ctx is closed; the next
// call opens another.
func (e *Executor) onDivLoop(ctx context.Context, h *host, node, owner string) (string, error) {
	e.divMu.Lock()
	l := e.divs[node]
	if l == nil {
		var err error
		if l, err = e.openDivLoop(ctx, h); err != nil {
			e.divMu.Unlock()
			return "", err
		}
		if e.divs == nil {
			e.divs = map[string]*divLoop{}
		}
		e.divs[node] = l
	}
	e.divMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	fail := func(err error) (string, error) {
		l.close()
		e.divMu.Lock()
		if e.divs[node] == l {
			delete(e.divs, node)
		}
		e.divMu.Unlock()
		return "", err
	}
	if l.dead {
		return fail(errors.New("division loop closed"))
	}
	type line struct {
		s   string
		err error
	}
	got := make(chan line, 1)
	go func() {
		if _, err := io.WriteString(l.in, owner+"\n"); err != nil {
			got <- line{err: err}
			return
		}
		s, err := l.out.ReadString('\n')
		got <- line{strings.TrimSpace(s), err}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			return fail(r.err)
		}
		return r.s, nil
	case <-ctx.Done():
		return fail(ctx.Err()) // closing the session ends the goroutine
	}
}

// openDivLoop starts shDivisionLoop on h in a session that keeps one of
// its ops slots; it does not wait for a slot (the caller falls back).
func (e *Executor) openDivLoop(ctx context.Context, h *host) (*divLoop, error) {
	select {
	case h.ops <- struct{}{}:
	default:
		return nil, errors.New("no free session slot for the division loop")
	}
	release := func(err error) (*divLoop, error) { <-h.ops; return nil, err }
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
	if err := sess.Start(h.command(shDivisionLoop, nil)); err != nil {
		sess.Close()
		return release(err)
	}
	return &divLoop{sess: sess, in: in, out: bufio.NewReader(out), slot: h.ops}, nil
}

// shWeights sets the CPUWeight of the class slices ([mix] ps, a reloaded
// ratio) at once, under the steps already running in them. Args: RTW BEW.
const shWeights = `
systemctl set-property --runtime hora-rt.slice "CPUWeight=$1" &&
	systemctl set-property --runtime hora-be.slice "CPUWeight=$2" ||
	{ echo "error: cannot set the CPUWeight of hora-rt.slice and hora-be.slice"; exit 1; }
echo ok
`

// SetMixWeights sets the class slices' CPUWeight on node to rt and be
// (cgroup v2 cpu.weight, 1..10000): a changed ratio reaches the steps that
// already run, not only the next ones.
func (e *Executor) SetMixWeights(ctx context.Context, node string, rt, be int) error {
	if rt < 1 || rt > 10000 || be < 1 || be > 10000 {
		return fmt.Errorf("mix weights %d:%d: want 1..10000 each", rt, be)
	}
	h, err := e.host(node)
	if err != nil {
		return err
	}
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	r, err := h.run(ctx, h.ops, false, shWeights, nil, strconv.Itoa(rt), strconv.Itoa(be))
	if err != nil {
		return fmt.Errorf("mix weights on node %s: %w", node, err)
	}
	if out := lastLine(strings.TrimSpace(string(r.out))); r.code != 0 || out != "ok" {
		return fmt.Errorf("mix weights on node %s: %s", node, strings.TrimPrefix(out, "error: "))
	}
	return nil
}
