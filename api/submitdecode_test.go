package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
)

// decodeStd is how horad decodes a request without the fast path.
func decodeStd(b []byte, r *SubmitRequest) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(r)
}

// Every field of a spec, as hora's client writes it, takes the fast path
// and decodes as encoding/json decodes it: a field added to JobSpec and
// not to DecodeSubmitRequest fails here (pbs and script_b64 are left to
// encoding/json on purpose).
func TestDecodeSubmitRequestCoversEveryField(t *testing.T) {
	var full SubmitRequest
	seed := 0
	fill(reflect.ValueOf(&full).Elem(), &seed)
	full.Spec.PBS = nil
	awkward := SubmitRequest{Spec: JobSpec{
		Name:   "quote\" back\\ nl\n cr\r tab\t bell\x07 del\x7f é 日本 \u2028 <&>",
		Script: "#!/bin/sh\necho \"$HOME\"\n", Env: []string{"A=1", "B=\x00", ""},
		Load: 1.5e-7, TimeLimit: NoLimit, Begin: -3, RTWork: []float64{0, -2.5e300},
	}}
	for name, r := range map[string]SubmitRequest{"every field": full, "zero": {}, "awkward": awkward} {
		b, err := appendSubmitJSON(nil, &r)
		if err != nil {
			t.Fatal(err)
		}
		var fast, std SubmitRequest
		if !DecodeSubmitRequest(b, &fast) {
			t.Fatalf("%s: the fast path declined %s", name, b)
		}
		if err := decodeStd(b, &std); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fast, std) || !reflect.DeepEqual(fast, r) {
			t.Fatalf("%s:\nfast %+v\nstd  %+v\nsent %+v", name, fast, std, r)
		}
	}
	// Written by another client: escapes encoding/json writes, blanks,
	// nulls, a different order.
	other := []byte(" {\"test_only\" : false, \"spec\" : {\"work_dir\":\"\\/w\", \"name\":\"a\\u003cb\\u0026\\u00e9\\t\",\n" +
		"\"args\":[null,\"x\"], \"env\":null, \"nodes\":null, \"load\":1E3, \"hold\":true, \"rt_work\":[]}} trailing")
	var fast, std SubmitRequest
	if !DecodeSubmitRequest(other, &fast) {
		t.Fatalf("the fast path declined %s", other)
	}
	if err := decodeStd(other, &std); err != nil || !reflect.DeepEqual(fast, std) {
		t.Fatalf("fast %+v\nstd  %+v (%v)", fast, std, err)
	}
	// What it leaves to encoding/json.
	for _, in := range []string{
		`{"spec":{"script_b64":"eA=="}}`, `{"spec":{"env":{"b64":["eA=="]}}}`, `{"spec":{"pbs":{"server":"s"}}}`,
		`{"spec":{"Name":"x"}}`, `{"spec":{"name":"a","name":"b"}}`, `{"spec":null}`, `{"spec":{"nodes":1.5}}`,
		`{"spec":{"nodes":99999999999999999999}}`, `{"spec":{"load":1e400}}`, `{"spec":{"name":"\ud83d\ude00"}}`,
		`{"spec":{"name":"a` + "\x01" + `"}}`, `{"spec":{"name":"\x"}}`, `{"spec":{"hold":truex}}`, `{"spec":{"nodes":01}}`,
		`{"spec":{},"unknown":1}`, `{"spec":{"name":"` + "\xff" + `"}}`, `null`, `[]`, ``,
	} {
		var r SubmitRequest
		if DecodeSubmitRequest([]byte(in), &r) {
			t.Errorf("fast path took %q", in)
		}
	}
}

// FuzzDecodeSubmitRequest: on any bytes, the fast path declines or agrees
// with encoding/json as horad calls it (make fuzz).
func FuzzDecodeSubmitRequest(f *testing.F) {
	for _, r := range []SubmitRequest{
		{Spec: JobSpec{Name: "j", Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp", Env: []string{"A=1", "B=é"}, Hold: true}},
		{Spec: JobSpec{Load: 2.5, RTWork: []float64{1, 2}, Args: []string{"a"}, Nodes: 3}, TestOnly: true},
	} {
		b, _ := appendSubmitJSON(nil, &r)
		f.Add(b)
	}
	for _, s := range []string{`{"spec":{"name":"a\u00e9\n","args":null}}`, `{"spec":{"nodes":-0,"load":-0.0e-1}}`,
		`{"spec":{"hold":null,"env":[null]}}`, `{"spec":{}} {`, `{"spec":{"name":"x"},"spec":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast SubmitRequest
		if !DecodeSubmitRequest(b, &fast) {
			return
		}
		var std SubmitRequest
		if err := decodeStd(b, &std); err != nil {
			t.Fatalf("fast path accepted %q, encoding/json: %v", b, err)
		}
		if !reflect.DeepEqual(fast, std) {
			t.Fatalf("%q:\nfast %+v\nstd  %+v", b, fast, std)
		}
	})
}

// BenchmarkDecodeSubmitRequest: horad's decoding of an sbatch request with
// a usual environment (40 variables, 1.5 KB), by the fast path and by
// encoding/json as horad called it before.
func BenchmarkDecodeSubmitRequest(b *testing.B) {
	env := make([]string, 40)
	for i := range env {
		env[i] = "VARIABLE_" + strconv.Itoa(i) + "=/usr/local/some/path/value:" + strconv.Itoa(i*7919)
	}
	r := SubmitRequest{Spec: JobSpec{Name: "wrap", Script: "#!/bin/sh\n# This script was created by sbatch --wrap.\n\ntrue\n",
		WorkDir: "/home/alice/project", Stdout: "/dev/null", Env: env, Export: "ALL", Hold: true, SubmitHost: "login1"}}
	body, err := appendSubmitJSON(nil, &r)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			var out SubmitRequest
			if !DecodeSubmitRequest(body, &out) {
				b.Fatal("declined")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var out SubmitRequest
			if err := decodeStd(body, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
