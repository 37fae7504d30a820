package main

import (
	"bytes"
	"log/slog"
	"testing"
)

// The soft memory limit follows the live heap: raised to 1.75 times it
// once that is a tenth above the limit (a queue outgrowing memory_limit
// would have the collector run without pause, and a limit left low makes
// it run often), lowered back toward the floor once the live heap falls
// under a third, never below the floor, and left alone between.
func TestMemoryLimitFollowsTheLiveHeap(t *testing.T) {
	const mib = 1 << 20
	var live int64
	set := int64(160 * mib) // as applyMemoryLimit set it
	var buf bytes.Buffer
	m := &memoryLimit{floor: 160 * mib, current: 160 * mib, log: slog.New(slog.NewJSONHandler(&buf, nil)),
		set: func(n int64) int64 { set = n; return 0 }, live: func() int64 { return live }}
	for _, step := range []struct {
		live, want int64 // MiB; want: the limit after adjust
	}{
		{10, 160},    // small queue: the floor
		{100, 160},   // 175 MiB wanted: within a tenth, left alone
		{128, 224},   // past it: 1.75 times the live heap
		{132, 224},   // 231 MiB wanted: within a tenth, left alone
		{740, 1295},  // a million containers
		{812, 1295},  // 1,421 MiB wanted: within a tenth, left alone
		{820, 1435},  // 1,435 MiB wanted: raised
		{480, 1435},  // 33.4 %: left alone
		{360, 630},   // under a third: lowered
		{20, 160},    // back to the floor, not below
		{0, 160},     // no reading: the floor
		{1000, 1750}, // and up again
	} {
		live = step.live * mib
		m.adjust()
		if m.current != step.want*mib {
			t.Fatalf("live heap %d MiB: limit %d MiB, want %d MiB", step.live, m.current/mib, step.want)
		}
		if set != m.current {
			t.Fatalf("live heap %d MiB: the runtime's limit was last set to %d MiB, the adjuster holds %d MiB", step.live, set/mib, m.current/mib)
		}
	}
	if !bytes.Contains(buf.Bytes(), []byte("memory limit follows the live heap")) {
		t.Errorf("no log line of a change: %s", buf.String())
	}
}
