package controller

import (
	"os/user"
	"strconv"
	"sync"
	"time"
)

// User and group names are looked up through the C library (os/user with
// cgo), so that NSS answers: LDAP, sssd and NIS on a real cluster, where a
// lookup is a round trip to a daemon or a server. horad looked up the
// caller's user name on every connection and its group on every
// submission; like slurmctld, which caches uid to name, it now remembers a
// name it found for nameTTL. A uid or gid not found is not remembered: a
// user created a moment ago is named as soon as NSS knows them. Reload
// (scontrol reconfigure, SIGHUP) forgets everything.
const nameTTL = time.Minute

// nameCache maps ids to names found by lookup, each for ttl.
type nameCache struct {
	lookup func(id string) (string, bool)
	ttl    time.Duration
	now    func() time.Time

	mu sync.Mutex
	m  map[uint32]nameEntry
}

type nameEntry struct {
	name string
	at   time.Time
}

// name is id's name, or id in decimal when lookup does not know it (as
// Slurm prints an unknown uid).
func (nc *nameCache) name(id uint32) string {
	now := nc.now()
	nc.mu.Lock()
	e, ok := nc.m[id]
	nc.mu.Unlock()
	// A clock that went back makes an entry look older, never younger.
	if ok && now.Sub(e.at) >= 0 && now.Sub(e.at) < nc.ttl {
		return e.name
	}
	s := strconv.FormatUint(uint64(id), 10)
	name, found := nc.lookup(s)
	if !found {
		return s
	}
	nc.mu.Lock()
	if nc.m == nil {
		nc.m = map[uint32]nameEntry{}
	}
	nc.m[id] = nameEntry{name, now}
	nc.mu.Unlock()
	return name
}

func (nc *nameCache) forget() {
	nc.mu.Lock()
	nc.m = nil
	nc.mu.Unlock()
}

var (
	userNames = &nameCache{ttl: nameTTL, now: time.Now, lookup: func(id string) (string, bool) {
		u, err := user.LookupId(id)
		if err != nil {
			return "", false
		}
		return u.Username, true
	}}
	groupNames = &nameCache{ttl: nameTTL, now: time.Now, lookup: func(id string) (string, bool) {
		g, err := user.LookupGroupId(id)
		if err != nil {
			return "", false
		}
		return g.Name, true
	}}
)

// userName maps a uid to its name, or the number when the user is unknown.
func userName(uid uint32) string { return userNames.name(uid) }

// groupName maps a gid to its name, or the number when the group is unknown.
func groupName(gid uint32) string { return groupNames.name(gid) }

// forgetNames drops every remembered name (Reload).
func forgetNames() {
	userNames.forget()
	groupNames.forget()
}
