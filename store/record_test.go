package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"hora/api"
)

// fillAll sets every exported field reachable from v to a non-zero value
// derived from seed, slices with two elements, so that a field added to
// api.Job later is covered without editing this test.
func fillAll(v reflect.Value, seed *int) {
	*seed++
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(-*seed))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*seed))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*seed) + 0.25)
	case reflect.String:
		v.SetString(strings.Repeat("é\x00x", *seed%5+1))
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		fillAll(s.Index(0), seed)
		fillAll(s.Index(1), seed)
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillAll(p.Elem(), seed)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillAll(v.Field(i), seed)
			}
		}
	}
}

// Every field of api.Job, nested ones included, survives a record round
// trip, except those recordOf clears (never columns): a field added to
// api.Job that the record could not carry fails here.
func TestRecordRoundTripEveryField(t *testing.T) {
	var j api.Job
	seed := 0
	fillAll(reflect.ValueOf(&j).Elem(), &seed)
	rec := encodeRecord(nil, &j)
	var got api.Job
	if err := decodeRecord(string(rec), &got); err != nil {
		t.Fatal(err)
	}
	want := recordOf(&j)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("record round trip:\ngot  %+v\nwant %+v", got, want)
	}
	if got.Spec.PBS == nil || got.Spec.Env == nil || got.Alloc == nil || got.Alloc[1].CPUs == nil {
		t.Fatalf("nested fields lost: %+v", got)
	}
	// Every truncation of the record is refused, never read as a shorter job.
	for n := range len(rec) {
		var j api.Job
		if err := decodeRecord(string(rec[:n]), &j); !errors.Is(err, errRecord) {
			t.Fatalf("record cut to %d of %d bytes: err %v", n, len(rec), err)
		}
	}
}

