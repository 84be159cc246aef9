package sbatch

import (
	"strconv"
	"strings"
)

// MsgDependency is Slurm's strerror for a --dependency it cannot accept
// (ESLURM_DEPENDENCY), printed after "Batch job submission failed: ".
const MsgDependency = "Job dependency problem"

// Dependency kinds, spelled as Slurm spells them.
const (
	DepAfter      = "after"
	DepAfterAny   = "afterany"
	DepAfterOK    = "afterok"
	DepAfterNotOK = "afternotok"
	DepAfterCorr  = "aftercorr"
	DepSingleton  = "singleton"
)

// AllTasks is the Task of a dependency on a whole job array ("7" when 7 is
// an array, shown as 7_*); NoTask names a plain job.
const (
	NoTask   int64 = -1
	AllTasks int64 = -2
)

// DepTerm is one condition of a dependency: Kind on job JobID (task Task
// of an array, NoTask for a plain id), Minutes after the event for "+time".
// A singleton term has no job.
type DepTerm struct {
	Kind    string `json:"kind"`
	JobID   int64  `json:"job_id,omitempty"`
	Task    int64  `json:"task,omitempty"`
	Minutes int64  `json:"minutes,omitempty"`
}

// Dependency is a parsed --dependency: terms joined by "," (all must hold)
// or, with Any, by "?" (one suffices; one "?" anywhere makes it any-of).
type Dependency struct {
	Terms []DepTerm `json:"terms"`
	Any   bool      `json:"any,omitempty"`
}

// ParseDependency reads a --dependency value (slurmctld's
// _parse_dependency_jobid_new): "type:id[+min][:id...]" terms and
// "singleton", separated by "," or "?". Ids may be "7" or "7_3". An empty
// value is no dependency. ok is false for anything Slurm refuses with
// "Job dependency problem".
func ParseDependency(s string) (Dependency, bool) {
	var d Dependency
	if s == "" {
		return d, true
	}
	// One '?' makes the whole dependency any-of, whatever the other
	// separators are (measured on 22.05: "a,b?c" shows as "a?b?c").
	d.Any = strings.Contains(s, "?")
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '?' }) {
		if part == DepSingleton {
			d.Terms = append(d.Terms, DepTerm{Kind: DepSingleton})
			continue
		}
		kind, ids, ok := strings.Cut(part, ":")
		switch kind {
		case DepAfter, DepAfterAny, DepAfterOK, DepAfterNotOK, DepAfterCorr:
		default:
			return Dependency{}, false
		}
		if !ok || ids == "" {
			return Dependency{}, false
		}
		for _, idText := range strings.Split(ids, ":") {
			t := DepTerm{Kind: kind, Task: NoTask}
			if idText2, mins, hasMins := strings.Cut(idText, "+"); hasMins {
				m, err := strconv.ParseInt(mins, 10, 64)
				if err != nil || m < 0 || !allDigits(mins) {
					return Dependency{}, false
				}
				t.Minutes, idText = m, idText2
			}
			base, task, hasTask := strings.Cut(idText, "_")
			id, err := strconv.ParseInt(base, 10, 64)
			if err != nil || id <= 0 || !allDigits(base) {
				return Dependency{}, false
			}
			t.JobID = id
			if hasTask {
				if task == "*" {
					t.Task = AllTasks
				} else {
					n, err := strconv.ParseInt(task, 10, 64)
					if err != nil || n < 0 || !allDigits(task) {
						return Dependency{}, false
					}
					t.Task = n
				}
			}
			d.Terms = append(d.Terms, t)
		}
	}
	return d, true
}

// Empty reports whether d has no term.
func (d Dependency) Empty() bool { return len(d.Terms) == 0 }

// TermText prints one term as squeue %E and scontrol show it, without the
// "(state)" suffix: "afterok:7", "afterany:7_*", "after:7+5", "singleton".
func (t DepTerm) TermText() string {
	if t.Kind == DepSingleton {
		return DepSingleton
	}
	s := t.Kind + ":" + strconv.FormatInt(t.JobID, 10)
	switch {
	case t.Task == AllTasks:
		s += "_*"
	case t.Task >= 0:
		s += "_" + strconv.FormatInt(t.Task, 10)
	}
	if t.Minutes > 0 {
		s += "+" + strconv.FormatInt(t.Minutes, 10)
	}
	return s
}

// Separator is "?" for an any-of dependency, else ",".
func (d Dependency) Separator() string {
	if d.Any {
		return "?"
	}
	return ","
}
