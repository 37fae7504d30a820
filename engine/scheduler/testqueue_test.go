package scheduler

import (
	"path/filepath"
	"testing"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/store/boltstore"
)

// openTestQueue opens a queue in a fresh file under tb's temporary
// directory, on clk, without fsync, closed when tb ends.
func openTestQueue(tb testing.TB, clk *clock.Fake) *queue.Queue {
	tb.Helper()
	st, err := boltstore.Open(boltstore.Options{Path: filepath.Join(tb.TempDir(), "q.db"), NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	q, err := queue.Open(queue.Options{Store: st, Clock: clk})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { q.Close() })
	return q
}
