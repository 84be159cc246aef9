package main

import "testing"

func TestNaturalCompare(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"n2", "n10", -1}, {"n10", "n2", 1}, {"n1", "n1", 0}, {"a1", "b0", -1}, {"n1", "n1a", -1}, {"n01", "n1", 0},
	}
	for _, c := range cases {
		got := naturalCompare(c.a, c.b)
		if (got < 0) != (c.want < 0) || (got > 0) != (c.want > 0) {
			t.Errorf("naturalCompare(%q, %q) = %d, want sign of %d", c.a, c.b, got, c.want)
		}
	}
}

func TestSinfoGolden(t *testing.T) {
	startFake(t)
	cases := []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"default", nil, nil},
		{"node", nil, []string{"-N"}},
		{"node_long", nil, []string{"-N", "-l"}},
		{"node_long_clustered", nil, []string{"-Nel"}},
		{"long", nil, []string{"-l"}},
		{"noheader", nil, []string{"-h"}},
		{"snakemake_partitions", nil, []string{"-o", "%P"}},
		{"format_letters", nil, []string{"-o", "%R|%a|%l|%L|%D|%t|%T|%N|%c|%C|%m|%e|%O|%G|%f"}},
		{"partition", nil, []string{"-p", "batch"}},
		{"summarize", nil, []string{"-s"}},
		{"reasons", nil, []string{"-R"}},
		{"nodes", nil, []string{"-n", "n[3-4]", "-N"}},
		{"operand_ignored", nil, []string{"foo", "-h"}},
		{"bad_letter", nil, []string{"-o", "%P %q"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runGolden(t, sinfoMain, "sinfo", "sinfo_"+c.name, c.env, c.args...)
		})
	}
}
