package controller

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"hora/api"
	"hora/nodes"
)

// srun inside a batch script on an SSH node (docs/steps.md, "srun inside a
// job on an SSH node"). The script runs on the node, where horad's socket
// is not; the SSH executor keeps a socket on every node forwarded to horad
// over the pooled connection, and the batch environment names it
// (HORA_SOCKET) together with the job's step key (HORA_STEP_KEY). A
// forwarded connection has no peer credentials horad could trust (its
// peer is sshd), so its requests are authenticated by the key alone:
// HMAC-SHA256 of the job id under a secret only horad reads. The key is
// given to the job's own processes only: it travels to the node on the
// launch session's stdin and lives in the job's environment and its 0700
// step directory, which only the job's user and root can read. A keyed
// request acts as the job's owner: steps only of that job (Caller.Job,
// mayUse), and for every other request (squeue, scontrol show job, scancel,
// sbatch, ...) exactly what the owner's own commands may do on the submit
// host, through the same handlers and their ownership checks: a job's
// user still touches only their own jobs. The database backup stays
// reachable only through horad's own socket.

// stepKeyHeader carries the step key on a callback connection.
const stepKeyHeader = "Hora-Step-Key"

// loadStepSecret reads (or creates, 0600) the secret the step keys are
// signed with, when the executor has callback sockets. It is kept in the
// state directory so that keys given to running jobs stay valid across a
// restart of horad.
func (c *Controller) loadStepSecret() error {
	if _, ok := c.exec.(nodes.Callbacker); !ok {
		return nil
	}
	p := filepath.Join(c.cfg.StateDir, "step-key.secret")
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		b = make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("step key secret: %w", err)
		}
		_, err = f.Write(b)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("step key secret: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("step key secret: %w", err)
	}
	if len(b) != 32 {
		return fmt.Errorf("step key secret %s: %d bytes, want 32", p, len(b))
	}
	c.stepSecret = b
	return nil
}

// stepKey is the key of job id: "ID.MAC".
func (c *Controller) stepKey(id int64) string {
	m := hmac.New(sha256.New, c.stepSecret)
	fmt.Fprintf(m, "hora step key\x00%d", id)
	return strconv.FormatInt(id, 10) + "." + hex.EncodeToString(m.Sum(nil))
}

// jobOfStepKey returns the job a key was given to, or false.
func (c *Controller) jobOfStepKey(key string) (int64, bool) {
	idText, _, ok := strings.Cut(key, ".")
	id, err := strconv.ParseInt(idText, 10, 64)
	if !ok || err != nil || id <= 0 || c.stepSecret == nil {
		return 0, false
	}
	return id, hmac.Equal([]byte(c.stepKey(id)), []byte(key))
}

// callbackEnv is what a step launched on node needs to reach horad from
// there: none on nodes that reach its socket themselves.
func (c *Controller) callbackEnv(j *job, node string) []string {
	cb, ok := c.exec.(nodes.Callbacker)
	if !ok || c.stepSecret == nil {
		return nil
	}
	return []string{"HORA_SOCKET=" + cb.CallbackPath(node), "HORA_STEP_KEY=" + c.stepKey(j.ID)}
}

// serveCallbacks serves the socket protocol on the executor's callback
// sockets until ctx ends.
func (c *Controller) serveCallbacks(ctx context.Context) {
	cb, ok := c.exec.(nodes.Callbacker)
	if !ok || c.stepSecret == nil {
		return
	}
	l := newChanListener()
	// The socket protocol's own routes: the handlers check what the
	// caller (the job's owner) may do.
	mux := c.Server().Handler
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, ok := c.jobOfStepKey(r.Header.Get(stepKeyHeader))
			if !ok || r.URL.Path == api.PathBackup {
				c.log.Warn("callback refused", "node", r.RemoteAddr, "path", r.URL.Path)
				writeJSON(w, http.StatusForbidden, &api.Error{Message: "Access/permission denied", Code: api.CodeAccessDenied})
				return
			}
			c.mu.Lock()
			j := c.jobs[id]
			var who *Caller
			if j != nil {
				who = &Caller{UID: j.UID, GID: j.GID, User: j.User, Job: id}
			}
			c.mu.Unlock()
			if who == nil {
				writeJSON(w, http.StatusNotFound, &api.Error{Message: "Invalid job id specified", Code: api.CodeInvalidJobID})
				return
			}
			mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, who)))
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(c.log.Handler(), slog.LevelWarn),
	}
	if err := cb.ServeCallbacks(func(node string, conn net.Conn) { l.put(conn) }); err != nil {
		c.log.Error("callback sockets: srun inside jobs on the nodes will not reach horad", "err", err)
		return
	}
	go func() { _ = srv.Serve(l) }()
	context.AfterFunc(ctx, func() { srv.Close() })
}

// chanListener is a net.Listener fed with connections accepted elsewhere.
type chanListener struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newChanListener() *chanListener {
	return &chanListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) put(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return callbackAddr{} }

type callbackAddr struct{}

func (callbackAddr) Network() string { return "ssh-forward" }
func (callbackAddr) String() string  { return "callback" }
