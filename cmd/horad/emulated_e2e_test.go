package main

import (
	"strings"
	"testing"
)

// executor = "emulated": a real horad with 512 emulated nodes runs jobs that
// start no process, each for its $HORA_EMULATED_RUNTIME, to completion; a
// job is cancelled as
// a real one (the executor's own tests cover limits, stops and restarts).
func TestEmulatedNodesEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, `
executor = "emulated"

[[node]]
name = "e[1-512]"

[[partition]]
name = "batch"
nodes = "e[1-512]"
default = true
`)
	work := c.workDir()
	script := writeScript(t, work, "job.sh", "#!/bin/sh\nexit 0\n")
	var ids []string
	for i := 0; i < 20; i++ {
		ids = append(ids, c.submit(work, "-N", "30", "-t", "1", "--export=ALL,HORA_EMULATED_RUNTIME=0.2", script))
	}
	late := c.submit(work, "-N", "2", "-t", "1", "--export=ALL,HORA_EMULATED_RUNTIME=90", script)
	for _, id := range ids {
		c.waitState(id, "COMPLETED")
	}
	if r := c.run(0, work, "squeue", "-h", "-j", late, "-o", "%T %D"); strings.TrimSpace(r.stdout) != "RUNNING 2" {
		t.Fatalf("job %s with a runtime of 90 s: %q", late, r.stdout)
	}
	if r := c.run(0, work, "scancel", late); r.code != 0 {
		t.Fatalf("scancel %s: %+v", late, r)
	}
	c.waitState(late, "CANCELLED")
}
