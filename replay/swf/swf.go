// Package swf reads and writes the Standard Workload Format, version 2.2, of
// the Parallel Workloads Archive (Feitelson et al.): header comments
// `; Key: value`, then one job per line with 18 whitespace-separated fields,
// -1 meaning "unknown".
//
// Three modes:
//   - Lenient (the default) repairs what real logs need and counts every
//     repair and every skipped record by kind (Stats), so a report can say
//     what was done to the input.
//   - Strict stops at the first line that would need a repair, with an error
//     of the form `file:line: field N (name): problem`.
//   - Raw checks only the syntax and keeps every record as written (used to
//     compute a log's "as recorded" figures).
//
// Gzip input (magic 1f 8b) is decompressed transparently.
package swf

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// NumFields is the number of fields of an SWF record.
const NumFields = 18

// FieldNames are the SWF 2.2 names of fields 1..18 (index 0 is field 1).
var FieldNames = [NumFields]string{
	"job number", "submit time", "wait time", "run time", "allocated processors",
	"average CPU time", "used memory", "requested processors", "requested time",
	"requested memory", "status", "user id", "group id", "executable number",
	"queue number", "partition number", "preceding job", "think time",
}

// Status codes of field 11.
const (
	StatusFailed      = 0
	StatusCompleted   = 1
	StatusPartial     = 2 // partial execution, to be continued
	StatusPartialLast = 3 // last partial execution, completed
	StatusPartialFail = 4 // last partial execution, failed
	StatusCancelled   = 5
	StatusUnknown     = -1
)

// Field numbers (1-based) used in messages.
const (
	fieldJob      = 1
	fieldSubmit   = 2
	fieldWait     = 3
	fieldRun      = 4
	fieldAlloc    = 5
	fieldAvgCPU   = 6
	fieldUsedMem  = 7
	fieldReqProcs = 8
	fieldReqTime  = 9
	fieldReqMem   = 10
	fieldStatus   = 11
)

// Record is one SWF job line. Times are seconds; -1 means unknown.
type Record struct {
	Job       int64   // 1 job number
	Submit    int64   // 2 submit time, seconds from the log's start
	Wait      int64   // 3 wait time
	Run       int64   // 4 run time (wall clock)
	Alloc     int64   // 5 allocated processors
	AvgCPU    float64 // 6 average CPU time used per processor
	UsedMem   float64 // 7 used memory per processor, KB
	ReqProcs  int64   // 8 requested processors
	ReqTime   int64   // 9 requested time (user estimate)
	ReqMem    float64 // 10 requested memory per processor, KB
	Status    int64   // 11 status, 0..5 or -1
	User      int64   // 12 user id
	Group     int64   // 13 group id
	App       int64   // 14 executable (application) number
	Queue     int64   // 15 queue number
	Partition int64   // 16 partition number
	Preceding int64   // 17 preceding job number
	Think     int64   // 18 think time from the preceding job
}

// Procs is the processor count a simulator should use: allocated when known,
// else requested, else 0.
func (r *Record) Procs() int64 {
	if r.Alloc > 0 {
		return r.Alloc
	}
	if r.ReqProcs > 0 {
		return r.ReqProcs
	}
	return 0
}

// ints returns pointers to the integer fields by field number (1-based); nil
// for the three float fields.
func (r *Record) ints() [NumFields]*int64 {
	return [NumFields]*int64{&r.Job, &r.Submit, &r.Wait, &r.Run, &r.Alloc, nil, nil,
		&r.ReqProcs, &r.ReqTime, nil, &r.Status, &r.User, &r.Group, &r.App, &r.Queue,
		&r.Partition, &r.Preceding, &r.Think}
}

func (r *Record) floats() [NumFields]*float64 {
	var f [NumFields]*float64
	f[fieldAvgCPU-1], f[fieldUsedMem-1], f[fieldReqMem-1] = &r.AvgCPU, &r.UsedMem, &r.ReqMem
	return f
}

// HeaderLine is one header comment: `; Key: value`, or free text (Key "").
type HeaderLine struct {
	Key   string
	Value string
}

