package local

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hora/nodes"
	"hora/nodes/cgmix"
	"hora/scheduler/mix"
)

// Config.Place runs before the job is forked, so the job's own processes
// are in the class cgroup the hook chose ([mix] enforcement), and a failing
// hook fails the launch.
func TestPlaceHookPutsJobInClassGroup(t *testing.T) {
	g, err := cgmix.Open(cgmix.DefaultRoot, fmt.Sprintf("hora-test-%d-%d", os.Getpid(), rand.Uint32()))
	if err != nil {
		t.Fatalf("%v (needs root and cgroup v1, as CI has)", err)
	}
	t.Cleanup(func() { g.Close() })
	placed := 0
	e, err := New(Config{StateDir: t.TempDir(), ShepherdArgv: shepherdArgv, ShepherdEnv: []string{shepherdEnv + "=1"},
		Place: func(s nodes.LaunchSpec, pid int) error {
			placed++
			if s.Key.Step == 7 {
				return fmt.Errorf("no group for step 7")
			}
			return g.Add(mix.BE, pid)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	dir := t.TempDir()
	s := spec(dir, "#!/bin/sh\ncat /proc/self/cgroup\n")
	launch(t, e, s)
	if st := waitExit(t, e, s.Key); st.ExitCode != 0 {
		t.Fatalf("job exit %+v", st)
	}
	out := readFile(t, filepath.Join(dir, "out"))
	want := filepath.Join("/", filepath.Base(filepath.Dir(filepathOf(g))), "be")
	if !strings.Contains(out, ":cpu:"+want) && !strings.Contains(out, ",cpu:"+want) && !strings.Contains(out, ":cpu,cpuacct:"+want) {
		t.Fatalf("job's cgroups:\n%s\nwant cpu in %s", out, want)
	}
	if !strings.Contains(out, ":freezer:"+want) {
		t.Fatalf("job's cgroups:\n%s\nwant freezer in %s", out, want)
	}
	bad := spec(dir, "#!/bin/sh\ntrue\n")
	bad.Key.Step = 7
	if err := e.Launch(t.Context(), bad); err == nil || !strings.Contains(err.Error(), "no group for step 7") {
		t.Fatalf("launch with a failing Place: %v", err)
	}
	if placed != 2 {
		t.Fatalf("Place called %d times, want 2", placed)
	}
}

// filepathOf is the BE group's directory under the cpu controller.
func filepathOf(g *cgmix.Groups) string { return g.Dir("cpu", mix.BE) }
