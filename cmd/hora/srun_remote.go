package main

import (
	"context"
	"fmt"
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
			Argv: t.cmd.Args, Env: t.cmd.Env, WorkDir: t.cmd.Dir})
		byID[t.id] = t
	}
	// Remote tasks get no stdin yet: their pipes end at once.
	for _, w := range l.stdinFor {
		_ = w.Close()
	}
	l.stdinFor = nil
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
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
