package sshtest

import (
	"net"
	"os/exec"
	"strconv"
	"testing"
)

// What a killed test process left of a subnet is gone when removeSubnet
// returns, the host ends of its veths included: the kernel frees a deleted
// namespace later, and a test that took the subnet at once failed "ip link
// add hora2v2 ...: File exists" (make test right after a killed one). Here
// the veth's peer stays in the host, so only removeSubnet can delete it.
func TestRemoveSubnetDeletesItsVeths(t *testing.T) {
	const k = 249 // the last subnet allocateBridge hands out
	br := "hora-br" + strconv.Itoa(k)
	veth, other := "hora"+strconv.Itoa(k)+"v1", "hora"+strconv.Itoa(k)+"x1"
	if _, err := net.InterfaceByName(br); err == nil {
		t.Fatalf("%s exists: subnet %d is in use on this machine", br, k)
	}
	t.Cleanup(func() {
		for _, l := range []string{br, veth, other} {
			_ = exec.Command("ip", "link", "del", l).Run()
		}
	})
	for _, args := range [][]string{
		{"link", "add", br, "type", "bridge"},
		{"link", "add", veth, "type", "veth", "peer", "name", "hora" + strconv.Itoa(k) + "p1"},
		{"link", "add", other, "type", "veth", "peer", "name", "hora" + strconv.Itoa(k) + "y1"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	removeSubnet(k)
	for _, l := range []string{br, veth} {
		if _, err := net.InterfaceByName(l); err == nil {
			t.Errorf("%s still exists after removeSubnet(%d)", l, k)
		}
	}
	if _, err := net.InterfaceByName(other); err != nil {
		t.Errorf("%s (not a veth of the subnet) was deleted: %v", other, err)
	}
}
