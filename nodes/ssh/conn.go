package ssh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/skeema/knownhosts"
	gossh "golang.org/x/crypto/ssh"

	"hora/nodes"
)

// HostKeyError is a refused host key: unknown to the known_hosts file, or
// (Changed) different from the key recorded there.
type HostKeyError struct {
	Node       string
	Address    string
	KnownHosts string
	Changed    bool
	Offered    string // type and SHA256 fingerprint of the key the host offered
}

func (e *HostKeyError) Error() string {
	if e.Changed {
		return fmt.Sprintf("node %s (%s): REFUSED: the host key has changed: it offered %s, which is not the key recorded in %s; "+
			"this may be an attack, or the host was reinstalled: verify the new key, then replace the entry (ssh-keygen -R %s -f %s)",
			e.Node, e.Address, e.Offered, e.KnownHosts, knownhosts.Normalize(e.Address), e.KnownHosts)
	}
	return fmt.Sprintf("node %s (%s): REFUSED: host key %s is not in %s; add the node's key (ssh-keyscan) after verifying it",
		e.Node, e.Address, e.Offered, e.KnownHosts)
}

// host is one node: its settings, its pooled connection and the steps this
// Executor watches there.
type host struct {
	e    *Executor
	node Node
	addr string        // host:port
	dir  string        // node-side state directory of this node
	ops  chan struct{} // session slots for Launch, Signal, ...
	poll chan struct{} // one slot for the exit poller
	prb  chan struct{} // one slot for probes

	mu       sync.Mutex
	client   *gossh.Client
	dialing  chan struct{} // closed when the dial in flight ends
	lastErr  error
	failures int
	retryAt  time.Time
	down     bool // declared down by the prober
	watched  map[stepKey]time.Time
	sys      nodes.NodeSystem // kernel and boot time, read by the last probe
	// forwarded is closed once the node's callback socket is first open
	// (nil while callbacks are not served); Launch waits for it.
	forwarded     chan struct{}
	forwardedOnce sync.Once
}

type stepKey = string // step directory name, "<job>.<step>"

