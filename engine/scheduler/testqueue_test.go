package scheduler

import (
	"path/filepath"
	"testing"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/queue"
)

// openTestQueue opens a queue in a fresh file under tb's temporary
// directory, on clk, without fsync, closed when tb ends.
func openTestQueue(tb testing.TB, clk *clock.Fake) *queue.Queue {
	tb.Helper()
	q, err := queue.Open(queue.Options{Path: filepath.Join(tb.TempDir(), "q.db"), Clock: clk, NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { q.Close() })
	return q
}
