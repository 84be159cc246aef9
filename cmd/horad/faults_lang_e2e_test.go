package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"hora/api"
	"hora/config"
	"hora/store"
)

// The job language and the real-time side under faults: the clients also
// submit job arrays with a throttle, jobs that depend on others, and rigid
// deadline jobs to the reserve partition; create and delete advance
// reservations; run srun; the nemesis reconfigures horad (SIGHUP, what
// `systemctl reload horad` sends). The checker holds:
//   - every task of an acknowledged array is stored, and no more of an
//     array's tasks ran at once than its %throttle;
//   - a job that depends on another (afterok, afterany) never started
//     before that job's end was recorded, and under afterok only after it
//     COMPLETED.

// arraySub is an acknowledged array submission.
type arraySub struct {
	tasks, throttle int
}

// depSub is an acknowledged submission that depends on job on.
type depSub struct {
	kind string // afterok or afterany
	on   int64
}

// langOp draws one of the operations above (the caller has drawn that it
// is one of them) and says whether horad accepted it.
func (h *harness) langOp(r *rand.Rand) bool {
	switch p := r.IntN(100); {
	case p < 30:
		n, k := 2+r.IntN(4), 1+r.IntN(2)
		args, noRequeue := h.sbatchArgs(r)
		args = append([]string{fmt.Sprintf("--array=0-%d%%%d", n-1, k)}, args...)
		return h.submitLang("sbatch --array", args, noRequeue, func(id int64) { h.arrays[id] = arraySub{tasks: n, throttle: k} })
	case p < 60:
		on, has := h.someSingleJob(r)
		if !has {
			return false
		}
		kind := []string{"afterok", "afterany"}[r.IntN(2)]
		args, noRequeue := h.sbatchArgs(r)
		args = append([]string{"--dependency=" + kind + ":" + strconv.FormatInt(on, 10), "--kill-on-invalid-dep=yes"}, args...)
		return h.submitLang("sbatch --dependency", args, noRequeue, func(id int64) { h.deps[id] = depSub{kind: kind, on: on} })
	case p < 75:
		// A rigid deadline job booked by the reserve policy: admitted with
		// its start guaranteed, or refused at once.
		args := []string{"-p", "res", "-o", "/dev/null", "-t", "1", "-N", "1",
			"--deadline", "now+" + strconv.Itoa([]int{90, 200, 600}[r.IntN(3)]), h.script, "1"}
		return h.submitLang("sbatch -p res --deadline", args, false, func(int64) {})
	case p < 90:
		h.mu.Lock()
		h.resvSeq++
		name := fmt.Sprintf("fh%d", h.resvSeq)
		var old string
		if len(h.resvNames) > 0 && r.IntN(2) == 0 {
			k := r.IntN(len(h.resvNames))
			old = h.resvNames[k]
			h.resvNames = append(h.resvNames[:k], h.resvNames[k+1:]...)
		}
		h.mu.Unlock()
		if old != "" {
			_, stderr, code := h.cmd("scontrol", "delete", "ReservationName="+old)
			h.mu.Lock()
			if rv := h.resvs[old]; rv != nil && code == 0 {
				rv.deleted = time.Now().Unix()
			} else if rv != nil {
				rv.uncertain = true // it may or may not be gone (horad killed while answering)
			}
			h.mu.Unlock()
			h.langCount("scontrol delete reservation", code == 0, stderr)
			return code == 0
		}
		_, stderr, code := h.cmd("scontrol", "create", "reservation", "ReservationName="+name,
			"StartTime=now+"+strconv.Itoa(5+r.IntN(60)), "Duration=1", "NodeCnt=1", "Users=root", "PartitionName=res")
		if code == 0 {
			h.noteResv(name)
		}
		h.langCount("scontrol create reservation", code == 0, stderr)
		return code == 0
	default:
		// An interactive job step: allocation, task, release. A client
		// killed by its timeout leaves its allocation to its one-minute
		// limit.
		_, stderr, code := h.cmdTimeout(20*time.Second, "srun", "-n", "1", "-t", "1", "--immediate=5", "true")
		h.langCount("srun", code == 0, stderr)
		return code == 0
	}
}

// resvRec is a reservation as created, and when its deletion was
// acknowledged.
type resvRec struct {
	nodes            []string
	start, end       int64
	created, deleted int64
	uncertain        bool // a deletion not answered: it may have happened
}

// noteResv records a reservation just created, with the nodes and window
// horad gave it (asked at once; a horad killed meanwhile leaves it
// unchecked).
func (h *harness) noteResv(name string) {
	created := time.Now().Unix()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := api.NewClient(h.c.sock).Reservations(ctx, name)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.resvNames = append(h.resvNames, name)
	if err != nil || len(resp.Reservations) != 1 {
		return
	}
	r := resp.Reservations[0]
	h.resvs[name] = &resvRec{nodes: r.Nodes, start: r.StartTime, end: r.EndTime, created: created}
}

// submitLang is submit counted as op, with note called (under h.mu) on the
// acknowledged job's id.
func (h *harness) submitLang(op string, args []string, noRequeue bool, note func(id int64)) bool {
	id, ok, stderr := h.submit(args, noRequeue)
	if ok {
		h.mu.Lock()
		note(id)
		h.mu.Unlock()
	}
	h.langCount(op, ok, stderr)
	return ok
}

