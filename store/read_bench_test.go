package store

import (
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"hora/api"
)

// BenchmarkReadPaths measures the store's side of recovery and sacct at the
// scale of issue 16 item 4: HORA_BENCH_JOBS finished jobs (default
// 1,000,000) over 30 days and 100 users, plus 100,000 held pending jobs, the
// fill of cmd/horad/scale_test.go written straight into the tables (the
// fill is not measured). cpu-ms/op is the process's CPU time per op.
//
//	go test -run '^$' -bench ReadPaths -benchtime 5x ./store/
func BenchmarkReadPaths(b *testing.B) {
	finished := 1_000_000
	if v := os.Getenv("HORA_BENCH_JOBS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("HORA_BENCH_JOBS=%q: %v", v, err)
		}
		finished = n
	}
	const held, users = 100_000, 100
	now := time.Now().Unix()
	s := openStore(b, b.TempDir())
	defer s.Close()
	t0 := time.Now()
	fillBench(b, s, finished, held, users, now)
	b.Logf("filled %d finished + %d held jobs in %v", finished, held, time.Since(t0).Round(time.Second))
	day := now - now%86400 - 3*86400
	measure := func(name string, f Filter, check func(n int) bool) {
		b.Run(name, func(b *testing.B) {
			var ru0, ru1 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			n := 0
			for b.Loop() {
				js, err := s.Jobs(b.Context(), f)
				if err != nil {
					b.Fatal(err)
				}
				n++
				if !check(len(js)) {
					b.Fatalf("%d jobs", len(js))
				}
			}
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
			b.ReportMetric(float64(cpu.Milliseconds())/float64(n), "cpu-ms/op")
		})
	}
	// What recovery reads: the active jobs and those ended within min_job_age.
	measure("recover", Filter{Since: now - 300}, func(n int) bool { return n >= held })
	// sacct -u 10007 -S <day> (the end bound is the client's).
	measure("sacct-user", Filter{UIDs: []uint32{10007}, Since: day}, func(n int) bool { return n > held/users })
	// The same period for every user: what sacct read before it passed the user.
	measure("sacct-all", Filter{Since: day}, func(n int) bool { return n > held })
}

// fillBench writes the jobs 10,000 per transaction with the store's own row
// and event writers, as Submit and Append would leave them.
func fillBench(b *testing.B, s *Store, finished, held, users int, now int64) {
	ctx := b.Context()
	total := finished + held
	for lo := 0; lo < total; lo += 10_000 {
		err := s.write(ctx, func(tx *sql.Tx) error {
			ptx := s.prepared(tx)
			for i := lo; i < min(lo+10_000, total); i++ {
				uid := uint32(10000 + i%users)
				j := api.Job{ID: int64(i + 1), UID: uid, GID: uid, User: strconv.Itoa(int(uid)), Group: strconv.Itoa(int(uid)),
					Spec: api.JobSpec{Name: fmt.Sprintf("job%d", i), Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp",
						Partition: "batch", Nodes: 1, TimeLimit: 3600, Env: []string{"HORA_EMULATED_RUNTIME=1"}},
					State: api.StatePending, Reason: reasonNone, CancelledBy: -1,
					SubmitTime: now - 30*86400 + int64(i)*30*86400/int64(max(finished, 1))}
				if i >= finished {
					j.SubmitTime, j.Reason = now, ReasonHeldUser
				}
				evs := []Event{{JobID: j.ID, Time: j.SubmitTime, Kind: KindSubmit, Job: &j}}
				if i < finished {
					evs = append(evs,
						Event{JobID: j.ID, Time: j.SubmitTime + 10, Kind: KindStart, Nodes: []string{fmt.Sprintf("e%04d", 1+i%4096)}},
						Event{JobID: j.ID, Time: j.SubmitTime + 70, Kind: KindEnd, State: api.StateCompleted})
				}
				var row api.Job
				for k := range evs {
					if err := apply(&row, &evs[k]); err != nil {
						return err
					}
				}
				canonical(&row)
				if err := putJob(ctx, ptx, &row, nil); err != nil {
					return err
				}
				for k := range evs {
					if err := putEvent(ctx, ptx, &evs[k]); err != nil {
						return err
					}
				}
			}
			_, err := ptx.ExecContext(ctx, sqlSetNextJobID, strconv.Itoa(min(lo+10_000, total)+1), metaNextJobID)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
