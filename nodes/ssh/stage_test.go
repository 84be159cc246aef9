package ssh_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"hora/nodes"
)

// A file is cut into three ranges, each staged on its own host for nobody;
// a step on that host (as nobody) checksums its staged file: the sums are
// those of the ranges. The file is nobody's and 0600; a short input is an
// error and leaves nothing; Forget removes the staged file.
func TestStageRangesOnThreeHosts(t *testing.T) {
	v := start(t, 3)
	data := make([]byte, 3<<20+7)
	rand.Read(data)
	cuts := []int{0, 1<<20 + 1, 2<<20 + 5, len(data)}
	for i, h := range v.c.Hosts {
		key := nodes.StepKey{Job: 60, Step: i}
		p, err := v.e.Stage(t.Context(), nodes.StageSpec{Key: key, Node: h.Name, UID: v.uid, GID: v.gid,
			Data: bytes.NewReader(data[cuts[i]:]), Size: int64(cuts[i+1] - cuts[i])})
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(v.state, h.Name, "staged", fmt.Sprintf("60.%d.r0", i)); p != want {
			t.Errorf("staged path %q, want %q", p, want)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != v.uid || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: staged file uid %d mode %v, want nobody 0600", h.Name, st.Uid, fi.Mode().Perm())
		}
		spec := v.spec(key, h.Name, "#!/bin/sh\nsha256sum < \"$F\" | cut -d' ' -f1\n")
		spec.Env = append(spec.Env, "F="+p)
		v.launch(t, spec)
	}
	for i, h := range v.c.Hosts {
		key := nodes.StepKey{Job: 60, Step: i}
		st := v.exits.wait(t, key, 30*time.Second)
		if st.ExitCode != 0 || st.Err != "" {
			t.Errorf("%s: %+v", h.Name, st)
		}
		got := strings.TrimSpace(readFile(t, filepath.Join(v.out, fmt.Sprintf("60.%d.out", i))))
		if want := fmt.Sprintf("%x", sha256.Sum256(data[cuts[i]:cuts[i+1]])); got != want {
			t.Errorf("%s: chunk read sum %s, want %s", h.Name, got, want)
		}
		if err := v.e.Forget(t.Context(), h.Name, key); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(v.state, h.Name, "staged", fmt.Sprintf("60.%d.r0", i))); !os.IsNotExist(err) {
			t.Errorf("%s: staged file after Forget: %v", h.Name, err)
		}
	}

	key := nodes.StepKey{Job: 61, Step: 0}
	_, err := v.e.Stage(t.Context(), nodes.StageSpec{Key: key, Node: "n1", UID: v.uid, GID: v.gid,
		Data: bytes.NewReader(data[:10]), Size: 11})
	if err == nil || !strings.Contains(err.Error(), "10 of 11") {
		t.Errorf("short input: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(v.state, "n1", "staged")); len(ents) != 0 {
		t.Errorf("files after a failed stage: %v", ents)
	}
}

// CleanStaged removes, on the node, the staged data and partial transfers
// of the steps not kept (other runs of a kept step too), and leaves the kept step's data and names that
// are not step data (including one a shell would expand).
func TestCleanStaged(t *testing.T) {
	v := start(t, 1)
	h := v.c.Hosts[0].Name
	dir := filepath.Join(v.state, h, "staged")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	names := []string{"5.0", "5.1.tmp", "5.1.r0", "6.2", "6.2.r0", "6.2.r1", "6.2.r1.tmp", "notes", "7.x",
		"$(touch pwned)", "8.1.2", "8.1.r2.3", "8.1.rr2", "8.1.r"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.e.CleanStaged(t.Context(), h, []nodes.StepKey{{Job: 6, Step: 2, Run: 1}}); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	// Another run of the kept step is not kept: only the data of the run
	// that may still read it.
	want := []string{"$(touch pwned)", "6.2.r1", "6.2.r1.tmp", "7.x", "8.1.2", "8.1.r", "8.1.r2.3", "8.1.rr2", "notes"}
	if strings.Join(left, "|") != strings.Join(want, "|") {
		t.Errorf("left %q, want %q", left, want)
	}
	if err := v.e.CleanStaged(t.Context(), "nope", nil); err == nil {
		t.Error("an unknown node: no error")
	}
}
