package api

import (
	"strconv"
	"unicode/utf8"
)

// DecodeSubmitRequest is horad's fast path for the request of every
// submission. encoding/json took 90-190 µs of horad's time per `sbatch`
// (reflection over JobSpec's fields, JobSpec's and Environ's own
// UnmarshalJSON decoding again, in caches the client process had just
// evicted): a fifth of horad's side of a sequential submission
// (docs/benchmarks.md). It reads the JSON any client writes for a spec:
// every field of JobSpec by its exact name, strings with escapes,
// numbers, null. Anything else (a key spelled otherwise, a key given
// twice, script_b64, an env in base64, pbs, a lone surrogate, a number
// that does not fit its field, unknown keys) it leaves to encoding/json by
// returning false, so that its results are encoding/json's to the bit and
// every refusal keeps encoding/json's message: FuzzDecodeSubmitRequest and
// TestDecodeSubmitRequestCoversEveryField.
//
// Like json.Decoder.Decode, it reads the first value and ignores what
// follows it.
func DecodeSubmitRequest(b []byte, out *SubmitRequest) bool {
	s := jsonScan{b: b}
	var r SubmitRequest
	ok := s.fields(func(k string) bool {
		switch k {
		case "spec":
			return s.spec(&r.Spec)
		case "test_only":
			return s.bool(&r.TestOnly)
		}
		return false
	})
	if ok {
		*out = r
	}
	return ok
}

// fields is object for a struct's fields: a key given twice is left to
// encoding/json (which merges some kinds and replaces others).
func (s *jsonScan) fields(field func(key string) bool) bool {
	var seen keySet
	return s.object(func(k string) bool { return seen.add(k) && field(k) })
}

// keySet notes the keys of one object.
type keySet []string

func (ks *keySet) add(k string) bool {
	for _, s := range *ks {
		if s == k {
			return false
		}
	}
	*ks = append(*ks, k)
	return true
}

func (s *jsonScan) spec(sp *JobSpec) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == 'n' {
		return false // null: JobSpec's UnmarshalJSON decides
	}
	return s.fields(func(k string) bool {
		switch k {
		case "name":
			return s.str(&sp.Name)
		case "script":
			return s.str(&sp.Script)
		case "command":
			return s.str(&sp.Command)
		case "args":
			return s.strs(&sp.Args)
		case "work_dir":
			return s.str(&sp.WorkDir)
		case "stdout":
			return s.str(&sp.Stdout)
		case "stderr":
			return s.str(&sp.Stderr)
		case "stdin":
			return s.str(&sp.Stdin)
		case "env":
			s.ws()
			if s.i < len(s.b) && s.b[s.i] == '{' {
				return false // the base64 form
			}
			return s.strs((*[]string)(&sp.Env))
		case "export":
			return s.str(&sp.Export)
		case "partition":
			return s.str(&sp.Partition)
		case "nodes":
			return s.int(&sp.Nodes)
		case "nodes_max":
			return s.int(&sp.NodesMax)
		case "ntasks":
			return s.int(&sp.NTasks)
		case "cpus_per_task":
			return s.int(&sp.CPUsPerTask)
		case "mem_mb":
			return s.int64(&sp.MemMB)
		case "time_limit":
			return s.int64(&sp.TimeLimit)
		case "time_min":
			return s.int64(&sp.TimeMin)
		case "begin":
			return s.int64(&sp.Begin)
		case "deadline":
			return s.int64(&sp.Deadline)
		case "hold":
			return s.bool(&sp.Hold)
		case "requeue":
			return s.bool(&sp.Requeue)
		case "no_requeue":
			return s.bool(&sp.NoRequeue)
		case "load":
			return s.float(&sp.Load)
		case "input":
			return s.str(&sp.Input)
		case "rt_frame":
			return s.float(&sp.RTFrame)
		case "rt_buffer":
			return s.int(&sp.RTBuffer)
		case "rt_work":
			if s.null() {
				sp.RTWork = nil
				return true
			}
			sp.RTWork = []float64{}
			return s.array(func() bool {
				var v float64
				ok := s.float(&v)
				sp.RTWork = append(sp.RTWork, v)
				return ok
			})
		case "rt_misses":
			return s.int(&sp.RTMisses)
		case "reservation":
			return s.str(&sp.Reservation)
		case "account":
			return s.str(&sp.Account)
		case "qos":
			return s.str(&sp.QOS)
		case "comment":
			return s.str(&sp.Comment)
		case "submit_host":
			return s.str(&sp.SubmitHost)
		case "open_append":
			return s.bool(&sp.OpenAppend)
		case "mail_type":
			return s.str(&sp.MailType)
		case "mail_user":
			return s.str(&sp.MailUser)
		case "alloc":
			return s.bool(&sp.Alloc)
		case "array":
			return s.str(&sp.Array)
		case "dependency":
			return s.str(&sp.Dependency)
		case "kill_on_invalid_dep":
			return s.str(&sp.KillOnInvalidDep)
		case "nice":
			return s.int(&sp.Nice)
		case "signal":
			return s.str(&sp.Signal)
		case "ntasks_per_node":
			return s.int(&sp.NTasksPerNode)
		case "mem_all":
			return s.bool(&sp.MemAll)
		case "mem_per_cpu":
			return s.int64(&sp.MemPerCPU)
		case "mem_per_gpu":
			return s.int64(&sp.MemPerGPU)
		case "gres":
			return s.str(&sp.Gres)
		case "gpus":
			return s.str(&sp.GPUs)
		case "gpus_per_node":
			return s.str(&sp.GPUsPerNode)
		case "gpus_per_task":
			return s.str(&sp.GPUsPerTask)
		case "cpus_per_gpu":
			return s.int(&sp.CPUsPerGPU)
		case "exclusive":
			return s.str(&sp.Exclusive)
		case "oversubscribe":
			return s.bool(&sp.Oversubscribe)
		case "nodelist":
			return s.str(&sp.NodeList)
		case "exclude":
			return s.str(&sp.Exclude)
		case "constraint":
			return s.str(&sp.Constraint)
		case "mincpus":
			return s.int(&sp.MinCPUs)
		case "no_multithread":
			return s.bool(&sp.NoMultithread)
		}
		return false // script_b64, pbs, or a key JobSpec does not have
	})
}

