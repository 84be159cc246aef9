package controller

import (
	"net"
	"slices"
	"testing"
	"time"

	"hora/config"
)

// The token bucket of one uid: a burst of rate_limit_bucket requests, then
// rate_limit_refill per second; another uid has its own bucket.
func TestRateLimiterBuckets(t *testing.T) {
	var r rateLimiter
	lim := config.Limits{RateLimitBucket: 3, RateLimitRefill: 2}
	t0 := time.Unix(1000, 0)
	for i := range 3 {
		if !r.allow(1000, lim, t0) {
			t.Fatalf("request %d of a burst of 3 refused", i+1)
		}
	}
	if r.allow(1000, lim, t0) {
		t.Fatal("4th request of a burst of 3 allowed")
	}
	if !r.allow(1001, lim, t0) {
		t.Fatal("another uid refused by the first uid's empty bucket")
	}
	if !r.allow(1000, lim, t0.Add(500*time.Millisecond)) {
		t.Fatal("refill of 2/s: one token after 0.5 s, refused")
	}
	if r.allow(1000, lim, t0.Add(500*time.Millisecond)) {
		t.Fatal("refill of 2/s: a second token after 0.5 s")
	}
	// A long pause fills the bucket to its size, not beyond.
	t1 := t0.Add(time.Hour)
	for i := range 3 {
		if !r.allow(1000, lim, t1) {
			t.Fatalf("after an hour, request %d refused", i+1)
		}
	}
	if r.allow(1000, lim, t1) {
		t.Fatal("the bucket grew past its size")
	}
}

// root and horad's own user are never rate limited (Slurm exempts root and
// SlurmUser); nobody is once its bucket is empty; no bucket, no limit.
func TestRateLimitedExemptions(t *testing.T) {
	c := &Controller{euid: 4242}
	c.setLimits(config.Limits{RateLimitBucket: 1, RateLimitRefill: 0.001})
	for _, uid := range []uint32{0, 4242} {
		for range 5 {
			if c.rateLimited(&Caller{UID: uid}) {
				t.Fatalf("uid %d rate limited", uid)
			}
		}
	}
	if c.rateLimited(&Caller{UID: 65534}) || !c.rateLimited(&Caller{UID: 65534}) {
		t.Fatal("nobody with a bucket of 1: want the first request allowed and the second refused")
	}
	c.setLimits(config.Limits{})
	if c.rateLimited(&Caller{UID: 65534}) {
		t.Fatal("rate limited with rate_limit_bucket = 0")
	}
}

// Fair service: with one slot, the waiting uids are served in turn, not in
// arrival order, and a uid at max_connections_per_user waits while another
// is served.
func TestFairListenerTurns(t *testing.T) {
	c := &Controller{euid: 4242}
	c.setLimits(config.Limits{MaxConnections: 1})
	fl := &fairListener{limits: &c.limits, euid: c.euid, queues: map[uint32][]*limitedConn{}, active: map[uint32]int{},
		ready: make(chan struct{}, 1), done: make(chan struct{})}
	arrive := func(uid uint32) {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		lc := &limitedConn{Conn: a, caller: &Caller{UID: uid}, owner: fl}
		if len(fl.queues[uid]) == 0 {
			fl.order = append(fl.order, uid)
		}
		fl.queues[uid] = append(fl.queues[uid], lc)
	}
	for range 5 {
		arrive(1000) // the flood
	}
	arrive(1001)
	var served []uint32
	for range 4 {
		lc := fl.nextLocked()
		if lc == nil {
			t.Fatalf("no connection served with a free slot; served so far %v", served)
		}
		if fl.nextLocked() != nil {
			t.Fatal("a second connection served with max_connections = 1")
		}
		served = append(served, lc.caller.UID)
		lc.Close()
	}
	if want := []uint32{1000, 1001, 1000, 1000}; !slices.Equal(served, want) {
		t.Fatalf("served %v, want %v (uid 1001's one connection second, not after the flood)", served, want)
	}

	c.setLimits(config.Limits{MaxConnectionsPerUser: 1})
	arrive(1002)
	first := fl.nextLocked() // 1000's last waiting one
	if first == nil || first.caller.UID != 1000 {
		t.Fatalf("served %+v, want uid 1000's", first)
	}
	arrive(1000)
	next := fl.nextLocked()
	if next == nil || next.caller.UID != 1002 {
		t.Fatalf("with uid 1000 at its limit of 1, served %+v, want uid 1002's", next)
	}
	if lc := fl.nextLocked(); lc != nil {
		t.Fatalf("uid %d served past max_connections_per_user = 1", lc.caller.UID)
	}
	first.Close()
	if lc := fl.nextLocked(); lc == nil || lc.caller.UID != 1000 {
		t.Fatalf("after uid 1000's connection ended, served %+v, want its waiting one", lc)
	}
}
