package ssh

import (
	"context"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"hora/nodes"
)

var (
	_ nodes.Stager        = (*Executor)(nil)
	_ nodes.StagedCleaner = (*Executor)(nil)
)

// shCleanStaged removes from NODEDIR/staged every step's data (and partial
// .tmp) whose step name is not among the arguments. Only names of the
// form JOB.STEP.rRUN or JOB.STEP (a horad that did not number runs) are
// touched. Args: NODEDIR KEEP...
const shCleanStaged = `
sd=$1/staged
shift
[ -d "$sd" ] || exit 0
rc=0
for f in "$sd"/*; do
	[ -e "$f" ] || [ -L "$f" ] || continue
	n=${f##*/}
	b=${n%.tmp}
	case $b in
	*[!0-9.r]*|.*|*.|*..*|r*|*.r|*r*r*|*.*.*.*) continue ;;
	*.*.r[0-9]*) ;;
	*.*.*|*r*) continue ;;
	*.*) ;;
	*) continue ;;
	esac
	keep=0
	for k in "$@"; do
		if [ "$k" = "$b" ]; then keep=1; break; fi
	done
	[ $keep = 1 ] || rm -f -- "$f" || rc=1
done
exit $rc
`

// shStage receives a chunk's data on stdin into NODEDIR/staged/NAME: written
// under a temporary name with umask 077 (directories with 022), its length checked, then given to
// the job's user (0600) and renamed. The staged directory is root's (0755),
// so no user can plant a link where the file goes. Args: NODEDIR NAME UID
// GID SIZE. Prints "staged PATH"; exit 3: the data was short.
const shStage = `
nd=$1 name=$2 uid=$3 gid=$4 size=$5
sd=$nd/staged f=$nd/staged/$name
umask 022
if [ ! -d "$nd" ]; then
	mkdir -p -- "$nd" && chmod 0755 -- "$nd" || { echo "error: cannot create $nd"; exit 1; }
fi
if [ ! -d "$sd" ]; then
	mkdir -m 0755 -- "$sd" 2>/dev/null || [ -d "$sd" ] || { echo "error: cannot create $sd"; exit 1; }
fi
rm -f -- "$f" "$f.tmp"
umask 077
cat > "$f.tmp" || { rm -f -- "$f.tmp"; echo "error: cannot write $f.tmp"; exit 1; }
got=$(wc -c < "$f.tmp")
got=${got##* }
if [ "$got" != "$size" ]; then rm -f -- "$f.tmp"; echo "error: received $got of $size bytes"; exit 3; fi
chown -- "$uid:$gid" "$f.tmp" && chmod 0600 -- "$f.tmp" && mv -f -- "$f.tmp" "$f" || { rm -f -- "$f.tmp"; echo "error: cannot install $f"; exit 1; }
echo "staged $f"
`

// Stage streams spec.Size bytes of spec.Data over the node's pooled
// connection, as the stdin of one remote command (no scp or sftp needed),
// into <state_dir>/<node>/staged/<job>.<step>, readable by the job's user
// only. Forget removes it with the step's state. The transfer is bounded by
// ctx only: its length depends on the data, not on CommandTimeout.
func (e *Executor) Stage(ctx context.Context, spec nodes.StageSpec) (string, error) {
	h, err := e.host(spec.Node)
	if err != nil {
		return "", err
	}
	if spec.Size < 0 {
		return "", fmt.Errorf("stage %s: negative size %d", spec.Key.Name(), spec.Size)
	}
	name := spec.Key.Name()
	data := &countingReader{r: io.LimitReader(spec.Data, spec.Size)}
	r, err := h.run(ctx, h.ops, false, shStage, data,
		h.dir, name, strconv.FormatUint(uint64(spec.UID), 10), strconv.FormatUint(uint64(spec.GID), 10),
		strconv.FormatInt(spec.Size, 10))
	if err != nil {
		return "", fmt.Errorf("staging %s on node %s: %w", name, spec.Node, err)
	}
	out := lastLine(strings.TrimSpace(string(r.out)))
	if r.code != 0 || !strings.HasPrefix(out, "staged ") {
		msg := strings.TrimPrefix(out, "error: ")
		if r.code == 3 && data.n < spec.Size {
			msg = fmt.Sprintf("input ended after %d of %d bytes", data.n, spec.Size)
		}
		if msg == "" {
			msg = fmt.Sprintf("exit %d: %s", r.code, strings.TrimSpace(string(r.errs)))
		}
		return "", fmt.Errorf("staging %s on node %s: %s", name, spec.Node, msg)
	}
	return path.Join(h.dir, "staged", name), nil
}

// CleanStaged removes, in one remote command, the staged data of every
// step of node not in keep.
func (e *Executor) CleanStaged(ctx context.Context, node string, keep []nodes.StepKey) error {
	h, err := e.host(node)
	if err != nil {
		return err
	}
	args := []string{h.dir}
	for _, k := range keep {
		args = append(args, k.Name())
	}
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	r, err := h.run(ctx, h.ops, false, shCleanStaged, nil, args...)
	if err != nil {
		return fmt.Errorf("cleaning staged data on node %s: %w", node, err)
	}
	if r.code != 0 {
		return fmt.Errorf("cleaning staged data on node %s: exit %d: %s", node, r.code, strings.TrimSpace(string(r.errs)))
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
