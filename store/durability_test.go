package store

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"reflect"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// childEnv, when set, turns the test binary into the submitting child of
// TestDurabilityKill9: its value is the database path.
const childEnv = "HORA_STORE_KILL9_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		submitForever(path)
		return
	}
	os.Exit(m.Run())
}

// submitForever submits from a few goroutines, so that the kill can land in
// the middle of a group commit, and prints "seq id" for each acknowledged
// job. Each line is one write(2) to a pipe, so it reaches the parent even if
// the process dies right after.
func submitForever(path string) {
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var seq atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				n := int(seq.Add(1))
				j := testJob(n)
				if err := s.Submit(ctx, j); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				mu.Lock()
				os.Stdout.WriteString(fmt.Sprintf("%d %d\n", n, j.ID))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// Invariant 3 of DESIGN §5: a job acknowledged to a client survives kill -9.
// A child submits in a loop; the parent SIGKILLs it at a random moment and
// checks that every acknowledged id is in the reopened database with its
// spec, three times over the same file, and that no id is ever reused.
func TestDurabilityKill9(t *testing.T) {
	path := t.TempDir() + "/hora.db"
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	acked := map[int64]int{} // id → seq of the spec submitted under it
	var maxID int64
	for round := range 3 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), childEnv+"="+path)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		killAfter := 1 + rng.IntN(300)
		var lines []string
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if len(lines) == killAfter {
				time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Scanner stops at EOF: the lines written before the child died,
		// including those after the kill was sent, were all acknowledged.
		// A line cut short by the kill has no newline and is not returned.
		cmd.Wait()
		if len(lines) < killAfter {
			t.Fatalf("round %d: child died after %d acknowledgements, before the kill", round, len(lines))
		}
		roundMin := int64(-1)
		for _, l := range lines {
			var seq int
			var id int64
			if _, err := fmt.Sscanf(l, "%d %d", &seq, &id); err != nil {
				t.Fatalf("round %d: line %q: %v", round, l, err)
			}
			if _, dup := acked[id]; dup {
				t.Fatalf("round %d: id %d acknowledged twice", round, id)
			}
			acked[id] = seq
			if roundMin < 0 || id < roundMin {
				roundMin = id
			}
		}
		if roundMin <= maxID {
			t.Fatalf("round %d: id %d reused (a previous run reached %d)", round, roundMin, maxID)
		}
		s, err := Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		for id, seq := range acked {
			j, err := s.Job(t.Context(), id)
			if err != nil {
				t.Fatalf("round %d: acknowledged job %d lost: %v", round, id, err)
			}
			if want := testJob(seq).Spec; !reflect.DeepEqual(j.Spec, want) {
				t.Fatalf("round %d: job %d has spec %+v, want %+v", round, id, j.Spec, want)
			}
		}
		// Jobs committed but not acknowledged (killed before the print) hold
		// ids too; the next round must start above them as well.
		all, err := s.Jobs(t.Context(), Filter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range all {
			checkFold(t, s, j.ID)
			maxID = max(maxID, j.ID)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: killed after %d acks (%d read in all, %d jobs in the file)", round, killAfter, len(lines), len(all))
	}
}
