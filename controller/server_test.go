package controller

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"testing"

	"hora/api"
)

// One listing, three encodings: JSON for curl and other clients, hora's
// binary listing for its own client, gob for older clients. All carry the
// same jobs, and a second request (pooled buffers reused) the same again;
// so does the listing encoded in parts by several goroutines, as a large
// one is (encodeListingLocked), sent as one answer.
func TestListingEncodingsAgree(t *testing.T) {
	t.Run("one part", func(t *testing.T) { testListingEncodingsAgree(t, 8192, 0) })
	t.Run("three parts", func(t *testing.T) { testListingEncodingsAgree(t, 7, 3) })
}

func testListingEncodingsAgree(t *testing.T, rows, parts int) {
	defer func(r, p int) { parallelEncodeRows, encodeParts = r, p }(parallelEncodeRows, encodeParts)
	parallelEncodeRows, encodeParts = rows, parts
	f := newFixture(t)
	c := f.controller(t)
	for range 300 { // more than the pool's threshold
		s := f.spec("true")
		s.Hold = true
		if _, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: s}); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := c.Server()
	go srv.Serve(l)
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	get := func(accept string) (string, []byte) {
		req, _ := http.NewRequest("GET", "http://horad"+api.PathJobs, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("Accept %q: %s %s", accept, resp.Status, b)
		}
		return resp.Header.Get("Content-Type"), b
	}
	var first []api.Job
	for round := range 2 {
		ct, b := get("")
		var viaJSON api.JobsResponse
		if err := json.Unmarshal(b, &viaJSON); ct != "application/json" || err != nil {
			t.Fatalf("plain request: %s, %v", ct, err)
		}
		ct, b = get(api.MediaListing)
		viaListing, err := api.ParseListing(b)
		if ct != api.MediaListing || err != nil {
			t.Fatalf("listing: %s, %v", ct, err)
		}
		ct, b = get(api.MediaGob)
		var viaGob api.JobsResponse
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&viaGob); ct != api.MediaGob || err != nil {
			t.Fatalf("gob: %s, %v", ct, err)
		}
		viaClient, err := api.NewClient(sock).Jobs(t.Context(), api.JobFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(viaJSON.Jobs) != 300 || viaJSON.Jobs[299].ID != 300 {
			t.Fatalf("round %d: %d jobs", round, len(viaJSON.Jobs))
		}
		for name, got := range map[string][]api.Job{"listing": viaListing, "gob": viaGob.Jobs, "client": viaClient} {
			if !reflect.DeepEqual(got, viaJSON.Jobs) {
				t.Fatalf("round %d: %s differs from JSON", round, name)
			}
		}
		if round == 0 {
			first = viaJSON.Jobs
		} else if !reflect.DeepEqual(first, viaJSON.Jobs) {
			t.Fatalf("the second listing differs from the first")
		}
	}
}
