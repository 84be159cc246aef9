package controller

import (
	"context"
	"fmt"
	"net"
	"os/user"
	"strconv"

	"golang.org/x/sys/unix"
)

// Caller is the identity of the process at the other end of the socket, as
// the kernel reports it (SO_PEERCRED). Nothing the client sends can change it.
type Caller struct {
	UID  uint32
	GID  uint32
	PID  int32
	User string
	// Job is set for a caller authenticated by a step key on a node's
	// callback socket (callbacks.go): it acts as the job's owner, for
	// that job only, and has no pid here (PID 0).
	Job int64
}

// mayUse reports whether the caller may create and run steps of j: its
// owner or root, and a keyed caller only within its own job.
func (who *Caller) mayUse(j *job) bool {
	if who.Job != 0 && who.Job != j.ID {
		return false
	}
	return who.UID == j.UID || who.UID == 0
}

type callerKey struct{}

// connContext attaches the peer's credentials to every request of a
// connection. A connection whose credentials cannot be read gets none, and
// every handler refuses it.
func connContext(ctx context.Context, c net.Conn) context.Context {
	var who *Caller
	if lc, ok := c.(*limitedConn); ok {
		who = lc.caller // read at accept (Limit)
	} else {
		who = peerCaller(c)
	}
	if who == nil {
		return ctx
	}
	// The name is looked up here, in the connection's own goroutine, not
	// in the listener's accept loop.
	named := *who
	named.User = userName(who.UID)
	return context.WithValue(ctx, callerKey{}, &named)
}

// peerCaller reads a Unix connection's SO_PEERCRED, or nil; User is left
// empty.
func peerCaller(c net.Conn) *Caller {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return nil
	}
	return &Caller{UID: cred.Uid, GID: cred.Gid, PID: cred.Pid}
}

func callerFrom(ctx context.Context) (*Caller, error) {
	c, ok := ctx.Value(callerKey{}).(*Caller)
	if !ok {
		return nil, fmt.Errorf("peer credentials unavailable")
	}
	return c, nil
}

// lookupUID resolves a user name or numeric uid.
func lookupUID(s string) (uint32, bool) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return uint32(n), true
	}
	u, err := user.Lookup(s)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(u.Uid, 10, 32)
	return uint32(n), err == nil
}
