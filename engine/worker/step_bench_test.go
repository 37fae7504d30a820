package worker

// How long a Step and an operator's verb hold the pool's mutex with N
// instances, with and without attached consoles waiting on the change log
// (BENCHMARKS.md). A Step holds p.mu from start to end, so its time per op
// is the mutex's hold time per step.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
)

func BenchmarkPoolStep(b *testing.B) {
	for _, n := range []int{2000, 10000} {
		h := bigPool(b, n)
		first, err := h.pool.ChangesSince(0, 2*n)
		if err != nil || len(first.Items) != n {
			b.Fatalf("first read: %d items, %v", len(first.Items), err)
		}
		h.clk.Advance(time.Second) // nothing due: probes at +10s, listing at +1m
		for _, watchers := range []int{0, 2} {
			// Consoles waiting for a change, as the API's long poll
			// (changed_since&wait) keeps them.
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{}, watchers)
			for range watchers {
				go func() {
					defer func() { done <- struct{}{} }()
					for since := first.Latest; ctx.Err() == nil; {
						h.pool.WaitChanges(ctx, since)
						if ch, err := h.pool.ChangesSince(since, 2*n); err == nil {
							since = ch.Latest
						}
					}
				}()
			}
			waiting := func() bool {
				h.pool.mu.Lock()
				defer h.pool.mu.Unlock()
				return h.pool.changes.waiters == watchers
			}
			wait.Until(b, fmt.Sprintf("%d watchers waiting", watchers), time.Minute, waiting)
			b.Run(fmt.Sprintf("instances=%d/watchers=%d/op=step", n, watchers), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					h.pool.Step()
				}
			})
			// A verb on one instance: what an operator's hold costs.
			id := first.Items[n/2].ID
			b.Run(fmt.Sprintf("instances=%d/watchers=%d/op=verb", n, watchers), func(b *testing.B) {
				b.ReportAllocs()
				beh := IdleHold
				for b.Loop() {
					if _, err := h.pool.SetIdleBehavior(id, beh); err != nil {
						b.Fatal(err)
					}
					beh = map[IdleBehavior]IdleBehavior{IdleHold: IdleRun, IdleRun: IdleHold}[beh]
				}
			})
			cancel()
			for range watchers {
				<-done
			}
		}
	}
}