// strs reads an array of strings into a fresh slice (null: nil; an
// element null: "", as encoding/json leaves it).
func (s *jsonScan) strs(v *[]string) bool {
	if s.null() {
		*v = nil
		return true
	}
	out := []string{}
	ok := s.array(func() bool {
		var e string
		ok := s.str(&e)
		out = append(out, e)
		return ok
	})
	*v = out
	return ok
}

// str reads a string as encoding/json does, escapes included; null leaves
// v as it is. A surrogate escape (\uD800-\uDFFF), a control byte or
// invalid UTF-8 is left to encoding/json.
func (s *jsonScan) str(v *string) bool {
	if s.null() {
		return true
	}
	if !s.lit('"') {
		return false
	}
	start := s.i
	var buf []byte // nil until the first escape
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			if !utf8.Valid(raw) {
				return false
			}
			if buf == nil {
				*v = string(raw)
			} else {
				*v = string(append(buf, raw...))
			}
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if !utf8.Valid(s.b[start:s.i]) {
				return false // encoding/json makes each bad byte U+FFFD
			}
			buf = append(buf, s.b[start:s.i]...)
			if s.i+1 >= len(s.b) {
				return false
			}
			esc := s.b[s.i+1]
			s.i += 2
			switch esc {
			case '"', '\\', '/':
				buf = append(buf, esc)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				if s.i+4 > len(s.b) {
					return false
				}
				n, err := strconv.ParseUint(string(s.b[s.i:s.i+4]), 16, 16)
				if err != nil || 0xD800 <= n && n <= 0xDFFF {
					return false
				}
				for _, h := range s.b[s.i : s.i+4] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false // ParseUint takes "+" or "_" as well
					}
				}
				buf = utf8.AppendRune(buf, rune(n))
				s.i += 4
			default:
				return false
			}
			start = s.i
			continue
		}
		s.i++
	}
	return false
}

// bool reads true or false; null leaves v as it is.
func (s *jsonScan) bool(v *bool) bool {
	if s.null() {
		return true
	}
	switch {
	case len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "true":
		*v = true
		s.i += 4
	case len(s.b)-s.i >= 5 && string(s.b[s.i:s.i+5]) == "false":
		*v = false
		s.i += 5
	default:
		return false
	}
	return s.endOfLiteral()
}

// endOfLiteral: a literal or number must not run on into letters or
// digits ("truex", "1x"), which encoding/json's scanner refuses.
func (s *jsonScan) endOfLiteral() bool {
	if s.i == len(s.b) {
		return true
	}
	switch s.b[s.i] {
	case ' ', '\t', '\n', '\r', ',', '}', ']':
		return true
	}
	return false
}

// float reads a JSON number as encoding/json reads it into a float64;
// null leaves v as it is.
func (s *jsonScan) float(v *float64) bool {
	if s.null() {
		return true
	}
	lit, _, ok := s.number()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return false
	}
	*v = f
	return s.endOfLiteral()
}
