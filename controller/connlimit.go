package controller

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"hora/api"
	"hora/config"
)

// Overload protection of the socket (docs/limits.md): a token bucket of
// requests per uid, and a bound on the connections served at once with
// fair service between uids. Both read [limits] at each use, so a reload
// changes them for the next request or connection.

// MsgRateLimited is Slurm's text for SLURMCTLD_COMMUNICATIONS_BACKOFF, the
// answer slurmctld sends a user over the RPC rate limit.
const MsgRateLimited = "Rate limit exceeded, please retry momentarily"

// rateLimiter holds one token bucket per uid (Slurm's rl_bucket_size and
// rl_refill_rate): a uid may make bucket requests in a burst, then refill
// per second.
type rateLimiter struct {
	mu      sync.Mutex
	buckets map[uint32]*tokenBucket
}

type tokenBucket struct {
	tokens float64
	last   time.Time
}

// allow takes a token from uid's bucket, or says the bucket is empty.
func (r *rateLimiter) allow(uid uint32, lim config.Limits, now time.Time) bool {
	size := float64(lim.RateLimitBucket)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.buckets == nil {
		r.buckets = map[uint32]*tokenBucket{}
	}
	b := r.buckets[uid]
	if b == nil {
		b = &tokenBucket{tokens: size, last: now}
		r.buckets[uid] = b
		if len(r.buckets) > 1<<16 {
			r.pruneLocked(lim, now) // full buckets are the same as none
		}
	}
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = min(size, b.tokens+el*lim.RateLimitRefill)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (r *rateLimiter) pruneLocked(lim config.Limits, now time.Time) {
	for uid, b := range r.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*lim.RateLimitRefill >= float64(lim.RateLimitBucket) {
			delete(r.buckets, uid)
		}
	}
}

// rateLimited says whether who's request is refused by the rate limit.
// root and horad's own user are exempt, as Slurm exempts root and
// SlurmUser: internal traffic (node agents, operators' scripts run as
// root) must never be throttled.
func (c *Controller) rateLimited(who *Caller) bool {
	lim := c.limits.Load()
	if lim == nil || lim.RateLimitBucket <= 0 || who.UID == 0 || who.UID == c.euid {
		return false
	}
	return !c.rate.allow(who.UID, *lim, time.Now())
}

// setLimits publishes [limits] to the socket server's goroutines, which
// read them without the controller's lock.
func (c *Controller) setLimits(l config.Limits) { c.limits.Store(&l) }

// Limit wraps the socket's listener with [limits]'s connection bounds:
// at most max_connections served at once and max_connections_per_user of
// one uid. Connections beyond wait in one queue per uid, and a freed slot
// goes to the uids in turn, so a flood of connections from one user
// delays only that user. Without limits a connection passes straight on.
func (c *Controller) Limit(ln net.Listener) net.Listener {
	fl := &fairListener{Listener: ln, limits: &c.limits, euid: c.euid,
		queues: map[uint32][]*limitedConn{}, active: map[uint32]int{},
		ready: make(chan struct{}, 1), done: make(chan struct{})}
	go fl.acceptLoop()
	return fl
}

// maxWaiting bounds the connections one uid may have waiting: beyond it
// the newest is closed at once (its client reports the failure), so a
// flood cannot exhaust horad's file descriptors.
const maxWaiting = 256

type fairListener struct {
	net.Listener
	limits *atomic.Pointer[config.Limits]
	euid   uint32

	mu      sync.Mutex
	queues  map[uint32][]*limitedConn // waiting, per uid
	order   []uint32                  // uids with waiting connections, in turn order
	active  map[uint32]int            // served connections per uid
	total   int
	err     error // the inner listener's, once it fails
	ready   chan struct{}
	done    chan struct{}
	closeMu sync.Once
}

// limitedConn carries its peer's credentials, read once at accept, and
// frees its slot when closed.
type limitedConn struct {
	net.Conn
	caller *Caller
	owner  *fairListener
	once   sync.Once
}

