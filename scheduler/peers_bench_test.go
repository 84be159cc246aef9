package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"hora/scheduler/reserve"
	st "hora/scheduler/schedtest"
)

// BenchmarkResvWithPeer: create and delete a 4-node reservation in reserve
// partition ra of 256 nodes, alone ("alone") or sharing its nodes with
// reserve partition rb that holds ~2000 one-node reservations over a week
// ("peer"): each create first mirrors rb's bookings (syncPeers), redone
// after every change of ra's own index.
func BenchmarkResvWithPeer(b *testing.B) {
	const n = 256
	for _, peer := range []bool{false, true} {
		name := "alone"
		cl := st.Cluster(n).Partition("ra", "reserve").NodeRange(0, n)
		if peer {
			name = "peer"
			cl = cl.Partition("rb", "reserve").NodeRange(0, n)
		}
		b.Run(name, func(b *testing.B) {
			h := st.New(b, cl.Config())
			rng := rand.New(rand.NewPCG(1, 2))
			const week = 7 * 24 * 3600
			if peer {
				rb := resvPolicy(b, h, "rb")
				for k := range 2000 {
					s := int64(rng.IntN(week))
					_, _ = rb.CreateResv(h.Now, reserve.Resv{Name: fmt.Sprint("b", k), Start: s,
						End: s + 600 + int64(rng.IntN(7200)), Count: 1, Users: []uint32{0}})
				}
			}
			ra := resvPolicy(b, h, "ra")
			for b.Loop() {
				s := int64(rng.IntN(week))
				if _, err := ra.CreateResv(h.Now, reserve.Resv{Name: "a", Start: s, End: s + 3600, Count: 4, Users: []uint32{0}}); err == nil {
					_ = ra.DeleteResv(h.Now, "a")
				}
			}
		})
	}
}
