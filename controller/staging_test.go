package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"hora/api"
	"hora/config"
	"hora/nodes"
	"hora/nodes/local"
	_ "hora/scheduler/dlt"
)

// openAs lets the kernel decide with the user's rights: a root-only file, a
// file under a directory the user cannot search, and a file the user owns
// but made unreadable are all refused; a public one, and one readable only
// through the user's group, open. Root's
// own rights are intact afterwards on every thread (many calls in parallel,
// then a root-only open).
func TestOpenAsUsesTheUsersRights(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root (horad's situation: it opens files for other users)")
	}
	const nobody = 65534
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, mode os.FileMode, uid, gid int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("data"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rootOnly := mk("root-only", 0o600, 0, 0)
	public := mk("public", 0o644, 0, 0)
	ownUnreadable := mk("own-unreadable", 0o200, nobody, nobody)
	byGroup := mk("by-group", 0o640, 0, nobody)
	hidden := filepath.Join(dir, "hidden")
	if err := os.Mkdir(hidden, 0o700); err != nil {
		t.Fatal(err)
	}
	inHidden := filepath.Join(hidden, "f")
	if err := os.WriteFile(inHidden, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		ok   bool
	}{{rootOnly, false}, {public, true}, {ownUnreadable, false}, {byGroup, true}, {inHidden, false}} {
		f, err := openAs(c.path, nobody, nobody)
		if c.ok != (err == nil) {
			t.Errorf("openAs(%s) as nobody: %v, want ok=%v", filepath.Base(c.path), err, c.ok)
		}
		if err == nil {
			f.Close()
		} else if !errors.Is(err, fs.ErrPermission) {
			t.Errorf("openAs(%s): %v, want permission denied", filepath.Base(c.path), err)
		}
	}
	// A file horad holds open (as while it stages another user's chunk) is
	// reachable through horad's own /proc/self/fd/N whatever the directory
	// above it allows; that path, and a symlink to it, must be refused.
	held, err := os.Open(inHidden)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	magic := fmt.Sprintf("/proc/self/fd/%d", held.Fd())
	link := filepath.Join(dir, "link-to-fd")
	if err := os.Symlink(magic, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{magic, link, fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), held.Fd())} {
		if f, err := openAs(p, nobody, nobody); err == nil {
			f.Close()
			t.Errorf("openAs(%s) as nobody opened a file in a directory nobody cannot search", p)
		}
	}
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			if f, err := openAs(public, nobody, nobody); err == nil {
				f.Close()
			}
		})
	}
	wg.Wait()
	for range 64 {
		f, err := os.Open(rootOnly)
		if err != nil {
			t.Fatalf("root lost its rights after openAs: %v", err)
		}
		f.Close()
		if g, _ := syscall.Getgroups(); len(g) == 1 && g[0] == nobody {
			t.Fatal("root's groups were changed")
		}
	}
}

// chunkRange: adjacent chunks meet at the same byte and the chunks cover
// the file exactly, for sizes cut as dlt cuts them (offset += size).
func TestChunkRangeCoversTheFile(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		unit := []float64{1, 3, 4096, 0.5}[r.IntN(4)]
		load := float64(1 + r.IntN(1_000_000))
		size := int64(load*unit + 0.5)
		var off float64
		var next int64
		for left := load; left > 0; {
			s := min(left, r.Float64()*load/3+1e-3)
			if s >= left*(1-1e-12) {
				s = left
			}
			a, b := chunkRange(off, s, load, unit, size)
			if a != next || b < a {
				t.Fatalf("load %g unit %g: chunk [%g,+%g) → bytes [%d,%d), want start %d", load, unit, off, s, a, b, next)
			}
			next = b
			off += s
			left = max(left-s, 0)
		}
		if next != size {
			t.Fatalf("load %g unit %g: chunks end at byte %d of %d", load, unit, next, size)
		}
	}
}

// serialStager wraps the local executor and records how many transfers are
// in flight at once, and in which order the steps were staged.
type serialStager struct {
	*local.Executor
	mu       sync.Mutex
	inFlight int
	maxIn    int
	order    []int
}

func (s *serialStager) Stage(ctx context.Context, spec nodes.StageSpec) (string, error) {
	s.mu.Lock()
	s.inFlight++
	s.maxIn = max(s.maxIn, s.inFlight)
	s.order = append(s.order, spec.Key.Step)
	s.mu.Unlock()
	time.Sleep(300 * time.Millisecond) // longer than the model's send time (≈ 50 ms)
	p, err := s.Executor.Stage(ctx, spec)
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
	return p, err
}

// The Engine starts a divisible job's chunks together, but their data goes
// out one transfer at a time, in step order (the model's single channel),
// and every chunk then runs and completes.
func TestStagingOneTransferAtATime(t *testing.T) {
	f := newFixture(t)
	f.cfg.Partitions = append(f.cfg.Partitions, config.Partition{Name: "rt", Nodes: "local[1-4]", Policy: "dlt",
		Params: map[string]string{"cms": "0.00001", "cps": "0.001"}})
	exec, err := local.New(local.Config{StateDir: filepath.Join(f.dir, "nodes"),
		ShepherdArgv: []string{os.Args[0], local.ShepherdCommand}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Close() })
	ss := &serialStager{Executor: exec}
	c, err := New(t.Context(), Options{Config: f.cfg, Store: f.st, Executor: ss})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	// 12,000 bytes at 1 ms each need 12 s on one node: a 5 s deadline
	// takes three chunks or more.
	in := filepath.Join(f.dir, "in.bin")
	if err := os.WriteFile(in, make([]byte, 12000), 0o644); err != nil {
		t.Fatal(err)
	}
	s := f.spec("cat \"$HORA_CHUNK_FILE\" > /dev/null")
	s.Partition, s.Load, s.Input, s.Deadline = "rt", 12000, in, time.Now().Unix()+6
	resp, err := c.submit(t.Context(), root, api.SubmitRequest{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	var state api.JobState
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c.mu.Lock()
		state = c.jobs[resp.JobID].State
		c.mu.Unlock()
		if state.Finished() {
			break
		}
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if state != api.StateCompleted || len(ss.order) < 3 {
		t.Fatalf("job %s after %d transfers, want COMPLETED after ≥ 3", state, len(ss.order))
	}
	if ss.maxIn != 1 {
		t.Errorf("%d transfers in flight at once, want 1", ss.maxIn)
	}
	for i, step := range ss.order {
		if step != i {
			t.Errorf("transfers in step order %v", ss.order)
			break
		}
	}
}

// How a divisible job ends, from its chunks.
func TestCoveredLoad(t *testing.T) {
	st := func(off, size float64, s api.JobState) api.Step { return api.Step{Offset: off, Size: size, State: s} }
	for _, c := range []struct {
		steps []api.Step
		want  float64
	}{
		{[]api.Step{st(0, 5, api.StateCompleted), st(5, 5, api.StateCompleted)}, 10},
		// A chunk lost with its node, its range sent again later.
		{[]api.Step{st(0, 4, api.StateNodeFail), st(4, 6, api.StateCompleted), st(0, 4, api.StateCompleted)}, 10},
		{[]api.Step{st(0, 4, api.StateNodeFail), st(4, 6, api.StateCompleted)}, 0},
		{[]api.Step{st(0, 4, api.StateCompleted), st(4, 2, api.StateFailed), st(6, 4, api.StateCompleted)}, 4},
		{nil, 0},
	} {
		if got := coveredLoad(c.steps); got != c.want {
			t.Errorf("coveredLoad(%v) = %g, want %g", c.steps, got, c.want)
		}
	}
}
