package config

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"hora/sbatch"
	"hora/scheduler"
)

// layout is sockets × cores × threads, 0 when none is given (a missing
// factor counts 1).
func (n *Node) layout() int {
	if n.Sockets == 0 && n.CoresPerSocket == 0 && n.ThreadsPerCore == 0 {
		return 0
	}
	return max(n.Sockets, 1) * max(n.CoresPerSocket, 1) * max(n.ThreadsPerCore, 1)
}

// nodeGres reads a node's gres ("gpu:a100:2,nvme:1"), each entry with a
// positive count.
func nodeGres(s string) ([]scheduler.GresDef, error) {
	gs, err := sbatch.ParseGres(s)
	if err != nil {
		return nil, fmt.Errorf("invalid gres %q: %v", s, err)
	}
	var out []scheduler.GresDef
	for _, g := range gs {
		out = append(out, scheduler.GresDef{Name: g.Name, Type: g.Type, Count: g.Count})
	}
	return out, nil
}

// procMeminfo and devDir are where the probes look; tests point them
// elsewhere.
var (
	procMeminfo = "/proc/meminfo"
	devDir      = "/dev"
)

// probeMemMB is this machine's MemTotal in MiB (0 if unreadable).
func probeMemMB() int64 {
	f, err := os.Open(procMeminfo)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}

var nvidiaDev = regexp.MustCompile(`^nvidia[0-9]+$`)

// probeGPUs is "gpu:N" for the N NVIDIA devices of this machine, or "".
func probeGPUs() string {
	ents, _ := filepath.Glob(filepath.Join(devDir, "nvidia*"))
	n := 0
	for _, e := range ents {
		if nvidiaDev.MatchString(filepath.Base(e)) {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return "gpu:" + strconv.Itoa(n)
}

// Probed is what was read on a node (nproc, MemTotal, /dev/nvidiaN).
type Probed struct {
	CPUs  int
	MemMB int64
	GPUs  int
}

// SetProbed records what horad read on an SSH node at start-up: it fills
// the node's cpus, memory_mb (less mem_reserve_mb) and gres wherever
// hora.toml leaves them out (0 or "").
func (c *Config) SetProbed(node string, p Probed) {
	if c.probed == nil {
		c.probed = map[string]Probed{}
	}
	c.probed[node] = p
}

// NeedsProbe reports whether a node's hora.toml entry leaves out
// something a probe would give.
func (n *Node) NeedsProbe() bool {
	return n.CPUs == 0 && n.layout() == 0 || n.MemoryMB == 0 || n.Gres == ""
}
