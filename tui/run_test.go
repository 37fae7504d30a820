package tui

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestCoalesce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := make(chan struct{})
	var sent atomic.Int32
	done := make(chan struct{})
	go func() { coalesce(ctx, in, 50*time.Millisecond, func() { sent.Add(1) }); close(done) }()
	for range 100 {
		in <- struct{}{}
	}
	time.Sleep(150 * time.Millisecond)
	if n := sent.Load(); n < 1 || n > 2 {
		t.Errorf("100 changes gave %d sends, want 1 or 2", n)
	}
	close(in)
	<-done
}
