package worker

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// cpuNow is the CPU time (user and system) the process has used: on a
// loaded machine a steadier figure than the wall time.
func cpuNow(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per op since c0 (cpu-ns/op).
func reportCPU(b *testing.B, c0 time.Duration) {
	b.ReportMetric(float64(cpuNow(b)-c0)/float64(b.N), "cpu-ns/op")
}

// What an idle attached console costs the pool at 10,000 instances on each
// refresh (BENCHMARKS.md): a read of the changes that finds none (the
// settle compares every row), and the summary's counts, by Tally and, as
// the summary took them before, by copying every instance.
func BenchmarkIdleConsoleReads(b *testing.B) {
	h := bigPool(b, 10000)
	first, err := h.pool.ChangesSince(0, 20000)
	if err != nil || len(first.Items) != 10000 {
		b.Fatalf("first read: %d items, %v", len(first.Items), err)
	}
	// The bytes of the rows as the API sends them (json-bytes/op): the
	// whole list, then 1 %.
	jsonBytes := func(b *testing.B, items any) float64 {
		buf, err := json.Marshal(items)
		if err != nil {
			b.Fatal(err)
		}
		return float64(len(buf))
	}
	b.Run("changes=all", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, cpuNow(b))
		var ch Changes
		for b.Loop() {
			var err error
			if ch, err = h.pool.ChangesSince(0, 20000); err != nil || len(ch.Items) != 10000 {
				b.Fatalf("all: %d items, %v", len(ch.Items), err)
			}
		}
		b.ReportMetric(jsonBytes(b, ch.Items), "json-bytes/op")
	})
	b.Run("changes=quiet", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, cpuNow(b))
		for b.Loop() {
			ch, err := h.pool.ChangesSince(first.Latest, 0)
			if err != nil || len(ch.Items) != 0 {
				b.Fatalf("a quiet pool changed: %d items, %v", len(ch.Items), err)
			}
		}
	})
	b.Run("changes=1%", func(b *testing.B) {
		b.ReportAllocs()
		since := first.Latest
		round := 0
		bytes := 0.0
		for b.Loop() {
			b.StopTimer()
			// A different 1 % of the instances each round, each
			// held or run again.
			for i := round % 100; i < len(first.Items); i += 100 {
				id := first.Items[i].ID
				v, _ := h.pool.Instance(id)
				beh := IdleHold
				if v.IdleBehavior == IdleHold {
					beh = IdleRun
				}
				if _, err := h.pool.SetIdleBehavior(id, beh); err != nil {
					b.Fatal(err)
				}
			}
			round++
			b.StartTimer()
			ch, err := h.pool.ChangesSince(since, 20000)
			if err != nil || len(ch.Items) != 100 {
				b.Fatalf("1 %% changed: %d items, %v", len(ch.Items), err)
			}
			since = ch.Latest
			b.StopTimer()
			bytes += jsonBytes(b, ch.Items)
			b.StartTimer()
		}
		b.ReportMetric(bytes/float64(b.N), "json-bytes/op")
	})
	b.Run("summary=tally", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, cpuNow(b))
		for b.Loop() {
			if t := h.pool.Tally(); t.States[StateRunning] != 10000 {
				b.Fatal(fmt.Sprint(t.States))
			}
		}
	})
	b.Run("summary=copy", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, cpuNow(b))
		var buf []InstanceView
		for b.Loop() {
			buf = h.pool.Instances(nil) // as Summary did, with a new slice each call
			if len(buf) != 10000 {
				b.Fatal(len(buf))
			}
		}
	})
}
