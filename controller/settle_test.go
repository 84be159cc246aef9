package controller

import (
	"context"
	"testing"
	"time"
)

// A waiter on pendingCount returns when the count comes back to zero, not
// before, and gives up at its limit or when its context ends.
func TestPendingCountWait(t *testing.T) {
	var p pendingCount
	ctx := context.Background()
	if !p.wait(ctx, time.Hour) {
		t.Fatal("wait on a zero count said false")
	}
	p.add(2)
	if p.wait(ctx, 10*time.Millisecond) {
		t.Fatal("wait returned true with 2 in flight")
	}
	done := make(chan bool)
	go func() { done <- p.wait(ctx, time.Minute) }()
	p.add(-1)
	select {
	case <-done:
		t.Fatal("wait returned with 1 still in flight")
	case <-time.After(50 * time.Millisecond):
	}
	p.add(-1)
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("wait said false when the count reached zero")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("wait did not return when the count reached zero")
	}
	// Again from zero: a fresh channel, not the closed one.
	p.add(1)
	cctx, cancel := context.WithCancel(ctx)
	go func() { done <- p.wait(cctx, time.Minute) }()
	cancel()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("wait said true with 1 in flight after its context ended")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("wait did not return when its context ended")
	}
	p.add(-1)
	if !p.wait(ctx, time.Millisecond) {
		t.Fatal("zero again, but wait said false")
	}
}
