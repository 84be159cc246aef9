package dlt_test

import (
	"math"
	"testing"

	"hora/scheduler"
	"hora/scheduler/dlt"
	"hora/scheduler/reserve"
	"hora/scheduler/schedtest"
)

// A dlt partition over n0–n3 and a reserve partition over n2–n3: an
// advance reservation on n2 takes n2 out of the dlt scheduler's service
// while it has not ended (reading 24). A deadline that needs all four
// nodes is refused then (admitted without the reservation, and again once
// it has ended); one that fits on three is admitted, no chunk of it goes
// to n2, every chunk ends by its deadline and the chunks cover its load.
func TestBookedNodeNotCounted(t *testing.T) {
	m := dlt.Model{Cms: 1, Cps: 9, Share: 1}
	d4, d3 := m.Exec(100, 4)*1.001, m.Exec(100, 3)*1.001
	if m.Exec(100, 3) <= d4 {
		t.Fatalf("setup: 3 nodes meet the 4-node deadline")
	}
	cfg := schedtest.Cluster(4).Partition("rt", "dlt").Param("cms", "1").Param("cps", "9").Default().
		Partition("res", "reserve").NodeRange(2, 4).Config()

	h := schedtest.New(t, cfg)
	h.Submit(schedtest.Job(1).Partition("rt").Load(100).Deadline(d4).Run(-1))
	if h.Rejects[1] != nil {
		t.Fatalf("without a reservation the 4-node job is refused: %v", h.Rejects[1])
	}

	h = schedtest.New(t, cfg)
	pol, _ := h.Eng.Policy("res")
	start := int64(d4 / 2)
	r := reserve.Resv{Name: "maint", Start: start, End: start + 100, Nodes: []int{0}, Users: []uint32{0}}
	if _, err := pol.(*reserve.Policy).CreateResv(h.Now, r); err != nil {
		t.Fatal(err)
	}
	h.Handle(scheduler.Tick{Now: h.Now})
	h.Submit(schedtest.Job(1).Partition("rt").Load(100).Deadline(d4).Run(-1))
	if h.Rejects[1] == nil {
		t.Fatalf("the 4-node job is admitted though n2 is booked from %d", start)
	}
	d := &driver{t: t, h: h, factor: 1}
	d.submit(schedtest.Job(2).Partition("rt").Load(100).Deadline(d3).Run(-1))
	if h.Rejects[2] != nil {
		t.Fatalf("the 3-node job is refused: %v", h.Rejects[2])
	}
	d.until(math.Inf(1))
	covered := 0.0
	for _, s := range h.Starts {
		if s.ID != 2 {
			continue
		}
		if s.Nodes[0] == "n2" {
			t.Errorf("chunk %d on booked n2", s.Step)
		}
		if s.Expect > d3+1e-9 {
			t.Errorf("chunk %d ends at %v, past the deadline %v", s.Step, s.Expect, d3)
		}
		covered += s.Size
	}
	if math.Abs(covered-100) > 1e-9 {
		t.Errorf("chunks cover %v of 100", covered)
	}
	h.Now = max(h.Now, float64(r.End)+1)
	h.Handle(scheduler.Tick{Now: h.Now})
	h.Submit(schedtest.Job(3).Partition("rt").Load(100).Deadline(h.Now + d4).Run(-1))
	if h.Rejects[3] != nil {
		t.Fatalf("at %v, after the reservation ended, the 4-node job (deadline %v) is refused: %v", h.Now, h.Now+d4, h.Rejects[3])
	}
}

// A reservation placed on n2 after a job was admitted on all four nodes
// takes n2 out of service: the job's guarantee is checked again and lost
// (reason NodeDown, as for a node loss), and no later chunk goes to n2
// while the reservation lasts.
func TestBookingAfterAdmission(t *testing.T) {
	m := dlt.Model{Cms: 1, Cps: 9, Share: 1}
	d4 := m.Exec(100, 4) * 1.001
	cfg := schedtest.Cluster(4).Partition("rt", "dlt").Param("cms", "1").Param("cps", "9").Default().
		Partition("res", "reserve").NodeRange(2, 4).Config()
	h := schedtest.New(t, cfg)
	h.Submit(schedtest.Job(1).Partition("rt").Load(100).Deadline(d4).Run(-1))
	if h.Rejects[1] != nil {
		t.Fatal(h.Rejects[1])
	}
	for _, s := range h.Starts {
		if s.Nodes[0] == "n2" {
			t.Fatalf("setup: a chunk already on n2 at admission: %+v", h.Starts)
		}
	}
	pol, _ := h.Eng.Policy("res")
	start := int64(d4 / 2)
	r := reserve.Resv{Name: "maint", Start: start, End: start + 100, Nodes: []int{0}, Users: []uint32{0}}
	if _, err := pol.(*reserve.Policy).CreateResv(h.Now, r); err != nil {
		t.Fatal(err)
	}
	n := len(h.Starts)
	h.Handle(scheduler.Tick{Now: h.Now})
	if got := h.Eng.Reason(1); got != dlt.ReasonNodeLost {
		t.Errorf("job 1 reason %q after n2 was booked, want %s", got, dlt.ReasonNodeLost)
	}
	h.Advance(float64(r.End) - 1)
	for _, s := range h.Starts[n:] {
		if s.Nodes[0] == "n2" {
			t.Errorf("chunk %d of job %d started on booked n2 at %v", s.Step, s.ID, s.At)
		}
	}
}
