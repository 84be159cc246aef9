package ssh_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"hora/nodes"
	hssh "hora/nodes/ssh"
	"hora/nodes/ssh/sshtest"
)

// [mix] ps on a systemd node: an RT step's scope runs in hora-rt.slice and
// a BE step's in hora-be.slice, whose CPUWeight are the class weights (2:1
// here); a node without systemd refuses the step rather than run it
// unenforced. Shares are a kernel matter (measured by nodes/cgmix's
// benchmark), not asserted here.
func TestMixSlicesOnSystemdNode(t *testing.T) {
	v := start(t, 1, sshtest.WithSystemd(1))
	h := v.c.Hosts[0]
	v.e.Close()
	cfg := fastConfig(v.c, v.state)
	cfg.Mix = &hssh.Mix{RTWeight: 6667, BEWeight: 3333, RT: func(s nodes.LaunchSpec) bool {
		return s.Key.Job == 81
	}}
	e, err := hssh.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	exits := collect(e)
	for job, class := range map[int64]string{81: "rt", 82: "be"} {
		key := nodes.StepKey{Job: job, Step: -1}
		spec := v.spec(key, "n1", "#!/bin/sh\ngrep '^0::' /proc/self/cgroup\n")
		if err := e.Launch(t.Context(), spec); err != nil {
			t.Fatalf("Launch job %d: %v", job, err)
		}
		if st := exits.wait(t, key, hang); st.State != nodes.StepExited || st.ExitCode != 0 {
			t.Fatalf("job %d: %+v", job, st)
		}
		want := "0::/hora.slice/hora-" + class + ".slice/" + unitOf(key) + ".scope\n"
		if out := readFile(t, spec.Stdout); out != want {
			t.Errorf("job %d cgroup %q, want %q", job, out, want)
		}
	}
	for slice, w := range map[string]string{"hora-rt.slice": "6667", "hora-be.slice": "3333"} {
		out, err := h.Systemctl("show", "--property=CPUWeight", slice)
		if err != nil || strings.TrimSpace(out) != "CPUWeight="+w {
			t.Errorf("%s: %q, %v; want CPUWeight=%s", slice, out, err, w)
		}
	}
	// A reloaded ratio (1:3) is set on the node at once.
	if err := e.SetMixWeights(t.Context(), "n1", 2500, 7500); err != nil {
		t.Fatal(err)
	}
	for slice, w := range map[string]string{"hora-rt.slice": "2500", "hora-be.slice": "7500"} {
		out, err := h.Systemctl("show", "--property=CPUWeight", slice)
		if err != nil || strings.TrimSpace(out) != "CPUWeight="+w {
			t.Errorf("after SetMixWeights, %s: %q, %v; want CPUWeight=%s", slice, out, err, w)
		}
	}
	if err := e.SetMixWeights(t.Context(), "n1", 0, 7500); err == nil || !strings.Contains(err.Error(), "0:7500") {
		t.Errorf("SetMixWeights 0:7500: %v, want an error naming the weights", err)
	}
}

// Without systemd (launcher setsid) a step under [mix] is refused, naming
// why, and nothing runs.
func TestMixRefusedWithoutSystemd(t *testing.T) {
	v := start(t, 1)
	v.e.Close()
	cfg := fastConfig(v.c, v.state)
	cfg.Launcher = "setsid"
	cfg.Mix = &hssh.Mix{RTWeight: 5000, BEWeight: 5000}
	e, err := hssh.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	spec := v.spec(nodes.StepKey{Job: 83, Step: -1}, "n1", "#!/bin/sh\ntrue\n")
	if err := e.Launch(t.Context(), spec); err == nil || !strings.Contains(err.Error(), "[mix] needs systemd") {
		t.Fatalf("Launch without systemd under [mix]: %v", err)
	}
}

func unitOf(k nodes.StepKey) string { return fmt.Sprintf("hora-job-%d-batch-r%d", k.Job, k.Run) }

