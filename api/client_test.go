package api

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// When nothing answers, the error names every socket tried and why.
func TestDialNamesWhatItTried(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "horad.sock")
	t.Setenv("HORA_SOCKET", sock)
	_, err := Dial()
	var nd *ErrNoDaemon
	if !errors.As(err, &nd) || len(nd.Tried) != 1 || !strings.Contains(err.Error(), sock) ||
		!strings.Contains(err.Error(), "no such file or directory") {
		t.Fatalf("Dial without daemon: %v", err)
	}
	t.Setenv("HORA_SOCKET", "")
	_, err = Dial()
	for _, p := range DefaultSocketPaths {
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Fatalf("default paths: error %v does not name %s", err, p)
		}
	}
}

// Errors come back as *Error with the daemon's text and code; filters travel
// as query parameters.
func TestClientRoundTrip(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathJobs, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("all") != "1" || strings.Join(q["id"], ",") != "3,4" || q.Get("history") != "" {
			w.WriteHeader(400)
			json.NewEncoder(w).Encode(Error{Message: "bad query " + r.URL.RawQuery, Code: CodeBadRequest})
			return
		}
		json.NewEncoder(w).Encode(JobsResponse{Jobs: []Job{{ID: 3, State: StateRunning}}})
	})
	mux.HandleFunc("POST "+PathSubmit, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		json.NewEncoder(w).Encode(Error{Message: "Invalid partition name specified", Code: CodeInvalidPartition})
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	defer srv.Close()
	c := NewClient(sock)
	jobs, err := c.Jobs(context.Background(), JobFilter{IDs: []int64{3, 4}, All: true})
	if err != nil || len(jobs) != 1 || jobs[0].ID != 3 || jobs[0].State.Compact() != "R" {
		t.Fatalf("Jobs: %+v %v", jobs, err)
	}
	_, err = c.Submit(context.Background(), SubmitRequest{})
	var ae *Error
	if !errors.As(err, &ae) || ae.Code != CodeInvalidPartition || ae.Message != "Invalid partition name specified" {
		t.Fatalf("Submit error: %v", err)
	}
}

func TestStates(t *testing.T) {
	for _, s := range AllStates {
		if got, ok := ParseState(s.Compact()); !ok || got != s {
			t.Errorf("ParseState(%q) = %q", s.Compact(), got)
		}
		if got, ok := ParseState(strings.ToLower(string(s))); !ok || got != s {
			t.Errorf("ParseState(%q) = %q", strings.ToLower(string(s)), got)
		}
	}
	if _, ok := ParseState("XX"); ok {
		t.Error("ParseState accepted XX")
	}
	if StatePending.Finished() || StateRunning.Finished() || !StateCancelled.Finished() || !StateDeadline.Finished() {
		t.Error("Finished is wrong")
	}
}
