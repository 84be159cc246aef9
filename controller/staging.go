package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"hora/api"
	"hora/nodes"
	"hora/store"
)

// Staging (divisible jobs with --input, DESIGN.md §1): the load is the
// input file's bytes, unit_bytes bytes per load unit (partition param,
// default 1). Before a chunk starts, horad sends the chunk's byte range to
// its node, one transfer at a time per partition (the single channel from
// the head node of the DLT model, rt-dlt-2005 §3), and the chunk runs with
// HORA_CHUNK_FILE naming the node-side copy. horad is root, so the input is
// always opened with the job owner's rights (openAs): a user can never
// stage a file they could not read themselves.

// unitBytes is the partition's bytes per load unit (1 unless unit_bytes is
// set; the dlt policy validates it at start-up).
func (c *Controller) unitBytes(part string) float64 {
	for _, p := range c.cfg.Partitions {
		if p.Name == part {
			if f, err := strconv.ParseFloat(p.Params["unit_bytes"], 64); err == nil && f > 0 {
				return f
			}
		}
	}
	return 1
}

func (c *Controller) isDLT(part string) bool {
	for _, p := range c.cfg.Partitions {
		if p.Name == part {
			return p.Policy == "dlt"
		}
	}
	return false
}

// checkInput is the submit-time check of --input on a dlt partition: the
// file must be a regular file the submitter can read, whose size is the
// load in bytes. Nothing is recorded when it fails.
func (c *Controller) checkInput(who *Caller, s *api.JobSpec) error {
	if s.Input == "" || !c.isDLT(s.Partition) {
		return nil
	}
	bad := func(format string, a ...any) error {
		return &api.Error{Message: "input " + strconv.Quote(s.Input) + ": " + fmt.Sprintf(format, a...), Code: api.CodeBadRequest}
	}
	if _, ok := c.exec.(nodes.Stager); !ok {
		return bad("this executor cannot stage data to nodes")
	}
	if !filepath.IsAbs(s.Input) {
		return bad("not an absolute path")
	}
	f, err := openAs(s.Input, who.UID, who.GID)
	if err != nil {
		return bad("%v", unwrapPath(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return bad("%v", unwrapPath(err))
	}
	if !fi.Mode().IsRegular() {
		return bad("not a regular file")
	}
	u := c.unitBytes(s.Partition)
	if want := int64(math.Round(s.Load * u)); fi.Size() != want {
		return bad("the file has %d bytes but --load=%s at %g bytes per unit means %d bytes",
			fi.Size(), strconv.FormatFloat(s.Load, 'f', -1, 64), u, want)
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// openAs opens path read-only with the file-system rights of uid and gid
// (and uid's supplementary groups), as the kernel would check them for that
// user, even though horad runs as root. The credentials are changed only for
// one locked OS thread (setfsuid/setfsgid and a raw setgroups are per
// thread on Linux); if they cannot be put back, that thread is left locked
// so the Go runtime discards it. A FIFO or device cannot block the open
// (O_NONBLOCK); callers check the file type on the descriptor.
func openAs(path string, uid, gid uint32) (*os.File, error) {
	flags := os.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	if os.Geteuid() != 0 || uid == 0 {
		return openNoMagic(path, flags)
	}
	groups := []int{int(gid)}
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
		if ids, err := u.GroupIds(); err == nil {
			for _, s := range ids {
				if g, err := strconv.Atoi(s); err == nil && g != int(gid) {
					groups = append(groups, g)
				}
			}
		}
	}
	type result struct {
		f   *os.File
		err error
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		oldGroups, err := unix.Getgroups()
		if err != nil {
			runtime.UnlockOSThread()
			res <- result{nil, err}
			return
		}
		restored := func() bool {
			unix.Setfsuid(0)
			unix.Setfsgid(0)
			if unix.Setgroups(oldGroups) != nil {
				return false
			}
			u, _ := unix.SetfsuidRetUid(-1)
			g, _ := unix.SetfsgidRetGid(-1)
			return u == 0 && g == 0
		}
		if err := unix.Setgroups(groups); err != nil {
			if restored() {
				runtime.UnlockOSThread()
			}
			res <- result{nil, fmt.Errorf("setgroups: %w", err)}
			return
		}
		unix.Setfsgid(int(gid))
		unix.Setfsuid(int(uid))
		fu, _ := unix.SetfsuidRetUid(-1)
		fg, _ := unix.SetfsgidRetGid(-1)
		var f *os.File
		if fu != int(uid) || fg != int(gid) {
			err = fmt.Errorf("cannot take the rights of uid %d gid %d", uid, gid)
		} else {
			f, err = openNoMagic(path, flags)
		}
		if restored() {
			runtime.UnlockOSThread()
		}
		res <- result{f, err}
	}()
	r := <-res
	return r.f, r.err
}

// openNoMagic opens path without following /proc "magic" links
// (/proc/self/fd/N, /proc/<pid>/root, ...), directly or through a symlink.
// The kernel lets a process reach its own open files through them whatever
// the directories above those files allow, so with horad's descriptors a
// user could otherwise read another user's file that horad holds open while
// staging it: the fs-uid checks only the last hop. openat2's
// RESOLVE_NO_MAGICLINKS refuses them (ELOOP); a kernel without openat2
// (before 5.6) gets a refusal of any path that resolves into /proc.
func openNoMagic(path string, flags int) (*os.File, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags: uint64(flags), Resolve: unix.RESOLVE_NO_MAGICLINKS})
	switch {
	case err == nil:
		return os.NewFile(uintptr(fd), path), nil
	case errors.Is(err, unix.ELOOP):
		return nil, &os.PathError{Op: "open", Path: path, Err: errors.New("refused: too many symbolic links, or a /proc magic link such as /proc/self/fd/N")}
	case !errors.Is(err, unix.ENOSYS):
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	if real == "/proc" || strings.HasPrefix(real, "/proc/") {
		return nil, &os.PathError{Op: "open", Path: path, Err: errors.New("refused: the path is under /proc")}
	}
	return os.OpenFile(real, flags, 0)
}

// chunkRange maps a chunk's load units [offset, offset+size) to bytes of
// a file of fileSize bytes. Offsets are sums of the previous sizes (dlt's
// cut), so one chunk's end and the next one's start round to the same
// byte; the chunk that reaches the load ends at the file's end.
func chunkRange(offset, size, load, unit float64, fileSize int64) (int64, int64) {
	at := func(x float64) int64 { return min(max(int64(math.Round(x*unit)), 0), fileSize) }
	start, end := at(offset), at(offset+size)
	if offset+size >= load*(1-1e-12) {
		end = fileSize
	}
	return start, max(start, end)
}

// stageQueue is one partition's channel: staging work runs there in order,
// one transfer at a time.
func (c *Controller) stageQueue(part string) *workQueue {
	q := c.stageQ[part]
	if q == nil {
		q = c.work // not a dlt partition (cannot happen): the dispatcher
	}
	return q
}

// stageAndLaunch sends the chunk's byte range, then records and launches
// the chunk with HORA_CHUNK_FILE. Runs on the partition's staging queue.
// An input that cannot be read any more (its owner's rights changed, it
// shrank) ends the chunk FAILED without running; a node that cannot take
// the data ends it NODE_FAIL, as a failed launch does.
func (c *Controller) stageAndLaunch(ctx context.Context, spec nodes.LaunchSpec, input string, start, end int64, evs []store.Event) {
	if c.chunkGone(spec.Key) {
		return
	}
	t0 := time.Now()
	p, nodeErr, err := c.stage(ctx, spec, input, start, end)
	took := time.Since(t0).Seconds()
	if err != nil {
		if ctx.Err() != nil {
			return // shutting down: recovery decides about this chunk
		}
		c.log.Error("staging failed", "job", spec.Key.Job, "step", spec.Key.Step, "node", spec.Node, "input", input, "err", err)
		st := nodes.Status{Key: spec.Key, Node: spec.Node, State: nodes.StepExited, ExitCode: 1, Err: "staging " + input + ": " + err.Error()}
		if nodeErr {
			st.State = nodes.StepLost
		}
		c.mu.Lock()
		if j := c.jobs[spec.Key.Job]; j != nil {
			if err := c.st.Append(ctx, evs...); err != nil {
				c.log.Error("recording start", "job", spec.Key.Job, "err", err)
			}
			c.untilRecordedLocked(ctx, spec.Key, func(j *job) error { return c.chunkEndLocked(ctx, j, st) })
		}
		c.mu.Unlock()
		_ = c.exec.Forget(ctx, spec.Node, spec.Key)
		return
	}
	if c.chunkGone(spec.Key) { // cancelled while its data travelled: nothing runs, nothing stays
		_ = c.exec.Forget(ctx, spec.Node, spec.Key)
		return
	}
	c.mu.Lock()
	if j := c.jobs[spec.Key.Job]; j != nil {
		if j.transfer == nil {
			j.transfer = map[int]float64{}
		}
		j.transfer[spec.Key.Step] = took
	}
	c.mu.Unlock()
	spec.Env = append(spec.Env, "HORA_CHUNK_FILE="+p)
	c.launch(ctx, spec, evs...)
}

// chunkGone reports whether the chunk's job has ended (or is unknown), or
// its run is not the job's current one.
func (c *Controller) chunkGone(key nodes.StepKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	j := c.jobs[key.Job]
	return j == nil || j.State.Finished() || runOf(j) != key.Run
}

// stage opens the input as the job's owner and sends the range; nodeErr
// says the failure was the node's (the data could not be placed there).
func (c *Controller) stage(ctx context.Context, spec nodes.LaunchSpec, input string, start, end int64) (string, bool, error) {
	st, ok := c.exec.(nodes.Stager)
	if !ok {
		return "", false, errors.New("this executor cannot stage data to nodes")
	}
	f, err := openAs(input, spec.UID, spec.GID)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", false, errors.New("not a regular file")
	} else if fi.Size() < end {
		return "", false, fmt.Errorf("the file has %d bytes, the chunk needs bytes up to %d", fi.Size(), end)
	}
	// The descriptor was opened non-blocking; a regular file reads normally.
	p, err := st.Stage(ctx, nodes.StageSpec{Key: spec.Key, Node: spec.Node, UID: spec.UID, GID: spec.GID,
		Data: io.NewSectionReader(f, start, end-start), Size: end - start})
	return p, err != nil, err
}

// cleanStaged queues, first on each dlt partition's staging channel, the
// removal of the staged data that a crash left on its nodes: data of a
// chunk whose transfer was cut, or that never launched, is not the data
// of a running step and nothing else would remove it. The steps kept are
// read when the cleanup runs: the chunks then running on the node (their
// data may still be read). A node in several dlt partitions is cleaned
// once, on the first one's channel.
func (c *Controller) cleanStaged() {
	cl, ok := c.exec.(nodes.StagedCleaner)
	if !ok {
		return
	}
	seen := map[string]bool{}
	for _, p := range c.cfg.Partitions {
		spec, ok := c.eng.PartitionSpec(p.Name)
		if p.Policy != "dlt" || !ok {
			continue
		}
		for _, node := range spec.Nodes {
			if seen[node] {
				continue
			}
			seen[node] = true
			c.stageQueue(p.Name).push(func(ctx context.Context) {
				c.mu.Lock()
				var keep []nodes.StepKey
				for _, j := range c.jobs {
					for step, n := range j.chunks {
						if n == node && !j.State.Finished() {
							keep = append(keep, stepKey(j, step))
						}
					}
				}
				c.mu.Unlock()
				if err := cl.CleanStaged(ctx, node, keep); err != nil && ctx.Err() == nil {
					c.log.Warn("cleaning staged data left by a crash", "node", node, "err", err)
				}
			})
		}
	}
}
