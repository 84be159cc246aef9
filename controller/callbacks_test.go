package controller

import (
	"testing"
)

// A step key names its job and only its job: another job's id with the
// same MAC, a changed MAC, a key signed with another secret and garbage
// are refused; a keyed caller may use its own job only, even as root.
func TestStepKeys(t *testing.T) {
	c := &Controller{stepSecret: []byte("0123456789abcdef0123456789abcdef")}
	k := c.stepKey(42)
	if id, ok := c.jobOfStepKey(k); !ok || id != 42 {
		t.Fatalf("own key: %d %v", id, ok)
	}
	other := &Controller{stepSecret: []byte("fedcba9876543210fedcba9876543210")}
	mac := k[len("42."):]
	for _, bad := range []string{"43." + mac, k[:len(k)-1] + "0", other.stepKey(42), "", "42", "x." + mac, "-1." + mac, "42." + mac + "00"} {
		if bad == k {
			continue
		}
		if id, ok := c.jobOfStepKey(bad); ok {
			t.Errorf("key %q accepted for job %d", bad, id)
		}
	}
	if _, ok := (&Controller{}).jobOfStepKey(k); ok {
		t.Error("a horad without a secret accepted a key")
	}

	j := &job{}
	j.ID, j.UID = 42, 1000
	o := &job{}
	o.ID, o.UID = 43, 1000
	keyed := &Caller{UID: 1000, Job: 42}
	if !keyed.mayUse(j) || keyed.mayUse(o) {
		t.Error("a keyed caller must use its own job and no other of the same user")
	}
	if (&Caller{UID: 0, Job: 42}).mayUse(o) {
		t.Error("a keyed caller of a root job used another job")
	}
	if !(&Caller{UID: 1000}).mayUse(o) || (&Caller{UID: 1001}).mayUse(o) || !(&Caller{UID: 0}).mayUse(o) {
		t.Error("socket callers: owner and root only")
	}
}
