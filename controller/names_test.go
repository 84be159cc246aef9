package controller

import (
	"testing"
	"time"
)

// A name found is remembered for the TTL and then looked up again; an id
// not found is looked up every time; forget drops everything; a clock that
// went back does not make an entry last longer.
func TestNameCache(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	lookups := map[string]int{}
	known := map[string]string{"1000": "alice"}
	nc := &nameCache{ttl: time.Minute, now: func() time.Time { return now }, lookup: func(id string) (string, bool) {
		lookups[id]++
		name, ok := known[id]
		return name, ok
	}}
	check := func(id uint32, want string, wantLookups int) {
		t.Helper()
		if got := nc.name(id); got != want {
			t.Fatalf("name(%d) = %q, want %q", id, got, want)
		}
		if n := lookups[itoa(int64(id))]; n != wantLookups {
			t.Fatalf("name(%d): %d lookups, want %d", id, n, wantLookups)
		}
	}
	check(1000, "alice", 1)
	check(1000, "alice", 1) // remembered
	now = now.Add(59 * time.Second)
	check(1000, "alice", 1)
	now = now.Add(time.Second) // the TTL is over
	check(1000, "alice", 2)
	check(4242, "4242", 1) // unknown: its number, not remembered
	known["4242"] = "bob"  // created meanwhile
	check(4242, "bob", 2)
	known["1000"] = "alice2" // renamed: seen after forget
	check(1000, "alice", 2)
	nc.forget()
	check(1000, "alice2", 3)
	now = now.Add(-time.Hour) // the clock went back: looked up again
	check(1000, "alice2", 4)
}
