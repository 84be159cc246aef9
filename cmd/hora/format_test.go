package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hora/api"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// testNow is the fixed clock of every golden test (UTC, so that time stamps
// do not depend on the machine's zone).
var testNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	os.Setenv("TZ", "UTC")
	time.Local = time.UTC
	nowFunc = func() time.Time { return testNow }
	currentUID = func() string { return "1000" }
	lookupUser = func(u string) (string, bool) {
		switch u {
		case "alice", "bob", "root", "1000", "1001", "0":
			return u, true
		}
		return "", false
	}
	os.Exit(m.Run())
}

// golden compares got with testdata/<name>.golden byte for byte, or rewrites
// the file under -update.
func golden(t *testing.T, name string, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/hora/ -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from golden file\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

func ts(s string) int64 {
	t, err := time.Parse("2006-01-02T15:04:05", s)
	if err != nil {
		panic(err)
	}
	return t.Unix()
}

// fixtureJobs is a small queue covering every state family squeue, scontrol
// and sacct print differently.
func fixtureJobs() []api.Job {
	base := func(id int64, name, user string, uid uint32, state api.JobState) api.Job {
		return api.Job{ID: id, User: user, UID: uid, Group: user, GID: uid, State: state,
			Reason: "None", Priority: 4294901000 - id, CancelledBy: -1,
			SubmitTime: ts("2026-11-22T10:00:00"), EligibleTime: ts("2026-11-22T10:00:00"),
			Spec: api.JobSpec{Name: name, Partition: "debug", WorkDir: "/home/" + user,
				TimeLimit: 3600, Command: "/home/" + user + "/" + name + ".sh"},
			StdoutPath: "/home/" + user + "/slurm-" + strconv.FormatInt(id, 10) + ".out",
		}
	}
	var jobs []api.Job

	j := base(101, "compute", "alice", 1000, api.StateRunning)
	j.StartTime, j.Nodes = ts("2026-11-22T11:58:57"), []string{"n1", "n2"}
	j.Spec.Nodes, j.Spec.NTasks, j.Spec.CPUsPerTask, j.Spec.MemMB = 2, 4, 2, 4000
	jobs = append(jobs, j)

	j = base(102, "averyveryverylongname", "bob", 1001, api.StatePending)
	j.Reason, j.Priority = "JobHeldUser", 0
	j.Spec.TimeLimit = api.NoLimit
	jobs = append(jobs, j)

	j = base(103, "wait", "alice", 1000, api.StatePending)
	j.Reason = "Resources"
	j.Spec.Partition = "batch"
	j.Spec.TimeLimit = 2 * 86400
	jobs = append(jobs, j)

	j = base(104, "done", "alice", 1000, api.StateCompleted)
	j.StartTime, j.EndTime, j.Nodes = ts("2026-11-22T10:00:05"), ts("2026-11-22T11:01:07"), []string{"n3"}
	jobs = append(jobs, j)

	j = base(105, "killed", "bob", 1001, api.StateCancelled)
	j.StartTime, j.EndTime, j.Nodes = ts("2026-11-22T10:00:05"), ts("2026-11-22T10:30:00"), []string{"n1"}
	j.CancelledBy, j.Signal = 1001, 15
	jobs = append(jobs, j)

	j = base(106, "crash", "alice", 1000, api.StateFailed)
	j.StartTime, j.EndTime, j.Nodes = ts("2026-11-22T10:00:05"), ts("2026-11-22T10:00:09"), []string{"n2"}
	j.ExitCode, j.Reason = 1, "NonZeroExitCode"
	jobs = append(jobs, j)

	j = base(107, "forever", "root", 0, api.StateRunning)
	j.StartTime, j.Nodes = ts("2026-11-20T09:00:00"), []string{"n4"}
	j.Spec.TimeLimit = api.NoLimit
	j.Spec.Partition = "batch"
	j.Spec.Account, j.Spec.Reservation = "physics", "maint"
	jobs = append(jobs, j)

	j = base(108, "chunks", "alice", 1000, api.StateCompleted)
	j.StartTime, j.EndTime, j.Nodes = ts("2026-11-22T10:10:00"), ts("2026-11-22T10:20:00"), []string{"n1", "n2"}
	j.Spec.Load = 100
	j.Steps = []api.Step{
		{Index: 0, Node: "n1", State: api.StateCompleted, StartTime: ts("2026-11-22T10:10:00"), EndTime: ts("2026-11-22T10:15:00")},
		{Index: 1, Node: "n2", State: api.StateCompleted, StartTime: ts("2026-11-22T10:10:00"), EndTime: ts("2026-11-22T10:20:00")},
	}
	jobs = append(jobs, j)
	return jobs
}

func fixtureNodes() []api.Node {
	return []api.Node{
		{Name: "n1", CPUs: 8, MemoryMB: 16000, State: "allocated", Partitions: []string{"debug"}, Jobs: []int64{101}},
		{Name: "n2", CPUs: 8, MemoryMB: 16000, State: "mixed", AllocCPUs: 3, AllocMemMB: 2048, Gres: "gpu:a100:2", AllocGres: "gpu:a100:1", Features: []string{"ib"}, Sockets: 2, CoresPerSocket: 2, ThreadsPerCore: 2, Partitions: []string{"debug"}, Jobs: []int64{101}},
		{Name: "n3", CPUs: 8, MemoryMB: 16000, State: "idle", Partitions: []string{"debug", "batch"},
			OS: "Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)", BootTime: ts("2026-11-20T08:00:00"),
			StartTime: ts("2026-11-22T08:00:00"), LastBusy: ts("2026-11-22T09:45:00")},
		{Name: "n4", CPUs: 16, MemoryMB: 64000, State: "allocated", Partitions: []string{"batch"}, Jobs: []int64{107}},
		{Name: "n5", CPUs: 16, MemoryMB: 64000, State: "down", Reason: "disk failure", ReasonUser: "root",
			ReasonTime: ts("2026-11-22T09:00:00"), NotResponding: true, Partitions: []string{"batch"}},
		{Name: "n6", CPUs: 16, MemoryMB: 64000, State: "drained", Drain: true, Reason: "kernel update", ReasonUser: "slurmadm",
			ReasonTime: ts("2026-11-22T09:30:00"), Partitions: []string{"batch"}},
	}
}

func fixturePartitions() []api.Partition {
	return []api.Partition{
		{Name: "debug", Default: true, State: "up", Policy: "batch", Nodes: []string{"n1", "n2", "n3"}, MaxTime: 1800, DefaultTime: 600},
		{Name: "batch", State: "up", Policy: "batch", Nodes: []string{"n3", "n4", "n5", "n6"}, MaxTime: api.NoLimit, DefaultTime: api.NoLimit},
		{Name: "empty", State: "down", Policy: "batch", MaxTime: 2 * 86400, DefaultTime: api.NoLimit},
	}
}

// fakeHorad serves the /v1 protocol from fixed data on a Unix socket, so the
// commands run their real client code. It applies the filters the way horad
// documents them and records the requests it received.
type fakeHorad struct {
	mu       sync.Mutex
	jobs     []api.Job
	nodes    []api.Node
	parts    []api.Partition
	queries  []string
	cancels  []api.CancelRequest
	controls []string
	fail     *api.Error // answer every job listing with this error
	flavour  string     // [pbs] flavour the ping answers ("" = openpbs)
	submits  []api.SubmitRequest
}

func startFake(t *testing.T) *fakeHorad {
	t.Helper()
	f := &fakeHorad{jobs: fixtureJobs(), nodes: fixtureNodes(), parts: fixturePartitions()}
	serveFake(t, f)
	return f
}

// serveFake serves h on a Unix socket in a fresh directory (short enough
// for sun_path) until the test ends, and points HORA_SOCKET at it.
func serveFake(t *testing.T, h http.Handler) {
	t.Helper()
	dir, err := os.MkdirTemp("", "hf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	t.Setenv("HORA_SOCKET", sock)
}

func (f *fakeHorad) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	reply := func(v any) { json.NewEncoder(w).Encode(v) }
	switch r.URL.Path {
	case api.PathJobs:
		if f.fail != nil {
			w.WriteHeader(http.StatusInternalServerError)
			reply(f.fail)
			return
		}
		q := r.URL.Query()
		f.queries = append(f.queries, q.Encode())
		var out []api.Job
		arrays, ok := api.NewPBSArraySel(q.Get("pbs_arrays"), testNow.Unix(), func(a int64) []*api.Job {
			var tasks []*api.Job
			for i := range f.jobs {
				if f.jobs[i].ArrayJobID == a {
					tasks = append(tasks, &f.jobs[i])
				}
			}
			return tasks
		})
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		for _, j := range f.jobs {
			// As horad: an array's id names all its tasks.
			if ids := q["id"]; len(ids) > 0 && !slices.Contains(ids, strconv.FormatInt(j.ID, 10)) &&
				(j.ArrayJobID == 0 || !slices.Contains(ids, strconv.FormatInt(j.ArrayJobID, 10))) {
				continue
			}
			if j.State.Finished() && q.Get("all") == "" && q.Get("history") == "" && !arrays.Live(&j) {
				continue
			}
			if us := q["user"]; len(us) > 0 && !slices.Contains(us, j.User) && !slices.Contains(us, strconv.Itoa(int(j.UID))) {
				continue
			}
			if ss := q["state"]; len(ss) > 0 && !slices.Contains(ss, string(j.State)) {
				continue
			}
			if ps := q["partition"]; len(ps) > 0 && !slices.Contains(ps, j.Spec.Partition) {
				continue
			}
			if ns := q["name"]; len(ns) > 0 && !slices.Contains(ns, j.Spec.Name) {
				continue
			}
			if ps := q.Get("pbs_state"); ps != "" && !strings.Contains(ps, arrays.State(&j, q.Get("pbs_torque") == "1", testNow.Unix())) {
				continue
			}
			if !arrays.First(&j) {
				continue
			}
			out = append(out, j)
		}
		if q.Get("ids_only") == "1" {
			resp := api.JobIDsResponse{IDs: []int64{}}
			for i := range out {
				resp.IDs = append(resp.IDs, out[i].ID)
				resp.AddTask(&out[i])
			}
			reply(resp)
			return
		}
		reply(api.JobsResponse{Jobs: out})
	case api.PathCancel:
		var req api.CancelRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.cancels = append(f.cancels, req)
		var res []api.JobResult
		for _, id := range req.IDs {
			res = append(res, f.result(id))
		}
		for _, ts := range req.Tasks { // as horad: unknown tasks answer for their array
			res = append(res, f.result(ts.Array))
		}
		if len(req.IDs) == 0 && len(req.Tasks) == 0 {
			for _, j := range f.jobs {
				if !j.State.Finished() && (len(req.Users) == 0 || slices.Contains(req.Users, j.User)) &&
					(len(req.Names) == 0 || slices.Contains(req.Names, j.Spec.Name)) {
					res = append(res, f.result(j.ID))
				}
			}
		}
		reply(api.CancelResponse{Results: res})
	case api.PathUpdate:
		var req api.JobUpdateRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.controls = append(f.controls, fmt.Sprint(r.URL.Path, req.IDs))
		var res []api.JobResult
		for _, id := range req.IDs {
			res = append(res, f.result(id))
		}
		reply(api.CancelResponse{Results: res})
	case api.PathHold, api.PathRelease:
		var req api.ControlRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.controls = append(f.controls, fmt.Sprint(r.URL.Path, req.IDs))
		var res []api.JobResult
		for _, id := range req.IDs {
			res = append(res, f.result(id))
		}
		reply(api.CancelResponse{Results: res})
	case api.PathNodes:
		reply(api.NodesResponse{Nodes: f.nodes})
	case api.PathPartitions:
		reply(api.PartitionsResponse{Partitions: f.parts})
	case api.PathPing:
		reply(api.PingResponse{Version: "test", ClusterName: "hora", Now: testNow.Unix(),
			PBSFlavour: f.flavour, PBSServer: "srv"})
	case api.PathSubmit:
		var req api.SubmitRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.submits = append(f.submits, req)
		reply(api.SubmitResponse{JobID: 200 + int64(len(f.submits))})
	default:
		w.WriteHeader(http.StatusNotFound)
		reply(api.Error{Message: "no such path", Code: api.CodeBadRequest})
	}
}

// result is what horad answers for one job of a cancel/hold/release.
func (f *fakeHorad) result(id int64) api.JobResult {
	for _, j := range f.jobs {
		if j.ID != id {
			continue
		}
		switch {
		case j.User == "root":
			return api.JobResult{ID: id, Error: "Access/permission denied", Code: api.CodeAccessDenied}
		case j.State.Finished():
			return api.JobResult{ID: id, Error: "Job/step already completing or completed", Code: api.CodeAlreadyDone}
		}
		return api.JobResult{ID: id}
	}
	return api.JobResult{ID: id, Error: "Invalid job id specified", Code: api.CodeInvalidJobID}
}

// runCmd runs a command the way main does, with the given environment.
func runCmd(t *testing.T, cmd Command, prog string, envv map[string]string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Prog: prog, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv:  func(k string) string { return envv[k] },
		Environ: func() []string { return nil },
		Getwd:   func() (string, error) { return "/tmp", nil }}
	code := cmd(context.Background(), env, args)
	return out.String(), errb.String(), code
}

