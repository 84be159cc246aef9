package api

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"unicode/utf8"
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
		// JobSpec.MarshalJSON is the hand-written encoder too: the
		// reference is the spec encoded by reflection.
		sameJSONAsEncoding(t, name, mine, struct {
			Spec     any  `json:"spec"`
			TestOnly bool `json:"test_only,omitempty"`
		}{specByReflection(r.Spec), r.TestOnly})
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

// JobSpec.MarshalJSON, which horad's store writes every submitted job's
// spec with, says what encoding/json says of the spec by reflection; so does
// a job that holds it.
func TestSpecJSONMatchesReflection(t *testing.T) {
	var full JobSpec
	seed := 0
	fill(reflect.ValueOf(&full).Elem(), &seed)
	specs := map[string]JobSpec{
		"every field": full, "zero": {},
		"script not UTF-8": {Name: "b", Script: "#!/bin/sh\necho \xff\xfe\n", Env: []string{"A=1"}},
		"awkward": {Name: "quote\" back\\ <&> \u2028 é", Script: "x\ty\n", WorkDir: "bad \xff", Load: 2.5e-9, Nice: -5,
			PBS: &PBSSpec{Server: "s", Flavour: "openpbs", PPN: 4}},
	}
	for name, s := range specs {
		mine, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sameJSONAsEncoding(t, name, mine, specByReflection(s))
		var back JobSpec
		if err := json.Unmarshal(mine, &back); err != nil || (name != "awkward" && !reflect.DeepEqual(back, s)) {
			t.Errorf("%s: decodes to %+v (%v)", name, back, err)
		}
		job := Job{ID: 7, Spec: s}
		mineJob, err := json.Marshal(&job)
		if err != nil {
			t.Fatal(err)
		}
		var a, b map[string]any
		json.Unmarshal(mineJob, &a)
		ref, _ := json.Marshal(specByReflection(s))
		json.Unmarshal(ref, &b)
		if !reflect.DeepEqual(a["spec"], any(b)) {
			t.Errorf("%s: a job's spec\n mine %v\n ref  %v", name, a["spec"], b)
		}
	}
	if _, err := json.Marshal(JobSpec{Load: math.Inf(1)}); err == nil {
		t.Error("an infinite load was encoded")
	}
}

// specByReflection is the spec as encoding/json writes it by reflection.
func specByReflection(s JobSpec) any {
	if utf8.ValidString(s.Script) {
		return jobSpecPlain(s)
	}
	return jobSpecWire{jobSpecPlain: jobSpecPlain(s), ScriptB64: base64.StdEncoding.EncodeToString([]byte(s.Script))}
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