// Header is the ordered list of header comments of a log.
type Header []HeaderLine

// Get returns the value of the first header line with the key (case-insensitive).
func (h Header) Get(key string) (string, bool) {
	for _, l := range h {
		if l.Key != "" && strings.EqualFold(l.Key, key) {
			return l.Value, true
		}
	}
	return "", false
}

// Int returns the leading integer of a header value, e.g. 338 for
// "MaxNodes: 338 (batch partition; 512 total)"; ok is false when the key is
// absent or its value does not start with an integer.
func (h Header) Int(key string) (int64, bool) {
	v, ok := h.Get(key)
	if !ok {
		return 0, false
	}
	v = strings.TrimSpace(v)
	end := 0
	for end < len(v) && (v[end] == '-' && end == 0 || v[end] >= '0' && v[end] <= '9') {
		end++
	}
	n, err := strconv.ParseInt(v[:end], 10, 64)
	return n, err == nil
}

// Mode selects how the reader treats records a simulator cannot use as written.
type Mode int

const (
	// Lenient repairs or skips such records and counts each case in Stats.
	Lenient Mode = iota
	// Strict fails at the first such record.
	Strict
	// Raw keeps every syntactically valid record unchanged.
	Raw
)

// Issue is a kind of defect found in a record. Each has one treatment in
// lenient mode, given in its comment.
type Issue int

const (
	// ReqProcsUnknown: field 8 ≤ 0; repaired to field 5 (allocated).
	ReqProcsUnknown Issue = iota
	// AllocUnknown: field 5 ≤ 0; repaired to field 8 (requested).
	AllocUnknown
	// NoProcs: fields 5 and 8 both ≤ 0; record skipped.
	NoProcs
	// RunUnknown: field 4 < 0 (never ran: cancelled before start); skipped.
	RunUnknown
	// RunZero: field 4 = 0 (cancelled at start, no work); skipped.
	RunZero
	// ReqTimeUnknown: field 9 ≤ 0; repaired to the run time (the estimate is exact).
	ReqTimeUnknown
	// RunOverRequest: field 4 > field 9; kept as logged (the run time is what
	// happened). The simulator lets such a job overrun its estimate, or kills
	// it at its limit with --kill-at-limit.
	RunOverRequest
	// SubmitUnknown: field 2 < 0; skipped.
	SubmitUnknown
	// Fractional: an integer field written with a fraction; rounded.
	Fractional
	// StatusInvalid: field 11 outside -1..5; repaired to -1.
	StatusInvalid
	// NumIssues is the number of issue kinds.
	NumIssues
)

var issueNames = [NumIssues]string{
	"requested processors unknown → allocated",
	"allocated processors ≤ 0 → requested",
	"no processor count (skipped)",
	"run time unknown (skipped)",
	"run time 0 (skipped)",
	"requested time unknown → run time",
	"run time above request (kept)",
	"submit time unknown (skipped)",
	"fractional integer field (rounded)",
	"status outside 0..5 → -1",
}

var issueKeys = [NumIssues]string{
	"req_procs_unknown", "alloc_unknown", "no_procs", "run_unknown", "run_zero",
	"req_time_unknown", "run_over_request", "submit_unknown", "fractional", "status_invalid",
}

func (i Issue) String() string { return issueNames[i] }

// Key is a stable snake_case name for reports (JSON keys, CSV columns).
func (i Issue) Key() string { return issueKeys[i] }

// Stats counts what the reader saw and did.
type Stats struct {
	Lines    int // all lines, header included
	Comments int // header or comment lines
	Records  int // data lines
	Kept     int // records returned
	Skipped  int // records dropped (lenient mode)
	// Found counts records showing each issue (a record may show several).
	Found [NumIssues]int
	// SkippedBy counts skipped records by the issue that caused the skip.
	SkippedBy [NumIssues]int
	// Repaired counts kept records by issue (repaired, or kept as logged for
	// RunOverRequest).
	Repaired [NumIssues]int
}

// Log is a parsed SWF file.
type Log struct {
	Name    string
	Header  Header
	Records []Record
	Stats   Stats
}

