package batch

import "hora/scheduler"

// Probed is the last "batch-probe" policy built, for tests that look inside.
var Probed *Policy

func init() {
	scheduler.RegisterPolicy("batch-probe", func(p *scheduler.Partition) (scheduler.Policy, error) {
		pol, err := New(p)
		if err == nil {
			Probed = pol.(*Policy)
		}
		return pol, err
	})
}

// UseTres reports whether the policy passes on resources.
func (b *Policy) UseTres() bool { return b.useTres() }

// HeadReservation gives the last pass's head on resources and its planned
// start, and the start Reserve finds for it now.
func (b *Policy) HeadReservation(now float64) (id scheduler.JobID, planned, now2 float64, ok bool) {
	if !b.hasHead || !b.useTres() {
		return 0, 0, 0, false
	}
	j := b.byID[b.head]
	if j == nil {
		return 0, 0, 0, false
	}
	t, _ := b.p.Reserve(j, now, nil)
	return j.ID, b.shadow, t, true
}
