package sshtest

import (
	"os"
	"strconv"
)

// Pids lists the processes of this machine (every test host's included:
// the hosts share its process table) for which match, given the pid and
// its /proc directory, says yes. Tests use it to find what a step left
// behind on its nodes.
func Pids(match func(pid int, dir string) bool) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && match(pid, "/proc/"+e.Name()) {
			pids = append(pids, pid)
		}
	}
	return pids
}