// MaxProcs is the header's MaxProcs (or MaxNodes when MaxProcs is absent), 0
// when neither is given.
func (l *Log) MaxProcs() int64 {
	if n, ok := l.Header.Int("MaxProcs"); ok && n > 0 {
		return n
	}
	if n, ok := l.Header.Int("MaxNodes"); ok && n > 0 {
		return n
	}
	return 0
}

// LineError locates a bad line: `file:line: field N (name): problem`.
type LineError struct {
	File    string
	Line    int
	Field   int // 1-based; 0 when the problem is not about one field
	Problem string
}

func (e *LineError) Error() string {
	if e.Field > 0 {
		return fmt.Sprintf("%s:%d: field %d (%s): %s", e.File, e.Line, e.Field, FieldNames[e.Field-1], e.Problem)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Problem)
}

// ReadFile reads an SWF file, gzipped or not.
func ReadFile(path string, mode Mode) (*Log, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path, mode)
}

// Read parses an SWF log from r; name is used in error messages.
func Read(r io.Reader, name string, mode Mode) (*Log, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<16)
	}
	lg := &Log{Name: name}
	p := parser{name: name, mode: mode, log: lg}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		if err := p.line(sc.Bytes()); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, lg.Stats.Lines+1, err)
	}
	return lg, nil
}

type parser struct {
	name    string
	mode    Mode
	log     *Log
	sawData bool
}

func (p *parser) errf(field int, format string, args ...any) error {
	return &LineError{File: p.name, Line: p.log.Stats.Lines, Field: field, Problem: fmt.Sprintf(format, args...)}
}

