package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// serveHTTP starts a real net/http server on a Unix socket and counts the
// connections it accepts.
func serveHTTP(t *testing.T, h http.Handler) (sock string, conns *atomic.Int32) {
	t.Helper()
	sock = filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	conns = &atomic.Int32{}
	srv := &http.Server{Handler: h, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return sock, conns
}

// serveRaw answers every connection with a fixed byte string after reading
// the request head, then closes: for answers net/http would not produce.
func serveRaw(t *testing.T, answer string) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(c)
			for {
				line, err := br.ReadString('\n')
				if err != nil || line == "\r\n" {
					break
				}
			}
			io.WriteString(c, answer)
			c.Close()
		}
	}()
	return sock
}

func body(t *testing.T, tr *transport, method, path string) (*response, string) {
	t.Helper()
	resp, err := tr.roundTrip(context.Background(), method, path, nil, nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	b, err := io.ReadAll(resp.body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	resp.body.Close()
	return resp, string(b)
}

func TestTransportAgainstNetHTTP(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	var gotBody, gotHeaders atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("GET /small", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	})
	mux.HandleFunc("GET /chunked", func(w http.ResponseWriter, r *http.Request) {
		for i := range 100 {
			fmt.Fprintf(w, "line %d\n", i)
			w.(http.Flusher).Flush() // each line its own chunk
		}
	})
	mux.HandleFunc("GET /big-chunked", func(w http.ResponseWriter, r *http.Request) {
		w.Write(big)
	})
	mux.HandleFunc("GET /big-length", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(big)))
		w.Write(big)
	})
	mux.HandleFunc("GET /teapot", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "short and stout", http.StatusTeapot)
	})
	mux.HandleFunc("GET /empty", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /close", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	})
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotBody.Store(string(b))
		gotHeaders.Store(r.Header.Get("Content-Type") + "|" + r.Host + "|" + strconv.FormatInt(r.ContentLength, 10))
		w.Header().Set("Content-Type", "text/x-echo")
		w.Write(b)
	})
	sock, conns := serveHTTP(t, mux)
	tr := &transport{socket: sock}

	if resp, b := body(t, tr, "GET", "/small"); resp.status != 200 || b != "hello" {
		t.Errorf("/small: %d %q", resp.status, b)
	}
	var want strings.Builder
	for i := range 100 {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if resp, b := body(t, tr, "GET", "/chunked"); resp.status != 200 || b != want.String() {
		t.Errorf("/chunked: %d, %d bytes, want %d", resp.status, len(b), want.Len())
	}
	for _, p := range []string{"/big-chunked", "/big-length"} {
		if resp, b := body(t, tr, "GET", p); resp.status != 200 || b != string(big) {
			t.Errorf("%s: %d, %d bytes, want %d", p, resp.status, len(b), len(big))
		}
	}
	if resp, b := body(t, tr, "GET", "/teapot"); resp.status != 418 || resp.statusText != "418 I'm a teapot" || b != "short and stout\n" {
		t.Errorf("/teapot: %d %q %q", resp.status, resp.statusText, b)
	}
	if resp, b := body(t, tr, "GET", "/empty"); resp.status != 204 || b != "" {
		t.Errorf("/empty: %d %q", resp.status, b)
	}
	if resp, b := body(t, tr, "GET", "/nowhere"); resp.status != 404 || !strings.Contains(b, "not found") {
		t.Errorf("/nowhere: %d %q", resp.status, b)
	}
	payload := []byte(`{"x":"` + strings.Repeat("y", 100000) + `"}`)
	resp, err := tr.roundTrip(context.Background(), "POST", "/echo", [][2]string{{"Content-Type", "application/json"}}, payload)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.body)
	resp.body.Close()
	if string(b) != string(payload) || gotBody.Load() != string(payload) || resp.contentType != "text/x-echo" {
		t.Errorf("POST /echo: %d bytes back, content type %q", len(b), resp.contentType)
	}
	if h := gotHeaders.Load(); h != "application/json|horad|"+strconv.Itoa(len(payload)) {
		t.Errorf("POST /echo: the server saw headers %q", h)
	}
	// Everything so far went over one kept-alive connection.
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for sequential requests, want 1 (keep-alive)", n)
	}
	// Connection: close is obeyed: the next request needs a new connection.
	if _, b := body(t, tr, "GET", "/close"); b != "bye" {
		t.Errorf("/close: %q", b)
	}
	if _, b := body(t, tr, "GET", "/small"); b != "hello" {
		t.Errorf("/small after close: %q", b)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections after a Connection: close answer, want 2", n)
	}
	// A body left half read is not reused: the next request still works.
	resp, err = tr.roundTrip(context.Background(), "GET", "/big-length", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadFull(resp.body, make([]byte, 10))
	resp.body.Close()
	if _, b := body(t, tr, "GET", "/small"); b != "hello" {
		t.Errorf("/small after an abandoned body: %q", b)
	}
}

