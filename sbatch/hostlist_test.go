package sbatch

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestExpandHostlistVectors(t *testing.T) {
	for _, v := range loadVectors(t, "hostlist_expand.txt", 2) {
		in, want := v.fields[0], v.fields[1]
		got, err := ExpandHostlist(in)
		if want == "ERROR" {
			var se *SyntaxError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), fmt.Sprintf("%q", in)) {
				t.Errorf("line %d: ExpandHostlist(%q) = %q, %v; want an error naming the input", v.line, in, got, err)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("line %d: ExpandHostlist(%q) = %q, %v; want %q", v.line, in, got, err, want)
		}
	}
}

func TestHostlistErrorPosition(t *testing.T) {
	cases := []struct {
		in  string
		pos int
	}{
		{"a,n[1-x]", 6}, {"n]1", 1}, {"abc,n[1-2]zz", 10}, {"n[1-3", 1}, {"n[[1]", 2},
	}
	for _, c := range cases {
		_, err := ExpandHostlist(c.in)
		var se *SyntaxError
		if !errors.As(err, &se) || se.Pos != c.pos {
			t.Errorf("ExpandHostlist(%q): %v, want error at %d", c.in, err, c.pos)
		}
	}
}

func TestCompressHostlistVectors(t *testing.T) {
	for _, v := range loadVectors(t, "hostlist_compress.txt", 2) {
		names := strings.Split(v.fields[0], ",")
		if got := CompressHostlist(names); got != v.fields[1] {
			t.Errorf("line %d: CompressHostlist(%q) = %q, want %q", v.line, names, got, v.fields[1])
		}
	}
}

func TestSortHostnames(t *testing.T) {
	names := []string{"n10", "m2", "n9", "n09", "n", "n1", "a"}
	SortHostnames(names)
	want := []string{"a", "m2", "n", "n1", "n9", "n09", "n10"}
	if !slices.Equal(names, want) {
		t.Errorf("got %q, want %q", names, want)
	}
	if got := CompressHostlist(names[3:]); got != "n[1,9,09-10]" {
		t.Errorf("compressed sorted = %q", got)
	}
}

// randomHostlist builds a valid hostlist expression: plain names and
// elements with one to three brackets of numbers and ranges with random
// zero padding. Brackets after the first are preceded by text, as real node
// names are (r1n1); products are kept small enough for one exec argument.
func randomHostlist(r *rand.Rand) string {
	prefixes := []string{"n", "node", "r", "cn-", "gpu", "a.b", "x1y", ""}
	var els []string
	for range 1 + r.IntN(4) {
		switch r.IntN(4) {
		case 0:
			name := prefixes[r.IntN(len(prefixes)-1)]
			if r.IntN(2) == 0 {
				name += fmt.Sprint(r.IntN(120))
			}
			els = append(els, name)
		default:
			var b strings.Builder
			dims := 1 + r.IntN(3)
			for d := range dims {
				if d > 0 {
					b.WriteString(prefixes[r.IntN(len(prefixes)-1)])
				} else {
					b.WriteString(prefixes[r.IntN(len(prefixes))])
				}
				b.WriteByte('[')
				for k := range 1 + r.IntN(4-dims) {
					if k > 0 {
						b.WriteByte(',')
					}
					lo := r.IntN(110)
					w := 1 + r.IntN(3)
					b.WriteString(fmt.Sprintf("%0*d", w, lo))
					if r.IntN(2) == 0 {
						b.WriteString(fmt.Sprintf("-%d", lo+r.IntN(14/dims)))
					}
				}
				b.WriteByte(']')
			}
			els = append(els, b.String())
		}
	}
	return strings.Join(els, ",")
}

// scontrolPath finds Debian's slurm-client, the oracle for hostlists. A
// missing oracle is a broken test machine, not a reason to pass.
func scontrolPath(t *testing.T) (string, []string) {
	t.Helper()
	path, err := exec.LookPath("scontrol")
	if err != nil {
		t.Fatal("scontrol not found: run `make deps` (installs slurm-client)")
	}
	// scontrol wants a configuration even for offline verbs; a minimal
	// one keeps it from looking for a controller in DNS.
	conf := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=oracle\nSlurmctldHost=localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, append(os.Environ(), "SLURM_CONF="+conf)
}

func runScontrol(t *testing.T, path string, env []string, verb, arg string) string {
	t.Helper()
	cmd := exec.Command(path, "show", verb, arg)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scontrol show %s %q: %v\n%s", verb, arg, err, out)
	}
	return strings.TrimRight(string(out), "\n")
}

func TestHostlistAgainstScontrol(t *testing.T) {
	path, env := scontrolPath(t)
	r := rand.New(rand.NewPCG(1, 2))
	n := 300
	if testing.Short() {
		n = 40
	}
	for range n {
		list := randomHostlist(r)
		got, err := ExpandHostlist(list)
		if err != nil {
			t.Errorf("ExpandHostlist(%q): %v", list, err)
			continue
		}
		want := runScontrol(t, path, env, "hostnames", list)
		if strings.Join(got, "\n") != want {
			t.Errorf("ExpandHostlist(%q):\n got %q\nwant %q", list, got, strings.Split(want, "\n"))
			continue
		}
		// scontrol compresses a bracketed argument from its parsed
		// ranges, so compress is compared on the names themselves.
		if c, w := CompressHostlist(got), runScontrol(t, path, env, "hostlist", strings.Join(got, ",")); c != w {
			t.Errorf("CompressHostlist(Expand(%q)) = %q, scontrol %q", list, c, w)
		}
		// Compress on a shuffled order too: scontrol keeps the order it
		// is given, so the grouping logic is exercised on runs broken
		// by other prefixes.
		shuffled := slices.Clone(got)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		joined := strings.Join(shuffled, ",")
		if c, w := CompressHostlist(shuffled), runScontrol(t, path, env, "hostlist", joined); c != w {
			t.Errorf("CompressHostlist(%q) = %q, scontrol %q", joined, c, w)
		}
	}
}

// Properties that hold for every generated list: compress then expand gives
// the names back, in order.
func TestHostlistRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		list := randomHostlist(r)
		names, err := ExpandHostlist(list)
		if err != nil {
			t.Fatalf("ExpandHostlist(%q): %v", list, err)
		}
		c := CompressHostlist(names)
		back, err := ExpandHostlist(c)
		if err != nil || !slices.Equal(back, names) {
			t.Fatalf("%q → %q → %q (%v), want %q", list, c, back, err, names)
		}
	}
}
