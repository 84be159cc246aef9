package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestClientDependencies keeps the client small and safe to install on every
// login node: it must link neither SQLite nor SSH code (STYLE.md, tailscale).
// Nor net/http and crypto/tls: their initialisation and page faults cost
// about 0.4 ms of every CLI process, and api speaks HTTP/1.1 itself; nor
// gob (the listing has its own codec) and blackfriday (0.35 ms of init).
func TestClientDependencies(t *testing.T) {
	// Listed with the build tags of the Makefile (TAGS), which leave out
	// urfave/cli's man-page generator and its Markdown parser.
	cmd := exec.Command("go", "list", "-tags", "urfave_cli_no_docs", "-deps", "hora/cmd/hora")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as the Makefile builds it
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("implausibly short dependency list: %v", deps)
	}
	forbidden := []string{"modernc.org/sqlite", "modernc.org/libc", "golang.org/x/crypto/ssh", "hora/store", "hora/nodes/ssh", "hora/controller",
		"net/http", "crypto/tls", "crypto/x509", "encoding/gob", "github.com/russross/blackfriday/v2",
		// The simulator lives in hora-sim (cmd/hora-sim): a client process
		// must not initialise the scheduler, replay, config or their TOML
		// and CLI libraries (issue 16).
		"hora/replay", "hora/scheduler", "hora/config", "github.com/BurntSushi/toml", "github.com/urfave/cli/v2",
		// Start-up of every client process (docs/scale.md, "Client
		// start-up"): net initialises net/netip and unique, net/url imports
		// net/netip, regexp initialises the Unicode tables. api dials the
		// socket with syscalls and encodes its queries itself.
		"net", "net/url", "net/netip", "unique", "regexp"}
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("the client binary depends on %s", d)
			}
		}
	}
}
