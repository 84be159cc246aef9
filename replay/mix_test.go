package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func mixRun(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	st := Main(t.Context(), append([]string{"--synthetic", MixWorkload}, args...), &out, &errb)
	return out.String(), errb.String(), st
}

// Same seed, same bytes; the JSON object carries the fields the issue names.
func TestMixReplayDeterministic(t *testing.T) {
	args := []string{"--mix-mode", "tdm", "--ratio", "2:1", "--rt-be-mix", "2:1", "--rt-admission", "on",
		"--arrival-rate", "0.03", "--param", "arrivals=900", "--param", "drain=900", "--json"}
	a, e, st := mixRun(t, append(args, "--seed", "7")...)
	if st != 0 {
		t.Fatalf("exit %d: %s", st, e)
	}
	b, _, _ := mixRun(t, append(args, "--seed", "7")...)
	c, _, _ := mixRun(t, append(args, "--seed", "8")...)
	if a != b {
		t.Errorf("same seed, different output:\n%s\n%s", a, b)
	}
	if a == c {
		t.Error("seeds 7 and 8 gave the same run")
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(a), &m); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, a)
	}
	for _, k := range []string{"rt_miss_rate", "rt_reject_ratio", "be_avg_response_s", "be_throughput", "rt_admitted", "be_completed"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %s: %s", k, a)
		}
	}
	if m["rt_admitted"].(float64) < 1 || m["be_completed"].(float64) < 1 {
		t.Errorf("nothing ran: %s", a)
	}
}

func TestMixReplayBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--ratio", "0:0"}, "--ratio"},
		{[]string{"--ratio", "-1:2"}, "--ratio"},
		{[]string{"--ratio", "2:1:3"}, "--ratio"},
		{[]string{"--mix-mode", "fifo"}, "--mix-mode"},
		{[]string{"--rt-admission", "statistical:2"}, "--rt-admission"},
		{[]string{"--rt-admission", "maybe"}, "--rt-admission"},
		{[]string{"--arrival-rate", "0"}, "--arrival-rate"},
		{[]string{"--rt-be-mix", "0:0"}, "--rt-be-mix"},
		{[]string{"--param", "nope=1"}, "nope"},
		{[]string{"--policy", "easy"}, "--policy"},
	} {
		out, e, st := mixRun(t, c.args...)
		if st != 2 || !strings.Contains(e, c.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 naming %s", c.args, st, e, out, c.want)
		}
	}
	for _, ok := range []string{"statistical:0.10", "statistical:.5", "on", "off"} {
		if _, err := ParseMixAdmission(ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"statistical:", "statistical:0", "statistical:1", "statistical:x", "statistical:0.1x"} {
		if _, err := ParseMixAdmission(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	var out, errb bytes.Buffer
	if st := Main(context.Background(), []string{"--rt-be-mix", "2:1", "--synthetic", "rt-dlt-2005"}, &out, &errb); st != 2 ||
		!strings.Contains(errb.String(), "belongs to --synthetic be-rt-mix-2001") {
		t.Errorf("--rt-be-mix with another workload: exit %d %q", st, errb.String())
	}
	errb.Reset()
	if st := Main(context.Background(), []string{"--ratio", "0:0", "--synthetic", "rt-dlt-2005"}, &out, &errb); st != 2 ||
		!strings.Contains(errb.String(), "--ratio") {
		t.Errorf("--ratio 0:0 with another workload: exit %d %q", st, errb.String())
	}
}

// --ratio on a workload of the space-shared replay makes its RT policy plan
// with the share s (Cps/s for dlt): a smaller RT share refuses more.
func TestReplayRatioPlansWithShare(t *testing.T) {
	reject := func(ratio string) float64 {
		var out, errb bytes.Buffer
		st := Main(t.Context(), []string{"--synthetic", "rt-dlt-2005", "--jobs", "200", "--load", "0.3", "--ratio", ratio, "--json"}, &out, &errb)
		if st != 0 {
			t.Fatalf("--ratio %s: exit %d: %s", ratio, st, errb.String())
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m["reject_ratio"].(float64)
	}
	if full, fifth := reject("1:0"), reject("1:4"); !(fifth > full) {
		t.Errorf("reject ratio %.3f at 1:4, %.3f at 1:0: want more refused with a fifth of each node", fifth, full)
	}
}
