package dlt_test

import (
	"fmt"
	"testing"

	"hora/scheduler"
	"hora/scheduler/reserve"
	"hora/scheduler/schedtest"
)

// BenchmarkBookedPass measures a scheduling pass of a 512-node dlt
// partition whose nodes all belong to a reserve partition holding 64
// advance reservations (reading 24). "unchanged": time passes, no booking
// changes or ends, syncBooked skips the scan. "changed": every pass follows
// a reservation created and deleted, so the bookings are scanned (O(N)); the
// reserve policy's own work for the two operations is in the op too.
func BenchmarkBookedPass(b *testing.B) {
	const n = 512
	for _, mode := range []string{"unchanged", "changed"} {
		b.Run(mode, func(b *testing.B) {
			cfg := schedtest.Cluster(n).Partition("rt", "dlt").Param("cms", "1").Param("cps", "1000").Default().
				Partition("res", "reserve").NodeRange(0, n).Config()
			h := schedtest.New(b, cfg)
			h.NoLog = true
			pol, _ := h.Eng.Policy("res")
			res := pol.(*reserve.Policy)
			for k := range 64 {
				r := reserve.Resv{Name: fmt.Sprintf("r%d", k), Start: 1e8, End: 1e8 + 3600, Nodes: []int{k * 8}, Users: []uint32{0}}
				if _, err := res.CreateResv(0, r); err != nil {
					b.Fatal(err)
				}
			}
			h.Handle(scheduler.Tick{Now: 0})
			now := 0.0
			for b.Loop() {
				now++
				if mode == "changed" {
					r := reserve.Resv{Name: "x", Start: 2e8, End: 2e8 + 60, Nodes: []int{1}, Users: []uint32{0}}
					if _, err := res.CreateResv(now, r); err != nil {
						b.Fatal(err)
					}
					if err := res.DeleteResv(now, "x"); err != nil {
						b.Fatal(err)
					}
				}
				h.Handle(scheduler.Tick{Now: now})
			}
		})
	}
}
