package main

// A specialised decoder for horad's job list. squeue on a queue of 10,000
// jobs must finish in 50 ms for the whole process; encoding/json alone
// spends 50-70 ms on the 3 MB answer (measured on this machine), so squeue
// reads the answer with this hand-written scanner and formats in a few ms.
// Any input the scanner does not understand falls back to encoding/json, and
// TestDecodeJobsMatchesEncodingJSON fills every field of api.Job by
// reflection, so a field added to the api without being added here fails.
//
// TODO(api): this belongs in package api (e.g. Client.Jobs using it, or a
// compact field-selected listing), where all clients would profit.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"hora/api"
)

// fetchJobs is Client.Jobs with the fast decoder: the same path, query and
// error bodies, on the client's socket.
func fetchJobs(ctx context.Context, cl *api.Client, f api.JobFilter) ([]api.Job, error) {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", cl.Socket)
		},
		DisableCompression: true,
	}
	defer tr.CloseIdleConnections()
	path := api.PathJobs
	if q := f.Query().Encode(); q != "" {
		path += "?" + q
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://horad"+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("horad at %s: %w", cl.Socket, err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength) + 1)
	}
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	body := buf.Bytes()
	if resp.StatusCode/100 != 2 {
		e := &api.Error{}
		if json.Unmarshal(body, e) != nil || e.Message == "" {
			e.Message = fmt.Sprintf("horad: %s: %s", resp.Status, bytes.TrimSpace(body))
			e.Code = api.CodeInternal
		}
		return nil, e
	}
	return decodeJobs(body)
}

// decodeJobs decodes a JobsResponse body.
func decodeJobs(b []byte) ([]api.Job, error) {
	d := &jdec{b: b}
	jobs := d.response()
	if d.err == nil {
		d.ws()
		if d.i != len(d.b) {
			d.fail()
		}
	}
	if d.err != nil {
		var out api.JobsResponse
		if err := json.Unmarshal(b, &out); err != nil {
			return nil, err
		}
		return out.Jobs, nil
	}
	return jobs, nil
}

var errJSON = errors.New("json: unexpected input")

// jdec is a minimal JSON reader; after the first error every method is a
// no-op returning zero values, and the caller falls back.
type jdec struct {
	b   []byte
	i   int
	err error
}

func (d *jdec) fail() {
	if d.err == nil {
		d.err = errJSON
	}
	d.i = len(d.b)
}

func (d *jdec) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte (0 at the end).
func (d *jdec) peek() byte {
	d.ws()
	if d.i >= len(d.b) {
		return 0
	}
	return d.b[d.i]
}

func (d *jdec) expect(c byte) {
	if d.peek() != c {
		d.fail()
		return
	}
	d.i++
}

// null consumes a JSON null if one comes next.
func (d *jdec) null() bool {
	if d.peek() == 'n' && bytes.HasPrefix(d.b[d.i:], []byte("null")) {
		d.i += 4
		return true
	}
	return false
}

// object calls field for every key of an object (or nothing for null).
func (d *jdec) object(field func(key []byte)) {
	if d.null() {
		return
	}
	d.expect('{')
	if d.peek() == '}' {
		d.i++
		return
	}
	for d.err == nil {
		key := d.rawString()
		d.expect(':')
		field(key)
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return
		default:
			d.fail()
		}
	}
}

// array calls elem for every element of an array (or nothing for null).
func (d *jdec) array(elem func()) {
	if d.null() {
		return
	}
	d.expect('[')
	if d.peek() == ']' {
		d.i++
		return
	}
	for d.err == nil {
		elem()
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return
		default:
			d.fail()
		}
	}
}

// rawString returns a string's bytes when it has no escapes (a sub-slice,
// no copy), else its decoded bytes.
func (d *jdec) rawString() []byte {
	d.expect('"')
	start := d.i
	for d.i < len(d.b) {
		switch c := d.b[d.i]; {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			return s
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			d.fail()
			return nil
		}
		d.i++
	}
	d.fail()
	return nil
}

