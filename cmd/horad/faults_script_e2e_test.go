package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hora/nodes/ssh/sshtest"
)

// A batch script that is not UTF-8 runs byte for byte as written, as
// Slurm runs it (issue 16, "Bad input"): Latin-1 text in its comments and
// output, and a binary payload after its exit (no NUL: Slurm refuses
// a script with one, and so does hora). Before, every invalid byte
// became U+FFFD on its way through the JSON of the socket. The job copies
// its own script file ($0, the copy the node ran) to its output; the copy
// is compared with the file given to sbatch. It is held first and run
// after a kill -9 of horad, so the bytes also come back from the store;
// on a local node and on a real SSH node. The same holds for the
// environment sbatch exports: a Latin-1 value reaches the job unchanged.
func TestNonUTF8ScriptKeepsItsBytes(t *testing.T) {
	requireRoot(t)
	script := []byte("#!/bin/sh\n#SBATCH -J latin1\n# caf\xe9 cr\xe8me br\xfbl\xe9e\necho '\xe9t\xe9' > \"$1\"\nprintf %s \"$HORA_LATIN1\" > \"$1.env\"\n" +
		"cat \"$0\"\nexit 0\n\x01\xff\xfe\x80\xc0\xaf payload \xed\xa0\x80\n")
	for _, kind := range []string{"local", "ssh"} {
		t.Run(kind, func(t *testing.T) {
			cfg := localBatch
			if kind == "ssh" {
				cfg = sshConfig(sshtest.StartCluster(t, 1), "", "")
				cfg = strings.Replace(cfg, `nodes = "n[1-3]"`, `nodes = "n1"`, 1)
			}
			c := newClusterWith(t, cfg)
			work := c.workDir()
			path := filepath.Join(work, "latin1.sh")
			if err := os.WriteFile(path, script, 0o755); err != nil {
				t.Fatal(err)
			}
			out, side := filepath.Join(work, "latin1.out"), filepath.Join(work, "side.txt")
			latin1 := "caf\xe9 \xff\xfe\x80 cr\xe8me"
			r := c.runEnv(0, work, []string{"HORA_LATIN1=" + latin1}, "sbatch", "--hold", "-o", out, path, side)
			m := submitted.FindStringSubmatch(r.stdout)
			if r.code != 0 || m == nil {
				t.Fatalf("sbatch: %+v", r)
			}
			id := m[1]
			c.kill9()
			c.start()
			if r := c.run(0, work, "scontrol", "release", id); r.code != 0 {
				t.Fatalf("scontrol release %s: %+v", id, r)
			}
			c.waitState(id, "COMPLETED")
			got, _ := os.ReadFile(out)
			if !bytes.Equal(got, script) {
				t.Errorf("the node ran a script of %d bytes, want the %d given:\n got %q\nwant %q", len(got), len(script), got, script)
			}
			if b, _ := os.ReadFile(side); string(b) != "\xe9t\xe9\n" {
				t.Errorf("the script wrote %q, want Latin-1 \"\\xe9t\\xe9\\n\"", b)
			}
			if b, _ := os.ReadFile(side + ".env"); string(b) != latin1 {
				t.Errorf("the job saw $HORA_LATIN1 = %q, want %q", b, latin1)
			}
			if r := c.run(0, work, "squeue", "-h", "-t", "all", "-j", id, "-o", "%j"); strings.TrimSpace(r.stdout) != "latin1" {
				t.Errorf("#SBATCH -J in the script: job name %q", r.stdout)
			}
		})
	}
}
