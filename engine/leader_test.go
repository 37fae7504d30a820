package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/store"
	"dispatch-tui/engine/store/pgstore"
)

// TestFencedFlushStopsTheLeader: an engine run as a term of leadership,
// on a store fenced by its epoch, hears of the first pass whose write the
// store refused for the epoch: the node must stop it, not retry forever.
func TestFencedFlushStopsTheLeader(t *testing.T) {
	url := pgtest.NewDatabase(t)
	lease, err := pgstore.Open(pgstore.Options{URL: url, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Close()
	if _, ok, err := lease.Acquire(context.Background(), "a", "x", time.Minute); err != nil || !ok {
		t.Fatalf("acquire: %v, %v", ok, err)
	}
	var acting atomic.Bool
	acting.Store(true)
	st, err := pgstore.Open(pgstore.Options{URL: url, Timeout: 30 * time.Second, Fence: func() (int64, bool) { return 1, acting.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var fenced []error
	cfg := testConfig(t)
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	cl := fake.New(fake.Options{Clock: clk})
	eng, err := New(Options{Config: cfg, InstanceSet: cl, NewExecutor: cl.Executor, Clock: clk, Store: st, Owner: "test",
		Leader: &Leader{Epoch: 1, MayAct: acting.Load, Fenced: func(err error) { mu.Lock(); fenced = append(fenced, err); mu.Unlock() }}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	eng.Step()
	mu.Lock()
	if len(fenced) != 0 {
		t.Fatalf("fenced while leading: %v", fenced)
	}
	mu.Unlock()
	acting.Store(false)
	// The submit's own write is refused; the change stays in memory for
	// the pass's flush, which is refused in turn.
	eng.Submit(queue.Spec{Name: "after", Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib}}, "test")
	eng.Step()
	mu.Lock()
	defer mu.Unlock()
	var fe *store.FencedError
	if len(fenced) == 0 || !errors.As(fenced[0], &fe) {
		t.Fatalf("Fenced heard %v after a pass whose write the fence refused; want a store.FencedError", fenced)
	}
}
