package ssh

import (
	"context"
	"fmt"
	"net"
	"path"
	"time"

	"hora/nodes"
)

// Callbacks: a program of a job on an SSH node (srun inside a batch
// script) reaches horad through a Unix socket on the node that sshd
// forwards to horad over the node's pooled connection
// (streamlocal-forward@openssh.com, what `ssh -R /path:...` asks for).
// The socket is world-connectable: who may do what is decided by horad
// from the step key the request carries (docs/steps.md), since the
// forwarded connection has no peer credentials horad could trust.

var _ nodes.Callbacker = (*Executor)(nil)

// CallbackPath is the socket on node through which its jobs reach horad.
func (e *Executor) CallbackPath(node string) string {
	h := e.hosts[node]
	if h == nil {
		return ""
	}
	return path.Join(h.dir, "horad.sock")
}

// ServeCallbacks keeps the callback socket of every node forwarded while
// the Executor is open, and hands each connection made to it to accept,
// with the node's name. After a connection to the node drops, the socket
// is forwarded again on the next one.
func (e *Executor) ServeCallbacks(accept func(node string, c net.Conn)) error {
	for _, h := range e.hosts {
		if p := e.CallbackPath(h.node.Name) + ".new"; len(p) > 107 { // forwardOnce's name for it, the longer
			return fmt.Errorf("ssh executor: callback socket %s: longer than a Unix socket path may be (107 bytes); shorten [ssh] state_dir", p)
		}
	}
	for _, h := range e.hosts {
		h.mu.Lock()
		h.forwarded = make(chan struct{})
		h.mu.Unlock()
		e.wg.Add(1)
		go h.forwardLoop(accept)
	}
	return nil
}

// callbackWait bounds how long Launch waits for a node's first callback
// socket, once: a node whose sshd refuses to forward one still runs batch
// jobs, without a wait after the first.
const callbackWait = 10 * time.Second

// awaitCallbacks waits until the node's callback socket has been open once,
// so that a job's srun does not come before it: a job launched as the node
// came up found no socket ("no such file or directory", a make test run
// under a CPU hog).
func (h *host) awaitCallbacks(ctx context.Context) {
	h.mu.Lock()
	f := h.forwarded
	h.mu.Unlock()
	if f == nil {
		return
	}
	t := time.NewTimer(callbackWait)
	defer t.Stop()
	select {
	case <-f:
	case <-t.C:
		h.mu.Lock()
		if h.forwarded == f {
			h.forwarded = nil
		}
		h.mu.Unlock()
	case <-ctx.Done():
	}
}

// forwardLoop forwards the node's callback socket on each connection in
// turn.
func (h *host) forwardLoop(accept func(node string, c net.Conn)) {
	defer h.e.wg.Done()
	sock := h.e.CallbackPath(h.node.Name)
	for {
		if err := h.forwardOnce(sock, accept); err != nil {
			h.e.log.Debug("callback socket", "node", h.node.Name, "err", err)
		}
		select {
		case <-h.e.done:
			return
		case <-time.After(time.Second):
		}
	}
}

// forwardOnce asks sshd to listen on a new path beside the socket's (sshd
// does not replace a stale one: its StreamLocalBindUnlink is off by
// default), opens it to every user and only then renames it over the
// socket's path, and accepts until the connection ends. sshd creates the
// socket 0600: a job's srun that connected between the listen and the chmod
// was refused "permission denied" (a make test run under a CPU hog).
func (h *host) forwardOnce(sock string, accept func(node string, c net.Conn)) error {
	ctx, cancel := h.e.opCtx(h.e.ctx)
	c, err := h.conn(ctx, false)
	if err == nil {
		_, err = h.runChecked(ctx, `mkdir -p -- "$(dirname -- "$1")" && rm -f -- "$1.new"`, sock)
	}
	cancel()
	if err != nil {
		return err
	}
	l, err := c.ListenUnix(sock + ".new")
	if err != nil {
		return fmt.Errorf("forwarding %s: %w", sock, err)
	}
	defer l.Close()
	stop := context.AfterFunc(h.e.ctx, func() { l.Close() })
	defer stop()
	ctx, cancel = h.e.opCtx(h.e.ctx)
	_, err = h.runChecked(ctx, `chmod 0666 -- "$1.new" && mv -f -- "$1.new" "$1"`, sock)
	cancel()
	if err != nil {
		return err
	}
	h.mu.Lock()
	if f := h.forwarded; f != nil {
		h.forwardedOnce.Do(func() { close(f) })
	}
	h.mu.Unlock()
	for {
		conn, err := l.Accept()
		if err != nil {
			return err
		}
		go accept(h.node.Name, conn)
	}
}

// runChecked runs script on the node and turns a non-zero exit into an
// error carrying its stderr.
func (h *host) runChecked(ctx context.Context, script string, args ...string) (result, error) {
	r, err := h.run(ctx, h.ops, false, script, nil, args...)
	if err == nil && r.code != 0 {
		err = fmt.Errorf("node %s: exit %d: %s", h.node.Name, r.code, lastLine(string(r.errs)))
	}
	return r, err
}
