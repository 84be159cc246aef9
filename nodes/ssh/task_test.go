package ssh_test

import (
	"bytes"
	"strconv"
	"testing"

	"hora/nodes"
	hssh "hora/nodes/ssh"
)

// TestRunTaskOnTwoHosts runs step tasks on two real SSH hosts through the
// pooled connections: output streamed back, the job owner's identity, the
// exact environment, quoted arguments, exit codes and signals.
func TestRunTaskOnTwoHosts(t *testing.T) {
	v := start(t, 2)
	key := nodes.StepKey{Job: 7, Step: 0}
	nasty := `it's a "$HOME" $(touch /tmp/pwned) ; * \n`
	run := func(node string, task int, script string, extra ...string) (hssh.TaskExit, string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		spec := hssh.TaskSpec{Node: node, Key: key, Task: task, UID: v.uid, GID: v.gid, WorkDir: v.out,
			Env:  []string{"PATH=/usr/bin:/bin", "SLURM_PROCID=" + strconv.Itoa(task), "ODD=" + nasty},
			Argv: append([]string{"/bin/sh", "-c", script, "sh"}, extra...)}
		ex, err := v.e.RunTask(t.Context(), spec, &out, &errb)
		if err != nil {
			t.Fatalf("RunTask %d on %s: %v", task, node, err)
		}
		return ex, out.String(), errb.String()
	}
	for i, h := range v.c.Hosts {
		ex, out, errs := run(h.Name, i, `echo "$SLURM_PROCID $(id -u) $(pwd)"; printf '%s|%s|' "$ODD" "$1"; env | grep -vc '^PWD='; echo err >&2`, nasty)
		want := strconv.Itoa(i) + " " + strconv.FormatUint(uint64(v.uid), 10) + " " + v.out + "\n" + nasty + "|" + nasty + "|3\n"
		if ex != (hssh.TaskExit{}) || out != want || errs != "err\n" {
			t.Errorf("task %d on %s: exit %+v, stdout %q (want %q), stderr %q", i, h.Name, ex, out, want, errs)
		}
	}
	if ex, _, _ := run(v.c.Hosts[0].Name, 2, `exit 3`); ex != (hssh.TaskExit{Code: 3}) {
		t.Errorf("exit 3: got %+v", ex)
	}
	if ex, _, _ := run(v.c.Hosts[1].Name, 3, `kill -TERM $$`); ex != (hssh.TaskExit{Signal: 15}) {
		t.Errorf("killed by TERM: got %+v", ex)
	}
	_, _, errs := run(v.c.Hosts[0].Name, 4, `true`)
	if errs != "" {
		t.Errorf("stderr of a quiet task: %q", errs)
	}
	for _, h := range v.c.Hosts {
		if ex, _, _ := run(h.Name, 5, `test ! -e /tmp/pwned`); ex.Code != 0 {
			t.Errorf("an argument was run by the shell on %s", h.Name)
		}
	}
}
