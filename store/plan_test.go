package store

import (
	"context"
	"strings"
	"testing"

	"hora/api"
)

// Every selection of Jobs reaches its rows through an index, now that the
// live jobs are found by end_time 0 rather than by state (migration 11): a
// scan of the jobs table reads every job ever stored (recovery and sacct
// over a million jobs).
func TestJobFiltersUseIndexes(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	defer s.Close()
	for i := 1; i <= 40; i++ {
		j := testJob(i)
		j.UID = uint32(i % 4)
		if err := s.Submit(ctx, j); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := s.Append(ctx, Event{JobID: j.ID, Time: int64(1_700_000_000 + i), Kind: KindEnd, State: api.StateCancelled}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, f := range []Filter{{Active: true}, {Since: 1_700_000_020}, {UIDs: []uint32{1}},
		{UIDs: []uint32{1, 2}, Since: 1_700_000_020}, {Active: true, UIDs: []uint32{3}}} {
		where, args, err := f.where()
		if err != nil {
			t.Fatal(err)
		}
		rows, err := s.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+sqlJobRecords+where, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		for _, d := range plan {
			if strings.HasPrefix(d, "SCAN jobs") {
				t.Errorf("filter %+v scans the jobs table:\n%s", f, strings.Join(plan, "\n"))
				break
			}
		}
		// And selects what it says (TestPropertyRecordEqualsColumns holds
		// every filter against all the jobs over random histories).
		js, err := s.Jobs(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(js) == 0 {
			t.Errorf("filter %+v: no job", f)
		}
	}
}