// submit runs sbatch and records an acknowledged job.
func (h *harness) submit(args []string, noRequeue bool) (int64, bool, string) {
	out, stderr, code := h.cmd("sbatch", args...)
	h.submitAnswer(code, out, stderr)
	m := faultSubmitted.FindStringSubmatch(out)
	if code != 0 || m == nil {
		return 0, false, stderr
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.acked[id] {
		h.t.Errorf("job id %d acknowledged twice", id)
	}
	h.acked[id] = true
	if noRequeue {
		h.noRequeue[id] = true
	}
	return id, true, ""
}

// someSingleJob is an acknowledged job that is not an array.
func (h *harness) someSingleJob(r *rand.Rand) (int64, bool) {
	for range 5 {
		id, ok := h.someJob(r)
		if !ok {
			return 0, false
		}
		h.mu.Lock()
		_, isArray := h.arrays[id]
		h.mu.Unlock()
		if !isArray {
			return id, true
		}
	}
	return 0, false
}

// langCount counts an operation, and the answers of those refused (for
// the log: a refusal is not a violation, horad may be stopped or the
// request may not fit).
func (h *harness) langCount(op string, ok bool, stderr string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.langOps == nil {
		h.langOps, h.langRefusals = map[string][2]int{}, map[string]int{}
	}
	c := h.langOps[op]
	c[0]++
	if ok {
		c[1]++
	} else if line, _, _ := strings.Cut(strings.TrimSpace(stderr), "\n"); len(h.langRefusals) < 40 {
		h.langRefusals[op+": "+line]++
	}
	h.langOps[op] = c
}

// checkLang holds arrays and dependencies to what was acknowledged, from the
// stored jobs and every job's runs (by event sequence).
func (h *harness) checkLang(jobs []api.Job, runsOf map[int64][]faultRun, endsOf map[int64][]store.Event) {
	t := h.t
	tasks := map[int64][]int64{}
	for _, j := range jobs {
		if j.ArrayJobID != 0 {
			tasks[j.ArrayJobID] = append(tasks[j.ArrayJobID], j.ID)
		}
	}
	for id, a := range h.arrays {
		got := tasks[id]
		if len(got) != a.tasks {
			t.Errorf("array %d: %d tasks stored, %d acknowledged (--array=0-%d)", id, len(got), a.tasks, a.tasks-1)
		}
		// Never more tasks running at once than the throttle.
		type point struct {
			seq   int64
			delta int
		}
		var pts []point
		for _, task := range got {
			for _, r := range runsOf[task] {
				pts = append(pts, point{r.start, 1})
				if r.end > 0 {
					pts = append(pts, point{r.end, -1})
				}
			}
		}
		sort.Slice(pts, func(i, k int) bool { return pts[i].seq < pts[k].seq })
		running := 0
		for _, p := range pts {
			if running += p.delta; running > a.throttle {
				t.Errorf("array %d: %d tasks running at event %d, throttle %%%d", id, running, p.seq, a.throttle)
				break
			}
		}
	}
	submitted := map[int64]int64{}
	for _, j := range jobs {
		submitted[j.ID] = j.SubmitTime
	}
	for id, d := range h.deps {
		// A dependency on a job that had ended min_job_age_s (300 s, the
		// harness's configuration leaves the default) or more before the
		// dependent's submission may have been lifted: horad had forgotten
		// it, and lifts the dependency as Slurm does on a purged job
		// (docs/jobs.md). The 110-minute run met two such afterok
		// dependents of cancelled jobs, submitted 345 and 551 s after.
		if ends := endsOf[d.on]; len(ends) > 0 && submitted[id] >= ends[0].Time+int64(config.Default().MinJobAgeS) {
			continue
		}
		// The first recorded end of the job depended on (COMPLETED for
		// afterok): before it, no run of the dependent may start.
		var first int64
		for _, ev := range endsOf[d.on] {
			if d.kind == "afterany" || ev.State == api.StateCompleted {
				first = ev.Seq
				break
			}
		}
		for _, r := range runsOf[id] {
			if first == 0 || r.start < first {
				t.Errorf("job %d (--dependency=%s:%d) started at event %d, before job %d's end allowed it (event %d, 0 = never)",
					id, d.kind, d.on, r.start, d.on, first)
			}
		}
	}
	h.checkResvs(runsOf)
	var ops []string
	for op, c := range h.langOps {
		ops = append(ops, fmt.Sprintf("%s %d (%d accepted)", op, c[0], c[1]))
	}
	sort.Strings(ops)
	t.Logf("fault harness (%s): %d arrays, %d dependent jobs; %s; refusals %v", h.topo, len(h.arrays), len(h.deps),
		strings.Join(ops, ", "), h.langRefusals)
}

// checkResvs: no job runs on a reservation's nodes during its window (the
// harness never submits into one). A run that started once the reservation
// existed may not touch the window at all (2 s for whole-second times); one
// already running when it was created was booked around by its time limit,
// and may overrun that by horad's kill wait (30 s) before it is killed.
func (h *harness) checkResvs(runsOf map[int64][]faultRun) {
	checked := 0
	for name, rv := range h.resvs {
		if rv.uncertain {
			continue
		}
		checked++
		end := rv.end
		if rv.deleted > 0 {
			end = min(end, rv.deleted)
		}
		for id, runs := range runsOf {
			for _, r := range runs {
				if r.endAt == 0 || !slices.ContainsFunc(r.nodes, func(n string) bool { return slices.Contains(rv.nodes, n) }) {
					continue
				}
				overlap := min(r.endAt, end) - max(r.startAt, rv.start)
				slack := int64(2)
				if r.startAt < rv.created {
					slack = 35
				}
				if overlap > slack {
					h.t.Errorf("reservation %s (nodes %v, %d to %d, created at %d, deleted at %d): job %d ran on %v from %d to %d",
						name, rv.nodes, rv.start, rv.end, rv.created, rv.deleted, id, r.nodes, r.startAt, r.endAt)
				}
			}
		}
	}
	h.t.Logf("fault harness (%s): %d reservations checked for foreign jobs", h.topo, checked)
}
