package api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// A request refused by horad's rate limit is slept off and sent again, a
// submission included (horad did nothing with it), and the hook sees each
// refusal; other refusals are returned at once.
func TestRateLimitedRequestIsRetried(t *testing.T) {
	defer func(p time.Duration) { rateLimitPause = p }(rateLimitPause)
	rateLimitPause = time.Millisecond
	sock := filepath.Join(t.TempDir(), "horad.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	refuse := 2
	var bodies []string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == PathCancel {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"Invalid job id specified","code":"InvalidJobID"}`))
			return
		}
		b := make([]byte, r.ContentLength)
		r.Body.Read(b)
		bodies = append(bodies, string(b))
		if refuse > 0 {
			refuse--
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"error":"Rate limit exceeded, please retry momentarily","code":"RateLimited"}`))
			return
		}
		w.Write([]byte(`{"job_id":7}`))
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	c := NewClient(sock)
	var seen []int
	c.OnRateLimited = func(n int) { seen = append(seen, n) }
	resp, err := c.Submit(context.Background(), SubmitRequest{Spec: JobSpec{Name: "x"}})
	if err != nil || resp.JobID != 7 {
		t.Fatalf("submit after two rate-limit refusals: %+v, %v", resp, err)
	}
	if !slices.Equal(seen, []int{1, 2}) {
		t.Fatalf("OnRateLimited saw %v, want [1 2]", seen)
	}
	if len(bodies) != 3 || bodies[0] != bodies[2] {
		t.Fatalf("the retried submission differs from the first: %q", bodies)
	}
	seen = nil
	if _, err := c.Cancel(context.Background(), CancelRequest{IDs: []int64{1}}); err == nil || len(seen) != 0 {
		t.Fatalf("a refusal other than the rate limit: err %v, retries %v; want the error at once", err, seen)
	}
	mu.Lock()
	refuse = 1 << 30
	mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.Jobs(ctx, JobFilter{}); err == nil {
		t.Fatal("a request refused for ever returned no error when its context ended")
	}
}

// A name or path that is not UTF-8 is refused by the client with its field
// named, before anything is sent (JSON would change it silently).
func TestSubmitRefusesInvalidUTF8(t *testing.T) {
	c := NewClient(filepath.Join(t.TempDir(), "none.sock")) // nothing listens: nothing may be sent
	for _, s := range []JobSpec{{Name: "a\xffb"}, {Name: "ok", Stdout: "/tmp/\xe9t\xe9.out"}} {
		_, err := c.Submit(context.Background(), SubmitRequest{Spec: s})
		var ae *Error
		if !errors.As(err, &ae) || ae.Code != CodeBadRequest || !strings.Contains(ae.Message, "not UTF-8 text") {
			t.Fatalf("%+v: %v, want a refusal naming the field", s, err)
		}
	}
}