// escaped decodes the rest of a string that contains escapes.
func (d *jdec) escaped(start int) []byte {
	out := append([]byte(nil), d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return out
		case c < 0x20:
			d.fail()
			return nil
		case c != '\\':
			out = append(out, c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.b) {
			break
		}
		e := d.b[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := d.hex4()
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if d.i+1 < len(d.b) && d.b[d.i] == '\\' && d.b[d.i+1] == 'u' {
					save := d.i
					d.i += 2
					r2 = d.hex4()
					if dr := utf16.DecodeRune(r, r2); dr != utf8.RuneError {
						r = dr
					} else {
						d.i, r = save, utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			d.fail()
			return nil
		}
	}
	d.fail()
	return nil
}

func (d *jdec) hex4() rune {
	if d.i+4 > len(d.b) {
		d.fail()
		return 0
	}
	n, err := strconv.ParseUint(string(d.b[d.i:d.i+4]), 16, 32)
	if err != nil {
		d.fail()
		return 0
	}
	d.i += 4
	return rune(n)
}

func (d *jdec) str() string {
	if d.null() {
		return ""
	}
	return string(d.rawString())
}

// int reads an integer; anything else (fractions, exponents) is left to
// the encoding/json fallback.
func (d *jdec) int() int64 {
	if d.null() {
		return 0
	}
	d.ws()
	neg := false
	if d.i < len(d.b) && d.b[d.i] == '-' {
		neg = true
		d.i++
	}
	start := d.i
	var n int64
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		n = n*10 + int64(d.b[d.i]-'0')
		d.i++
	}
	if d.i == start || d.i-start > 18 || (d.i < len(d.b) && (d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E')) {
		d.fail()
		return 0
	}
	if neg {
		return -n
	}
	return n
}

func (d *jdec) float() float64 {
	if d.null() {
		return 0
	}
	d.ws()
	start := d.i
	for d.i < len(d.b) && bytes.IndexByte([]byte("+-.eE0123456789"), d.b[d.i]) >= 0 {
		d.i++
	}
	f, err := strconv.ParseFloat(string(d.b[start:d.i]), 64)
	if err != nil {
		d.fail()
	}
	return f
}

func (d *jdec) bool() bool {
	switch {
	case d.null():
		return false
	case bytes.HasPrefix(d.b[d.i:], []byte("true")):
		d.i += 4
		return true
	case bytes.HasPrefix(d.b[d.i:], []byte("false")):
		d.i += 5
		return false
	}
	d.fail()
	return false
}

func (d *jdec) strings() []string {
	var out []string
	d.array(func() { out = append(out, d.str()) })
	return out
}

func (d *jdec) int64s() []int64 {
	var out []int64
	d.array(func() { out = append(out, d.int()) })
	return out
}

// skip consumes any value.
func (d *jdec) skip() {
	switch d.peek() {
	case '{':
		d.object(func([]byte) { d.skip() })
	case '[':
		d.array(d.skip)
	case '"':
		d.rawString()
	case 't', 'f':
		d.bool()
	case 'n':
		if !d.null() {
			d.fail()
		}
	default:
		d.float()
	}
}

func (d *jdec) response() []api.Job {
	var jobs []api.Job
	d.object(func(k []byte) {
		if string(k) != "jobs" {
			d.skip()
			return
		}
		// Pre-size from the body: a job takes at least ~150 bytes of JSON,
		// and growing a slice of large structs costs more than parsing.
		jobs = make([]api.Job, 0, min(len(d.b)/150+1, 1<<20))
		d.array(func() {
			jobs = append(jobs, api.Job{})
			d.job(&jobs[len(jobs)-1])
		})
	})
	return jobs
}

func (d *jdec) job(j *api.Job) {
	d.object(func(k []byte) {
		switch string(k) {
		case "id":
			j.ID = d.int()
		case "spec":
			d.spec(&j.Spec)
		case "uid":
			j.UID = uint32(d.int())
		case "gid":
			j.GID = uint32(d.int())
		case "user":
			j.User = d.str()
		case "group":
			j.Group = d.str()
		case "state":
			j.State = api.JobState(d.str())
		case "reason":
			j.Reason = d.str()
		case "priority":
			j.Priority = d.int()
		case "submit_time":
			j.SubmitTime = d.int()
		case "eligible_time":
			j.EligibleTime = d.int()
		case "start_time":
			j.StartTime = d.int()
		case "end_time":
			j.EndTime = d.int()
		case "nodes":
			j.Nodes = d.strings()
		case "exit_code":
			j.ExitCode = int(d.int())
		case "signal":
			j.Signal = int(d.int())
		case "cancelled_by":
			j.CancelledBy = d.int()
		case "restarts":
			j.Restarts = int(d.int())
		case "steps":
			d.array(func() {
				j.Steps = append(j.Steps, api.Step{})
				d.step(&j.Steps[len(j.Steps)-1])
			})
		case "stdout_path":
			j.StdoutPath = d.str()
		case "stderr_path":
			j.StderrPath = d.str()
		default:
			d.skip()
		}
	})
}

func (d *jdec) step(s *api.Step) {
	d.object(func(k []byte) {
		switch string(k) {
		case "index":
			s.Index = int(d.int())
		case "node":
			s.Node = d.str()
		case "state":
			s.State = api.JobState(d.str())
		case "offset":
			s.Offset = d.float()
		case "size":
			s.Size = d.float()
		case "start_time":
			s.StartTime = d.int()
		case "end_time":
			s.EndTime = d.int()
		case "exit_code":
			s.ExitCode = int(d.int())
		case "signal":
			s.Signal = int(d.int())
		default:
			d.skip()
		}
	})
}

func (d *jdec) spec(s *api.JobSpec) {
	d.object(func(k []byte) {
		switch string(k) {
		case "name":
			s.Name = d.str()
		case "script":
			s.Script = d.str()
		case "command":
			s.Command = d.str()
		case "args":
			s.Args = d.strings()
		case "work_dir":
			s.WorkDir = d.str()
		case "stdout":
			s.Stdout = d.str()
		case "stderr":
			s.Stderr = d.str()
		case "stdin":
			s.Stdin = d.str()
		case "env":
			s.Env = d.strings()
		case "export":
			s.Export = d.str()
		case "partition":
			s.Partition = d.str()
		case "nodes":
			s.Nodes = int(d.int())
		case "nodes_max":
			s.NodesMax = int(d.int())
		case "ntasks":
			s.NTasks = int(d.int())
		case "cpus_per_task":
			s.CPUsPerTask = int(d.int())
		case "mem_mb":
			s.MemMB = d.int()
		case "time_limit":
			s.TimeLimit = d.int()
		case "time_min":
			s.TimeMin = d.int()
		case "begin":
			s.Begin = d.int()
		case "deadline":
			s.Deadline = d.int()
		case "hold":
			s.Hold = d.bool()
		case "requeue":
			s.Requeue = d.bool()
		case "load":
			s.Load = d.float()
		case "input":
			s.Input = d.str()
		case "reservation":
			s.Reservation = d.str()
		case "account":
			s.Account = d.str()
		case "qos":
			s.QOS = d.str()
		case "comment":
			s.Comment = d.str()
		case "submit_host":
			s.SubmitHost = d.str()
		case "open_append":
			s.OpenAppend = d.bool()
		default:
			d.skip()
		}
	})
}
