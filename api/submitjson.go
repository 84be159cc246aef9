package api

import (
	"encoding/base64"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
)

// appendSubmitJSON writes r as JSON, as encoding/json would (same names,
// same omitempty), without reflection: encoding/json builds its encoder for
// JobSpec's 30 fields on first use, a third of sbatch's own work in a
// process that makes one request. TestSubmitJSONMatchesEncodingJSON keeps
// the two in step when a field is added.
func appendSubmitJSON(b []byte, r *SubmitRequest) ([]byte, error) {
	b, err := appendSpecJSON(append(b, `{"spec":`...), &r.Spec)
	if err != nil {
		return nil, err
	}
	if r.TestOnly {
		b = append(b, `,"test_only":true`...)
	}
	return append(b, '}'), nil
}

// appendSpecJSON writes s as JobSpec.MarshalJSON does: what encoding/json
// writes by reflection for jobSpecPlain, or jobSpecWire for a script that
// is not UTF-8. horad writes every submit event's job with it.
func appendSpecJSON(b []byte, s *JobSpec) ([]byte, error) {
	if math.IsNaN(s.Load) || math.IsInf(s.Load, 0) {
		return nil, errors.New("json: unsupported value: load " + strconv.FormatFloat(s.Load, 'g', -1, 64))
	}
	w := jsonWriter{b: append(b, '{')}
	w.str("name", s.Name, false)
	if utf8.ValidString(s.Script) {
		w.str("script", s.Script, false)
	} else {
		// Bytes that are not UTF-8 travel as base64 (script.go).
		w.str("script", "", false)
		w.str("script_b64", base64.StdEncoding.EncodeToString([]byte(s.Script)), false)
	}
	w.str("command", s.Command, true)
	w.strs("args", s.Args)
	w.str("work_dir", s.WorkDir, false)
	w.str("stdout", s.Stdout, true)
	w.str("stderr", s.Stderr, true)
	w.str("stdin", s.Stdin, true)
	if len(s.Env) > 0 {
		// Entries that are not UTF-8 travel as base64 (environ.go).
		w.key("env")
		w.b = appendEnvironJSON(w.b, s.Env)
	}
	w.str("export", s.Export, true)
	w.str("partition", s.Partition, true)
	w.int("nodes", int64(s.Nodes))
	w.int("nodes_max", int64(s.NodesMax))
	w.int("ntasks", int64(s.NTasks))
	w.int("cpus_per_task", int64(s.CPUsPerTask))
	w.int("mem_mb", s.MemMB)
	w.int("time_limit", s.TimeLimit)
	w.int("time_min", s.TimeMin)
	w.int("begin", s.Begin)
	w.int("deadline", s.Deadline)
	w.bool("hold", s.Hold)
	w.bool("requeue", s.Requeue)
	w.bool("no_requeue", s.NoRequeue)
	if s.Load != 0 {
		w.key("load")
		w.b = strconv.AppendFloat(w.b, s.Load, 'g', -1, 64)
	}
	w.str("input", s.Input, true)
	if s.RTFrame != 0 {
		w.key("rt_frame")
		w.b = strconv.AppendFloat(w.b, s.RTFrame, 'g', -1, 64)
	}
	w.int("rt_buffer", int64(s.RTBuffer))
	if len(s.RTWork) > 0 {
		w.key("rt_work")
		w.b = append(w.b, '[')
		for k, v := range s.RTWork {
			if k > 0 {
				w.b = append(w.b, ',')
			}
			w.b = strconv.AppendFloat(w.b, v, 'g', -1, 64)
		}
		w.b = append(w.b, ']')
	}
	w.int("rt_misses", int64(s.RTMisses))
	w.str("reservation", s.Reservation, true)
	w.str("account", s.Account, true)
	w.str("qos", s.QOS, true)
	w.str("comment", s.Comment, true)
	w.str("submit_host", s.SubmitHost, true)
	w.bool("open_append", s.OpenAppend)
	w.str("mail_type", s.MailType, true)
	w.str("mail_user", s.MailUser, true)
	w.bool("alloc", s.Alloc)
	w.str("array", s.Array, true)
	w.str("dependency", s.Dependency, true)
	w.str("kill_on_invalid_dep", s.KillOnInvalidDep, true)
	w.str("signal", s.Signal, true)
	if s.Nice != 0 {
		w.int("nice", int64(s.Nice))
	}
	w.int("ntasks_per_node", int64(s.NTasksPerNode))
	w.bool("mem_all", s.MemAll)
	w.int("mem_per_cpu", s.MemPerCPU)
	w.int("mem_per_gpu", s.MemPerGPU)
	w.str("gres", s.Gres, true)
	w.str("gpus", s.GPUs, true)
	w.str("gpus_per_node", s.GPUsPerNode, true)
	w.str("gpus_per_task", s.GPUsPerTask, true)
	w.int("cpus_per_gpu", int64(s.CPUsPerGPU))
	w.str("exclusive", s.Exclusive, true)
	w.bool("oversubscribe", s.Oversubscribe)
	w.str("nodelist", s.NodeList, true)
	w.str("exclude", s.Exclude, true)
	w.str("constraint", s.Constraint, true)
	w.int("mincpus", int64(s.MinCPUs))
	w.bool("no_multithread", s.NoMultithread)
	if p := s.PBS; p != nil {
		w.key("pbs")
		inner := jsonWriter{b: append(w.b, '{')}
		inner.str("server", p.Server, false)
		inner.str("flavour", p.Flavour, false)
		inner.str("queue", p.Queue, true)
		inner.int("ppn", int64(p.PPN))
		inner.str("shell", p.Shell, true)
		w.b = append(inner.b, '}')
	}
	return append(w.b, '}'), nil
}

