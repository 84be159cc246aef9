// Package mix shares nodes between the real-time (RT) and best-effort (BE)
// classes under the administrator's fairness ratio x:y (DESIGN.md §1,
// papers/be-rt-mix-2001). It holds the paper's three schemes — 1GS (gang,
// an Ousterhout matrix), 2DCS-TDM (time division) and 2DCS-PS (proportional
// share) — and their admission tests, as pure values: no goroutines, no
// clock, no I/O. horad and the replay simulator make their decisions here.
package mix

import (
	"fmt"
	"strconv"
	"strings"
)

// Class is one of the two workload classes.
type Class int

const (
	RT Class = iota // real-time: bounded per-frame work, deadlines
	BE              // best-effort: as early as possible
)

func (c Class) String() string {
	if c == RT {
		return "rt"
	}
	return "be"
}

// Other is the other class.
func (c Class) Other() Class { return 1 - c }

// Ratio is the fairness ratio x:y, the relative time RT and BE are given
// whenever both have work (be-rt-mix-2001 §3.2).
type Ratio struct{ X, Y int }

// ParseRatio reads "x:y": two whole numbers ≥ 0, not both zero. "1:0" gives
// RT the nodes outright (DESIGN.md §1).
func ParseRatio(s string) (Ratio, error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 2 {
		return Ratio{}, fmt.Errorf("ratio %q: want x:y, two whole numbers such as 2:1", s)
	}
	var v [2]int
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 {
			return Ratio{}, fmt.Errorf("ratio %q: %q is not a whole number ≥ 0", s, p)
		}
		v[i] = n
	}
	if v[0] == 0 && v[1] == 0 {
		return Ratio{}, fmt.Errorf("ratio %q: x and y cannot both be 0", s)
	}
	return Ratio{v[0], v[1]}, nil
}

func (r Ratio) String() string { return fmt.Sprintf("%d:%d", r.X, r.Y) }

// Share is the fraction of a node's time class c is guaranteed when both
// classes have work: s = x/(x+y) for RT, y/(x+y) for BE.
func (r Ratio) Share(c Class) float64 {
	if c == RT {
		return float64(r.X) / float64(r.X+r.Y)
	}
	return float64(r.Y) / float64(r.X+r.Y)
}

// Mode is how the share is enforced on a node (DESIGN.md §1, [mix] mode).
type Mode string

const (
	PSMode   Mode = "ps"   // 2DCS-PS, §4.3
	TDMMode  Mode = "tdm"  // 2DCS-TDM, §4.2
	GangMode Mode = "gang" // 1GS, §4.1
)

// Modes lists the modes in the order the documentation shows them.
var Modes = []Mode{PSMode, TDMMode, GangMode}

// ParseMode reads ps, tdm or gang.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("mode %q: want ps, tdm or gang", s)
}