// A field this program does not know (written by a newer or older api.Job)
// is skipped; a known field whose type changed is an error.
func TestRecordUnknownAndMistypedFields(t *testing.T) {
	j := api.Job{ID: 7, User: "alice"}
	rec := encodeRecord(nil, &j)
	// Append by hand a struct of two fields: id (int) and "gone" (a slice of strings).
	var b []byte
	b = append(b, recordVersion, 3)
	b = appendString(b, "gone")
	b = append(b, tagSlice, 1, tagString)
	b = appendString(b, "x")
	b = append(b, rec[2:]...) // the two real fields after the count
	var got api.Job
	if err := decodeRecord(string(b), &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != 7 || got.User != "alice" {
		t.Fatalf("got %+v", got)
	}
	bad := []byte{recordVersion, 1}
	bad = appendString(bad, "user")
	bad = append(bad, tagInt, 2)
	if err := decodeRecord(string(bad), &got); !errors.Is(err, errRecord) || !strings.Contains(err.Error(), "user") {
		t.Fatalf("mistyped field: err %v", err)
	}
}

// Jobs read through records equal the same jobs read from their columns
// (the path of rows written before migration 9), after random histories;
// and a database where some rows have no record yet (an upgraded one)
// reads the same again, in id order.
func TestPropertyRecordEqualsColumns(t *testing.T) {
	root := t.TempDir()
	rapid.Check(t, func(rt *rapid.T) {
		ops := genHistory(rt)
		dir, err := os.MkdirTemp(root, "db")
		if err != nil {
			rt.Fatal(err)
		}
		ctx := context.Background()
		s, err := Open(ctx, dir+"/hora.db")
		if err != nil {
			rt.Fatal(err)
		}
		defer func() { s.Close() }()
		for _, o := range ops {
			if o.job != nil {
				if err := s.Submit(ctx, o.job); err != nil {
					rt.Fatal(err)
				}
			} else if err := s.Append(ctx, o.ev); err != nil {
				rt.Fatal(err)
			}
		}
		since := rapid.Int64Range(1_700_000_000, 1_700_004_000).Draw(rt, "since")
		filters := []Filter{{}, {Active: true}, {Since: since}, {UIDs: []uint32{1}},
			{UIDs: []uint32{0, 2}, Since: since}, {UIDs: []uint32{}}}
		records := make([][]api.Job, len(filters))
		for i, f := range filters {
			if records[i], err = s.Jobs(ctx, f); err != nil {
				rt.Fatal(err)
			}
		}
		// Each filter selects what it says from all the jobs.
		for i, f := range filters[1:] {
			var want []api.Job
			for _, j := range records[0] {
				if (!f.Active || !j.State.Finished()) && (f.Since == 0 || j.EndTime == 0 || j.EndTime >= f.Since) &&
					(f.UIDs == nil || slices.Contains(f.UIDs, j.UID)) {
					want = append(want, j)
				}
			}
			if !reflect.DeepEqual(records[i+1], want) {
				rt.Fatalf("filter %+v:\ngot  %+v\nwant %+v", f, records[i+1], want)
			}
		}
		// Rows written before migration 9 had their spec's JSON in the spec
		// column, which putJob now leaves empty (the record holds the
		// spec): put it back, as such a row had it, before reading the
		// columns.
		for _, j := range records[0] {
			spec, err := json.Marshal(j.Spec)
			if err != nil {
				rt.Fatal(err)
			}
			if err := s.write(ctx, func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, `UPDATE jobs SET spec = ? WHERE id = ?`, string(spec), j.ID)
				return err
			}); err != nil {
				rt.Fatal(err)
			}
		}
		var columns []api.Job
		err = s.readTx(ctx, func(tx *sql.Tx) error {
			cols, err := scanColumns(ctx, tx, "")
			if err != nil {
				return err
			}
			columns, err = withSteps(ctx, tx, cols, "")
			return err
		})
		if err != nil {
			rt.Fatal(err)
		}
		if !reflect.DeepEqual(records[0], columns) {
			rt.Fatalf("records and columns differ:\nrecords %+v\ncolumns %+v", records[0], columns)
		}
		// Upgrade: drop the records of a random subset of rows.
		drop := rapid.SliceOfDistinct(rapid.Int64Range(1, int64(len(columns)+1)), rapid.ID).Draw(rt, "drop")
		for _, id := range drop {
			if err := s.write(ctx, func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, `UPDATE jobs SET rec = NULL WHERE id = ?`, id)
				return err
			}); err != nil {
				rt.Fatal(err)
			}
		}
		for i, f := range filters {
			mixed, err := s.Jobs(ctx, f)
			if err != nil {
				rt.Fatal(err)
			}
			if !reflect.DeepEqual(mixed, records[i]) {
				rt.Fatalf("filter %+v: with records of %v dropped:\ngot  %+v\nwant %+v", f, drop, mixed, records[i])
			}
		}
	})
}

// A damaged record fails the read and names the job, rather than yield a
// job with fields missing.
func TestDamagedRecordNamesJob(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, t.TempDir())
	defer s.Close()
	j := testJob(1)
	if err := s.Submit(ctx, j); err != nil {
		t.Fatal(err)
	}
	if err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE jobs SET rec = substr(rec, 1, 10) WHERE id = ?`, j.ID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Jobs(ctx, Filter{})
	if !errors.Is(err, errRecord) || !strings.Contains(err.Error(), "job 1") {
		t.Fatalf("damaged record: err %v", err)
	}
}

// A job's spec is stored once per row, in its record: the spec column,
// which would hold a second copy of the script and environment, stays
// empty, and the job reads back whole after the store is opened again.
func TestSpecStoredOnceInRecord(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := openStore(t, dir)
	j := testJob(1)
	j.Spec.Env = append(j.Spec.Env, "LONG="+strings.Repeat("x", 1500))
	if err := s.Submit(ctx, j); err != nil {
		t.Fatal(err)
	}
	want := *j
	var specLen, recLen int
	if err := s.readTx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT length(spec), length(rec) FROM jobs WHERE id = ?`, j.ID).Scan(&specLen, &recLen)
	}); err != nil {
		t.Fatal(err)
	}
	if specLen != 0 || recLen < 1500 {
		t.Fatalf("spec column %d bytes, record %d bytes: want the spec in the record only", specLen, recLen)
	}
	s.Close()
	s = openStore(t, dir)
	defer s.Close()
	got, err := s.Jobs(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !reflect.DeepEqual(got[0].Spec, want.Spec) {
		t.Fatalf("read back %+v, want spec %+v", got, want.Spec)
	}
}
