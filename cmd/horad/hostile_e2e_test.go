package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"hora/api"
)

// The hostile client of the fault harness (issue 16, "Bad input"): garbage
// and truncated JSON on the socket, oversized fields, invalid UTF-8 in
// names, slow, idle and truncating clients, and nobody's jobs writing their
// output to another user's file, to /proc and through a symlink. What
// horad must do: answer each request it reads with a clear 4xx refusal,
// record nothing from a refused or incomplete submission, keep serving,
// and leave the files a job's owner may not write untouched. The checker
// (hostileCheck) holds the store and the files to that.

// hostileSetup makes the files nobody's jobs aim at: a root-owned
// directory holding a root-owned canary, and a symlink to the canary in
// the work directory, which everyone may write.
func (h *harness) hostileSetup() {
	h.rootDir = filepath.Join(h.work, "rootonly")
	if err := os.Mkdir(h.rootDir, 0o755); err != nil {
		h.t.Fatal(err)
	}
	h.canary = filepath.Join(h.rootDir, "canary")
	if err := os.WriteFile(h.canary, []byte("root's own\n"), 0o644); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Symlink(h.canary, filepath.Join(h.work, "to-canary")); err != nil {
		h.t.Fatal(err)
	}
	h.refusedNames = map[string]bool{}
	h.hostileJobs = map[int64]string{}
}

func (h *harness) hostile(r *rand.Rand, stopAt time.Time) {
	for n := 0; time.Now().Before(stopAt); n++ {
		kind := []string{"random bytes", "truncated JSON", "truncating client", "slow client", "idle client",
			"oversized name", "invalid UTF-8 name", "sbatch invalid UTF-8 name", "hostile output path", "half-closed submit"}[r.IntN(10)]
		name := fmt.Sprintf("hostile-%d", n)
		switch kind {
		case "random bytes":
			b := make([]byte, 1+r.IntN(2048))
			for i := range b {
				b[i] = byte(r.UintN(256))
			}
			h.raw(b, 0)
		case "truncated JSON":
			body := h.submitBody(name, name)
			cut := body[:r.IntN(len(body)-1)]
			h.expectRefusal(kind, name, h.rawBody(post(api.PathSubmit, cut, len(cut)), 0))
		case "truncating client":
			// Announces the whole body, sends part of it, hangs up.
			body := h.submitBody(name, name)
			h.refused(name)
			h.raw(post(api.PathSubmit, body[:r.IntN(len(body))], len(body)), 0)
		case "half-closed submit":
			// A whole, valid submission, the sending side shut right after
			// it (raw does so): carried out and answered, never cut short.
			a := h.rawBody(post(api.PathSubmit, h.submitBody(name, name), -1), 0)
			var resp api.SubmitResponse
			switch {
			case a.status == http.StatusOK && json.Unmarshal([]byte(a.body), &resp) == nil && resp.JobID > 0:
				h.mu.Lock()
				h.acked[resp.JobID] = true
				h.mu.Unlock()
			case a.status == http.StatusInternalServerError && strings.Contains(a.body, "disk is full"):
				// Refused while the nemesis filled the disk, saying so.
			case a.status != -1:
				h.violation("half-closed submission: status %d %q, want 200 and a job id", a.status, a.body)
			}
		case "slow client":
			// A whole ping, a byte every 20 ms: answered all the same.
			h.raw([]byte("GET "+api.PathPing+" HTTP/1.1\r\nHost: horad\r\nConnection: close\r\n\r\n"), 20*time.Millisecond)
		case "idle client":
			if c, err := net.Dial("unix", h.c.sock); err == nil {
				time.Sleep(time.Duration(200+r.IntN(1500)) * time.Millisecond)
				c.Close()
			}
		case "oversized name":
			big := name + strings.Repeat("x", 1025)
			h.expectRefusal(kind, big, h.rawBody(post(api.PathSubmit, h.submitBody(big, name), -1), 0))
		case "invalid UTF-8 name":
			bad := name + "\xff\xfe"
			h.expectRefusal(kind, bad, h.rawBody(post(api.PathSubmit, h.submitBody(bad, name), -1), 0))
		case "sbatch invalid UTF-8 name":
			bad := name + "-\xe9t\xe9"
			h.refused(bad)
			_, stderr, code := h.cmdAs(65534, "sbatch", "-J", bad, "-o", "/dev/null", "--wrap", "true")
			// Refused by the client, naming the field — unless horad could
			// not be reached at all (killed or stopped by the nemesis).
			unreachable := strings.Contains(stderr, "cannot reach horad") || strings.Contains(stderr, api.MsgSocketTimeout) ||
				strings.Contains(stderr, "horad at ")
			refused := strings.Contains(stderr, "Invalid job name") && strings.Contains(stderr, "not UTF-8 text")
			if code != 1 || !refused && !unreachable {
				h.violation("sbatch -J with invalid UTF-8: exit %d stderr %q, want exit 1 and the job name refused", code, stderr)
			}
		case "hostile output path":
			target := []string{h.canary, "/proc/1/environ", filepath.Join(h.work, "to-canary"),
				filepath.Join(h.rootDir, "new-%j.out")}[r.IntN(4)]
			flag := []string{"-o", "-e"}[r.IntN(2)]
			out, stderr, code := h.cmdAs(65534, "sbatch", "-J", name, flag, target, "--wrap", "echo written by nobody")
			if m := faultSubmitted.FindStringSubmatch(out); code == 0 && m != nil {
				id, _ := strconv.ParseInt(m[1], 10, 64)
				h.mu.Lock()
				h.acked[id] = true
				h.hostileJobs[id] = flag + " " + target
				h.mu.Unlock()
			} else if code == 0 {
				h.violation("nobody's sbatch %s %s: exit 0 without a job id: %q %q", flag, target, out, stderr)
			}
		}
		h.mu.Lock()
		if h.hostileOps == nil {
			h.hostileOps = map[string]int{}
		}
		h.hostileOps[kind]++
		h.mu.Unlock()
		time.Sleep(time.Duration(50+r.IntN(250)) * time.Millisecond)
	}
}

