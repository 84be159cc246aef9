package sshtest

import (
	"bytes"
	"os"
	"strconv"
)

// ProcState is the state letter of process pid in /proc/PID/stat ('R',
// 'S', 'T', 'Z', …), or 0 when there is no such process.
func ProcState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := bytes.LastIndexByte(b, ')')
	if err != nil || i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

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
