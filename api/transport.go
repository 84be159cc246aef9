package api

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The client's HTTP/1.1 transport. The CLI starts one process per command,
// and a Go binary that links net/http (and with it crypto/tls, x509, http2
// and mime) pays for their initialisation and page faults on every start:
// about 2 ms of a 3.3 ms budget per sbatch (docs/benchmarks.md). horad only
// ever speaks plain HTTP/1.1 on a Unix socket, so the client needs only the
// small subset below: a request with a Content-Length body, and a response
// with a Content-Length, chunked or close-delimited body. The daemon keeps
// net/http's server, so curl --unix-socket still works.

// maxHeaderBytes bounds the status line plus headers of one response.
const maxHeaderBytes = 1 << 20

// transport keeps at most one idle keep-alive connection: a CLI command
// makes one or two requests in sequence, and squeue -i reuses it.
type transport struct {
	socket string
	mu     sync.Mutex
	idle   *tconn
}

type tconn struct {
	c  conn
	br *bufio.Reader
}

// response is a parsed answer; body must be closed, which returns the
// connection for reuse when the body was read to its end.
type response struct {
	status      int
	statusText  string // the whole status line after the version ("404 Not Found")
	contentType string
	length      int64 // Content-Length, -1 when not given
	body        io.ReadCloser
}

// errBeforeResponse marks a failure on a reused connection before any byte
// of the answer arrived: the daemon closed the idle connection, and a GET
// may be sent again on a fresh one.
var errBeforeResponse = errors.New("connection closed before the response")

