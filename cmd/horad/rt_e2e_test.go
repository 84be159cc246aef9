package main

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"hora/api"
	"hora/store"
)

const rtConfig = localBatch + `
[[partition]]
name = "rt"
nodes = "local[1-4]"
policy = "dlt"
[partition.params]
cms = "0.0001"
cps = "0.002"
`

// A divisible real-time job end to end: admitted at submit, split into
// chunks that run on nodes with HORA_CHUNK_*, shown as steps in sacct; an
// impossible deadline is refused with the earliest deadline that could be
// guaranteed, and nothing is queued.
func TestRealTimeDivisibleEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, rtConfig)
	work := c.workDir()

	// 2,000 units at cps 0.002 s/unit: 4 s of work on one node, so a 60 s
	// deadline is easy; the chunks must cover the load exactly.
	id := c.submit(work, "-p", "rt", "--deadline=now+60", "--load=2k", "-o", "rt-%j.out",
		"--wrap", `echo "chunk $HORA_CHUNK_INDEX $HORA_CHUNK_OFFSET $HORA_CHUNK_SIZE $SLURM_JOB_ID"`)
	// The deadline shows as Slurm shows it: squeue --Format=Deadline and
	// scontrol show job's Deadline=, the submit time plus 60 s.
	r := c.run(0, work, "squeue", "-h", "-t", "all", "-j", id, "-O", "SubmitTime,Deadline")
	f := strings.Fields(r.stdout)
	if len(f) != 2 {
		t.Fatalf("squeue -O SubmitTime,Deadline: %+v", r)
	}
	submitAt, err1 := time.ParseInLocation("2006-01-02T15:04:05", f[0], time.UTC)
	deadline, err2 := time.ParseInLocation("2006-01-02T15:04:05", f[1], time.UTC)
	if err1 != nil || err2 != nil || deadline.Sub(submitAt) < 59*time.Second || deadline.Sub(submitAt) > 61*time.Second {
		t.Errorf("squeue submit %q deadline %q, want the deadline 60 s after the submit", f[0], f[1])
	}
	if r := c.run(0, work, "squeue", "-t", "all", "-j", id, "-O", "Deadline"); strings.Fields(r.stdout)[0] != "DEADLINE" || strings.Fields(r.stdout)[1] != f[1] {
		t.Errorf("squeue -O Deadline: %q, want header DEADLINE and %s", r.stdout, f[1])
	}
	if r := c.run(0, work, "scontrol", "show", "job", id); !strings.Contains(r.stdout, " Deadline="+f[1]) {
		t.Errorf("scontrol show job has no Deadline=%s:\n%s", f[1], r.stdout)
	}
	c.waitState(id, "COMPLETED")
	out, err := os.ReadFile(filepath.Join(work, "rt-"+id+".out"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	sort.Strings(lines)
	var total float64
	re := regexp.MustCompile(`^chunk (\d+) ([0-9.e+]+) ([0-9.e+]+) ` + id + `$`)
	for _, l := range lines {
		m := re.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("chunk output line %q", l)
		}
		var size float64
		if _, err := fmtSscan(m[3], &size); err != nil {
			t.Fatal(err)
		}
		total += size
	}
	if total < 1999.999 || total > 2000.001 {
		t.Errorf("chunks cover %g units, want 2000 (%q)", total, lines)
	}
	r = c.run(0, work, "sacct", "-j", id, "-P", "-n", "-o", "JobID,State")
	rows := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(rows) != 1+len(lines) || rows[0] != id+"|COMPLETED" || !strings.HasPrefix(rows[1], id+".0|COMPLETED") {
		t.Errorf("sacct rows %q for %d chunks", rows, len(lines))
	}

	// 10^9 units need ~2·10^6 s: refused, with the earliest guaranteed
	// deadline named, exit 1, and no job created.
	r = c.run(0, work, "sbatch", "-p", "rt", "--deadline=now+60", "--load=1G", "--wrap", "true")
	if r.code != 1 || !regexp.MustCompile(`^sbatch: error: Batch job submission failed: Requested deadline cannot be guaranteed \(earliest guaranteed deadline \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\)\n$`).MatchString(r.stderr) || r.stdout != "" {
		t.Errorf("impossible deadline: %+v", r)
	}
	r = c.run(0, work, "squeue", "-h", "-t", "all", "-o", "%i")
	if strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("queue after a refusal: %q", r.stdout)
	}
}