// [mix] tdm on a systemd node: in an RT division the BE slice is frozen
// while both classes have a running step, thawed in a BE division, and not
// frozen at all when the RT class has nothing running (the division is
// lent); "none" thaws both.
func TestMixTDMFreezeOnSystemdNode(t *testing.T) {
	v := start(t, 1, sshtest.WithSystemd(1))
	h := v.c.Hosts[0]
	v.e.Close()
	cfg := fastConfig(v.c, v.state)
	cfg.Mix = &hssh.Mix{RTWeight: 5000, BEWeight: 5000, RT: func(s nodes.LaunchSpec) bool { return s.Key.Job == 91 }}
	e, err := hssh.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	exits := collect(e)
	ctx := t.Context()
	gate := v.out + "/gate"
	keys := map[int64]nodes.StepKey{}
	for _, job := range []int64{91, 92} {
		keys[job] = nodes.StepKey{Job: job, Step: -1}
		spec := v.spec(keys[job], "n1", "#!/bin/sh\nwhile [ ! -e '"+gate+"' ]; do sleep 0.05; done\n")
		if err := e.Launch(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	frozenState := func(class string) string {
		out, err := h.Systemctl("show", "--property=ControlGroup", "hora-"+class+".slice")
		if err != nil {
			t.Fatal(err)
		}
		cg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out), "ControlGroup="))
		b, err := os.ReadFile(h.CgroupDir() + cg + "/cgroup.events")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f, ok := strings.CutPrefix(l, "frozen "); ok {
				return f
			}
		}
		return "?"
	}
	for _, tc := range []struct {
		owner  string
		want   [2]bool
		rt, be string
	}{
		{"rt", [2]bool{false, true}, "0", "1"},
		{"be", [2]bool{true, false}, "1", "0"},
		{"none", [2]bool{false, false}, "0", "0"},
	} {
		got, err := e.TDMDivision(ctx, "n1", tc.owner)
		if err != nil || got != tc.want {
			t.Fatalf("division %s: %v, %v; want %v", tc.owner, got, err, tc.want)
		}
		// cgroup.events says frozen once every process has stopped: wait.
		for deadline := time.Now().Add(hang); frozenState("rt") != tc.rt || frozenState("be") != tc.be; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("division %s: slices frozen rt=%s be=%s, want %s %s", tc.owner, frozenState("rt"), frozenState("be"), tc.rt, tc.be)
			}
		}
	}
	// The RT step ends: an RT division is lent, BE is not frozen.
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if st := exits.wait(t, k, hang); st.State != nodes.StepExited {
			t.Fatalf("%v: %+v", k, st)
		}
	}
	if got, err := e.TDMDivision(ctx, "n1", "rt"); err != nil || got != [2]bool{} {
		t.Fatalf("RT division with no RT process: %v, %v; want nothing frozen", got, err)
	}
	// The divisions go through one long-lived loop per node; when sshd
	// restarts, its session ends, and the next divisions still apply (the
	// failed one again in a session of its own, the next on a new loop).
	h.StopSSHD()
	h.StartSSHD()
	for i, owner := range []string{"be", "none", "rt"} {
		if got, err := e.TDMDivision(ctx, "n1", owner); err != nil || got != [2]bool{} {
			t.Fatalf("division %d (%s) after sshd restarted: %v, %v", i, owner, got, err)
		}
	}
	if _, err := e.TDMDivision(ctx, "n1", "all"); err == nil {
		t.Error("division owner \"all\" accepted")
	}
}

// [mix] gang on a systemd node: the agent rotates the rows of its table
// every quantum on its own clock, freezing the scope of the job not in the
// row: two BE jobs in rows 0 and 1 alternate (each is seen frozen while
// the other is not, then the other way round, then back). A job the table
// does not know is left running, the agent reports the node's jobs, and
// "none" thaws everything.
func TestMixGangOnSystemdNode(t *testing.T) {
	reported := make(chan string, 16)
	v, e, exits := mixNode(t, &hssh.Mix{RTWeight: 5000, BEWeight: 5000, JobsChanged: func(n string) {
		select {
		case reported <- n:
		default:
		}
	}})
	h := v.c.Hosts[0]
	ctx := t.Context()
	gate, keys := waitingSteps(t, v, e, 71, 72, 73)
	frozen := func(k nodes.StepKey) string {
		return cgroupFrozen(h.CgroupDir() + "/hora.slice/hora-be.slice/" + unitOf(k) + ".scope")
	}
	sched := hssh.MixSchedule{Mode: "gang", Quantum: 300 * time.Millisecond, Rows: [][]int64{{71}, {72}}}
	if err := e.SetMixSchedule(ctx, "n1", sched); err != nil {
		t.Fatal(err)
	}
	for i, want := range [][2]string{{"1", "0"}, {"0", "1"}, {"1", "0"}} {
		for deadline := time.Now().Add(hang); ; time.Sleep(5 * time.Millisecond) {
			a, b := frozen(keys[0]), frozen(keys[1])
			if a == want[0] && b == want[1] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("phase %d: jobs 71 and 72 frozen %s %s, want %s %s", i, a, b, want[0], want[1])
			}
		}
		if f := frozen(keys[2]); f != "0" {
			t.Errorf("phase %d: job 73, in no row of the table, frozen=%s", i, f)
		}
	}
	for deadline := time.Now().Add(hang); ; {
		jobs, _ := e.MixJobs("n1")
		if len(jobs) == 3 && jobs[0] == (hssh.MixJob{ID: 71}) && jobs[2] == (hssh.MixJob{ID: 73}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs reported on n1: %v, want 71 72 73 (BE)", jobs)
		}
		select {
		case <-reported:
		case <-time.After(time.Second):
		}
	}
	// The node shares this machine's clock: the estimated offset is within
	// the round trip's half, which bounds its error.
	if off, rtt, err := e.MixClock(ctx, "n1"); err != nil || off.Abs() > rtt/2+time.Millisecond {
		t.Errorf("MixClock: offset %v, round trip %v, %v", off, rtt, err)
	}
	if err := e.SetMixSchedule(ctx, "n1", hssh.MixSchedule{Mode: "none"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(hang); frozen(keys[0]) != "0" || frozen(keys[1]) != "0"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after none: jobs 71 and 72 frozen %s %s", frozen(keys[0]), frozen(keys[1]))
		}
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if st := exits.wait(t, k, hang); st.State != nodes.StepExited {
			t.Fatalf("%v: %+v", k, st)
		}
	}
	bad := hssh.MixSchedule{Mode: "gang", Quantum: time.Second, Rows: [][]int64{{-4}}}
	if err := e.SetMixSchedule(ctx, "n1", bad); err == nil || !strings.Contains(err.Error(), "job id -4") {
		t.Errorf("gang row with job -4: %v", err)
	}
}

