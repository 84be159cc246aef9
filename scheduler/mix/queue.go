package mix

// WaitQueue is the RT arrival queue (be-rt-mix-2001 §3.2): jobs that found
// no room wait in FCFS order, each at most MaxWait seconds (w), after which
// it is evicted and counts as rejected.
type WaitQueue struct {
	MaxWait float64
	q       []waiting
}

type waiting struct {
	id    int64
	since float64
}

// Push queues job id, arrived at now.
func (w *WaitQueue) Push(id int64, now float64) { w.q = append(w.q, waiting{id, now}) }

// Len is the number of waiting jobs.
func (w *WaitQueue) Len() int { return len(w.q) }

// Expire removes and returns, in arrival order, the jobs that have waited
// longer than MaxWait at now.
func (w *WaitQueue) Expire(now float64) []int64 {
	var out []int64
	keep := w.q[:0]
	for _, e := range w.q {
		if now-e.since > w.MaxWait {
			out = append(out, e.id)
		} else {
			keep = append(keep, e)
		}
	}
	w.q = keep
	return out
}

// Deadline is the instant the oldest waiting job is evicted (ok false when
// none waits), for a driver's next wake-up.
func (w *WaitQueue) Deadline() (t float64, ok bool) {
	if len(w.q) == 0 {
		return 0, false
	}
	return w.q[0].since + w.MaxWait, true
}

// Retry offers the waiting jobs, in FCFS order, to try; those it accepts
// leave the queue. Later jobs are tried even when an earlier one does not
// fit (the paper allocates "the waiting jobs … in FCFS order" at each
// departure without saying that a job blocks those behind it).
func (w *WaitQueue) Retry(try func(id int64) bool) {
	keep := w.q[:0]
	for _, e := range w.q {
		if !try(e.id) {
			keep = append(keep, e)
		}
	}
	w.q = keep
}
