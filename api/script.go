package api

import (
	"encoding/base64"
	"encoding/json"
)

// A batch script is bytes, not text: a script written in Latin-1 or
// carrying a binary payload runs on the node exactly as the user wrote it,
// as Slurm runs it. JSON strings are Unicode, and encoding/json turns each
// invalid byte into U+FFFD, so a script that is not valid UTF-8 travels as
// "script_b64" (standard base64 of its bytes) with "script" left empty.
// Every JSON path a spec takes (the socket, the store's spec column and
// events, the API's answers) goes through these two methods; the listing
// codec and the launch spec carry bytes already.

// jobSpecPlain is JobSpec without its JSON methods.
type jobSpecPlain JobSpec

// jobSpecWire is a spec whose script is not UTF-8: "script" (shallower than
// the embedded one, so it wins) stays empty and the bytes go in script_b64.
type jobSpecWire struct {
	jobSpecPlain
	Script    string `json:"script"`
	ScriptB64 string `json:"script_b64,omitempty"`
}

// MarshalJSON writes a spec as encoding/json would, but for a script that
// is not UTF-8 (see above).
//
// It is written by hand (submitjson.go): horad encodes the spec of every
// job it records, and reflection over its 60 fields was most of the cost.
// TestSpecJSONMatchesReflection holds it to encoding/json's own encoding.
func (s JobSpec) MarshalJSON() ([]byte, error) {
	return appendSpecJSON(nil, &s)
}

// UnmarshalJSON reads what MarshalJSON writes. A request carrying both a
// script and script_b64 is refused: which one would run is not clear.
func (s *JobSpec) UnmarshalJSON(b []byte) error {
	var w jobSpecWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*s = JobSpec(w.jobSpecPlain)
	s.Script = w.Script
	if w.ScriptB64 != "" {
		if w.Script != "" {
			return &Error{Message: "script and script_b64 both given", Code: CodeBadRequest}
		}
		raw, err := base64.StdEncoding.DecodeString(w.ScriptB64)
		if err != nil {
			return &Error{Message: "script_b64: " + err.Error(), Code: CodeBadRequest}
		}
		s.Script = string(raw)
	}
	return nil
}
