package ssh

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"hora/nodes"
)

// Probe checks that node answers: a connection (dialled if need be, without
// waiting out a reconnect backoff), a shell with root's rights, and a usable
// state directory. Bounded by ProbeTimeout as well as ctx.
func (e *Executor) Probe(ctx context.Context, node string) error {
	h, err := e.host(node)
	if err != nil {
		return err
	}
	return h.probe(ctx)
}

func (h *host) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, h.e.cfg.ProbeTimeout)
	defer cancel()
	r, err := h.run(ctx, h.prb, true, shProbe, nil, h.dir)
	if err != nil {
		return err
	}
	if r.code != 0 || !strings.Contains(string(r.out), "hora-probe-ok") {
		msg := strings.TrimSpace(string(r.out) + " " + string(r.errs))
		if strings.Contains(msg, "sudo") {
			msg += " (the SSH user needs passwordless sudo, or must be root)"
		}
		return fmt.Errorf("node %s: probe failed (exit %d): %s", h.node.Name, r.code, msg)
	}
	var sys nodes.NodeSystem
	sys.Boot, _ = nodes.ParseBootTime(string(r.out))
	for _, ln := range strings.Split(string(r.out), "\n") {
		if os, ok := strings.CutPrefix(ln, "os "); ok {
			sys.OS = strings.TrimSpace(os)
		}
	}
	h.mu.Lock()
	h.sys = sys
	h.mu.Unlock()
	return nil
}

// NodeSystem is the node's kernel and boot time as its last probe read
// them (nodes.SystemReader).
func (e *Executor) NodeSystem(node string) (nodes.NodeSystem, bool) {
	h, err := e.host(node)
	if err != nil {
		return nodes.NodeSystem{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sys, h.sys.OS != ""
}

// probeLoop probes every ProbeInterval and reports transitions: down after
// ProbeMisses failures in a row (or at once for a refused host key, which
// retrying does not fix), up after one success. Going down also ends every
// watched step of the node as StepLost: horad cannot know their fate until
// the node is back (then Reattach tells).
func (h *host) probeLoop() {
	defer h.e.wg.Done()
	misses := 0
	known, up := false, false
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-h.e.done:
			return
		case <-t.C:
		}
		err := h.probe(h.e.ctx)
		select {
		case <-h.e.done:
			return
		default:
		}
		var hk *HostKeyError
		switch {
		case err == nil:
			misses = 0
			if !known || !up {
				known, up = true, true
				h.mu.Lock()
				h.down = false
				h.mu.Unlock()
				h.e.log.Info("node up", "node", h.node.Name)
				h.event(NodeEvent{Node: h.node.Name, Up: true})
			}
		default:
			misses++
			if errors.As(err, &hk) {
				misses = max(misses, h.e.cfg.ProbeMisses)
			}
			if misses >= h.e.cfg.ProbeMisses && (!known || up) {
				known, up = true, false
				h.e.log.Warn("node down", "node", h.node.Name, "err", err)
				// The event first: a receiver that learns the node is down
				// before its steps are reported lost can re-plan their work
				// (dlt chunks lost with their node are sent again).
				h.event(NodeEvent{Node: h.node.Name, Up: false, Err: err})
				h.markDown(err)
			}
		}
		t.Reset(h.e.cfg.ProbeInterval)
	}
}

func (h *host) event(ev NodeEvent) {
	select {
	case h.e.events <- ev:
	case <-h.e.done:
	}
}

// markDown reports every watched step of the node as lost and drops the
// connection, so that nothing waits on it.
func (h *host) markDown(cause error) {
	h.mu.Lock()
	h.down = true
	names := make([]string, 0, len(h.watched))
	for n := range h.watched {
		names = append(names, n)
	}
	c := h.client
	h.mu.Unlock()
	if c != nil {
		h.drop(c)
	}
	for _, n := range names {
		key, _ := nodes.ParseStepName(n)
		h.report(nodes.Status{Key: key, Node: h.node.Name, State: nodes.StepLost,
			Err: fmt.Sprintf("node %s unreachable: %v", h.node.Name, cause)})
	}
}

// shResources prints the node's online CPUs, MemTotal (kB) and the number
// of /dev/nvidiaN devices, one per line.
const shResources = `
nproc 2>/dev/null || getconf _NPROCESSORS_ONLN
awk '$1 == "MemTotal:" { print $2 }' /proc/meminfo
n=0
for d in /dev/nvidia[0-9]*; do
	case ${d#/dev/nvidia} in *[!0-9]*|'') ;; *) n=$((n+1));; esac
done
echo $n
`

// ProbeResources reads a node's CPUs, memory and GPUs on the node
// (nodes.ResourceProber), bounded by ProbeTimeout as well as ctx.
func (e *Executor) ProbeResources(ctx context.Context, node string) (nodes.NodeResources, error) {
	h, err := e.host(node)
	if err != nil {
		return nodes.NodeResources{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.ProbeTimeout)
	defer cancel()
	r, err := h.run(ctx, h.prb, true, shResources, nil)
	if err != nil {
		return nodes.NodeResources{}, err
	}
	f := strings.Fields(string(r.out))
	if r.code != 0 || len(f) != 3 {
		return nodes.NodeResources{}, fmt.Errorf("node %s: probing resources (exit %d): %q %q", node, r.code, r.out, r.errs)
	}
	cpus, err1 := strconv.Atoi(f[0])
	kb, err2 := strconv.ParseInt(f[1], 10, 64)
	gpus, err3 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || err3 != nil || cpus < 1 {
		return nodes.NodeResources{}, fmt.Errorf("node %s: probing resources: unexpected answer %q", node, r.out)
	}
	return nodes.NodeResources{CPUs: cpus, MemMB: kb / 1024, GPUs: gpus}, nil
}
