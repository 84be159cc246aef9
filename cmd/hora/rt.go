package main

import (
	"strconv"
	"strings"

	"hora/api"
)

// rtFrameText is a periodic job's frame and buffer for squeue and sacct,
// "0.1s/10" (a frame every 0.1 s, 10 frames of buffer); "N/A" for other jobs.
func rtFrameText(s *api.JobSpec) string {
	if s.RTFrame <= 0 {
		return "N/A"
	}
	return rtSeconds(s.RTFrame) + "/" + strconv.Itoa(s.RTBuffer)
}

func rtSeconds(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) + "s" }

// rtWorkList is the work per frame of each process, compressed as Slurm
// compresses per-node counts: "0.04s(x3),0.02s".
func rtWorkList(work []float64) string {
	var parts []string
	for k := 0; k < len(work); {
		n := 1
		for k+n < len(work) && work[k+n] == work[k] {
			n++
		}
		p := rtSeconds(work[k])
		if n > 1 {
			p += "(x" + strconv.Itoa(n) + ")"
		}
		parts = append(parts, p)
		k += n
	}
	return strings.Join(parts, ",")
}

// rtMissesText is a periodic job's count of missed frames (reported by the
// job, scontrol update RTMisses=) for squeue and sacct, N/A for other jobs.
func rtMissesText(s *api.JobSpec) string {
	if s.RTFrame <= 0 {
		return "N/A"
	}
	return strconv.Itoa(s.RTMisses)
}