func fmtSscan(s string, f *float64) (int, error) { return fmt.Sscan(s, f) }

// rtStageConfig: 3,000 units of 100 bytes need 12 s on one node, so a
// deadline 8 s away takes two or more chunks.
const rtStageConfig = localBatch + `
[[partition]]
name = "rt"
nodes = "local[1-4]"
policy = "dlt"
[partition.params]
cms = "0.0001"
cps = "0.004"
unit_bytes = "100"
`

// A divisible job whose load is a file (--input with --load): each chunk
// finds its byte range staged at $HORA_CHUNK_FILE, a file of the job's
// owner only, and checksums it; the ranges cover the file exactly and every
// sum matches; the staged files are gone once the job is. A file the
// submitter cannot read, or whose size is not the load, is refused at
// submit with the file named, and nothing is queued.
func TestRealTimeStagedInputEndToEnd(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, rtStageConfig)
	work := c.workDir()
	data := make([]byte, 300_000) // 3,000 units of 100 bytes
	rand.Read(data)
	input := filepath.Join(work, "input.bin")
	if err := os.WriteFile(input, data, 0o644); err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/sh
f=$HORA_CHUNK_FILE
echo "chunk $HORA_CHUNK_INDEX $HORA_CHUNK_FILE_OFFSET $HORA_CHUNK_FILE_SIZE $(wc -c < "$f") $(sha256sum < "$f" | cut -d' ' -f1) $(stat -c %u:%a "$f") $(id -u)"
`
	writeScript(t, work, "sum.sh", script)
	r := c.run(65534, work, "sbatch", "-p", "rt", "--deadline=now+8", "--load=3k", "--input=input.bin", "-o", "st-%j.out", "sum.sh")
	m := submitted.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("sbatch as nobody: %+v", r)
	}
	id := m[1]
	c.waitState(id, "COMPLETED")
	out, err := os.ReadFile(filepath.Join(work, "st-"+id+".out"))
	if err != nil {
		t.Fatal(err)
	}
	type chunk struct{ off, size int }
	var chunks []chunk
	re := regexp.MustCompile(`^chunk (\d+) (\d+) (\d+) (\d+) ([0-9a-f]{64}) 65534:600 65534$`)
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		m := re.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("chunk line %q (want the staged file nobody's, mode 600, read as nobody)", l)
		}
		off, _ := strconv.Atoi(m[2])
		size, _ := strconv.Atoi(m[3])
		if n, _ := strconv.Atoi(m[4]); n != size || off+size > len(data) {
			t.Fatalf("chunk %s: staged %d bytes for range [%d,+%d)", m[1], n, off, size)
		}
		if want := fmt.Sprintf("%x", sha256.Sum256(data[off:off+size])); m[5] != want {
			t.Errorf("chunk %s [%d,+%d): sum %s, want %s", m[1], off, size, m[5], want)
		}
		chunks = append(chunks, chunk{off, size})
	}
	sort.Slice(chunks, func(i, j int) bool { return chunks[i].off < chunks[j].off })
	next := 0
	for _, ch := range chunks {
		if ch.off != next {
			t.Fatalf("chunks %v do not tile the file at byte %d", chunks, next)
		}
		next += ch.size
	}
	if next != len(data) || len(chunks) < 2 {
		t.Fatalf("%d chunks cover %d of %d bytes", len(chunks), next, len(data))
	}
	eventuallyE2E(t, "staged files removed", func() bool {
		ents, _ := filepath.Glob(filepath.Join(c.varDir, "nodes", "*", "staged", id+".*"))
		return len(ents) == 0
	})

	// Refusals: a root-only file (horad is root, nobody is not), a file of
	// the wrong size. Exit 1, the file named, nothing queued.
	secret := filepath.Join(work, "secret.bin")
	if err := os.WriteFile(secret, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, load, want string }{
		{secret, "3k", `input "` + secret + `": permission denied`},
		{input, "2k", `input "` + input + `": the file has 300000 bytes but --load=2000 at 100 bytes per unit means 200000 bytes`},
	} {
		r := c.run(65534, work, "sbatch", "-p", "rt", "--deadline=now+120", "--load="+tc.load, "--input="+tc.file, "sum.sh")
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("sbatch --input=%s --load=%s: %+v, want exit 1 and %q", filepath.Base(tc.file), tc.load, r, tc.want)
		}
	}
	r = c.run(0, work, "squeue", "-h", "-t", "all", "-o", "%i")
	if strings.TrimSpace(r.stdout) != id {
		t.Errorf("queue after refusals: %q", r.stdout)
	}
}

func eventuallyE2E(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("not within 20 s: %s", what)
}

// horad is SIGKILLed while the chunks of a staged divisible job run: after
// the restart the chunks are re-attached one by one (not requeued, not run
// twice), the job completes, and its chunks together checksum the file
// exactly once.
func TestRealTimeRestartWhileChunksRun(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, rtStageConfig)
	work := c.workDir()
	data := make([]byte, 300_000)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(work, "input.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	writeScript(t, work, "slow.sh", `#!/bin/sh
