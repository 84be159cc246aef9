package sbatch

import (
	"slices"
	"strconv"
	"strings"
)

// DefaultMaxArraySize is Slurm's MaxArraySize default: task ids run from 0
// to MaxArraySize-1.
const DefaultMaxArraySize = 1001

// MsgInvalidArray is Slurm's strerror for every bad --array value
// (ESLURM_BAD_ARRAY_SPEC), which sbatch prints after "Batch job submission
// failed: ".
const MsgInvalidArray = "Invalid job array specification"

// Array is a parsed --array value: the task ids in ascending order, without
// duplicates, and the throttle (%N; 0 = none).
type Array struct {
	Tasks    []int64
	Throttle int
}

// ParseArray reads an --array value as slurmctld does (job_mgr.c
// _valid_array_inx): a comma list of ids and ranges "a-b" with an optional
// step ":s", then an optional "%N" throttle; every id must lie in
// [0, maxSize). Any error is MsgInvalidArray, as Slurm gives no detail.
func ParseArray(spec string, maxSize int) (Array, bool) {
	var a Array
	list, throttle, hasThrottle := strings.Cut(spec, "%")
	if hasThrottle {
		n, err := strconv.Atoi(throttle)
		if err != nil || n < 0 {
			return Array{}, false
		}
		a.Throttle = n
	}
	if list == "" || maxSize <= 0 {
		return Array{}, false
	}
	seen := map[int64]bool{}
	for _, part := range strings.Split(list, ",") {
		rng, stepText, hasStep := strings.Cut(part, ":")
		loText, hiText, isRange := strings.Cut(rng, "-")
		lo, ok1 := arrayIndex(loText, maxSize)
		hi, ok2 := lo, true
		if isRange {
			hi, ok2 = arrayIndex(hiText, maxSize)
		}
		step := int64(1)
		if hasStep {
			s, err := strconv.ParseInt(stepText, 10, 64)
			if err != nil || s <= 0 || !isRange {
				return Array{}, false
			}
			step = s
		}
		if !ok1 || !ok2 || hi < lo {
			return Array{}, false
		}
		for i := lo; i <= hi; i += step {
			if !seen[i] {
				seen[i] = true
				a.Tasks = append(a.Tasks, i)
			}
		}
	}
	slices.Sort(a.Tasks)
	return a, true
}

func arrayIndex(s string, maxSize int) (int64, bool) {
	if s == "" || !allDigits(s) || len(s) > 10 {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n < int64(maxSize)
}

// ArrayStep is SLURM_ARRAY_TASK_STEP: the gap between consecutive task ids
// when they are evenly spaced, else 1 (one task: 1).
func ArrayStep(tasks []int64) int64 {
	if len(tasks) < 2 {
		return 1
	}
	step := tasks[1] - tasks[0]
	for i := 2; i < len(tasks); i++ {
		if tasks[i]-tasks[i-1] != step {
			return 1
		}
	}
	return step
}

// FormatArrayTasks prints task ids the way squeue folds them (Slurm's
// bit_fmt): runs of consecutive ids as "a-b", others alone, comma
// separated; a run of evenly stepped ids is not folded ("5,7,9").
func FormatArrayTasks(tasks []int64) string {
	var b strings.Builder
	for i := 0; i < len(tasks); {
		j := i
		for j+1 < len(tasks) && tasks[j+1] == tasks[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(tasks[i], 10))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.FormatInt(tasks[j], 10))
		}
		i = j + 1
	}
	return b.String()
}

// ParseTaskSelector reads what follows "ID_" in a job id given to scancel,
// scontrol or squeue -j: one task "3" or a bracketed list "[1-3,7]" (ids
// and ranges, no step or throttle). ok is false for anything else.
func ParseTaskSelector(s string) ([]int64, bool) {
	if !strings.HasPrefix(s, "[") {
		if s == "" || !allDigits(s) || len(s) > 10 {
			return nil, false
		}
		n, _ := strconv.ParseInt(s, 10, 64)
		return []int64{n}, true
	}
	if !strings.HasSuffix(s, "]") || len(s) < 3 {
		return nil, false
	}
	var out []int64
	for _, part := range strings.Split(s[1:len(s)-1], ",") {
		loText, hiText, isRange := strings.Cut(part, "-")
		lo, ok1 := arrayIndex(loText, 1<<31)
		hi, ok2 := lo, true
		if isRange {
			hi, ok2 = arrayIndex(hiText, 1<<31)
		}
		if !ok1 || !ok2 || hi < lo || hi-lo > 1<<24 {
			return nil, false
		}
		for i := lo; i <= hi; i++ {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), true
}