func TestParseJobID(t *testing.T) {
	for s, want := range map[string]int64{"123": 123, "123_4": 123, "123_[1-3]": 123, "123.batch": 123, "7.0": 7} {
		if got, ok := parseJobID(s); !ok || got != want {
			t.Errorf("parseJobID(%q) = %d, %v", s, got, ok)
		}
	}
	for _, s := range []string{"", "abc", "-1", "0", "_4", "12a"} {
		if _, ok := parseJobID(s); ok {
			t.Errorf("parseJobID(%q) accepted", s)
		}
	}
}

func TestNoDaemon(t *testing.T) {
	t.Setenv("HORA_SOCKET", filepath.Join(t.TempDir(), "none.sock"))
	t.Setenv("HORA_MESSAGE_TIMEOUT", "1") // one try: the retries are api's (TestDialWaitsForARestartingDaemon)
	for name, cmd := range map[string]Command{"squeue": squeueMain, "sinfo": sinfoMain,
		"sacct": sacctMain, "scancel": scancelMain} {
		args := []string{}
		if name == "scancel" {
			args = []string{"1"}
		}
		out, errs, code := runCmd(t, cmd, name, nil, args...)
		if code != 1 || out != "" || !strings.HasPrefix(errs, name+": error: cannot reach horad: tried ") {
			t.Errorf("%s without daemon: code %d, stdout %q, stderr %q", name, code, out, errs)
		}
	}
}

