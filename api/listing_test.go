package api

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
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
	if _, err := ParseListing(append(b, 0)); err == nil || !strings.Contains(err.Error(), "in 758 bytes follow the header") {
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
	f.Add(appendInParts(nil, jobs, 2))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseListing(b)
		if err != nil {
			return
		}
		// Whatever parses re-encodes to the same bytes, in the same parts,
		// and its parts read alone give the same jobs.
		lr, _ := NewListingReader(b)
		if again := appendParts(nil, got, lr.parts); string(again) != string(b) {
			t.Fatalf("re-encoding differs")
		}
		var byParts []Job
		for _, p := range lr.Parts() {
			for {
				var j Job
				if _, err := p.Next(&j); err == io.EOF {
					break
				} else if err != nil {
					t.Fatalf("a part of a listing that parses: %v", err)
				}
				byParts = append(byParts, j)
			}
			if err := p.End(); err != nil {
				t.Fatalf("a part of a listing that parses: %v", err)
			}
		}
		if len(byParts) != len(got) || (len(got) > 0 && !reflect.DeepEqual(byParts, got)) {
			t.Fatalf("parts read %d jobs, the listing %d", len(byParts), len(got))
		}
	})
}

// appendInParts encodes jobs in k parts as horad does (the last part takes
// what is left).
func appendInParts(b []byte, jobs []Job, k int) []byte {
	var table []ListingPart
	for p := range k {
		table = append(table, ListingPart{Jobs: (p+1)*len(jobs)/k - p*len(jobs)/k})
	}
	return appendParts(b, jobs, table)
}

// appendParts encodes jobs in parts of the given numbers of jobs.
func appendParts(b []byte, jobs []Job, table []ListingPart) []byte {
	var body []byte
	i := 0
	table = slices.Clone(table)
	for k := range table {
		start := len(body)
		for range table[k].Jobs {
			body = AppendListingJob(body, &jobs[i])
			i++
		}
		table[k].Bytes = len(body) - start
	}
	return append(AppendListingHeader(b, table), body...)
}

// A listing in parts reads the same as a whole and part by part, each part
// on its own goroutine; a part table that does not add up to the listing is
// an error naming what does not fit.
func TestListingParts(t *testing.T) {
	jobs := make([]Job, 7)
	seed := 0
	for i := range jobs {
		fill(reflect.ValueOf(&jobs[i]).Elem(), &seed)
	}
	b := appendInParts(nil, jobs, 3)
	whole, err := ParseListing(b)
	if err != nil || !reflect.DeepEqual(whole, jobs) {
		t.Fatalf("read whole: %v", err)
	}
	lr, err := NewListingReader(b)
	if err != nil {
		t.Fatal(err)
	}
	parts := lr.Parts()
	if len(parts) != 3 || parts[0].Len() != 2 || parts[1].Len() != 2 || parts[2].Len() != 3 {
		t.Fatalf("parts of 7 jobs in 3: %d", len(parts))
	}
	got := make([][]Job, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() {
			for {
				var j Job
				off, err := p.Next(&j)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Error(err)
					return
				}
				var again Job
				if err := p.At(off, &again); err != nil || !reflect.DeepEqual(again, j) {
					t.Errorf("part %d: At(%d) = %v", i, off, err)
				}
				got[i] = append(got[i], j)
			}
			if err := p.End(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if all := slices.Concat(got...); !reflect.DeepEqual(all, jobs) {
		t.Fatalf("parts read %d jobs, not the 7 encoded", len(all))
	}
	// Tables that do not add up: jobs or bytes moved between parts, or a
	// count that the parts do not make.
	sizes := make([]int, 3)
	for i, p := range parts {
		sizes[i] = len(p.d.b)
	}
	bodyAt := len(b) - sizes[0] - sizes[1] - sizes[2]
	for _, bad := range []struct {
		table []ListingPart
		want  string
	}{
		{[]ListingPart{{2, sizes[0]}, {2, sizes[1]}, {3, sizes[2] + 1}}, "follow the header"},
		{[]ListingPart{{2, sizes[0]}, {2, sizes[1] + 1<<20}, {3, sizes[2]}}, "part 2 of 3 (2 jobs, 1049"},
		{[]ListingPart{{0, sizes[0] + sizes[1] + sizes[2] - 30}, {7, 30}}, "part 2 of 2 (7 jobs, 30 bytes) does not fit"},
		{[]ListingPart{{2, sizes[0]}, {2, sizes[1]}, {3, sizes[2] - 1}}, "follow the header"},
		{[]ListingPart{{2, sizes[0]}, {2, sizes[1]}}, "follow the header"},
		{[]ListingPart{{3, sizes[0]}, {1, sizes[1]}, {3, sizes[2]}}, ""}, // byte counts right, jobs moved: a part breaks
	} {
		data := append(AppendListingHeader(nil, bad.table), b[bodyAt:]...)
		if bad.want == "" {
			if _, err := ParseListing(data); err != nil {
				continue // read as a whole the listing is fine; its parts are not
			}
			lr, err := NewListingReader(data)
			if err != nil {
				t.Fatal(err)
			}
			broke := false
			for _, p := range lr.Parts() {
				for {
					var j Job
					if _, err := p.Next(&j); err == io.EOF {
						broke = broke || p.End() != nil
						break
					} else if err != nil {
						broke = true
						break
					}
				}
			}
			if !broke {
				t.Errorf("table %v: parts read without an error", bad.table)
			}
			continue
		}
		if _, err := ParseListing(data); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("table %v: %v, want %q", bad.table, err, bad.want)
		}
	}
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
