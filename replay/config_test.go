package replay

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigFlag: --config takes the nodes, partitions and policies of a
// hora.toml; the policy flags override the default partition's.
func TestConfigFlag(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hora.toml")
	toml := `[[node]]
name = "n[1-8]"
cpus = 1

[[partition]]
name = "ar"
nodes = "n[1-8]"
policy = "reserve"
default = true
[partition.params]
strategy = "first-fit"
`
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(extra ...string) map[string]any {
		t.Helper()
		var stdout, stderr bytes.Buffer
		args := append([]string{"--synthetic", "castillo-ch3", "--jobs", "400", "--config", path, "--json"}, extra...)
		if code := Main(t.Context(), args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		var m map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := run()
	if m["nodes"] != 8.0 || m["policy"] != "reserve/first-fit" || m["jobs"] != 400.0 {
		t.Errorf("from hora.toml: nodes %v, policy %v, jobs %v", m["nodes"], m["policy"], m["jobs"])
	}
	if m = run("--strategy", "lact"); m["policy"] != "reserve/lact" {
		t.Errorf("--strategy over hora.toml: policy %v", m["policy"])
	}
	if m = run("--policy", "fcfs"); m["policy"] != "fcfs" {
		t.Errorf("--policy fcfs over hora.toml: policy %v", m["policy"])
	}
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[[partition]]\nname = \"p\"\nnodes = \"x1\"\npolicy = \"nope\"\n"), 0o644)
	var stdout, stderr bytes.Buffer
	code := Main(t.Context(), []string{"--synthetic", "castillo-ch3", "--config", bad}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "bad.toml") || !strings.Contains(stderr.String(), "nope") {
		t.Errorf("bad config: exit %d, %q", code, stderr.String())
	}
}
