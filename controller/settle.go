package controller

import (
	"context"
	"sync"
	"time"
)

// pendingCount counts things in flight and lets a goroutine wait until none
// is: the batched ends applied to memory whose commit has not succeeded yet
// (endsUnsettled). A waiter sleeps on a channel closed when the count comes
// back to zero, rather than polling it.
type pendingCount struct {
	mu   sync.Mutex
	n    int64
	zero chan struct{} // closed while n == 0; a fresh one while n > 0
}

func (p *pendingCount) add(d int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	was := p.n
	p.n += d
	switch {
	case was == 0 && p.n > 0:
		p.zero = make(chan struct{})
	case was > 0 && p.n <= 0:
		p.n = 0
		close(p.zero)
	}
}

// wait reports whether the count is zero now or became zero within limit,
// and false at once when ctx ends.
func (p *pendingCount) wait(ctx context.Context, limit time.Duration) bool {
	p.mu.Lock()
	n, zero := p.n, p.zero
	p.mu.Unlock()
	if n == 0 {
		return true
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-zero:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}
