package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestClientDependencies keeps the client small and safe to install on every
// login node: it must link neither SQLite nor SSH code (STYLE.md, tailscale).
// Nor net/http and crypto/tls: their initialisation and page faults cost
// about 1 ms of every CLI process, and api speaks HTTP/1.1 itself.
func TestClientDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "hora/cmd/hora").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("implausibly short dependency list: %v", deps)
	}
	forbidden := []string{"modernc.org/sqlite", "modernc.org/libc", "golang.org/x/crypto/ssh", "hora/store", "hora/nodes/ssh", "hora/controller",
		"net/http", "crypto/tls", "crypto/x509"}
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("the client binary depends on %s", d)
			}
		}
	}
}