// The client's public methods over the transport: a listing in gob (which
// the real server sends chunked) and an error body in JSON.
func TestClientOverTransport(t *testing.T) {
	jobs := make([]Job, 5000)
	for i := range jobs {
		jobs[i] = Job{ID: int64(i + 1), State: StatePending, User: "u" + strconv.Itoa(i)}
	}
	var answer atomic.Value // how the daemon answers a listing: as asked, or in JSON (an older daemon)
	answer.Store(MediaListing)
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathJobs, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != MediaListing {
			t.Errorf("Jobs asked for %q", r.Header.Get("Accept"))
		}
		switch answer.Load() {
		case MediaListing:
			w.Header().Set("Content-Type", MediaListing)
			w.Write(AppendListing(nil, jobs))
		default:
			json.NewEncoder(w).Encode(&JobsResponse{Jobs: jobs})
		}
	})
	mux.HandleFunc("GET "+PathPing, func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(PingResponse{Version: "v9", ClusterName: "c"})
	})
	mux.HandleFunc("GET "+PathNodes, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		io.WriteString(w, "it broke\n")
	})
	sock, conns := serveHTTP(t, mux)
	c := NewClient(sock)
	for _, a := range []string{MediaListing, "application/json"} {
		answer.Store(a)
		got, err := c.Jobs(context.Background(), JobFilter{})
		if err != nil || len(got) != len(jobs) || got[4999].User != "u4999" {
			t.Fatalf("Jobs answered as %s: %d jobs, %v", a, len(got), err)
		}
	}
	p, err := c.Ping(context.Background())
	if err != nil || p.Version != "v9" {
		t.Fatalf("Ping: %+v %v", p, err)
	}
	_, err = c.Nodes(context.Background())
	var ae *Error
	if !errors.As(err, &ae) || ae.Code != CodeInternal || ae.Message != "horad: 500 Internal Server Error: it broke" {
		t.Fatalf("Nodes: %v", err)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// Answers net/http's server does not give: a body delimited by closing the
// connection, a 100 Continue before the answer, malformed heads, and a
// server that closes early.
func TestTransportRawAnswers(t *testing.T) {
	cases := []struct {
		name, answer string
		status       int
		body         string
		err          string // substring of the error, from roundTrip or from reading the body
	}{
		{"close-delimited", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end", 200, "until the end", ""},
		{"http/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 200, "ok", ""},
		{"continue first", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nnew", 201, "new", ""},
		{"chunk extensions and trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: 1\r\n\r\n", 200, "abcde", ""},
		{"closed before answering", "", 0, "", "connection closed before the response"},
		{"closed in the head", "HTTP/1.1 200 OK\r\nContent-Le", 0, "", "reading the response headers"},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this", 200, "", "unexpected EOF"},
		{"chunked cut short", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc", 200, "", "unexpected EOF"},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 200, "", `malformed chunk size "zz"`},
		{"bad status line", "SMTP ready\r\n\r\n", 0, "", `malformed status line "SMTP ready"`},
		{"bad status code", "HTTP/1.1 2x0 OK\r\n\r\n", 0, "", "malformed status code"},
		{"bad content length", "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n", 0, "", `malformed Content-Length "-5"`},
		{"unknown transfer encoding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 0, "", `unsupported Transfer-Encoding "gzip"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := &transport{socket: serveRaw(t, tc.answer)}
			resp, err := tr.roundTrip(context.Background(), "POST", "/x", nil, []byte("{}"))
			var b []byte
			if err == nil {
				b, err = io.ReadAll(resp.body)
				resp.body.Close()
				if resp.status != tc.status {
					t.Errorf("status %d, want %d", resp.status, tc.status)
				}
			}
			if tc.err == "" {
				if err != nil || string(b) != tc.body {
					t.Errorf("body %q, err %v; want %q", b, err, tc.body)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("err %v, want one containing %q", err, tc.err)
			}
		})
	}
}

// A GET on a kept-alive connection that the daemon has since closed is sent
// again on a new one; a POST is not (the daemon may have acted on it), and
// fails with an error instead.
func TestTransportStaleConnection(t *testing.T) {
	var hits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "ok")
	})
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, IdleTimeout: 50 * time.Millisecond}
	go srv.Serve(l)
	defer srv.Close()
	tr := &transport{socket: sock}
	if _, b := body(t, tr, "GET", "/a"); b != "ok" {
		t.Fatalf("first GET: %q", b)
	}
	time.Sleep(300 * time.Millisecond) // the server drops the idle connection
	if _, b := body(t, tr, "GET", "/b"); b != "ok" {
		t.Fatalf("GET on a stale connection: %q", b)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := tr.roundTrip(context.Background(), "POST", "/c", nil, []byte("x")); err == nil {
		t.Fatalf("POST on a stale connection succeeded; it must not be retried blindly")
	}
	if n := hits.Load(); n != 2 {
		t.Errorf("the server handled %d requests, want 2", n)
	}
	if _, b := body(t, tr, "GET", "/d"); b != "ok" {
		t.Fatalf("GET after the failed POST: %q", b)
	}
}

// A cancelled context ends a request the daemon does not answer.
func TestTransportCancel(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			defer c.Close()
			io.Copy(io.Discard, c) // reads, never answers
		}
	}()
	tr := &transport{socket: sock}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = tr.roundTrip(ctx, "GET", "/slow", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want context.DeadlineExceeded", err)
	}
}
