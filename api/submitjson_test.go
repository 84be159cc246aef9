package api

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// The hand-written submit encoding says what encoding/json says: every
// field set (fill), every field zero (omitempty), and awkward strings.
func TestSubmitJSONMatchesEncodingJSON(t *testing.T) {
	var full SubmitRequest
	seed := 0
	fill(reflect.ValueOf(&full).Elem(), &seed)
	awkward := SubmitRequest{Spec: JobSpec{
		Name:    "quote\" back\\ nl\n cr\r tab\t bell\x07 del\x7f é 日本 \u2028 <&>",
		Script:  "#!/bin/sh\necho \"$HOME\"\n",
		WorkDir: "bad utf8 \xff\xfe end",
		Env:     []string{"A=1", "B=\x00", ""},
		Load:    1.5e-7, TimeLimit: NoLimit, Begin: -3,
	}}
	big := SubmitRequest{Spec: JobSpec{Load: 3e21, Nodes: -1}}
	latin1 := SubmitRequest{Spec: JobSpec{Name: "l", Env: []string{"A=1", "CAF=caf\xe9", "RAW=\xff\xfe\x00"}}}
	for name, r := range map[string]SubmitRequest{"every field": full, "zero": {}, "awkward": awkward, "big": big, "latin1 env": latin1} {
		mine, err := appendSubmitJSON(nil, &r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sameJSONAsEncoding(t, name, mine, &r)
		// And it decodes back to the request, as horad decodes it.
		var back SubmitRequest
		if err := json.Unmarshal(mine, &back); err != nil || (name != "awkward" && !reflect.DeepEqual(back, r)) {
			t.Errorf("%s: decodes to %+v (%v)", name, back, err)
		}
	}
	if _, err := appendSubmitJSON(nil, &SubmitRequest{Spec: JobSpec{Load: math.NaN()}}); err == nil {
		t.Error("a NaN load was encoded")
	}
}

// TestCancelJSONMatchesEncodingJSON: scancel's hand-written request is the
// JSON encoding/json writes, field for field, and horad reads it back.
func TestCancelJSONMatchesEncodingJSON(t *testing.T) {
	var full CancelRequest
	seed := 0
	fill(reflect.ValueOf(&full).Elem(), &seed)
	awkward := CancelRequest{IDs: []int64{-1, 0, 1 << 62}, Users: []string{"quote\" nl\n é \xff"},
		States: []JobState{"PENDING", "\x00"}, Tasks: []TaskSel{{Array: 7}, {Array: 8, Tasks: []int64{}}, {Array: 9, Tasks: []int64{3, 4}}},
		Steps: []StepRef{{}, {Job: 3, Step: -1}}, Signal: -9}
	empties := CancelRequest{IDs: []int64{}, Users: []string{}, Steps: []StepRef{}, Tasks: []TaskSel{}}
	for name, r := range map[string]CancelRequest{"every field": full, "zero": {}, "awkward": awkward, "empty lists": empties} {
		mine := appendCancelJSON(nil, &r)
		std := sameJSONAsEncoding(t, name, mine, &r)
		var back, stdBack CancelRequest
		if err := json.Unmarshal(mine, &back); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		json.Unmarshal(std, &stdBack)
		if !reflect.DeepEqual(back, stdBack) {
			t.Errorf("%s: decodes to %+v, encoding/json's to %+v", name, back, stdBack)
		}
	}
}

// sameJSONAsEncoding checks that a hand-written encoding of v is the JSON
// encoding/json writes for it (the same values, whatever the spacing), and
// returns encoding/json's.
func sameJSONAsEncoding(t *testing.T, name string, mine []byte, v any) []byte {
	t.Helper()
	std, _ := json.Marshal(v)
	var a, b any
	if err := json.Unmarshal(mine, &a); err != nil {
		t.Fatalf("%s: not JSON: %v\n%s", name, err, mine)
	}
	json.Unmarshal(std, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("%s:\n mine %s\n std  %s", name, mine, std)
	}
	return std
}
