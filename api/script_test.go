package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// A script that is not UTF-8 (Latin-1 text, a binary payload) keeps its
// bytes through every encoding a spec takes: the client's submit JSON,
// encoding/json (the store, the API's answers) and the listing codec.
func TestScriptBytesSurviveEncodings(t *testing.T) {
	scripts := map[string]string{
		"latin-1":   "#!/bin/sh\n# caf\xe9 cr\xe8me\necho '\xe9t\xe9' > out\n",
		"binary":    "#!/bin/sh\nexit 0\n\x00\xff\xfe\x80\xc0\xaf payload \xed\xa0\x80",
		"utf-8":     "#!/bin/sh\necho 'été 日本'\n",
		"lone cont": "\x80",
	}
	for name, script := range scripts {
		r := SubmitRequest{Spec: JobSpec{Name: "n", Script: script, WorkDir: "/w"}}
		mine, err := appendSubmitJSON(nil, &r)
		if err != nil {
			t.Fatal(err)
		}
		var back SubmitRequest
		if err := json.Unmarshal(mine, &back); err != nil || back.Spec.Script != script {
			t.Errorf("%s: submit JSON %s decodes to script %q (%v)", name, mine, back.Spec.Script, err)
		}
		std, err := json.Marshal(r.Spec)
		if err != nil {
			t.Fatal(err)
		}
		var spec JobSpec
		if err := json.Unmarshal(std, &spec); err != nil || spec.Script != script || spec.Name != "n" || spec.WorkDir != "/w" {
			t.Errorf("%s: encoding/json %s decodes to %+v (%v)", name, std, spec, err)
		}
		if strings.Contains(string(std), `\ufffd`) || strings.Contains(string(mine), `\ufffd`) {
			t.Errorf("%s: U+FFFD in the encoding", name)
		}
		jobs, err := ParseListing(AppendListing(nil, []Job{{ID: 1, Spec: r.Spec}}))
		if err != nil || len(jobs) != 1 || jobs[0].Spec.Script != script {
			t.Errorf("%s: listing round trip: %v %v", name, jobs, err)
		}
	}
	// Which script would run is unclear: refused.
	var spec JobSpec
	if err := json.Unmarshal([]byte(`{"script":"#!/bin/sh\n","script_b64":"IyEvYmluL3NoCg=="}`), &spec); err == nil {
		t.Error("a spec with both script and script_b64 was accepted")
	}
	if err := json.Unmarshal([]byte(`{"script_b64":"not base64!"}`), &spec); err == nil {
		t.Error("a script_b64 that is not base64 was accepted")
	}
}
