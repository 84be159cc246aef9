package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Environ is an environment, KEY=VALUE entries, as it travels in JSON. An
// environment is bytes, as a script is (script.go): a value in Latin-1, or
// any byte string a program put there, reaches the job exactly as the user
// had it, as Slurm passes it. JSON strings are Unicode and encoding/json
// turns each invalid byte into U+FFFD, so an environment with an entry that
// is not UTF-8 travels as {"b64":[...]} (standard base64 of each entry's
// bytes); every other one as the plain array of strings it always was.
type Environ []string

// environB64 is the JSON form of an environment that is not all UTF-8.
type environB64 struct {
	B64 []string `json:"b64"`
}

func (e Environ) valid() bool {
	for _, kv := range e {
		if !utf8.ValidString(kv) {
			return false
		}
	}
	return true
}

// MarshalJSON writes the plain array, or {"b64":[...]} (see Environ).
func (e Environ) MarshalJSON() ([]byte, error) {
	return appendEnvironJSON(nil, e), nil
}

// appendEnvironJSON writes what MarshalJSON writes, for the hand-written
// encoders (submitjson.go).
func appendEnvironJSON(b []byte, e Environ) []byte {
	if e == nil {
		return append(b, "null"...)
	}
	valid := e.valid()
	if !valid {
		b = append(b, `{"b64":`...)
	}
	b = append(b, '[')
	for i, kv := range e {
		if i > 0 {
			b = append(b, ',')
		}
		if valid {
			b = appendJSONString(b, kv)
		} else {
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, []byte(kv))
			b = append(b, '"')
		}
	}
	b = append(b, ']')
	if !valid {
		b = append(b, '}')
	}
	return b
}

// UnmarshalJSON reads either form. An entry of "b64" that is not base64 is
// refused, naming the entry.
func (e *Environ) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return json.Unmarshal(b, (*[]string)(e))
	}
	var w environB64
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	out := make(Environ, len(w.B64))
	for i, s := range w.B64 {
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return &Error{Message: "env: b64 entry " + strconv.Itoa(i+1) + ": " + err.Error(), Code: CodeBadRequest}
		}
		out[i] = string(raw)
	}
	*e = out
	return nil
}