type jsonWriter struct {
	b     []byte
	comma bool
}

func (w *jsonWriter) key(k string) {
	if w.comma {
		w.b = append(w.b, ',')
	}
	w.comma = true
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

func (w *jsonWriter) str(k, v string, omitEmpty bool) {
	if omitEmpty && v == "" {
		return
	}
	w.key(k)
	w.b = appendJSONString(w.b, v)
}

func (w *jsonWriter) strs(k string, v []string) {
	if len(v) == 0 {
		return
	}
	w.key(k)
	w.b = append(w.b, '[')
	for i, s := range v {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = appendJSONString(w.b, s)
	}
	w.b = append(w.b, ']')
}

func (w *jsonWriter) int(k string, v int64) {
	if v != 0 {
		w.key(k)
		w.b = strconv.AppendInt(w.b, v, 10)
	}
}

func (w *jsonWriter) bool(k string, v bool) {
	if v {
		w.key(k)
		w.b = append(w.b, "true"...)
	}
}

// AppendJSONString appends s quoted as JSON, for clients that write JSON
// by hand (qstat -F json).
func AppendJSONString(b []byte, s string) []byte { return appendJSONString(b, s) }

// appendJSONString quotes s as JSON (RFC 8259 §7); invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

// appendCancelJSON writes scancel's request as encoding/json would, for the
// reason appendSubmitJSON exists: encoding/json's reflection encoder for
// the type was a third of an scancel's own work. TestCancelJSONMatchesEncodingJSON
// keeps the two in step.
func appendCancelJSON(b []byte, r *CancelRequest) []byte {
	w := jsonWriter{b: append(b, '{')}
	w.int64s("ids", r.IDs, true)
	if len(r.Steps) > 0 {
		w.key("steps")
		w.b = append(w.b, '[')
		for i, s := range r.Steps {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, `{"job":`...)
			w.b = strconv.AppendInt(w.b, s.Job, 10)
			w.b = append(w.b, `,"step":`...)
			w.b = strconv.AppendInt(w.b, int64(s.Step), 10)
			w.b = append(w.b, '}')
		}
		w.b = append(w.b, ']')
	}
	w.int("signal", int64(r.Signal))
	w.strs("users", r.Users)
	w.strs("names", r.Names)
	if len(r.States) > 0 {
		w.key("states")
		w.b = append(w.b, '[')
		for i, s := range r.States {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = appendJSONString(w.b, string(s))
		}
		w.b = append(w.b, ']')
	}
	w.strs("partitions", r.Partitions)
	w.bool("filtered", r.Filtered)
	if len(r.Tasks) > 0 {
		w.key("tasks")
		w.b = append(w.b, '[')
		for i, t := range r.Tasks {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			inner := jsonWriter{b: append(w.b, '{')}
			inner.key("array")
			inner.b = strconv.AppendInt(inner.b, t.Array, 10)
			inner.int64s("tasks", t.Tasks, false)
			w.b = append(inner.b, '}')
		}
		w.b = append(w.b, ']')
	}
	return append(w.b, '}')
}

// int64s writes a list of integers; with omitEmpty an empty one is left
// out, else a nil one is null, as encoding/json writes them.
func (w *jsonWriter) int64s(k string, v []int64, omitEmpty bool) {
	if omitEmpty && len(v) == 0 {
		return
	}
	w.key(k)
	if v == nil {
		w.b = append(w.b, "null"...)
		return
	}
	w.b = append(w.b, '[')
	for i, n := range v {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = strconv.AppendInt(w.b, n, 10)
	}
	w.b = append(w.b, ']')
}