func (t *transport) get(ctx context.Context) (*tconn, bool, error) {
	t.mu.Lock()
	tc := t.idle
	t.idle = nil
	t.mu.Unlock()
	if tc != nil {
		return tc, true, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	c, err := dialUnix(t.socket)
	if err != nil {
		return nil, false, &fs.PathError{Op: "dial", Path: t.socket, Err: err}
	}
	return &tconn{c: c, br: newConnReader(c)}, false, nil
}

// newConnReader buffers the answer's head and small bodies: one page. A
// larger buffer cost every command fresh zeroed pages (64 KB before); large
// bodies do not go through it (readBody reads into a slice of the announced
// length, and bufio hands a read larger than its buffer straight to the
// socket).
func newConnReader(c conn) *bufio.Reader { return bufio.NewReaderSize(c, 4<<10) }

func (t *transport) put(tc *tconn) {
	t.mu.Lock()
	old := t.idle
	t.idle = tc
	t.mu.Unlock()
	if old != nil {
		old.c.Close()
	}
}

// roundTrip sends one request and reads the head of its answer. body may
// be nil. A GET that fails on a reused connection before any answer is
// retried once on a new connection; a POST never is, since the daemon may
// have acted on it.
func (t *transport) roundTrip(ctx context.Context, method, path string, hdr [][2]string, body []byte) (*response, error) {
	if k := stepKey(); k != "" {
		hdr = append(hdr[:len(hdr):len(hdr)], [2]string{"Hora-Step-Key", k})
	}
	for attempt := 0; ; attempt++ {
		tc, reused, err := t.get(ctx)
		if err != nil {
			return nil, err
		}
		resp, err := tc.exchange(ctx, method, path, hdr, body, t)
		if err == nil {
			return resp, nil
		}
		tc.c.Close()
		if reused && attempt == 0 && method == "GET" && errors.Is(err, errBeforeResponse) {
			continue
		}
		return nil, err
	}
}

func (tc *tconn) exchange(ctx context.Context, method, path string, hdr [][2]string, body []byte, t *transport) (*response, error) {
	// Cancellation: a deadline in the past wakes any blocked read or write.
	stop := context.AfterFunc(ctx, func() { tc.c.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*response, error) {
		stop()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	// Cancellation and deadlines of ctx both arrive through the AfterFunc
	// above, after ctx.Err() is set, so fail reports the context's error.
	if err := writeRequest(tc.c, method, path, hdr, body); err != nil {
		return fail(fmt.Errorf("%w: %w", errBeforeResponse, err))
	}
	resp, closeAfter, err := readHead(tc.br, method == "HEAD")
	if err != nil {
		return fail(err)
	}
	var r io.Reader = tc.br // delimited by the end of the connection
	if resp.body != nil {
		r = resp.body
	}
	resp.body = &bodyReader{r: r, tc: tc, t: t, stop: stop, keep: !closeAfter}
	return resp, nil
}

// writeRequest writes the request in one write: the daemon reads the head
// and the body from one segment.
func writeRequest(w io.Writer, method, path string, hdr [][2]string, body []byte) error {
	var b bytes.Buffer
	b.Grow(256 + len(body))
	b.WriteString(method)
	b.WriteByte(' ')
	b.WriteString(path)
	b.WriteString(" HTTP/1.1\r\nHost: horad\r\nUser-Agent: hora\r\n")
	for _, h := range hdr {
		b.WriteString(h[0])
		b.WriteString(": ")
		b.WriteString(h[1])
		b.WriteString("\r\n")
	}
	if body != nil || method == "POST" || method == "PUT" {
		b.WriteString("Content-Length: ")
		b.WriteString(strconv.Itoa(len(body)))
		b.WriteString("\r\n")
	}
	b.WriteString("\r\n")
	b.Write(body)
	_, err := w.Write(b.Bytes())
	return err
}

// readHead reads the status line and headers, skipping 1xx answers. The
// returned response's body is nil when the answer ends with the connection
// (no length, not chunked); the caller then reads the connection itself.
func readHead(br *bufio.Reader, noBody bool) (resp *response, closeAfter bool, err error) {
	for first := true; ; first = false {
		n := 0
		line, err := readLine(br, &n)
		if err != nil {
			if first && (err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err)) {
				return nil, false, fmt.Errorf("%w: %w", errBeforeResponse, err)
			}
			return nil, false, fmt.Errorf("reading the response: %w", err)
		}
		proto, rest, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(proto, "HTTP/1.") || len(rest) < 3 {
			return nil, false, fmt.Errorf("malformed status line %q", line)
		}
		code, err := strconv.Atoi(rest[:3])
		if err != nil || code < 100 || code > 999 {
			return nil, false, fmt.Errorf("malformed status code in %q", line)
		}
		resp = &response{status: code, statusText: rest, length: -1}
		closeAfter = proto == "HTTP/1.0"
		length := int64(-1)
		chunked := false
		for {
			h, err := readLine(br, &n)
			if err != nil {
				return nil, false, fmt.Errorf("reading the response headers: %w", err)
			}
			if h == "" {
				break
			}
			k, v, ok := strings.Cut(h, ":")
			if !ok {
				return nil, false, fmt.Errorf("malformed response header %q", h)
			}
			v = strings.TrimSpace(v)
			switch {
			case strings.EqualFold(k, "Content-Length"):
				l, err := strconv.ParseInt(v, 10, 64)
				if err != nil || l < 0 || (length >= 0 && l != length) {
					return nil, false, fmt.Errorf("malformed Content-Length %q", v)
				}
				length = l
			case strings.EqualFold(k, "Transfer-Encoding"):
				if !strings.EqualFold(v, "chunked") {
					return nil, false, fmt.Errorf("unsupported Transfer-Encoding %q", v)
				}
				chunked = true
			case strings.EqualFold(k, "Connection"):
				for _, tok := range strings.Split(v, ",") {
					switch strings.ToLower(strings.TrimSpace(tok)) {
					case "close":
						closeAfter = true
					case "keep-alive":
						if proto == "HTTP/1.0" {
							closeAfter = false
						}
					}
				}
			case strings.EqualFold(k, "Content-Type"):
				resp.contentType = v
			}
		}
		if code >= 100 && code < 200 {
			continue // 100 Continue and friends precede the real answer
		}
		switch {
		case noBody || code == 204 || code == 304: // RFC 9112 §6.3 rule 1
			resp.body = io.NopCloser(eofReader{})
		case chunked: // RFC 9112 §6.3: chunked overrides Content-Length
			resp.body = io.NopCloser(&chunkedReader{br: br})
		case length >= 0:
			resp.length = length
			resp.body = io.NopCloser(&lengthReader{r: br, left: length})
		default:
			closeAfter = true // the body ends when the daemon closes
			resp.body = nil
		}
		return resp, closeAfter, nil
	}
}

func isReset(err error) bool { return isConnError(err) }

// readLine reads one CRLF- (or LF-) terminated line, counting its bytes
// against maxHeaderBytes.
func readLine(br *bufio.Reader, n *int) (string, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		*n += len(frag)
		if *n > maxHeaderBytes {
			return "", errors.New("response header too large")
		}
		line = append(line, frag...)
		if err == nil {
			break
		}
		if err != bufio.ErrBufferFull {
			if err == io.EOF && len(line) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	return string(line), nil
}

// chunkedReader decodes a chunked body (RFC 9112 §7.1); trailers are read
// and ignored.
type chunkedReader struct {
	br   *bufio.Reader
	left int64 // bytes left in the current chunk
	done bool
	err  error
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.done {
		return 0, io.EOF
	}
	if c.left == 0 {
		n := 0
		line, err := readLine(c.br, &n)
		if err != nil {
			return 0, c.fail(err)
		}
		size, _, _ := strings.Cut(line, ";")
		v, err := strconv.ParseInt(strings.TrimSpace(size), 16, 64)
		if err != nil || v < 0 {
			return 0, c.fail(fmt.Errorf("malformed chunk size %q", line))
		}
		if v == 0 {
			for { // trailers end with an empty line
				t, err := readLine(c.br, &n)
				if err != nil {
					return 0, c.fail(err)
				}
				if t == "" {
					break
				}
			}
			c.done = true
			return 0, io.EOF
		}
		c.left = v
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	c.left -= int64(n)
	if c.left == 0 && err == nil {
		m := 0
		var end string
		if end, err = readLine(c.br, &m); err == nil && end != "" {
			err = errors.New("malformed chunk: no CRLF after the data")
		}
		if err != nil {
			return n, c.fail(err)
		}
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return n, c.fail(err)
	}
	return n, nil
}

func (c *chunkedReader) fail(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	c.err = fmt.Errorf("reading a chunked body: %w", err)
	return c.err
}

// lengthReader reads a Content-Length body; an end of the connection
// before the announced length is an error, not a short body.
type lengthReader struct {
	r    io.Reader
	left int64
}

func (l *lengthReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if err == io.EOF && l.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	if err == io.EOF {
		err = nil
	}
	return n, err
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// bodyReader hands the connection back for reuse once its body has been
// read to the end without error, and closes it otherwise.
type bodyReader struct {
	r      io.Reader
	tc     *tconn
	t      *transport
	stop   func() bool
	keep   bool
	eof    bool
	closed bool
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errors.New("read of a closed body")
	}
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// Close drains a short remainder (a JSON decoder leaves the final newline)
// so that the connection can be reused; a long one is not worth reading.
func (b *bodyReader) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	if !b.eof && b.keep {
		const limit = 64 << 10
		if n, err := io.Copy(io.Discard, io.LimitReader(b.r, limit+1)); err == nil && n <= limit {
			b.eof = true
		}
	}
	stopped := b.stop()
	if b.eof && b.keep && stopped {
		b.tc.c.SetDeadline(time.Time{})
		b.t.put(b.tc)
		return nil
	}
	return b.tc.c.Close()
}

// stepKey is $HORA_STEP_KEY: inside a job on an SSH node, $HORA_SOCKET is
// a socket forwarded to horad, which authenticates requests by this key
// (docs/steps.md); horad's own socket ignores it.
var stepKey = sync.OnceValue(func() string { return os.Getenv("HORA_STEP_KEY") })
