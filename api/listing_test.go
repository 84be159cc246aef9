package api

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// The binary listing carries every field of api.Job unchanged: fill sets
// each field, so a field added to Job but not to the codec shows up here.
func TestListingKeepsEveryField(t *testing.T) {
	in := make([]Job, 3)
	seed := 0
	for i := range in {
		fill(reflect.ValueOf(&in[i]).Elem(), &seed)
	}
	in[1].Spec.Load = -1.25e300
	in[2].ID, in[2].CancelledBy, in[2].ExitCode = -7, -1, -255
	in[2].Spec.Script = strings.Repeat("long script line\n", 1000) // not interned
	in = append(in, Job{ID: 99})                                   // zero fields and nil slices
	out, err := ParseListing(AppendListing(nil, in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		for i := range in {
			if !reflect.DeepEqual(in[i], out[i]) {
				t.Fatalf("job %d changed:\n in %+v\nout %+v", i, in[i], out[i])
			}
		}
		t.Fatalf("listing changed: %d jobs in, %d out", len(in), len(out))
	}
	if got, err := ParseListing(AppendListing(nil, nil)); err != nil || len(got) != 0 {
		t.Fatalf("empty listing: %v %v", got, err)
	}
}

// A listing cut anywhere, or with bytes added, is an error and never a
// panic or a silently shorter list.
func TestListingRejectsDamage(t *testing.T) {
	jobs := make([]Job, 2)
	seed := 0
	for i := range jobs {
		fill(reflect.ValueOf(&jobs[i]).Elem(), &seed)
	}
	b := AppendListing(nil, jobs)
	for n := 0; n < len(b); n++ {
		if _, err := ParseListing(b[:n]); err == nil {
			t.Fatalf("a listing cut to %d of %d bytes was accepted", n, len(b))
		}
	}
	if _, err := ParseListing(append(b, 0)); err == nil || !strings.Contains(err.Error(), "1 bytes left") {
		t.Fatalf("trailing byte: %v", err)
	}
	if _, err := ParseListing([]byte(listingMagic + "\xff\xff\xff\xff\x0f")); err == nil || !strings.Contains(err.Error(), "cannot fit") {
		t.Fatalf("huge count: %v", err)
	}
	if _, err := ParseListing([]byte(`{"jobs":[]}`)); err == nil || !strings.Contains(err.Error(), "bad header") {
		t.Fatalf("JSON given as a listing: %v", err)
	}
}

func FuzzParseListing(f *testing.F) {
	jobs := make([]Job, 2)
	seed := 0
	for i := range jobs {
		fill(reflect.ValueOf(&jobs[i]).Elem(), &seed)
	}
	f.Add(AppendListing(nil, jobs))
	f.Add(AppendListing(nil, []Job{{ID: 1}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseListing(b)
		if err != nil {
			return
		}
		// Whatever parses re-encodes to the same bytes.
		if again := AppendListing(nil, got); string(again) != string(b) {
			t.Fatalf("re-encoding differs")
		}
	})
}

func BenchmarkListing10k(b *testing.B) {
	jobs := make([]Job, 10000)
	for i := range jobs {
		jobs[i] = Job{ID: int64(i + 1), Spec: JobSpec{Name: "j" + string(rune('a'+i%26)), WorkDir: "/home/user/work",
			Partition: "batch", TimeLimit: 3600, Nodes: 1, SubmitHost: "login1", Command: "/home/user/proj/run.sh"},
			UID: 1000, GID: 1000, User: "user", Group: "user", State: StatePending, Reason: "JobHeldUser",
			Priority: 4294901760 - int64(i), SubmitTime: 1700000000, EligibleTime: 1700000000, CancelledBy: -1,
			StdoutPath: "/home/user/proj/slurm-1.out"}
	}
	var data []byte
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			data = AppendListing(data[:0], jobs)
		}
		b.SetBytes(int64(len(data)))
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := ParseListing(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	// gob, which the client used before, for comparison.
	var gb bytes.Buffer
	b.Run("gob-encode", func(b *testing.B) {
		for b.Loop() {
			gb.Reset()
			if err := gob.NewEncoder(&gb).Encode(&JobsResponse{Jobs: jobs}); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(gb.Len()))
	})
	b.Run("gob-decode", func(b *testing.B) {
		for b.Loop() {
			var out JobsResponse
			if err := gob.NewDecoder(bytes.NewReader(gb.Bytes())).Decode(&out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// JobListing reads hora's listing as it is, and a daemon that answers JSON
// (one before the listing codec) gives the same jobs; a ListingReader goes
// back to any job by the offset Next gave.
func TestJobListingFromBothAnswers(t *testing.T) {
	jobs := []Job{{ID: 1, User: "alice", State: StatePending, Spec: JobSpec{Name: "a"}},
		{ID: 2, User: "bob", State: StateRunning, Nodes: []string{"n1"}, Spec: JobSpec{Name: "b"}}}
	for _, asJSON := range []bool{false, true} {
		sock, _ := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !asJSON && r.Header.Get("Accept") == MediaListing {
				w.Header().Set("Content-Type", MediaListing)
				w.Write(AppendListing(nil, jobs))
				return
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(JobsResponse{Jobs: jobs})
		}))
		lr, err := NewClient(sock).JobListing(t.Context(), JobFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var offs []int
		var j Job
		for {
			off, err := lr.Next(&j)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(j, jobs[len(offs)]) {
				t.Fatalf("JSON %v: job %d read as %+v", asJSON, len(offs), j)
			}
			offs = append(offs, off)
		}
		if err := lr.End(); err != nil || len(offs) != 2 {
			t.Fatalf("JSON %v: %d jobs, %v", asJSON, len(offs), err)
		}
		// Back to the first job: all of j is overwritten (bob's node goes).
		if err := lr.At(offs[0], &j); err != nil || !reflect.DeepEqual(j, jobs[0]) {
			t.Fatalf("JSON %v: At(%d) = %+v, %v", asJSON, offs[0], j, err)
		}
	}
}
