package batch

import "hora/scheduler"

// timeHeap is a binary min-heap of (time, job), ties by job ID so that the
// order never depends on insertion history.
type timeHeap struct{ e []timeEntry }

type timeEntry struct {
	t float64
	j *scheduler.Job
}

func (h *timeHeap) less(a, b int) bool {
	x, y := h.e[a], h.e[b]
	return x.t < y.t || (x.t == y.t && x.j.ID < y.j.ID)
}

func (h *timeHeap) len() int { return len(h.e) }

func (h *timeHeap) peek() (float64, *scheduler.Job) { return h.e[0].t, h.e[0].j }

func (h *timeHeap) push(t float64, j *scheduler.Job) {
	h.e = append(h.e, timeEntry{t, j})
	for i := len(h.e) - 1; i > 0; {
		up := (i - 1) / 2
		if !h.less(i, up) {
			break
		}
		h.e[i], h.e[up] = h.e[up], h.e[i]
		i = up
	}
}

func (h *timeHeap) pop() {
	last := len(h.e) - 1
	h.e[0] = h.e[last]
	h.e[last] = timeEntry{}
	h.e = h.e[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h.e) && h.less(l, m) {
			m = l
		}
		if r < len(h.e) && h.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		h.e[i], h.e[m] = h.e[m], h.e[i]
		i = m
	}
}