sleep 3
echo "chunk $HORA_CHUNK_INDEX $HORA_CHUNK_FILE_OFFSET $HORA_CHUNK_FILE_SIZE $(sha256sum < "$HORA_CHUNK_FILE" | cut -d' ' -f1)"
`)
	id := c.submit(work, "-p", "rt", "--deadline=now+10", "--load=3k", "--input=input.bin", "-o", "rs-%j.out", "slow.sh")
	// Both chunks (the deadline needs two nodes) are running: their
	// processes have recorded their pids node-side.
	eventuallyE2E(t, "two chunks running", func() bool {
		pids, _ := filepath.Glob(filepath.Join(c.varDir, "nodes", "*", id+".*", "user", "pid"))
		return len(pids) >= 2
	})
	c.kill9()
	c.start()
	if r := c.run(0, work, "squeue", "-h", "-j", id, "-o", "%T"); strings.TrimSpace(r.stdout) != "RUNNING" {
		t.Errorf("after the restart the job is %q, want RUNNING (re-attached, not requeued)", r.stdout)
	}
	c.waitState(id, "COMPLETED")
	out, err := os.ReadFile(filepath.Join(work, "rs-"+id+".out"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	seen := map[string]bool{}
	covered := 0
	for _, l := range lines {
		var idx, off, size int
		var sum string
		if _, err := fmt.Sscanf(l, "chunk %d %d %d %s", &idx, &off, &size, &sum); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if seen[strconv.Itoa(idx)] {
			t.Errorf("chunk %d ran twice", idx)
		}
		seen[strconv.Itoa(idx)] = true
		if want := fmt.Sprintf("%x", sha256.Sum256(data[off:off+size])); sum != want {
			t.Errorf("chunk %d: sum %s, want %s", idx, sum, want)
		}
		covered += size
	}
	if covered != len(data) {
		t.Errorf("chunks cover %d of %d bytes: %q", covered, len(data), lines)
	}
	r := c.run(0, work, "sacct", "-j", id, "-P", "-n", "-o", "JobID,State")
	rows := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(rows) != 1+len(lines) || rows[0] != id+"|COMPLETED" {
		t.Errorf("sacct rows %q for %d chunks", rows, len(lines))
	}
	for _, row := range rows[1:] {
		if !strings.HasSuffix(row, "|COMPLETED") {
			t.Errorf("step %q", row)
		}
	}
	if !strings.Contains(c.log.String(), "re-attached running chunk") {
		t.Errorf("the log does not show the chunks re-attached:\n%s", c.log)
	}
}

// rtOneNode: one node, 100 units take 1 s.
const rtOneNode = localBatch + `
[[partition]]
name = "rt1"
nodes = "local1"
policy = "dlt"
[partition.params]
cps = "0.01"
`

// dlt-feedback §3.2 end to end: a chunk that runs past its planned end may
// go on while its node is not needed, and is killed when a guaranteed job
// needs it; the user sees the killed chunk's job TIMEOUT with reason
// TimeLimit (squeue, scontrol, sacct), and the new job completes by its
// deadline.
func TestRealTimeOverrunKilledWhenNeeded(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, rtOneNode)
	work := c.workDir()
	// Planned 1 s, runs 600 s unless killed.
	over := c.submit(work, "-p", "rt1", "--deadline=now+30", "--load=100", "-o", "over-%j.out", "--wrap", "exec sleep 600")
	c.waitState(over, "RUNNING")
	time.Sleep(2 * time.Second) // past its planned end: it overruns, nobody needs the node yet
	if got := c.state(over); got != "RUNNING" {
		t.Fatalf("the overrunning job is %s before its node is needed, want RUNNING", got)
	}
	next := c.submit(work, "-p", "rt1", "--deadline=now+20", "--load=100", "-o", "next-%j.out", "--wrap", "echo done")
	c.waitState(next, "COMPLETED")
	c.waitState(over, "TIMEOUT")
	r := c.run(0, work, "squeue", "-h", "-t", "all", "-j", over, "-o", "%T %r")
	if strings.TrimSpace(r.stdout) != "TIMEOUT TimeLimit" {
		t.Errorf("squeue of the killed job: %q, want TIMEOUT TimeLimit", r.stdout)
	}
	r = c.run(0, work, "scontrol", "show", "job", over)
	if !strings.Contains(r.stdout, "JobState=TIMEOUT Reason=TimeLimit") {
		t.Errorf("scontrol show job:\n%s", r.stdout)
	}
	r = c.run(0, work, "sacct", "-j", over, "-P", "-n", "-o", "JobID,State")
	if rows := strings.Fields(r.stdout); len(rows) != 2 || rows[0] != over+"|TIMEOUT" || rows[1] != over+".0|TIMEOUT" {
		t.Errorf("sacct of the killed job: %q", r.stdout)
	}
	if !strings.Contains(c.log.String(), "killing an overrunning chunk") {
		t.Errorf("no log line for the kill")
	}
}

// Rights are checked again when the data is sent: a file readable at submit
// but no longer by its owner when its chunk's turn comes is not staged; the
// chunk fails without running and the job ends FAILED.
func TestRealTimeStagingRechecksRights(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, rtOneNode+`unit_bytes = "10"
`)
	work := c.workDir()
	in := filepath.Join(work, "in.bin")
	if err := os.WriteFile(in, make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chown(in, 65534, 65534)
	// A holds the only node for 3 s (planned and real), B waits for it.
	a := c.submit(work, "-p", "rt1", "--deadline=now+30", "--load=300", "-o", "/dev/null", "--wrap", "sleep 3")
	c.waitState(a, "RUNNING")
	r := c.run(65534, work, "sbatch", "-p", "rt1", "--deadline=now+30", "--load=100", "--input=in.bin", "-o", "b-%j.out", "--wrap", "cat \"$HORA_CHUNK_FILE\" | wc -c")
	m := submitted.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("sbatch B: %+v", r)
	}
	if err := os.Chmod(in, 0); err != nil { // its owner can no longer read it
		t.Fatal(err)
	}
	c.waitState(a, "COMPLETED")
	c.waitState(m[1], "FAILED")
	if _, err := os.Stat(filepath.Join(work, "b-"+m[1]+".out")); !os.IsNotExist(err) {
		t.Errorf("the chunk ran (output file exists: %v)", err)
	}
	if !strings.Contains(c.log.String(), "staging failed") || !strings.Contains(c.log.String(), "permission denied") {
		t.Errorf("horad log does not say why:\n%s", c.log)
	}
}

// An operator sets the node of a running chunk DOWN: the chunk is stopped
// (its step NODE_FAIL), its range goes to another node, and the job, all of
// whose data was processed, completes.
func TestRealTimeChunkResentAfterNodeDown(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, rtConfig)
	work := c.workDir()
	// 2,000 units, 4 s on one node, 60 s allowed: one chunk, on local1.
	id := c.submit(work, "-p", "rt", "--deadline=now+60", "--load=2k", "-o", "nd-%j.out",
		"--wrap", `sleep 2; echo "chunk $HORA_CHUNK_INDEX $HORA_CHUNK_OFFSET $HORA_CHUNK_SIZE $SLURMD_NODENAME"`)
	eventuallyE2E(t, "the chunk running", func() bool {
		pids, _ := filepath.Glob(filepath.Join(c.varDir, "nodes", "local1", id+".0.r0", "user", "pid"))
		return len(pids) == 1
	})
	if r := c.run(0, work, "scontrol", "update", "NodeName=local1", "State=DOWN", "Reason=maintenance"); r.code != 0 {
		t.Fatalf("scontrol update: %+v", r)
	}
	c.waitState(id, "COMPLETED")
	out, _ := os.ReadFile(filepath.Join(work, "nd-"+id+".out"))
	if got := strings.TrimSpace(string(out)); !regexp.MustCompile(`^chunk 1 0 2000 local[234]$`).MatchString(got) {
		t.Errorf("output %q, want the whole range re-sent as chunk 1 to another node", got)
	}
	r := c.run(0, work, "sacct", "-j", id, "-P", "-n", "-o", "JobID,State")
	if got := strings.Fields(r.stdout); len(got) != 3 || got[0] != id+"|COMPLETED" || got[1] != id+".0|NODE_FAIL" || got[2] != id+".1|COMPLETED" {
		t.Errorf("sacct: %q", r.stdout)
	}
}

// A chunk whose launch fails on a node that horad still has up (here the
// node's state directory cannot be made, as when an SSH launch times out
// before the prober has counted its misses) is lost with its node: its
// range is re-sent to another node and the job, all of whose data was
// processed, completes; the failed step stays NODE_FAIL.
func TestRealTimeChunkResentAfterLaunchFailure(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, rtConfig)
	work := c.workDir()
	bad := filepath.Join(c.varDir, "nodes", "local1")
	if err := os.RemoveAll(bad); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, nil, 0o644); err != nil { // no step directory can be made under it
		t.Fatal(err)
	}
	// 2,000 units, 4 s on one node, 60 s allowed: one chunk, on local1.
	id := c.submit(work, "-p", "rt", "--deadline=now+60", "--load=2k", "-o", "lf-%j.out",
		"--wrap", `echo "chunk $HORA_CHUNK_INDEX $HORA_CHUNK_OFFSET $HORA_CHUNK_SIZE $SLURMD_NODENAME"`)
	c.waitState(id, "COMPLETED")
	out, _ := os.ReadFile(filepath.Join(work, "lf-"+id+".out"))
	if got := strings.TrimSpace(string(out)); !regexp.MustCompile(`^chunk 1 0 2000 local[234]$`).MatchString(got) {
		t.Errorf("output %q, want the whole range re-sent as chunk 1 to another node", got)
	}
	r := c.run(0, work, "sacct", "-j", id, "-P", "-n", "-o", "JobID,State")
	if got := strings.Fields(r.stdout); len(got) != 3 || got[0] != id+"|COMPLETED" || got[1] != id+".0|NODE_FAIL" || got[2] != id+".1|COMPLETED" {
		t.Errorf("sacct: %q", r.stdout)
	}
}

// horad dies after recording a staged chunk's start but before launching it,
// and a cut transfer left a partial file in staged/: after the restart the
// chunk is NODE_FAIL, its range runs again as a new chunk (its data staged
// anew, checksummed right), the job completes, and the leftovers are gone.
// The crash is written into the store while horad is stopped (timing a real
// SIGKILL between the two writes is not reliable).
func TestRealTimeRestartChunkNeverLaunched(t *testing.T) {
	requireRoot(t)
	c := newClusterWith(t, rtStageConfig)
	work := c.workDir()
	data := make([]byte, 100_000)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(work, "input.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	writeScript(t, work, "sum.sh", `#!/bin/sh
