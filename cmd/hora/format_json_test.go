package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"hora/api"
)

// fill sets every field reachable from v to a distinct non-zero value, so
// that a field the fast decoder forgets shows up as a difference.
func fill(v reflect.Value, seed *int) {
	*seed++
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fill(v.Field(i), seed)
		}
	case reflect.String:
		v.SetString("s\"\\/\n\t\u00e9\U0001F600<" + strings.Repeat("x", *seed%5) + string(rune('a'+*seed%26)))
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(-*seed * 1000003))
	case reflect.Uint32, reflect.Uint64, reflect.Uint:
		v.SetUint(uint64(*seed * 7919))
	case reflect.Float64:
		v.SetFloat(float64(*seed) + 0.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := 0; i < 2; i++ {
			fill(s.Index(i), seed)
		}
		v.Set(s)
	default:
		panic("fill: unhandled kind " + v.Kind().String())
	}
}

func TestDecodeJobsMatchesEncodingJSON(t *testing.T) {
	var full api.Job
	seed := 0
	fill(reflect.ValueOf(&full).Elem(), &seed)
	resp := api.JobsResponse{Jobs: append(fixtureJobs(), full, api.Job{})}
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	d := &jdec{b: b}
	got := d.response()
	if d.err != nil {
		t.Fatalf("fast decoder failed on encoding/json output: %v", d.err)
	}
	if !reflect.DeepEqual(got, resp.Jobs) {
		gb, _ := json.Marshal(got)
		t.Errorf("fast decoder differs from encoding/json (a new api field?)\n got %s\nwant %s", gb, b)
	}
}

func TestDecodeJobsOddInput(t *testing.T) {
	cases := map[string]string{
		"spaces, nulls, unknown keys": ` { "jobs" : [ { "id" : 7 , "nodes" : null , "x" : {"a":[1,2.5e3,true,null,"q"]},
			"spec" : { "name" : "a\u0062\ud83d\ude00" } } ] , "more" : 1 } `,
		"fraction (fallback)": `{"jobs":[{"id":7,"spec":{"load":1e2,"name":"abc"}}]}`,
		"empty":               `{"jobs":[]}`,
	}
	for name, in := range cases {
		got, err := decodeJobs([]byte(in))
		var want api.JobsResponse
		if werr := json.Unmarshal([]byte(in), &want); werr != nil || err != nil {
			t.Errorf("%s: decode error %v / %v", name, err, werr)
			continue
		}
		if len(got) != len(want.Jobs) || (len(got) > 0 && !reflect.DeepEqual(got, want.Jobs)) {
			t.Errorf("%s: got %+v, want %+v", name, got, want.Jobs)
		}
	}
	if _, err := decodeJobs([]byte(`{"jobs":[{"id":`)); err == nil {
		t.Error("truncated input accepted")
	}
}

func BenchmarkDecodeJobs10000(b *testing.B) {
	body, _ := json.Marshal(api.JobsResponse{Jobs: benchJobs(10000)})
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := decodeJobs(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeJobs10000EncodingJSON(b *testing.B) {
	body, _ := json.Marshal(api.JobsResponse{Jobs: benchJobs(10000)})
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		var out api.JobsResponse
		if err := json.Unmarshal(body, &out); err != nil {
			b.Fatal(err)
		}
	}
}