// cmdAs is cmd run as uid (the hostile jobs' owner is nobody); 0 runs it
// as this process's user.
func (h *harness) cmdAs(uid int, name string, args ...string) (string, string, int) {
	return h.cmdAsTimeout(uid, 0, name, args...)
}

// cmdTimeout is cmd for a command that may wait (srun): killed after d.
func (h *harness) cmdTimeout(d time.Duration, name string, args ...string) (string, string, int) {
	return h.cmdAsTimeout(0, d, name, args...)
}

func (h *harness) cmdAsTimeout(uid int, d time.Duration, name string, args ...string) (string, string, int) {
	return h.cmdMsgTimeout(uid, d, "2", name, args...)
}

// cmdMsgTimeout is cmdAsTimeout with the client's message timeout (seconds)
// given: the operations' 2 s counts a slow answer as a refusal; the
// settling's cancel of thousands of pending jobs takes longer (2.2–3.2 s
// for 5,600–6,700 jobs beside a CPU hog).
func (h *harness) cmdMsgTimeout(uid int, d time.Duration, msgTimeout, name string, args ...string) (string, string, int) {
	cmd := exec.Command(filepath.Join(h.c.bin, name), args...)
	if d > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		cmd = exec.CommandContext(ctx, filepath.Join(h.c.bin, name), args...)
	}
	cmd.Env = append(os.Environ(), "HORA_SOCKET="+h.c.sock, "HORA_MESSAGE_TIMEOUT="+msgTimeout, "TZ=UTC")
	cmd.Dir = h.work
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}
	return o.String(), e.String(), code
}

