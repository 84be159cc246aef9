package batch_test

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"

	st "hora/scheduler/schedtest"

	_ "hora/scheduler/reserve"
)

// TestPropSharedWithoutBookingsIsPlain: a batch partition whose nodes a
// reserve partition shares takes the bookings-aware pass (scanBooked);
// with nothing booked it must decide exactly as the plain pass, under the
// same random histories (cancels, holds, begin times, deadlines, overruns,
// node failures).
func TestPropSharedWithoutBookingsIsPlain(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "cluster")
		bf := rapid.SampledFrom([]string{"easy", "fcfs"}).Draw(t, "backfill")
		ops := genOps(t, genOpts{nodes: n, chaos: true})
		nop := func(*st.Harness) {}
		plain := runOps(t, cluster(n, bf), ops, nop)
		shared := runOps(t, st.Cluster(n).Partition("batch", "batch").Backfill(bf).Partition("res", "reserve").Config(), ops, nop)
		if !reflect.DeepEqual(plain.Starts, shared.Starts) || !reflect.DeepEqual(plain.Ends, shared.Ends) {
			for i := range min(len(plain.Starts), len(shared.Starts)) {
				if !reflect.DeepEqual(plain.Starts[i], shared.Starts[i]) {
					t.Fatalf("start %d differs: plain %+v, shared %+v", i, plain.Starts[i], shared.Starts[i])
				}
			}
			t.Fatalf("plain and shared runs differ: %d vs %d starts, ends %v vs %v", len(plain.Starts), len(shared.Starts), plain.Ends, shared.Ends)
		}
	})
}
