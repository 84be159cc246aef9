package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"hora/nodes"
)

// stagedDirName is the directory of staged chunk data beside a node's step
// directories (its name is not a step name, so Reattach skips it).
const stagedDirName = "staged"

var (
	_ nodes.Stager        = (*Executor)(nil)
	_ nodes.StagedCleaner = (*Executor)(nil)
)

func (e *Executor) stagedPath(node string, key nodes.StepKey) string {
	return filepath.Join(e.stateDir, node, stagedDirName, key.Name())
}

// Stage copies spec.Size bytes of spec.Data into
// <StateDir>/<node>/staged/<job>.<step>, mode 0600, owned by the job's user.
// The directory is horad's (0755), so a user cannot put a link there in
// place of the file; the file appears under its name only once complete.
func (e *Executor) Stage(ctx context.Context, spec nodes.StageSpec) (string, error) {
	if err := validNode(spec.Node); err != nil {
		return "", err
	}
	if spec.Size < 0 {
		return "", fmt.Errorf("stage %d.%d: negative size %d", spec.Key.Job, spec.Key.Step, spec.Size)
	}
	dir := filepath.Join(e.stateDir, spec.Node, stagedDirName)
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := mkdirMode(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return "", err
		}
	}
	path := e.stagedPath(spec.Node, spec.Key)
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", err
	}
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(tmp)
		return "", err
	}
	if e.euid == 0 {
		if err := f.Chown(int(spec.UID), int(spec.GID)); err != nil {
			return fail(err)
		}
	}
	n, err := io.CopyN(f, readerCtx{ctx, spec.Data}, spec.Size)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("input ended after %d of %d bytes", n, spec.Size)
		}
		return fail(fmt.Errorf("stage %s: %w", spec.Key.Name(), err))
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return path, nil
}

// removeStaged deletes a step's staged data, if any.
func (e *Executor) removeStaged(node string, key nodes.StepKey) error {
	p := e.stagedPath(node, key)
	err := os.Remove(p)
	_ = os.Remove(p + ".tmp")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// CleanStaged removes <StateDir>/<node>/staged/<job>.<step> and its
// partial .tmp for every step not in keep; names that are not step names
// are left alone (not ours).
func (e *Executor) CleanStaged(ctx context.Context, node string, keep []nodes.StepKey) error {
	if err := validNode(node); err != nil {
		return err
	}
	dir := filepath.Join(e.stateDir, node, stagedDirName)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, de := range ents {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		k, ok := nodes.ParseStepName(strings.TrimSuffix(de.Name(), ".tmp"))
		if !ok || slices.Contains(keep, k) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, de.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// readerCtx stops a long copy when ctx is cancelled.
type readerCtx struct {
	ctx context.Context
	r   io.Reader
}

func (r readerCtx) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}
