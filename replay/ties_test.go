package replay

import (
	"fmt"
	"testing"
)

// TestTieGroups: the first pass at an instant gets the first termination
// and every at-limit one; each later early termination gets its own pass.
func TestTieGroups(t *testing.T) {
	ev := func(gen int32, atLimit bool) event { return event{kind: kindFinish, gen: gen, atLimit: atLimit} }
	show := func(gs [][]event) string {
		s := ""
		for _, g := range gs {
			s += "["
			for _, e := range g {
				s += fmt.Sprint(e.gen)
				if e.atLimit {
					s += "L"
				}
			}
			s += "]"
		}
		return s
	}
	cases := []struct {
		fin  []event
		want string
	}{
		{nil, ""},
		{[]event{ev(1, false)}, "[1]"},
		{[]event{ev(1, false), ev(2, true), ev(3, false), ev(4, true)}, "[12L4L][3]"},
		{[]event{ev(1, true), ev(2, false), ev(3, true)}, "[1L3L][2]"},
		{[]event{ev(1, false), ev(2, false), ev(3, false)}, "[1][2][3]"},
		{[]event{ev(1, true), ev(2, true)}, "[1L2L]"},
	}
	for _, c := range cases {
		if got := show(tieGroups(c.fin, nil)); got != c.want {
			t.Errorf("tieGroups(%s) = %s, want %s", show([][]event{c.fin}), got, c.want)
		}
	}
}