echo "chunk $HORA_CHUNK_INDEX $HORA_CHUNK_FILE_OFFSET $HORA_CHUNK_FILE_SIZE $(sha256sum < "$HORA_CHUNK_FILE" | cut -d' ' -f1)"
`)
	// A first job gives a valid record to copy.
	first := c.submit(work, "-p", "rt", "--deadline=now+30", "--load=1k", "--input=input.bin", "-o", "/dev/null", "sum.sh")
	c.waitState(first, "COMPLETED")
	c.stop()

	ctx := t.Context()
	st, err := store.Open(ctx, filepath.Join(c.varDir, "hora.db"))
	if err != nil {
		t.Fatal(err)
	}
	id0, _ := strconv.ParseInt(first, 10, 64)
	j, err := st.Job(ctx, id0)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	id := id0 + 1
	j.ID, j.State, j.Reason, j.Steps, j.SubmitTime, j.StartTime, j.EndTime = id, api.StatePending, "", nil, now, 0, 0
	j.ExitCode, j.Signal, j.Nodes = 0, 0, nil
	j.Spec.Deadline, j.Spec.Stdout = now+30, filepath.Join(work, "nl-%j.out")
	if err := st.Submit(ctx, &j); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(work, fmt.Sprintf("nl-%d.out", id))
	step := api.Step{Index: 0, Node: "local1", State: api.StateRunning, Offset: 0, Size: 1000, StartTime: now}
	if err := st.Append(ctx,
		store.Event{JobID: id, Time: now, Kind: store.KindStart, Nodes: []string{"local1"}, StdoutPath: out, StderrPath: out},
		store.Event{JobID: id, Time: now, Kind: store.KindStepStart, Step: &step}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	staged := filepath.Join(c.varDir, "nodes", "local2", "staged")
	if err := os.MkdirAll(staged, 0o755); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(staged, fmt.Sprintf("%d.7.tmp", id0))
	if err := os.WriteFile(left, data[:10], 0o600); err != nil {
		t.Fatal(err)
	}

	c.start()
	sid := strconv.FormatInt(id, 10)
	c.waitState(sid, "COMPLETED")
	got, _ := os.ReadFile(out)
	var idx, off, size int
	var sum string
	if _, err := fmt.Sscanf(strings.TrimSpace(string(got)), "chunk %d %d %d %s", &idx, &off, &size, &sum); err != nil || idx != 1 || off != 0 || size != len(data) {
		t.Fatalf("output %q (%v), want chunk 1 with the whole file", got, err)
	}
	if want := fmt.Sprintf("%x", sha256.Sum256(data)); sum != want {
		t.Errorf("sum %s, want %s", sum, want)
	}
	r := c.run(0, work, "sacct", "-j", sid, "-P", "-n", "-o", "JobID,State")
	if rows := strings.Fields(r.stdout); len(rows) != 3 || rows[0] != sid+"|COMPLETED" || rows[1] != sid+".0|NODE_FAIL" || rows[2] != sid+".1|COMPLETED" {
		t.Errorf("sacct: %q", r.stdout)
	}
	eventuallyE2E(t, "the partial transfer removed", func() bool {
		_, err := os.Stat(left)
		return os.IsNotExist(err)
	})
}