// submitBody is a whole, valid submission of a job named name (the script
// echoes tag), as horad's own client would send it.
func (h *harness) submitBody(name, tag string) []byte {
	const placeholder = "NAME-PLACEHOLDER"
	b, err := json.Marshal(api.SubmitRequest{Spec: api.JobSpec{Name: placeholder, WorkDir: h.work, Stdout: "/dev/null",
		Script: "#!/bin/sh\necho " + tag + "\n", Hold: true}})
	if err != nil {
		h.t.Fatal(err)
	}
	// The name goes in raw: json.Marshal would have made invalid UTF-8
	// valid, and a hostile client sends the bytes as they are.
	return bytes.Replace(b, []byte(placeholder), []byte(name), 1)
}

// post is an HTTP request with body; length is the Content-Length it
// announces (-1: the body's own).
func post(path string, body []byte, length int) []byte {
	if length < 0 {
		length = len(body)
	}
	return append([]byte(fmt.Sprintf("POST %s HTTP/1.1\r\nHost: horad\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
		path, length)), body...)
}

// raw sends b on a fresh connection (a byte every pace, if set) and reads
// the answer's status, or -1 when none came (horad down, stopped, or the
// connection cut).
func (h *harness) raw(b []byte, pace time.Duration) int {
	return h.rawBody(b, pace).status
}

// answer is a status (-1: none) and the first MiB of the body.
type answer struct {
	status int
	body   string
}

// rawBody is raw with the answer's body.
func (h *harness) rawBody(b []byte, pace time.Duration) answer {
	c, err := net.Dial("unix", h.c.sock)
	if err != nil {
		return answer{status: -1}
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5*time.Second + time.Duration(len(b))*pace))
	if pace > 0 {
		for i := range b {
			if _, err := c.Write(b[i : i+1]); err != nil {
				return answer{status: -1}
			}
			time.Sleep(pace)
		}
	} else if _, err := c.Write(b); err != nil {
		return answer{status: -1}
	}
	if uc, ok := c.(*net.UnixConn); ok {
		uc.CloseWrite() // a truncated body ends here for the server
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return answer{status: -1}
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return answer{resp.StatusCode, string(body)}
}

func (h *harness) refused(name string) {
	h.mu.Lock()
	h.refusedNames[name] = true
	h.mu.Unlock()
}

// expectRefusal: a submission horad answered must have been refused with
// a 400; no answer (horad killed or stopped) is no acknowledgement.
func (h *harness) expectRefusal(kind, name string, a answer) {
	h.refused(name)
	if a.status != -1 && a.status != http.StatusBadRequest {
		h.violation("%s: status %d %q, want 400", kind, a.status, a.body)
	}
}

func (h *harness) violation(format string, args ...any) {
	h.t.Helper()
	h.t.Errorf("hostile client: "+format, args...)
}

// hostileCheck, with the final store: nothing recorded under a refused
// name, every hostile-path job ended without writing where its owner may
// not, and the canary as it was.
func (h *harness) hostileCheck(jobs []api.Job) {
	t := h.t
	for _, j := range jobs {
		if h.refusedNames[j.Spec.Name] || h.refusedNames[strings.ToValidUTF8(j.Spec.Name, "\ufffd")] {
			t.Errorf("job %d (%q) recorded from a refused or incomplete submission", j.ID, j.Spec.Name)
		}
		if strings.ContainsRune(j.Spec.Name, '\ufffd') {
			t.Errorf("job %d: name %q was changed on the way (invalid UTF-8 replaced)", j.ID, j.Spec.Name)
		}
		if what, ok := h.hostileJobs[j.ID]; ok && j.State == api.StateCompleted {
			t.Errorf("nobody's job %d with %s COMPLETED: it could open a file it may not write", j.ID, what)
		}
	}
	if b, err := os.ReadFile(h.canary); err != nil || string(b) != "root's own\n" {
		t.Errorf("canary %s now %q (%v): written by nobody's job", h.canary, b, err)
	}
	if ents, _ := os.ReadDir(h.rootDir); len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("root's directory now holds %v: nobody's job created a file in it", names)
	}
	t.Logf("hostile client: %v; %d hostile-path jobs", h.hostileOps, len(h.hostileJobs))
}
