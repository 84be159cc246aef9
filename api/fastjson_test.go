package api

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// TestDecodeAnswerMatchesEncodingJSON: wherever decodeAnswer accepts an
// answer, encoding/json reads the same value from it; and it accepts what
// horad writes (json.Encoder) unless a string needs an escape.
func TestDecodeAnswerMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	words := []string{"", "a", "local1", "Invalid job id specified", "héllo", "quote\"d", "tab\t", "<&>", "\u2028", "batch"}
	word := func() string { return words[rng.Intn(len(words))] }
	num := func() int64 {
		switch rng.Intn(4) {
		case 0:
			return 0
		case 1:
			return -rng.Int63n(1000)
		case 2:
			return rng.Int63()
		}
		return rng.Int63n(100000)
	}
	values := func() []any {
		sr := SubmitResponse{JobID: num(), StartTime: num(), Partition: word(), CPUs: int(num() % 1000)}
		for n := rng.Intn(3); n > 0; n-- {
			sr.Nodes = append(sr.Nodes, word())
		}
		cr := CancelResponse{}
		for n := rng.Intn(4); n > 0; n-- {
			cr.Results = append(cr.Results, JobResult{ID: num(), Error: word(), Code: word()})
		}
		if rng.Intn(5) == 0 {
			cr.Results = []JobResult{}
		}
		return []any{&sr, &cr, &Error{Message: word(), Code: word(), Earliest: num(), EarliestStart: num()}}
	}
	mutations := []func(string) string{
		func(s string) string { return s },
		func(s string) string { return strings.ReplaceAll(s, ":", " :\n ") },
		func(s string) string { return strings.ReplaceAll(s, ",", " , ") },
		func(s string) string { return s + " trailing" },
		func(s string) string { return s + "{}" },
		func(s string) string { return strings.Replace(s, `"job_id"`, `"JOB_ID"`, 1) },
		func(s string) string { return strings.Replace(s, `"error"`, `"Error"`, 1) },
		func(s string) string { return strings.Replace(s, `"results"`, `"results","x"`, 1) },
		func(s string) string { return strings.Replace(s, `{`, `{"extra":1,`, 1) },
		func(s string) string { return strings.Replace(s, `"code":`, `"code":null,"code":`, 1) },
		func(s string) string { return strings.Replace(s, `"nodes":[`, `"nodes":null,"nodes":[`, 1) },
		func(s string) string { return strings.Replace(s, `"id":`, `"id":1.5,"id":`, 1) },
		func(s string) string { return strings.Replace(s, `"cpus":`, `"cpus":1e2,"cpus":`, 1) },
		func(s string) string { return strings.Replace(s, `:0`, `:-0`, 1) },
		func(s string) string { return strings.Replace(s, `:1`, `:01`, 1) },
		func(s string) string { return strings.Replace(s, `"a"`, `"\u0061"`, 1) },
		func(s string) string { return strings.Replace(s, `"a"`, "\"\xff\"", 1) },
		func(s string) string { return strings.Replace(s, `"a"`, "\"\x01\"", 1) },
		func(s string) string { return strings.Replace(s, `]`, `,]`, 1) },
		func(s string) string { return strings.Replace(s, `}`, `,}`, 1) },
		func(s string) string {
			return strings.Replace(s, `"job_id":`, `"job_id":99999999999999999999,"job_id":`, 1)
		},
		func(s string) string { return s[:len(s)/2] },
		func(s string) string { return "" },
		func(s string) string { return "null" },
		func(s string) string { return "[]" },
	}
	accepted := 0
	for n := 0; n < 400; n++ {
		for _, v := range values() {
			var enc bytes.Buffer
			json.NewEncoder(&enc).Encode(v)
			plain := !strings.Contains(enc.String(), `\`)
			for mi, m := range mutations {
				in := m(enc.String())
				for _, whole := range []bool{false, true} {
					typ := reflect.TypeOf(v).Elem()
					fast := reflect.New(typ).Interface()
					ok := decodeAnswer([]byte(in), fast, whole)
					if mi == 0 && plain && !ok {
						t.Errorf("%T: refused horad's plain answer %q", v, in)
					}
					if !ok {
						continue
					}
					accepted++
					slow := reflect.New(typ).Interface()
					var err error
					if whole {
						err = json.Unmarshal([]byte(in), slow)
					} else {
						err = json.NewDecoder(strings.NewReader(in)).Decode(slow)
					}
					if err != nil {
						t.Errorf("%T (whole %v): decodeAnswer accepted %q, encoding/json says %v", v, whole, in, err)
					} else if !reflect.DeepEqual(fast, slow) {
						t.Errorf("%T (whole %v): %q: decodeAnswer %+v, encoding/json %+v", v, whole, in, fast, slow)
					}
				}
			}
		}
	}
	if accepted < 1000 {
		t.Errorf("only %d answers took the fast path", accepted)
	}
}

// FuzzDecodeAnswer: on any bytes, decodeAnswer either declines or agrees
// with encoding/json (json.Decoder.Decode, or json.Unmarshal for whole),
// for each of the three answers it reads (make fuzz).
func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range []string{
		`{"job_id":42}` + "\n", `{"job_id":7,"start_time":1700000000,"nodes":["a","b"],"partition":"p","cpus":4}`,
		`{"results":[{"id":3,"error":"Invalid job id specified","code":"InvalidJobID"}]}`, `{"results":null}`,
		`{"error":"Invalid partition name specified","code":"InvalidPartition","earliest":5}`, `{"Job_ID":1}`,
		`{"error":"a\"b"}`, `{"cpus":1e2}`, `{} x`, `[`, "",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, whole bool) {
		for _, mk := range []func() any{
			func() any { return new(SubmitResponse) }, func() any { return new(CancelResponse) }, func() any { return new(Error) },
		} {
			fast := mk()
			if !decodeAnswer(b, fast, whole) {
				continue
			}
			slow := mk()
			var err error
			if whole {
				err = json.Unmarshal(b, slow)
			} else {
				err = json.NewDecoder(bytes.NewReader(b)).Decode(slow)
			}
			if err != nil {
				t.Fatalf("%T: decodeAnswer accepted %q, encoding/json: %v", fast, b, err)
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("%T: %q: decodeAnswer %+v, encoding/json %+v", fast, b, fast, slow)
			}
		}
	})
}
