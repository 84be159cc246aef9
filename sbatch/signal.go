package sbatch

import (
	"strconv"
	"strings"
)

// SignalNumbers are the Linux signal numbers Slurm's commands accept by
// name (scancel --signal, sbatch --signal).
var SignalNumbers = map[string]int{
	"HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "TRAP": 5, "ABRT": 6, "BUS": 7,
	"FPE": 8, "KILL": 9, "USR1": 10, "SEGV": 11, "USR2": 12, "PIPE": 13,
	"ALRM": 14, "TERM": 15, "STKFLT": 16, "CHLD": 17, "CONT": 18, "STOP": 19,
	"TSTP": 20, "TTIN": 21, "TTOU": 22, "URG": 23, "XCPU": 24, "XFSZ": 25,
	"VTALRM": 26, "PROF": 27, "WINCH": 28, "IO": 29, "PWR": 30, "SYS": 31,
}

// slurmSignalNames are the names Slurm 22.05's commands know
// (sig_name2num, src/common/proc_args.c): scancel and sbatch refuse the
// other Linux names ("Unknown job signal: WINCH"), though a number works.
var slurmSignalNames = map[string]bool{
	"HUP": true, "INT": true, "QUIT": true, "ABRT": true, "KILL": true, "ALRM": true, "TERM": true,
	"USR1": true, "USR2": true, "URG": true, "CONT": true, "STOP": true, "TSTP": true, "TTIN": true,
	"TTOU": true, "XCPU": true,
}

// SignalNumber reads a signal as Slurm's commands do: one of Slurm's
// names, with or without SIG, any case, or a positive number.
func SignalNumber(s string) (int, bool) {
	if n, err := strconv.Atoi(s); err == nil {
		return n, n > 0 && n < 128
	}
	name := strings.TrimPrefix(strings.ToUpper(s), "SIG")
	n, ok := SignalNumbers[name]
	return n, ok && slurmSignalNames[name]
}

// SignalSpec is a parsed --signal=[R:|B:]sig[@secs].
type SignalSpec struct {
	Num    int  // signal number
	Before int  // seconds before the time limit (default 60)
	Batch  bool // B: the batch shell only
}

// ParseSignalSpec reads --signal as sbatch 22.05 does: one optional "R:" or
// "B:" prefix (not both, measured), a signal name or number, and "@secs"
// (0 to 65535, default 60).
func ParseSignalSpec(v string) (SignalSpec, bool) {
	sp := SignalSpec{Before: 60}
	switch {
	case strings.HasPrefix(strings.ToUpper(v), "B:"):
		sp.Batch, v = true, v[2:]
	case strings.HasPrefix(strings.ToUpper(v), "R:"):
		v = v[2:]
	}
	sig, secs, hasSecs := strings.Cut(v, "@")
	n, ok := SignalNumber(sig)
	if !ok {
		return SignalSpec{}, false
	}
	sp.Num = n
	if hasSecs {
		s, err := strconv.Atoi(secs)
		if err != nil || s < 0 || s > 65535 || !allDigits(secs) {
			return SignalSpec{}, false
		}
		sp.Before = s
	}
	return sp, true
}
