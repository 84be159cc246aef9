package api

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// An environment keeps its bytes through JSON: UTF-8 entries as the plain
// array (what every client and stored spec has always carried), any entry
// that is not UTF-8 puts the whole environment in base64. Both directions,
// through JobSpec (the socket and the store's spec column) and a remote
// step's task.
func TestEnvironKeepsBytes(t *testing.T) {
	for name, env := range map[string]Environ{
		"utf8":   {"A=1", "B=é 日本", "C="},
		"latin1": {"A=1", "CAF=caf\xe9", "RAW=\xff\xfe\x80", "NUL=\x00"},
		"empty":  {},
	} {
		spec := JobSpec{Name: name, Env: env}
		b, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		plain := !strings.Contains(string(b), `"b64"`)
		if want := name != "latin1"; plain != want {
			t.Errorf("%s: plain array %v, want %v: %s", name, plain, want, b)
		}
		var back JobSpec
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(env) > 0 && !reflect.DeepEqual(back.Env, env) {
			t.Errorf("%s: env %q came back as %q", name, env, back.Env)
		}
		task := StepTask{ID: 1, Env: env}
		b, _ = json.Marshal(task)
		var tb StepTask
		if err := json.Unmarshal(b, &tb); err != nil || !reflect.DeepEqual(tb.Env, task.Env) {
			t.Errorf("%s: task env %q came back as %q (%v)", name, task.Env, tb.Env, err)
		}
	}
	// What clients before this sent (and specs stored before) still reads.
	var old JobSpec
	if err := json.Unmarshal([]byte(`{"name":"x","env":["A=1","B=2"]}`), &old); err != nil || !reflect.DeepEqual(old.Env, Environ{"A=1", "B=2"}) {
		t.Errorf("plain env array: %q, %v", old.Env, err)
	}
	// Bad base64 is refused and names the entry.
	err := json.Unmarshal([]byte(`{"env":{"b64":["QT0x","not base64!"]}}`), &old)
	if err == nil || !strings.Contains(err.Error(), "env: b64 entry 2") {
		t.Errorf("bad base64 entry: %v", err)
	}
}

// FuzzSpecJSON: any request body horad decodes as a spec either is refused
// or, encoded again (as the store and the socket do), decodes to the same
// spec: script and environment bytes survive, whatever form they came in.
func FuzzSpecJSON(f *testing.F) {
	f.Add([]byte(`{"name":"x","script":"#!/bin/sh\n","env":["A=1"]}`))
	f.Add([]byte(`{"script_b64":"IyEvYmluL3NoCunp","env":{"b64":["QT3p","Qj0="]}}`))
	f.Add([]byte(`{"env":{"b64":["!!"]}}`))
	f.Add([]byte(`{"env":null,"script":"","script_b64":""}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s JobSpec
		if json.Unmarshal(b, &s) != nil {
			return
		}
		again, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("%q decoded to %+v, which does not encode: %v", b, s, err)
		}
		var back JobSpec
		if err := json.Unmarshal(again, &back); err != nil {
			t.Fatalf("%q: its encoding %s does not decode: %v", b, again, err)
		}
		if back.Script != s.Script || !reflect.DeepEqual([]string(back.Env), []string(s.Env)) && (len(back.Env) > 0 || len(s.Env) > 0) {
			t.Fatalf("%q: script %q env %q came back as %q %q", b, s.Script, s.Env, back.Script, back.Env)
		}
	})
}
