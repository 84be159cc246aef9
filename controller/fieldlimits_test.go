package controller

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"hora/api"
)

// Hostile submissions over the socket's protocol: invalid UTF-8, an
// oversized name or path, truncated JSON — each refused with a 400 and a
// message that says what, and nothing recorded.
func TestSubmitRefusesHostileBodies(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	h := c.Server().Handler
	spec := f.spec("true")
	good, err := json.Marshal(api.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	long := func(field, v string) string {
		s := spec
		switch field {
		case "name":
			s.Name = v
		case "stdout":
			s.Stdout = v
		}
		b, _ := json.Marshal(api.SubmitRequest{Spec: s})
		return string(b)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"invalid UTF-8", strings.Replace(string(good), `"name":"`, "\"name\":\"\xff\xfe", 1), "malformed request body: invalid UTF-8 at byte "},
		{"truncated", string(good[:len(good)/2]), "malformed request body: unexpected EOF"},
		{"random", "\x00\x01{]", "malformed request body: "},
		{"long name", long("name", strings.Repeat("n", 1025)), MsgTooLong + " (job name: 1025 bytes, at most 1024)"},
		{"long path", long("stdout", "/"+strings.Repeat("p", 4096)), MsgTooLong + " (output: 4097 bytes, at most 4096)"},
	} {
		req := httptest.NewRequestWithContext(context.WithValue(t.Context(), callerKey{}, root), "POST", api.PathSubmit, strings.NewReader(tc.body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		var ae api.Error
		if err := json.Unmarshal(w.Body.Bytes(), &ae); err != nil || w.Code != http.StatusBadRequest || !strings.HasPrefix(ae.Message, tc.want) {
			t.Errorf("%s: %d %q, want 400 and %q", tc.name, w.Code, w.Body.String(), tc.want)
		}
	}
	if n := len(c.jobs); n != 0 {
		t.Fatalf("%d jobs recorded from refused submissions", n)
	}
	// The same request whole and valid is taken: the refusals above were
	// for what they carried.
	req := httptest.NewRequestWithContext(context.WithValue(t.Context(), callerKey{}, root), "POST", api.PathSubmit, strings.NewReader(long("name", strings.Repeat("n", 1024))))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Fatalf("a 1024-byte name: %d %s", w.Code, w.Body)
	}
}

// A submission whose client has gone (its request context cancelled) once
// the body was read is recorded all the same: its outcome does not depend
// on whether the client still listens.
func TestSubmitOutlivesItsClient(t *testing.T) {
	f := newFixture(t)
	c := f.controller(t)
	s := f.spec("true")
	s.Hold = true
	body, _ := json.Marshal(api.SubmitRequest{Spec: s})
	ctx, cancel := context.WithCancel(context.WithValue(t.Context(), callerKey{}, root))
	cancel()
	req := httptest.NewRequestWithContext(ctx, "POST", api.PathSubmit, strings.NewReader(string(body)))
	w := httptest.NewRecorder()
	c.Server().Handler.ServeHTTP(w, req)
	if w.Code != http.StatusOK || len(c.jobs) != 1 {
		t.Fatalf("submission with its client gone: %d %s, %d jobs; want it recorded", w.Code, w.Body, len(c.jobs))
	}
}
