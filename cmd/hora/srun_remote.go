package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"syscall"

	"hora/api"
)

// startRemote runs the tasks of a step on SSH nodes (grant.Remote): horad
// starts them over its pooled connections and streams their output back,
// which is copied into the tasks' pipes, so labels, -o/-e files and the
// exit code rule are the same as for tasks forked here (docs/steps.md).
// It returns how many tasks it started and a function that kills them all
// (closing the stream, on which horad kills the tasks' scopes).
func (l *launch) startRemote(ctx context.Context, cl *api.Client, exits chan<- exit) (int, context.CancelFunc) {
	g := l.grant
	req := api.StepRun{JobID: g.JobID, StepID: g.StepID}
	byID := map[int]*task{}
	for _, t := range l.tasks {
		if t.cmd == nil || t.startErr != nil {
			continue
		}
		req.Tasks = append(req.Tasks, api.StepTask{ID: t.id, Node: g.Nodes[t.node],
			Argv: t.cmd.Args, Env: t.cmd.Env, WorkDir: t.cmd.Dir, Stdin: t.cmd.Stdin != nil, Pty: t.pty})
		byID[t.id] = t
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	// A task's stdin (srun's, copied into its pipe by copyStdin, or its
	// -i file) is sent to horad piece by piece once the tasks start.
	var inputOnce sync.Once
	startInput := func() {
		for _, t := range byID {
			if in := t.cmd.Stdin; in != nil {
				go l.sendInput(rctx, cl, t.id, in)
			}
			if t.pty != nil && l.ptyFd >= 0 {
				go l.followWindow(rctx, cl, t)
			}
		}
	}
	if len(byID) == 0 {
		return 0, stop
	}
	var mu sync.Mutex
	ended := map[int]bool{}
	finish := func(t *task, ws syscall.WaitStatus) {
		mu.Lock()
		defer mu.Unlock()
		if ended[t.id] {
			return
		}
		ended[t.id] = true
		for _, f := range t.parentEnds {
			_ = f.Close()
		}
		exits <- exit{t, ws}
	}
	go func() {
		err := cl.RunStep(rctx, req, func(f api.StepFrame) {
			if f.Task == -1 {
				inputOnce.Do(startInput)
				return
			}
			t := byID[f.Task]
			if t == nil {
				return
			}
			switch {
			case f.End:
				ws := syscall.WaitStatus(f.Exit&0xff) << 8
				if f.Signal != 0 {
					ws = syscall.WaitStatus(f.Signal & 0x7f)
				}
				if f.Error != "" {
					if rctx.Err() == nil {
						fmt.Fprintf(l.env.Stderr, "srun: error: %s: task %d: %s\n", g.Nodes[t.node], t.id, f.Error)
					}
					ws = syscall.WaitStatus(syscall.SIGKILL)
				}
				finish(t, ws)
			case t.pty != nil && f.Stream != 0:
				// A pty's output, as it comes (stream 1 only).
				l.outMu.Lock()
				_, _ = l.env.Stdout.Write(f.Data)
				l.outMu.Unlock()
			case f.Stream == 1 && len(t.parentEnds) > 0:
				_, _ = t.parentEnds[0].Write(f.Data)
			case f.Stream == 2 && len(t.parentEnds) > 1:
				_, _ = t.parentEnds[1].Write(f.Data)
			}
		})
		if err != nil && rctx.Err() == nil {
			fmt.Fprintf(l.env.Stderr, "srun: error: %v\n", err)
		}
		// Tasks the stream did not end (horad gone, stream killed) are
		// reported killed.
		for _, t := range byID {
			finish(t, syscall.WaitStatus(syscall.SIGKILL))
		}
	}()
	return len(byID), stop
}

// sendInput copies a remote task's stdin to horad (api.StepInput) in
// order, and its end; it stops when the task no longer reads or the step
// ends.
func (l *launch) sendInput(ctx context.Context, cl *api.Client, task int, in io.Reader) {
	g := l.grant
	if c, ok := in.(io.Closer); ok {
		defer c.Close()
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := in.Read(buf)
		req := api.StepInput{JobID: g.JobID, StepID: g.StepID, Task: task, Data: buf[:n], EOF: err != nil}
		if n > 0 || err != nil {
			if cl.StepInput(ctx, req) != nil || err != nil {
				return
			}
		}
	}
}
