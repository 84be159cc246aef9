package local

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"hora/nodes"
)

// Staging puts exactly the given bytes into a file only the job's owner can
// read; the chunk (run as that owner) reads it, another user cannot, a
// short input leaves no file, and Forget removes it.
func TestStageRange(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root (it stages for nobody and checks another user is refused)")
	}
	const nobody, daemon = 65534, 1
	e := newExecutor(t, filepath.Join(publicDir(t, 0), "state"))
	data := make([]byte, 1<<20+3)
	rand.Read(data)
	key := nodes.StepKey{Job: 7, Step: 2}
	path, err := e.Stage(t.Context(), nodes.StageSpec{Key: key, Node: "local1", UID: nobody, GID: nobody,
		Data: bytes.NewReader(data[100:]), Size: 1 << 19})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, data[100:100+1<<19]) {
		t.Fatalf("staged %d bytes (%v), want the 512 KiB range from byte 100", len(got), err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != nobody || fi.Mode().Perm() != 0o600 {
		t.Errorf("staged file uid %d mode %v, want nobody 0600", st.Uid, fi.Mode().Perm())
	}

	// The owner reads it in a step; another user cannot.
	work := publicDir(t, 0)
	for _, u := range []struct {
		uid  uint32
		want string
	}{{nobody, "524288"}, {daemon, "denied"}} {
		s := spec(work, "#!/bin/sh\n{ wc -c < \"$F\"; } 2>/dev/null || echo denied\n")
		s.Stdout = filepath.Join(work, fmt.Sprint("out-", u.uid))
		s.UID, s.GID, s.Env = u.uid, u.uid, append(s.Env, "F="+path)
		if err := os.Chmod(work, 0o777); err != nil {
			t.Fatal(err)
		}
		launch(t, e, s)
		waitExit(t, e, s.Key)
		if out := strings.TrimSpace(readFile(t, s.Stdout)); out != u.want {
			t.Errorf("uid %d reading the staged file: %q, want %q", u.uid, out, u.want)
		}
		_ = e.Forget(t.Context(), s.Node, s.Key)
	}

	// Fewer bytes than announced: an error, and no file under the name.
	short := nodes.StepKey{Job: 7, Step: 3}
	if _, err := e.Stage(t.Context(), nodes.StageSpec{Key: short, Node: "local1", UID: nobody, GID: nobody,
		Data: bytes.NewReader(data[:10]), Size: 11}); err == nil || !strings.Contains(err.Error(), "10 of 11") {
		t.Errorf("short input: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("files after a failed stage: %v", ents)
	}

	if err := e.Forget(t.Context(), "local1", key); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("staged file after Forget: %v", err)
	}
}

// CleanStaged removes the staged data and partial transfers of the steps
// not kept, and leaves the kept step's data and names that are not step
// data; a node without staged data is no error.
func TestCleanStaged(t *testing.T) {
	e := newExecutor(t, filepath.Join(publicDir(t, 0), "state"))
	if err := e.CleanStaged(t.Context(), "local1", nil); err != nil {
		t.Fatalf("no staged directory: %v", err)
	}
	dir := filepath.Join(e.stateDir, "local1", stagedDirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"5.0", "5.1.r0.tmp", "6.2.r0", "6.2.r1", "notes", "7.x"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.CleanStaged(t.Context(), "local1", []nodes.StepKey{{Job: 6, Step: 2, Run: 1}}); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var left []string
	for _, de := range ents {
		left = append(left, de.Name())
	}
	if got := strings.Join(left, " "); got != "6.2.r1 7.x notes" {
		t.Errorf("left %q, want %q", got, "6.2.r1 7.x notes")
	}
	if err := e.CleanStaged(t.Context(), "../x", nil); err == nil {
		t.Error("a bad node name: no error")
	}
}
