package local

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// A process's start time, as the executor identifies shepherds by it, is
// the same whatever the reader's time namespace: the kernel shifts
// /proc/<pid>/stat's start time by the reader's boot-time offset, and a
// horad restarted in a time namespace with another offset (the fault
// harness's clock jumps) took every live shepherd for a reused pid.
func TestStartTicksIgnoreTimeNamespace(t *testing.T) {
	if pid := os.Getenv("HORA_TEST_STAT_PID"); pid != "" {
		p, _ := strconv.Atoi(pid)
		ps, err := readProcStat(p)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("TICKS=%d\n", ps.StartTicks)
		return
	}
	if os.Geteuid() != 0 {
		t.Fatal("unshare --time needs root (CI runs the tests as root)")
	}
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	here, err := readProcStat(sleeper.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []string{"1000", "-100", "86400"} {
		cmd := exec.Command("unshare", "--time", "--monotonic", off, "--boottime", off,
			os.Args[0], "-test.run=^TestStartTicksIgnoreTimeNamespace$", "-test.count=1")
		cmd.Env = append(os.Environ(), "HORA_TEST_STAT_PID="+strconv.Itoa(sleeper.Process.Pid))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("boot-time offset %s: %v: %s", off, err, out)
		}
		_, rest, ok := strings.Cut(string(out), "TICKS=")
		if !ok {
			t.Fatalf("boot-time offset %s: no answer: %s", off, out)
		}
		got, _ := strconv.ParseUint(strings.Fields(rest)[0], 10, 64)
		if got != here.StartTicks {
			t.Errorf("start time read with boot-time offset %s s: %d ticks, here %d", off, got, here.StartTicks)
		}
	}
}