// UnreachableError wraps every failure to reach a node.
type UnreachableError struct {
	Node string
	Err  error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("node %s unreachable: %v", e.Node, e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// conn returns the node's pooled client, dialling it if there is none.
// After failures the dial waits out a backoff (so a dead node is not
// hammered); force ignores it (probes decide when to try).
func (h *host) conn(ctx context.Context, force bool) (*gossh.Client, error) {
	for {
		h.mu.Lock()
		if h.client != nil {
			c := h.client
			h.mu.Unlock()
			return c, nil
		}
		if ch := h.dialing; ch != nil {
			h.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, &UnreachableError{h.node.Name, fmt.Errorf("waiting for the connection: %w", ctx.Err())}
			}
		}
		if !force && time.Now().Before(h.retryAt) && h.lastErr != nil {
			err := h.lastErr
			wait := time.Until(h.retryAt).Round(time.Millisecond)
			h.mu.Unlock()
			return nil, &UnreachableError{h.node.Name, fmt.Errorf("%w (next attempt in %s)", err, wait)}
		}
		ch := make(chan struct{})
		h.dialing = ch
		h.mu.Unlock()

		c, err := h.dial(ctx)

		h.mu.Lock()
		h.dialing = nil
		close(ch)
		if err != nil {
			if ctx.Err() == nil {
				h.failures++
				h.lastErr = err
				h.retryAt = time.Now().Add(h.e.backoff(h.failures))
			}
			h.mu.Unlock()
			var hk *HostKeyError
			if errors.As(err, &hk) {
				return nil, err
			}
			return nil, &UnreachableError{h.node.Name, err}
		}
		select {
		case <-h.e.done:
			h.mu.Unlock()
			c.Close()
			return nil, errClosed
		default:
		}
		h.client, h.failures, h.lastErr = c, 0, nil
		h.mu.Unlock()
		h.e.wg.Add(2)
		go h.keepalive(c)
		go h.await(c)
		return c, nil
	}
}

var errClosed = errors.New("ssh executor is closed")

// backoff is min(ReconnectMax, ReconnectMin·2^(n-1)), with ±20 % jitter so
// that nodes that failed together do not retry together.
func (e *Executor) backoff(n int) time.Duration {
	d := e.cfg.ReconnectMin
	for i := 1; i < n && d < e.cfg.ReconnectMax; i++ {
		d *= 2
	}
	d = min(d, e.cfg.ReconnectMax)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// dial connects and authenticates. ClientConfig.Timeout bounds only the TCP
// connect, so the whole exchange is bounded here by ConnectTimeout and ctx:
// the connection's deadline cuts a handshake that a half-dead host stalls.
func (h *host) dial(ctx context.Context) (*gossh.Client, error) {
	cfg := h.e.cfg
	key, err := os.ReadFile(h.node.IdentityFile)
	if err != nil {
		return nil, fmt.Errorf("reading identity file: %w", err)
	}
	signer, err := gossh.ParsePrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("identity file %s: %w", h.node.IdentityFile, err)
	}
	// Read on every dial, so that an operator's fix takes effect without a restart.
	db, err := knownhosts.NewDB(cfg.KnownHostsFile)
	if err != nil {
		return nil, fmt.Errorf("known_hosts: %w", err)
	}
	var hkErr *HostKeyError
	check := db.HostKeyCallback()
	cc := &gossh.ClientConfig{
		User: h.node.User,
		Auth: []gossh.AuthMethod{gossh.PublicKeys(signer)},
		HostKeyCallback: func(hostname string, remote net.Addr, k gossh.PublicKey) error {
			err := check(hostname, remote, k)
			if err == nil {
				return nil
			}
			if knownhosts.IsHostKeyChanged(err) || knownhosts.IsHostUnknown(err) {
				hkErr = &HostKeyError{Node: h.node.Name, Address: h.addr, KnownHosts: cfg.KnownHostsFile,
					Changed: knownhosts.IsHostKeyChanged(err), Offered: k.Type() + " " + gossh.FingerprintSHA256(k)}
				return hkErr
			}
			return err
		},
		// Ask for the key types known_hosts has for this host, so that a
		// host with several keys is not refused for offering another one.
		HostKeyAlgorithms: db.HostKeyAlgorithms(h.addr),
		Timeout:           cfg.ConnectTimeout,
		ClientVersion:     "SSH-2.0-hora",
	}
	dctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	nc, err := (&net.Dialer{KeepAlive: cfg.KeepaliveInterval}).DialContext(dctx, "tcp", h.addr)
	if err != nil {
		return nil, err
	}
	dl, _ := dctx.Deadline()
	_ = nc.SetDeadline(dl)
	stop := context.AfterFunc(dctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	c, chans, reqs, err := gossh.NewClientConn(nc, h.addr, cc)
	if !stop() || err != nil {
		nc.Close()
		if hkErr != nil {
			return nil, hkErr
		}
		if err == nil {
			err = dctx.Err()
		}
		if dctx.Err() != nil {
			return nil, fmt.Errorf("ssh handshake with %s: %w", h.addr, dctx.Err())
		}
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	return gossh.NewClient(c, chans, reqs), nil
}

// await drops the pooled client once its connection ends.
func (h *host) await(c *gossh.Client) {
	defer h.e.wg.Done()
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	select {
	case <-done:
	case <-h.e.done:
		c.Close()
		<-done
	}
	h.drop(c)
}

func (h *host) drop(c *gossh.Client) {
	h.mu.Lock()
	if h.client == c {
		h.client = nil
	}
	h.mu.Unlock()
	c.Close()
}

// keepalive sends keepalive@openssh.com every KeepaliveInterval and closes
// the connection when a reply takes longer than KeepaliveTimeout, so that a
// silently dead peer (cable pulled, host frozen) is noticed and the next
// operation dials afresh instead of waiting on TCP retransmissions.
func (h *host) keepalive(c *gossh.Client) {
	defer h.e.wg.Done()
	t := time.NewTicker(h.e.cfg.KeepaliveInterval)
	defer t.Stop()
	for {
		select {
		case <-h.e.done:
			return
		case <-t.C:
		}
		h.mu.Lock()
		current := h.client == c
		h.mu.Unlock()
		if !current {
			return
		}
		replied := make(chan error, 1)
		go func() {
			_, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
			replied <- err
		}()
		timer := time.NewTimer(h.e.cfg.KeepaliveTimeout)
		select {
		case err := <-replied:
			timer.Stop()
			if err != nil {
				h.drop(c)
				return
			}
		case <-timer.C:
			h.e.log.Warn("ssh keepalive unanswered; closing the connection", "node", h.node.Name,
				"timeout", h.e.cfg.KeepaliveTimeout)
			h.drop(c)
			return
		case <-h.e.done:
			timer.Stop()
			return
		}
	}
}

// result is what a remote command did.
type result struct {
	out  []byte
	errs []byte
	code int
}

// cappedBuffer keeps at most max bytes; a misbehaving node cannot fill
// horad's memory.
type cappedBuffer struct {
	bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// run executes script (with the shared functions) under /bin/sh on the
// node, as root (through sudo -n when the SSH user is not root), with args
// as its positional parameters. slot limits concurrent sessions. A non-zero
// exit is not an error; failing to run the command at all is.
func (h *host) run(ctx context.Context, slot chan struct{}, force bool, script string, stdin io.Reader, args ...string) (result, error) {
	select {
	case slot <- struct{}{}:
	case <-ctx.Done():
		return result{}, &UnreachableError{h.node.Name, fmt.Errorf("no free session: %w", ctx.Err())}
	}
	defer func() { <-slot }()
	c, err := h.conn(ctx, force)
	if err != nil {
		return result{}, err
	}
	cmd := h.command(script, args)
	type opened struct {
		s   *gossh.Session
		err error
	}
	sess, err := h.session(ctx, c)
	if err != nil {
		return result{}, err
	}
	defer sess.Close()
	out := &cappedBuffer{max: 4 << 20}
	errb := &cappedBuffer{max: 64 << 10}
	sess.Stdout, sess.Stderr = out, errb
	if stdin != nil {
		sess.Stdin = stdin
	}
	done := make(chan error, 1)
	go func() { done <- sess.Run(cmd) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		sess.Close()
		return result{}, &UnreachableError{h.node.Name, fmt.Errorf("remote command: %w", ctx.Err())}
	}
	r := result{out: out.Bytes(), errs: errb.Bytes()}
	var ee *gossh.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitStatus()
		if ee.Signal() != "" {
			return r, fmt.Errorf("node %s: remote shell killed by SIG%s: %s", h.node.Name, ee.Signal(), strings.TrimSpace(string(r.errs)))
		}
	default:
		return r, &UnreachableError{h.node.Name, err}
	}
	return r, nil
}

// session opens a session on c. sshd refuses sessions beyond its
// MaxSessions, counting some that are closing on its side; such a refusal is
// retried (bounded by ctx) and does not condemn the connection. A peer that
// does not answer at all does.
func (h *host) session(ctx context.Context, c *gossh.Client) (*gossh.Session, error) {
	type opened struct {
		s   *gossh.Session
		err error
	}
	for wait := 2 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		oc := make(chan opened, 1)
		go func() {
			s, err := c.NewSession()
			oc <- opened{s, err}
		}()
		select {
		case o := <-oc:
			var oe *gossh.OpenChannelError
			switch {
			case o.err == nil:
				return o.s, nil
			case errors.As(o.err, &oe):
				select {
				case <-time.After(wait):
					continue
				case <-ctx.Done():
					return nil, &UnreachableError{h.node.Name, fmt.Errorf("opening a session: %v: %w", o.err, ctx.Err())}
				}
			default:
				h.drop(c)
				return nil, &UnreachableError{h.node.Name, fmt.Errorf("opening a session: %w", o.err)}
			}
		case <-ctx.Done():
			h.drop(c)
			return nil, &UnreachableError{h.node.Name, fmt.Errorf("opening a session: %w", ctx.Err())}
		}
	}
}

// command is the line sshd hands to the SSH user's login shell (which must
// be a POSIX-like shell: sh, bash, dash, zsh, ksh).
func (h *host) command(script string, args []string) string {
	var b strings.Builder
	b.WriteString("exec ")
	if h.node.User != "root" {
		b.WriteString("sudo -n ")
	}
	b.WriteString("/bin/sh -c ")
	b.WriteString(Quote(shLib + script))
	b.WriteString(" hora")
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(Quote(a))
	}
	return b.String()
}