// [mix] tdm with a sync δ, kept by the node's agent on its own clock: with
// an RT and a BE step running, each division opens with δ during which both
// slices are frozen, then only the other class is; the agent reports its
// switches (due and applied on its clock, in sync or not).
func TestMixTDMSyncOnSystemdNode(t *testing.T) {
	switches := make(chan hssh.MixSwitch, 64)
	v, e, exits := mixNode(t, &hssh.Mix{RTWeight: 5000, BEWeight: 5000, RT: func(s nodes.LaunchSpec) bool { return s.Key.Job == 61 },
		Switched: func(s hssh.MixSwitch) {
			select {
			case switches <- s:
			default:
			}
		}})
	h := v.c.Hosts[0]
	ctx := t.Context()
	gate, keys := waitingSteps(t, v, e, 61, 62)
	frozen := func(class string) string { return cgroupFrozen(h.CgroupDir() + "/hora.slice/hora-" + class + ".slice") }
	sched := hssh.MixSchedule{Mode: "tdm", Period: 1200 * time.Millisecond, RTLen: 600 * time.Millisecond, Sync: 250 * time.Millisecond}
	if err := e.SetMixSchedule(ctx, "n1", sched); err != nil {
		t.Fatal(err)
	}
	// δ, RT's division, δ, BE's division.
	for i, want := range [][2]string{{"1", "1"}, {"0", "1"}, {"1", "1"}, {"1", "0"}} {
		for deadline := time.Now().Add(hang); ; time.Sleep(5 * time.Millisecond) {
			if frozen("rt") == want[0] && frozen("be") == want[1] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("phase %d: rt frozen=%s be frozen=%s, want %s %s", i, frozen("rt"), frozen("be"), want[0], want[1])
			}
		}
	}
	// Reports: a switch into a sync ("rt 1 1 1": owner, in sync, both frozen)
	// and one out of it, each applied at or after the boundary it was due at.
	seen := map[string]bool{}
	for deadline := time.After(hang); !seen["1 1 1"] || !seen["0 0 1"]; {
		select {
		case s := <-switches:
			if s.Applied.Before(s.Due) {
				t.Fatalf("switch %+v applied before it was due", s)
			}
			if f := strings.Fields(s.What); len(f) == 4 && f[0] == "rt" {
				seen[strings.Join(f[1:], " ")] = true
			}
		case <-deadline:
			t.Fatalf("switch reports for RT divisions: %v", seen)
		}
	}
	if err := e.SetMixSchedule(ctx, "n1", hssh.MixSchedule{Mode: "none"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(hang); frozen("rt") != "0" || frozen("be") != "0"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after none: rt frozen=%s be frozen=%s", frozen("rt"), frozen("be"))
		}
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if st := exits.wait(t, k, hang); st.State != nodes.StepExited {
			t.Fatalf("%v: %+v", k, st)
		}
	}
	if err := e.SetMixSchedule(ctx, "n1", hssh.MixSchedule{Mode: "tdm", Period: time.Second, RTLen: 2 * time.Second}); err == nil {
		t.Error("a tdm schedule whose RT division is longer than the period was accepted")
	}
}

// mixNode is an executor with [mix] m on one host booting systemd.
func mixNode(t *testing.T, m *hssh.Mix) (*env, *hssh.Executor, *collector) {
	v := start(t, 1, sshtest.WithSystemd(1))
	v.e.Close()
	cfg := fastConfig(v.c, v.state)
	cfg.Mix = m
	e, err := hssh.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return v, e, collect(e)
}

// waitingSteps launches on n1 a batch step of each job that waits until
// the file gate exists.
func waitingSteps(t *testing.T, v *env, e *hssh.Executor, jobs ...int64) (gate string, keys []nodes.StepKey) {
	gate = v.out + "/gate"
	for _, job := range jobs {
		k := nodes.StepKey{Job: job, Step: -1}
		keys = append(keys, k)
		if err := e.Launch(t.Context(), v.spec(k, "n1", "#!/bin/sh\nwhile [ ! -e '"+gate+"' ]; do sleep 0.02; done\n")); err != nil {
			t.Fatal(err)
		}
	}
	return gate, keys
}

// cgroupFrozen is the "frozen" of a cgroup v2 directory's cgroup.events
// ("gone" when it has none).
func cgroupFrozen(dir string) string {
	b, err := os.ReadFile(dir + "/cgroup.events")
	if err != nil {
		return "gone"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f, ok := strings.CutPrefix(l, "frozen "); ok {
			return f
		}
	}
	return "?"
}