func (p *parser) line(b []byte) error {
	st := &p.log.Stats
	st.Lines++
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil
	}
	if b[0] == ';' {
		st.Comments++
		if !p.sawData {
			p.log.Header = append(p.log.Header, parseHeader(string(b[1:])))
		}
		return nil
	}
	p.sawData = true
	st.Records++
	var rec Record
	ints, floats := rec.ints(), rec.floats()
	var found [NumIssues]bool
	n := 0
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != ' ' && b[i] != '\t' {
			i++
		}
		tok := b[:i]
		for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
			i++
		}
		b = b[i:]
		if n >= NumFields {
			return p.errf(0, "more than %d fields", NumFields)
		}
		f := n + 1
		if ip := ints[n]; ip != nil {
			v, err := strconv.ParseInt(string(tok), 10, 64)
			if err != nil {
				x, ferr := strconv.ParseFloat(string(tok), 64)
				if ferr != nil || math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > 1<<53 {
					return p.errf(f, "%q is not a number", tok)
				}
				if x != math.Trunc(x) {
					if p.mode == Strict {
						return p.errf(f, "%q is not an integer", tok)
					}
					found[Fractional] = true
				}
				v = int64(math.Round(x))
			}
			*ip = v
		} else {
			x, err := strconv.ParseFloat(string(tok), 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return p.errf(f, "%q is not a number", tok)
			}
			*floats[n] = x
		}
		n++
	}
	if n != NumFields {
		return p.errf(0, "%d fields, want %d", n, NumFields)
	}
	if rec.Status < -1 || rec.Status > 5 {
		if p.mode == Strict {
			return p.errf(fieldStatus, "status %d outside 0..5 (or -1 unknown)", rec.Status)
		}
		found[StatusInvalid] = true
	}
	for _, c := range []struct {
		f int
		v int64
	}{{fieldJob, rec.Job}, {fieldSubmit, rec.Submit}, {fieldWait, rec.Wait}, {fieldRun, rec.Run},
		{fieldAlloc, rec.Alloc}, {fieldReqProcs, rec.ReqProcs}, {fieldReqTime, rec.ReqTime}} {
		if c.v < -1 && p.mode == Strict {
			return p.errf(c.f, "%d is negative (only -1, unknown, is allowed)", c.v)
		}
	}
	if p.mode == Raw {
		if found[StatusInvalid] {
			rec.Status = StatusUnknown
		}
		p.log.Records = append(p.log.Records, rec)
		st.Kept++
		return nil
	}
	// Semantic checks, in field order so strict mode reports the first field.
	var skip Issue = -1
	if rec.Submit < 0 {
		found[SubmitUnknown] = true
		if p.mode == Strict {
			return p.errf(fieldSubmit, "%d: submit time unknown", rec.Submit)
		}
		skip = SubmitUnknown
	}
	if rec.Run < 0 {
		found[RunUnknown] = true
		if p.mode == Strict {
			return p.errf(fieldRun, "%d: run time unknown (job never ran)", rec.Run)
		}
		if skip < 0 {
			skip = RunUnknown
		}
	} else if rec.Run == 0 {
		found[RunZero] = true
		if p.mode == Strict {
			return p.errf(fieldRun, "run time 0 (job did no work)")
		}
		if skip < 0 {
			skip = RunZero
		}
	}
	if rec.Alloc <= 0 {
		found[AllocUnknown] = true
		if p.mode == Strict {
			return p.errf(fieldAlloc, "%d: allocated processors unknown", rec.Alloc)
		}
	}
	if rec.ReqProcs <= 0 {
		found[ReqProcsUnknown] = true
		if p.mode == Strict {
			return p.errf(fieldReqProcs, "%d: requested processors unknown", rec.ReqProcs)
		}
	}
	if rec.Alloc <= 0 && rec.ReqProcs <= 0 {
		found[NoProcs] = true
		if skip < 0 {
			skip = NoProcs
		}
	}
	if rec.ReqTime <= 0 {
		found[ReqTimeUnknown] = true
		if p.mode == Strict {
			return p.errf(fieldReqTime, "%d: requested time unknown", rec.ReqTime)
		}
	} else if rec.Run > rec.ReqTime {
		found[RunOverRequest] = true
		if p.mode == Strict {
			return p.errf(fieldRun, "run time %d above the requested time %d", rec.Run, rec.ReqTime)
		}
	}
	for i, f := range found {
		if f {
			st.Found[i]++
		}
	}
	if skip >= 0 {
		st.Skipped++
		st.SkippedBy[skip]++
		return nil
	}
	for i, f := range found {
		if f {
			st.Repaired[i]++
		}
	}
	if found[StatusInvalid] {
		rec.Status = StatusUnknown
	}
	if rec.ReqProcs <= 0 {
		rec.ReqProcs = rec.Alloc
	}
	if rec.Alloc <= 0 {
		rec.Alloc = rec.ReqProcs
	}
	if rec.ReqTime <= 0 {
		rec.ReqTime = rec.Run
	}
	p.log.Records = append(p.log.Records, rec)
	st.Kept++
	return nil
}

func parseHeader(s string) HeaderLine {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, ":"); i > 0 && !strings.ContainsAny(s[:i], " \t") {
		return HeaderLine{Key: s[:i], Value: strings.TrimSpace(s[i+1:])}
	}
	return HeaderLine{Value: s}
}

// AppendRecord appends r as one SWF line (no newline). Integer fields are
// written as integers, the three float fields without decimals when integral
// and otherwise in the shortest form that reads back exactly, so a read-write
// round trip preserves every value.
func AppendRecord(b []byte, r *Record) []byte {
	ints, floats := r.ints(), r.floats()
	for i := range NumFields {
		if i > 0 {
			b = append(b, ' ')
		}
		if ints[i] != nil {
			b = strconv.AppendInt(b, *ints[i], 10)
			continue
		}
		x := *floats[i]
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			b = strconv.AppendInt(b, int64(x), 10)
		} else {
			b = strconv.AppendFloat(b, x, 'f', -1, 64)
		}
	}
	return b
}

// Write writes a header and records as an SWF file.
func Write(w io.Writer, h Header, recs []Record) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	for _, l := range h {
		if l.Key != "" {
			fmt.Fprintf(bw, "; %s: %s\n", l.Key, l.Value)
		} else {
			fmt.Fprintf(bw, "; %s\n", l.Value)
		}
	}
	var b []byte
	for i := range recs {
		b = AppendRecord(b[:0], &recs[i])
		b = append(b, '\n')
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}
