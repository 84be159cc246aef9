package api

import (
	"strconv"
)

// The answers a client waits for on its hot paths (a submission's job id,
// a cancellation's results, a refusal's message) are small flat objects
// that horad writes with encoding/json. Decoding them with encoding/json
// in a process that makes one request builds its reflection decoder for
// the type first, a sixth of an `sbatch --hold`'s own work
// (docs/benchmarks.md). decodeAnswer reads the form horad writes, strings
// with escapes included (jsonScan.str, submitdecode.go); anything else
// (other spellings of a key, floats, unknown keys) it leaves to
// encoding/json, so its results never differ from encoding/json's:
// TestDecodeAnswerMatchesEncodingJSON.

// decodeAnswer decodes b into out when out is one of the hot answers and b
// is in the plain form; false means the caller must use encoding/json.
// Like json.Decoder.Decode, it reads the first value and ignores the rest;
// with whole, as json.Unmarshal, nothing but blanks may follow it.
func decodeAnswer(b []byte, out any, whole bool) bool {
	s := jsonScan{b: b}
	ok := s.answer(out)
	if ok && whole {
		s.ws()
		ok = s.i == len(s.b)
	}
	return ok
}

func (s *jsonScan) answer(out any) bool {
	switch o := out.(type) {
	case *SubmitResponse:
		var r SubmitResponse
		ok := s.object(func(k string) bool {
			switch k {
			case "job_id":
				return s.int64(&r.JobID)
			case "start_time":
				return s.int64(&r.StartTime)
			case "partition":
				return s.str(&r.Partition)
			case "cpus":
				return s.int(&r.CPUs)
			case "nodes":
				if s.null() {
					r.Nodes = nil
					return true
				}
				r.Nodes = []string{}
				return s.array(func() bool {
					var v string
					ok := s.str(&v)
					r.Nodes = append(r.Nodes, v)
					return ok
				})
			}
			return false
		})
		if ok {
			*o = r
		}
		return ok
	case *CancelResponse:
		var r CancelResponse
		ok := s.object(func(k string) bool {
			if k != "results" {
				return false
			}
			if s.null() {
				r.Results = nil
				return true
			}
			r.Results = []JobResult{}
			return s.array(func() bool {
				var jr JobResult
				ok := s.object(func(k string) bool {
					switch k {
					case "id":
						return s.int64(&jr.ID)
					case "error":
						return s.str(&jr.Error)
					case "code":
						return s.str(&jr.Code)
					}
					return false
				})
				r.Results = append(r.Results, jr)
				return ok
			})
		})
		if ok {
			*o = r
		}
		return ok
	case *Error:
		var e Error
		ok := s.object(func(k string) bool {
			switch k {
			case "error":
				return s.str(&e.Message)
			case "code":
				return s.str(&e.Code)
			case "earliest":
				return s.int64(&e.Earliest)
			case "earliest_start":
				return s.int64(&e.EarliestStart)
			}
			return false
		})
		if ok {
			*o = e
		}
		return ok
	}
	return false
}

// jsonScan reads the plain subset of JSON that decodeAnswer accepts.
type jsonScan struct {
	b []byte
	i int
}

func (s *jsonScan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// lit consumes c after blanks.
func (s *jsonScan) lit(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// object reads {"key": value, ...}, calling field for each key with the
// scanner before the value; field reads the value or returns false.
func (s *jsonScan) object(field func(key string) bool) bool {
	if !s.lit('{') {
		return false
	}
	if s.lit('}') {
		return true
	}
	for {
		var k string
		if !s.str(&k) || !s.lit(':') || !field(k) {
			return false
		}
		if s.lit('}') {
			return true
		}
		if !s.lit(',') {
			return false
		}
	}
}

// array reads [elem, ...], elem reading one element. (An empty array is a
// non-nil empty slice in encoding/json: the callers start from one.)
func (s *jsonScan) array(elem func() bool) bool {
	if !s.lit('[') {
		return false
	}
	if s.lit(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.lit(']') {
			return true
		}
		if !s.lit(',') {
			return false
		}
	}
}

// null consumes a JSON null: a slice becomes nil, as in encoding/json
// (which leaves other kinds as they are: the scalar readers do too).
func (s *jsonScan) null() bool {
	s.ws()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// int64 reads an integer in JSON's form (no fraction, no exponent).
func (s *jsonScan) int64(v *int64) bool {
	if s.null() {
		return true
	}
	lit, integer, ok := s.number()
	if !ok || !integer {
		return false
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	if err != nil {
		return false
	}
	*v = n
	return true
}

// number scans a JSON number (RFC 8259 §6) at the current position: its
// text, and whether it is an integer (no fraction, no exponent); false if
// what is there is not a number.
func (s *jsonScan) number() (lit []byte, integer, ok bool) {
	start := s.i
	digitsFrom := func() int {
		from := s.i
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
		}
		return s.i - from
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	first := s.i
	n := digitsFrom()
	if n == 0 || s.b[first] == '0' && n > 1 {
		return nil, false, false
	}
	integer = true
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digitsFrom() == 0 {
			return nil, false, false
		}
		integer = false
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digitsFrom() == 0 {
			return nil, false, false
		}
		integer = false
	}
	return s.b[start:s.i], integer, true
}

func (s *jsonScan) int(v *int) bool {
	var n int64
	if !s.int64(&n) || int64(int(n)) != n {
		return false
	}
	*v = int(n)
	return true
}
