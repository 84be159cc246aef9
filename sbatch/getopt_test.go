package sbatch

import (
	"reflect"
	"testing"
)

var testOpts = []Opt{
	{'t', "time", RequiredArg, "time"},
	{'N', "nodes", RequiredArg, "nodes"},
	{'H', "hold", NoArg, "hold"},
	{'j', "jobs", OptionalArg, "jobs"},
	{0, "parsable", NoArg, "parsable"},
	{0, "partition", RequiredArg, "partition"},
	{'s', "signal", RequiredArg, "signal"},
}

func TestGetopt(t *testing.T) {
	cases := []struct {
		argv      []string
		stop      bool
		want      []Value
		args      []string
		errString string
	}{
		{argv: []string{"-N2", "-t", "10", "job.sh", "-H"}, stop: true,
			want: []Value{{"nodes", "-N", "2", true}, {"time", "-t", "10", true}}, args: []string{"job.sh", "-H"}},
		{argv: []string{"123", "--signal", "USR2"}, stop: false,
			want: []Value{{"signal", "--signal", "USR2", true}}, args: []string{"123"}},
		{argv: []string{"-Ht5"}, want: []Value{{"hold", "-H", "", true}, {"time", "-t", "5", true}}},
		{argv: []string{"--pars"}, want: []Value{{"parsable", "--parsable", "", true}}},
		{argv: []string{"--par"}, errString: "option '--par' is ambiguous; possibilities: '--parsable' '--partition'"},
		{argv: []string{"--par=x"}, errString: "option '--par=x' is ambiguous; possibilities: '--parsable' '--partition'"},
		{argv: []string{"--bogus"}, errString: "unrecognized option '--bogus'"},
		{argv: []string{"--bogus=1"}, errString: "unrecognized option '--bogus=1'"},
		{argv: []string{"-Z"}, errString: "invalid option -- 'Z'"},
		{argv: []string{"--time"}, errString: "option '--time' requires an argument"},
		{argv: []string{"-t"}, errString: "option requires an argument -- 't'"},
		{argv: []string{"--hold=1"}, errString: "option '--hold' doesn't allow an argument"},
		{argv: []string{"-j", "5"}, want: []Value{{"jobs", "-j", "", false}}, args: []string{"5"}},
		{argv: []string{"-j5", "--jobs=6,7"}, want: []Value{{"jobs", "-j", "5", true}, {"jobs", "--jobs", "6,7", true}}},
		{argv: []string{"--", "-t"}, args: []string{"-t"}},
	}
	for _, c := range cases {
		p, err := Getopt(testOpts, c.argv, c.stop)
		if c.errString != "" {
			if err == nil || err.Error() != c.errString {
				t.Errorf("%q: error %v, want %q", c.argv, err, c.errString)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.argv, err)
			continue
		}
		if !reflect.DeepEqual(p.Values, c.want) || !reflect.DeepEqual(p.Args, c.args) {
			t.Errorf("%q: got %+v %q, want %+v %q", c.argv, p.Values, p.Args, c.want, c.args)
		}
	}
}
