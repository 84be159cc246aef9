package sbatch

import (
	"strconv"
	"strings"
)

// noArrayTask is what %a prints for a job that is not an array task:
// Slurm's NO_VAL (0xfffffffe).
const noArrayTask = 4294967294

// PatternFields are the values an --output/--error/--input pattern may
// refer to (COMPAT.md §2.2).
type PatternFields struct {
	JobID, ArrayJobID int64 // ArrayJobID 0 = not an array job
	ArrayTaskID       int64 // -1 = not an array task
	User, JobName     string
	Node              string // first node; %N prints its short name
	NodeIndex, TaskID int
	StepID            string // "" or "batch" for the batch script
	Restarts          int    // %r
}

// ExpandPattern expands a Slurm filename pattern (print_fields.c
// expand_stdio_fields): %A %a %b %j %J %N %n %t %s %u %x %r and %%, with an
// optional zero-padding width after the '%' (at most 10, so %4j → 0128;
// string fields ignore it). An unknown letter stays with its '%' ("%q");
// digits before an unknown letter collapse to their last digit and lose
// the '%' ("%12q" → "2q"); a '%' at the very end is dropped. A pattern
// holding a backslash is not expanded at all and loses its backslashes,
// which is how users write a literal '%' in a file name.
func isPatternLetter(c byte) bool { return strings.IndexByte("AabjJNntsuxr", c) >= 0 }

func ExpandPattern(pattern string, f PatternFields) string {
	if strings.ContainsRune(pattern, '\\') {
		return strings.ReplaceAll(pattern, "\\", "")
	}
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		j := i + 1
		for j < len(pattern) && isDigit(pattern[j]) {
			j++
		}
		if j == i+1 && j < len(pattern) && pattern[j] == '%' {
			b.WriteByte('%')
			i = j
			continue
		}
		if j >= len(pattern) || !isPatternLetter(pattern[j]) {
			switch {
			case j > i+1:
				// Digits without a field letter: Slurm keeps only the
				// last digit and drops the '%' ("%12q" → "2q").
				b.WriteByte(pattern[j-1])
				i = j - 1
			case j < len(pattern):
				// An unknown letter stays, with its '%'.
				b.WriteString(pattern[i : j+1])
				i = j
			}
			// A lone '%' at the end is dropped.
			continue
		}
		width := 0
		if j > i+1 {
			w, err := strconv.Atoi(pattern[i+1 : j])
			if err != nil || w > 10 {
				w = 10
			}
			width = w
		}
		num := func(n int64) { b.WriteString(padNum(n, width)) }
		arrayTask := f.ArrayTaskID
		if arrayTask < 0 {
			arrayTask = noArrayTask
		}
		switch pattern[j] {
		case 'A':
			if f.ArrayJobID > 0 {
				num(f.ArrayJobID)
			} else {
				num(f.JobID)
			}
		case 'a':
			num(arrayTask)
		case 'b':
			num(arrayTask % 10)
		case 'j':
			num(f.JobID)
		case 'J':
			num(f.JobID)
			if f.StepID != "" && f.StepID != "batch" {
				b.WriteString("." + f.StepID)
			}
		case 'N':
			node, _, _ := strings.Cut(f.Node, ".")
			b.WriteString(node)
		case 'n':
			num(int64(f.NodeIndex))
		case 't':
			num(int64(f.TaskID))
		case 's':
			if f.StepID == "" {
				b.WriteString("batch")
			} else {
				b.WriteString(f.StepID)
			}
		case 'u':
			b.WriteString(f.User)
		case 'x':
			b.WriteString(f.JobName)
		case 'r':
			num(int64(f.Restarts))
		}
		i = j
	}
	return b.String()
}
