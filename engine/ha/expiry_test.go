package ha_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/ha"
)

// TestStandbyTriesAsTheLeaseRunsOut: a standby whose try found the lease
// held tries again as that lease runs out (database time), not a whole
// Retry later: a takeover after a kill follows the lease's end by
// milliseconds, not by up to lease_retry.
func TestStandbyTriesAsTheLeaseRunsOut(t *testing.T) {
	url := pgtest.NewDatabase(t)
	a := newNode(t, url, "a", ha.MinLease, nil)
	a.el.Step(context.Background()) // a leads, then renews no more: killed
	if _, ok := a.el.Token(); !ok {
		t.Fatal("a did not take the free lease")
	}
	b := newNode(t, url, "b", ha.MinLease, nil)
	// A Retry far longer than the test: only the lease's end can bring
	// b's next try in time.
	const retry = 10 * time.Minute
	b.el = ha.New(b.store, ha.Options{Node: "b", Address: "https://b:7070", Lease: ha.MinLease, Retry: retry,
		Notify: func(c ha.Change) { b.mu.Lock(); b.changes = append(b.changes, c); b.mu.Unlock() }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.el.Run(ctx) }()
	defer func() { cancel(); <-done }()
	wait.With{Seen: func() string {
		h := b.holder(t)
		return fmt.Sprintf("the lease: %+v; b was told %+v", h, b.seen())
	}}.Until(t, "b leads once a's lease ran out, not a Retry ("+retry.String()+") after its first try", 30*time.Second, func() bool {
		_, ok := b.el.Token()
		return ok
	})
	if cs := b.seen(); len(cs) != 1 || cs[0].Kind != ha.Elected || cs[0].Epoch != 2 {
		t.Fatalf("b was told %+v, want elected with epoch 2", cs)
	}
}
