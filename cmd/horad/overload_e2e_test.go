package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Overload with a real horad (issue 16 item 3, docs/limits.md): nobody
// floods the socket from 24 keep-alive connections, each asking for the job
// list back to back, and never lets a connection go. horad serves at most 6
// connections, 3 of one uid, and rate-limits each uid to a burst of 20 and
// 5 a second. Meanwhile another user's squeue and sbatch answer (they would
// wait for ever behind the flood's connections without the fair turns),
// the flood is refused with Slurm's rate-limit text, and once the flood
// stops nobody's own squeue gets through by sleeping and retrying.
func TestFloodDoesNotStarveOthers(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, "[limits]\nmax_connections = 6\nmax_connections_per_user = 3\nrate_limit_bucket = 20\nrate_limit_refill = 5\n"+localBatch)
	work := c.workDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	flood := filepath.Join(c.dir, "flood")
	copyFile(t, exe, flood, 0o755)
	stop := filepath.Join(work, "stop-flood")
	cmd := exec.Command(flood, "-test.run=^TestFloodHelper$")
	cmd.Env = append(os.Environ(), "HORA_FLOOD_SOCKET="+c.sock, "HORA_FLOOD_STOP="+stop)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	t.Cleanup(func() {
		os.WriteFile(stop, nil, 0o644)
		select {
		case <-ended:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
		}
	})
	for deadline := time.Now().Add(90 * time.Second); !strings.Contains(out.String(), "rate limited\n"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the flood was never rate limited; flooder says %q", out.String())
		}
	}

	// Another user (daemon, uid 1), while the flood holds every
	// connection it may. A generous message timeout: a loaded machine
	// may be slow, but a starved client waits for ever.
	env := []string{"HORA_MESSAGE_TIMEOUT=60"}
	r := c.runEnv(1, work, env, "sbatch", "--hold", "-o", "/dev/null", "--wrap", "true")
	m := submitted.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("daemon's sbatch during the flood: %+v (flooder: %q)", r, out.String())
	}
	r = c.runEnv(1, work, env, "squeue", "-h", "-u", "daemon", "-o", "%i %u")
	if r.code != 0 || r.stdout != m[1]+" daemon\n" {
		t.Fatalf("daemon's squeue during the flood: %+v, want %q", r, m[1]+" daemon\n")
	}
	if strings.Contains(out.String(), "flood ended") {
		t.Fatalf("the flood ended before the other user's commands ran, proving nothing: %q", out.String())
	}

	os.WriteFile(stop, nil, 0o644)
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("flooder: %v: %s", err, out.String())
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("flooder did not stop: %q", out.String())
	}
	var ok, limited int
	if _, err := fmt.Sscanf(out.String()[strings.Index(out.String(), "flood ended"):], "flood ended: %d answered, %d rate limited", &ok, &limited); err != nil || ok == 0 || limited == 0 {
		t.Fatalf("flooder's tally %q (%v): want both answers and rate-limit refusals", out.String(), err)
	}
	// nobody's bucket is empty now: its squeue is refused, sleeps and
	// gets through, exit 0, nothing printed but the (empty) queue.
	r = c.runEnv(65534, work, env, "squeue", "-h", "-u", "nobody")
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("nobody's squeue after the flood: %+v", r)
	}
	if !strings.Contains(c.log.String(), `msg="rate limited"`) {
		t.Fatal("horad's log has no rate-limited request")
	}
}

// TestFloodHelper is the flooder of TestFloodDoesNotStarveOthers, run as
// nobody from a copy of the test binary; it does nothing in a normal run.
func TestFloodHelper(t *testing.T) {
	sock, stop := os.Getenv("HORA_FLOOD_SOCKET"), os.Getenv("HORA_FLOOD_STOP")
	if sock == "" {
		return
	}
	var answered, limited atomic.Int64
	var once sync.Once
	var wg sync.WaitGroup
	end := time.Now().Add(300 * time.Second) // the stop file ends it sooner
	stopped := func() bool {
		_, err := os.Stat(stop)
		return err == nil || time.Now().After(end)
	}
	for range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stopped() {
				conn, err := net.Dial("unix", sock)
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				br := bufio.NewReader(conn)
				asked := false
				for !stopped() {
					if !asked {
						if _, err := io.WriteString(conn, "GET /v1/jobs HTTP/1.1\r\nHost: horad\r\n\r\n"); err != nil {
							break
						}
						asked = true
					}
					conn.SetReadDeadline(time.Now().Add(2 * time.Second))
					if _, err := br.Peek(1); err != nil {
						if ne, ok := err.(net.Error); ok && ne.Timeout() {
							continue // still waiting for a turn; keep the connection
						}
						break
					}
					conn.SetReadDeadline(time.Time{})
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						break
					}
					asked = false
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					switch resp.StatusCode {
					case http.StatusOK:
						answered.Add(1)
					case http.StatusTooManyRequests:
						limited.Add(1)
						once.Do(func() { fmt.Println("rate limited") })
					default:
						fmt.Println("unexpected status", resp.Status)
					}
				}
				conn.Close()
			}
		}()
	}
	wg.Wait()
	fmt.Printf("flood ended: %d answered, %d rate limited\n", answered.Load(), limited.Load())
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}
