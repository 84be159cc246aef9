package ssh

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// shDivisionLib defines div OWNER, which applies one 2DCS-TDM division
// (be-rt-mix-2001 §4.2) to the class slices of a systemd node ([mix] mode
// tdm, docs/mix.md) with cgroup v2's cgroup.freeze. OWNER is rt or be, or
// "none" to thaw both. The owner's slice is thawed; the other is frozen
// only while both have processes (mix.TDMFreeze: a division whose owner
// has nothing to run is lent). It prints "frozen RT BE" (0 or 1 each), or
// "error: ...".
const shDivisionLib = `
c=/sys/fs/cgroup
[ -f $c/cgroup.controllers ] || c=$c/unified # a hybrid node: the v2 tree
c=$c/hora.slice
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

// TDMDivision applies on node the tdm division owned by owner ("rt", "be",
// or "none" to thaw both classes) at once, and returns which class slices
// it left frozen, RT first. The node's agent (mixagent.go) stops keeping
// any schedule; when no agent can be had (no bash, no free session slot)
// the division runs once in a session of its own.
func (e *Executor) TDMDivision(ctx context.Context, node, owner string) (frozen [2]bool, err error) {
	h, err := e.host(node)
	if err != nil {
		return frozen, err
	}
	cmd := "div " + owner
	switch owner {
	case "rt", "be":
	case "none":
		cmd = "none"
	default:
		return frozen, fmt.Errorf("tdm division owner %q: want rt, be or none", owner)
	}
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	out, lerr := e.call(ctx, node, cmd, func(a *mixAgent, _ string) { a.key = "" })
	if lerr != nil && !strings.HasPrefix(out, "error: ") {
		e.log.Debug("tdm division: mix agent", "node", node, "err", lerr)
		// force: one dial now even within the backoff of a failed one (a
		// division is due now; sshd may just have come back).
		r, err := h.run(ctx, h.ops, true, shDivision, nil, owner)
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
