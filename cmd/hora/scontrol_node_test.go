package main

import "testing"

// State= words resolve as scontrol resolves them: case-insensitive and
// abbreviable to three letters; Slurm states horad does not offer are told
// apart from words scontrol itself refuses.
func TestNodeStateWord(t *testing.T) {
	cases := []struct {
		in                  string
		state               string
		supported, accepted bool
	}{
		{"drain", "DRAIN", true, true}, {"DRA", "DRAIN", true, true}, {"Resume", "RESUME", true, true},
		{"res", "RESUME", true, true}, {"down", "DOWN", true, true}, {"undrain", "UNDRAIN", true, true},
		{"und", "UNDRAIN", true, true}, {"fail", "FAIL", false, true}, {"idle", "IDLE", false, true},
		{"dr", "", false, false}, {"sleepy", "", false, false}, {"", "", false, false},
	}
	for _, c := range cases {
		st, sup, ok := nodeStateWord(c.in)
		if st != c.state || sup != c.supported || ok != c.accepted {
			t.Errorf("%q: (%q, %v, %v), want (%q, %v, %v)", c.in, st, sup, ok, c.state, c.supported, c.accepted)
		}
	}
}
