package controller

import (
	"os"
	"os/exec"
	"syscall"
	"testing"

	"hora/api"
)

// After a restart a step's process group is found by its tasks'
// environment: the job and step ids and this horad's socket. Two horads on
// one machine (test clusters side by side) both have a job 1 with a step
// 0; each must find its own, never the other's, or a time limit or scancel
// of one would kill the other's tasks.
func TestStepGroupIsThisHorads(t *testing.T) {
	start := func(sock string) int {
		cmd := exec.Command("sleep", "60")
		cmd.Env = []string{"SLURM_JOB_ID=1", "SLURM_STEP_ID=0"}
		if sock != "" {
			cmd.Env = append(cmd.Env, "HORA_SOCKET="+sock)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd.Process.Pid
	}
	dir := t.TempDir()
	a, b := dir+"/a.sock", dir+"/b.sock"
	pa, pb := start(a), start(b)
	start("") // a step of a salloc shell, or of slurmctld's job 1
	uid := uint32(os.Getuid())
	if g := stepGroup(1, 0, uid, a); g != pa {
		t.Errorf("horad a found group %d, want %d (b's is %d)", g, pa, pb)
	}
	if g := stepGroup(1, 0, uid, b); g != pb {
		t.Errorf("horad b found group %d, want %d (a's is %d)", g, pb, pa)
	}
	if g := stepGroup(1, 0, uid, dir+"/c.sock"); g != 0 {
		t.Errorf("a third horad found group %d of another's step", g)
	}
	if g := stepGroup(1, 1, uid, a); g != 0 {
		t.Errorf("step 1 found group %d", g)
	}
	// A horad on a default socket path also owns the tasks that name none.
	if g := stepGroup(1, 0, uid, api.DefaultSocketPaths[0]); g == 0 || g == pa || g == pb {
		t.Errorf("horad on %s found group %d, want the step without HORA_SOCKET", api.DefaultSocketPaths[0], g)
	}
}
