package scheduler

import (
	"path/filepath"
	"testing"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/store/boltstore"
	"dispatch-tui/engine/view"
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

// oneContainer is a fresh queue on a fake clock at 2026-01-01 holding one
// waiting container of 1 vCPU and 1 GiB, and a default config of
// benchTypes.
func oneContainer(tb testing.TB) (*clock.Fake, *queue.Queue, *config.Config, view.Container) {
	tb.Helper()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q := openTestQueue(tb, clk)
	cfg := config.Default()
	cfg.InstanceTypes = benchTypes
	c, err := q.Submit(queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 30}}, "test")
	if err != nil {
		tb.Fatal(err)
	}
	return clk, q, cfg, c
}
