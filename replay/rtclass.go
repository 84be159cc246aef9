package replay

import (
	"fmt"
	"strconv"
	"strings"
)

// RTPartition is the partition a log's RT class runs in when --rt-class
// splits it from best effort: the reserve policy, on the same nodes as the
// default (best-effort) partition, planning with the RT share s of --ratio
// (DESIGN.md §1: a rigid job is booked for LEN/s).
const RTPartition = "rt"

// RTClass chooses which jobs of a log are real-time (--rt-class). A log
// has no deadlines, so the rule picks jobs by a column of the SWF record —
// its queue (field 15) or partition (field 16) number — or a seeded
// fraction of them, or every job with a deadline (--deadline-factor).
type RTClass struct {
	Rule     string // "deadline", "queue", "partition" or "fraction"
	Numbers  map[int64]bool
	Fraction float64
}

// ParseRTClass reads deadline, queue=N[,N…], partition=N[,N…] or
// fraction=F (0 ≤ F ≤ 1).
func ParseRTClass(s string) (RTClass, error) {
	rule, val, has := strings.Cut(s, "=")
	c := RTClass{Rule: rule}
	switch rule {
	case "deadline":
		if has {
			return c, fmt.Errorf("--rt-class %q: deadline takes no value", s)
		}
	case "queue", "partition":
		c.Numbers = map[int64]bool{}
		for _, f := range strings.Split(val, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if err != nil || n < 0 {
				return c, fmt.Errorf("--rt-class %q: %q is not a %s number (SWF field %d, a whole number ≥ 0)", s, f, rule,
					map[string]int{"queue": 15, "partition": 16}[rule])
			}
			c.Numbers[n] = true
		}
	case "fraction":
		f, err := strconv.ParseFloat(val, 64)
		if err != nil || !(f >= 0 && f <= 1) {
			return c, fmt.Errorf("--rt-class %q: want a fraction in [0, 1]", s)
		}
		c.Fraction = f
	default:
		return c, fmt.Errorf("--rt-class %q: want deadline, queue=N[,N…], partition=N[,N…] or fraction=F", s)
	}
	return c, nil
}

// Apply puts the jobs of the class into RTPartition and makes every other
// job best effort (no deadline, no advance start). A job of the class must
// have a deadline (--deadline-factor gives one to every job with a
// requested time): one without stays best effort. rng draws one number per
// job for fraction, whether chosen or not, so that one job's choice does
// not shift another's. It returns how many jobs are RT.
func (c RTClass) Apply(w *Workload, draw func() float64) int {
	n := 0
	for i := range w.Jobs {
		j := &w.Jobs[i]
		in := false
		switch c.Rule {
		case "deadline":
			in = true
		case "queue":
			in = c.Numbers[j.Record.Queue]
		case "partition":
			in = c.Numbers[j.Record.Partition]
		case "fraction":
			in = draw() < c.Fraction
		}
		if in && j.Deadline > 0 {
			j.Partition = RTPartition
			n++
			continue
		}
		j.Deadline, j.Begin, j.Partition = 0, 0, ""
	}
	return n
}
