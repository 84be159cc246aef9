package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// hora replay and hora compare run in hora-sim, a binary of its own, so that
// the client commands link neither the simulator nor the TOML reader: the
// verbs hand the process over to it (exec), arguments, standard streams and
// exit status unchanged.

// simCandidates are where hora-sim is looked for: $HORA_SIM if set, beside
// this binary (bin/ of a build), and the packaged /usr/libexec/hora.
func simCandidates() []string {
	if p := os.Getenv("HORA_SIM"); p != "" {
		return []string{p}
	}
	var c []string
	if self, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(self); err == nil {
			self = real
		}
		c = append(c, filepath.Join(filepath.Dir(self), "hora-sim"))
	}
	return append(c, "/usr/libexec/hora/hora-sim")
}

func execSim(env *Env, verb string, args []string) int {
	tried := simCandidates()
	for _, p := range tried {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			continue
		}
		err := syscall.Exec(p, append([]string{"hora-sim", verb}, args...), os.Environ())
		fmt.Fprintf(env.Stderr, "hora %s: running %s: %v\n", verb, p, err)
		return 1
	}
	fmt.Fprintf(env.Stderr, "hora %s: hora-sim not found (tried %s; set HORA_SIM to its path)\n", verb, strings.Join(tried, ", "))
	return 1
}