func (lc *limitedConn) Close() error {
	lc.once.Do(func() { lc.owner.release(lc) })
	return lc.Conn.Close()
}

func (fl *fairListener) acceptLoop() {
	for {
		conn, err := fl.Listener.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if !errors.Is(err, net.ErrClosed) && isTemporary(err) {
				// EMFILE and the like: wait rather than spin.
				time.Sleep(50 * time.Millisecond)
				continue
			}
			fl.mu.Lock()
			fl.err = err
			fl.mu.Unlock()
			fl.signal()
			return
		}
		lc := &limitedConn{Conn: conn, caller: peerCaller(conn), owner: fl}
		uid := uint32(1<<32 - 1) // no credentials: a uid of its own, refused by every handler
		if lc.caller != nil {
			uid = lc.caller.UID
		}
		fl.mu.Lock()
		q := fl.queues[uid]
		if len(q) >= maxWaiting {
			fl.mu.Unlock()
			conn.Close()
			continue
		}
		if len(q) == 0 {
			fl.order = append(fl.order, uid)
		}
		fl.queues[uid] = append(q, lc)
		fl.mu.Unlock()
		fl.signal()
	}
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

func (fl *fairListener) signal() {
	select {
	case fl.ready <- struct{}{}:
	default:
	}
}

// Accept hands the server the next connection allowed to be served: the
// uids with waiting connections are visited in turn, skipping those at
// their own limit, while the total is under max_connections.
func (fl *fairListener) Accept() (net.Conn, error) {
	for {
		fl.mu.Lock()
		if lc := fl.nextLocked(); lc != nil {
			fl.mu.Unlock()
			return lc, nil
		}
		err := fl.err
		fl.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-fl.ready:
		case <-fl.done:
			return nil, net.ErrClosed
		}
	}
}

func (fl *fairListener) nextLocked() *limitedConn {
	lim := fl.limits.Load()
	var total, perUser int
	if lim != nil {
		total, perUser = lim.MaxConnections, lim.MaxConnectionsPerUser
	}
	if total > 0 && fl.total >= total {
		return nil
	}
	for i, uid := range fl.order {
		if perUser > 0 && uid != 0 && uid != fl.euid && fl.active[uid] >= perUser {
			continue
		}
		q := fl.queues[uid]
		lc := q[0]
		q[0] = nil
		q = q[1:]
		// The uid goes to the back of the turn, or leaves it when it has
		// nothing more waiting.
		fl.order = append(fl.order[:i], fl.order[i+1:]...)
		if len(q) == 0 {
			delete(fl.queues, uid)
		} else {
			fl.queues[uid] = q
			fl.order = append(fl.order, uid)
		}
		fl.active[uid]++
		fl.total++
		return lc
	}
	return nil
}

func (fl *fairListener) release(lc *limitedConn) {
	uid := uint32(1<<32 - 1)
	if lc.caller != nil {
		uid = lc.caller.UID
	}
	fl.mu.Lock()
	if fl.active[uid]--; fl.active[uid] <= 0 {
		delete(fl.active, uid)
	}
	fl.total--
	waiting := len(fl.order) > 0
	fl.mu.Unlock()
	if waiting {
		// Only a waiting connection can use the freed slot: waking the
		// server's accept for nothing cost every request a thread wake-up.
		fl.signal()
	}
}

func (fl *fairListener) Close() error {
	fl.closeMu.Do(func() { close(fl.done) })
	err := fl.Listener.Close()
	fl.mu.Lock()
	for uid, q := range fl.queues {
		for _, lc := range q {
			lc.Conn.Close()
		}
		delete(fl.queues, uid)
	}
	fl.order = nil
	fl.mu.Unlock()
	return err
}

// rateLimitError is the answer to a request over the rate limit.
func rateLimitError() *api.Error {
	return &api.Error{Message: MsgRateLimited, Code: api.CodeRateLimited}
}