func TestVersionAndHelp(t *testing.T) {
	for name, cmd := range map[string]Command{"squeue": squeueMain, "sinfo": sinfoMain,
		"sacct": sacctMain, "scancel": scancelMain, "scontrol": scontrolMain} {
		out, _, code := runCmd(t, cmd, name, nil, "--version")
		if code != 0 || out != versionLine()+"\n" {
			t.Errorf("%s --version: %d %q", name, code, out)
		}
		out, _, code = runCmd(t, cmd, name, nil, "--help")
		if code != 0 || !strings.HasPrefix(out, "Usage: "+name) {
			t.Errorf("%s --help: %d %q", name, code, out)
		}
		_, errs, code := runCmd(t, cmd, name, nil, "--bogus")
		want := name + ": unrecognized option '--bogus'\nTry \"" + name + " --help\" for more information\n"
		if name == "sacct" { // sacct 22.05.8 gives no hint (golden suite)
			want = "sacct: unrecognized option '--bogus'\n"
		}
		if code != 1 || errs != want {
			t.Errorf("%s --bogus: %d %q", name, code, errs)
		}
	}
}

// runGolden runs one command case and compares exit code, stdout and stderr
// with testdata/<name>.golden.
func runGolden(t *testing.T, cmd Command, prog, name string, envv map[string]string, args ...string) {
	t.Helper()
	out, errs, code := runCmd(t, cmd, prog, envv, args...)
	golden(t, name, fmt.Sprintf("$ %s %s\nexit %d\n--- stdout\n%s--- stderr\n%s", prog, strings.Join(args, " "), code, out, errs))
}

// TestDaemonErrors checks that an error answer from horad is printed with
// Slurm's wording and exit 1, through both job-listing paths.
func TestDaemonErrors(t *testing.T) {
	f := startFake(t)
	f.fail = &api.Error{Message: "Unable to contact slurm controller (connect failure)", Code: api.CodeInternal}
	for name, cmd := range map[string]Command{"squeue": squeueMain, "scontrol": scontrolMain} {
		args := []string{}
		if name == "scontrol" {
			args = []string{"show", "job"}
		}
		out, errs, code := runCmd(t, cmd, name, nil, args...)
		want := "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"
		if code != 1 || out != "" || errs != want {
			t.Errorf("%s: code %d, stdout %q, stderr %q", name, code, out, errs)
		}
	}
}
