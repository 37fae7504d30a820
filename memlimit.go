// The daemon's soft memory limit: dispatcher.memory_limit as its floor,
// raised to 1.75 times the live heap while the queue outgrows it
// (docs/design.md §9).

package main

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"dispatch-tui/engine/config"
)

// memoryLimitEvery is how often the daemon compares its live heap with its
// soft memory limit.
const memoryLimitEvery = 10 * time.Second

// memoryLimit keeps the soft memory limit at max(floor, LiveHeapRoom × live
// heap), config.LiveHeapRoom being 1.75. A fixed limit below the live heap has the collector run without pause
// (a million containers hold ~740–800 MiB against the 160 MiB default: a
// core spent on collection with nothing to do). Three quarters of the live
// heap again is the room between collections: a quiet queue allocates next
// to nothing (its passes are skipped), and under churn a collection of a
// million records costs seconds of CPU, so room matters: at a million, 1.5
// had the collector take half the daemon's CPU and held the churn under
// 10,000 changes a second, where 1.75 reached it with the daemon's peak RSS
// at 1,284 MiB, under the 1.5 GiB it must stay within; GOGC's 2 would not
// leave that margin (BENCHMARKS.md). The floor keeps the limit's use for
// small queues, freed memory returned to the OS soon after a burst.
type memoryLimit struct {
	floor   int64
	current int64
	log     *slog.Logger
	set     func(int64) int64 // debug.SetMemoryLimit
	live    func() int64      // the live heap after the last collection
}

// adjust sets the limit to want, max(floor, LiveHeapRoom × live), when
// want is a tenth or more above it (the live heap grew), or the live heap
// has shrunk below a third of it while it is above its floor: in between it
// is left alone, so that it does not follow every collection. The band is
// narrow upward: raised only past 80 % of the limit, as it was, the limit
// stayed wherever the last raise left it, 1.25 to 1.75 times the final
// live heap, and a million's churn cost the collector twice the CPU in the
// runs where it ended low (BENCHMARKS.md, "The fold off the flush").
func (m *memoryLimit) adjust() {
	live := m.live()
	want := max(m.floor, int64(float64(live)*config.LiveHeapRoom))
	grown := want > m.current+m.current/10
	shrunk := m.current > m.floor && live*3 < m.current
	if !(grown || shrunk) || want == m.current {
		return
	}
	m.set(want)
	m.log.Info("memory limit follows the live heap", "bytes", want, "live_heap", live, "floor", m.floor)
	m.current = want
}

// run adjusts the limit every memoryLimitEvery until ctx ends.
func (m *memoryLimit) run(ctx context.Context) {
	t := time.NewTicker(memoryLimitEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.adjust()
		}
	}
}

// liveHeap is the heap the last collection found live.
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// applyMemoryLimit sets the daemon's soft memory limit from
// dispatcher.memory_limit, unless GOMEMLIMIT set one already (an operator's
// own, left as it is), logs which applies, and has it follow the live heap
// until ctx ends.
func applyMemoryLimit(ctx context.Context, log *slog.Logger, limit int64) {
	switch {
	case os.Getenv("GOMEMLIMIT") != "":
		log.Info("memory limit from GOMEMLIMIT", "bytes", debug.SetMemoryLimit(-1))
	case limit > 0:
		debug.SetMemoryLimit(limit)
		log.Info("memory limit from dispatcher.memory_limit", "bytes", limit)
		m := &memoryLimit{floor: limit, current: limit, log: log, set: debug.SetMemoryLimit, live: liveHeap}
		go m.run(ctx)
	default:
		log.Info("no memory limit")
	}
}
