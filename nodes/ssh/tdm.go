package ssh

import (
	"context"
	"fmt"
	"strings"
)

// shDivision applies one 2DCS-TDM division (be-rt-mix-2001 §4.2) to the
// class slices of a systemd node ([mix] mode tdm, docs/mix.md) with cgroup
// v2's cgroup.freeze. Arg: OWNER, rt or be, or "none" to thaw both. The
// owner's slice is thawed; the other is frozen only while both have
// processes (mix.TDMFreeze: a division whose owner has nothing to run is
// lent). Prints "frozen RT BE" (0 or 1 each).
const shDivision = `
c=/sys/fs/cgroup/hora.slice owner=$1
pop() { [ -f "$c/hora-$1.slice/cgroup.events" ] && grep -q '^populated 1' "$c/hora-$1.slice/cgroup.events"; }
frz() { [ ! -f "$c/hora-$1.slice/cgroup.freeze" ] || echo "$2" > "$c/hora-$1.slice/cgroup.freeze"; }
case $owner in
rt) other=be;;
be) other=rt;;
*) frz rt 0 && frz be 0 || { echo "error: cannot write cgroup.freeze under $c"; exit 1; }
	echo "frozen 0 0"; exit 0;;
esac
f=0
if pop "$owner" && pop "$other"; then f=1; fi
frz "$owner" 0 && frz "$other" "$f" || { echo "error: cannot write cgroup.freeze under $c"; exit 1; }
if [ "$owner" = rt ]; then echo "frozen 0 $f"; else echo "frozen $f 0"; fi
`

// TDMDivision applies on node the tdm division owned by owner ("rt", "be",
// or "none" to thaw both classes) and returns which class slices it left
// frozen, RT first.
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
	r, err := h.run(ctx, h.ops, false, shDivision, nil, owner)
	if err != nil {
		return frozen, fmt.Errorf("tdm division on node %s: %w", node, err)
	}
	out := lastLine(strings.TrimSpace(string(r.out)))
	var rt, be int
	if _, perr := fmt.Sscanf(out, "frozen %d %d", &rt, &be); r.code != 0 || perr != nil {
		return frozen, fmt.Errorf("tdm division on node %s: %s", node, strings.TrimPrefix(out, "error: "))
	}
	return [2]bool{rt == 1, be == 1}, nil
}
