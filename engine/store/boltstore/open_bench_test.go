package boltstore

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/queue"
)

// BenchmarkOpenQueue times a start-up on the embedded store: a queue
// opened on a store of 100,000 and of 1,000,000 seeded containers (every
// record read and decoded, the index built), until the engine could run
// its first pass; with the process's CPU per open (cpu-s/op), steadier on
// a shared machine. pgstore's BenchmarkOpenQueue is its PostgreSQL twin.
func BenchmarkOpenQueue(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "queue.db")
			if err := openSeeded(b, n, path).db.Close(); err != nil {
				b.Fatal(err)
			}
			var cpu time.Duration
			for b.Loop() {
				cpu0 := cpuTime()
				s, err := Open(Options{Path: path, NoSync: true})
				if err != nil {
					b.Fatal(err)
				}
				q, err := queue.Open(queue.Options{Store: s, Clock: clock.NewFake(t0)})
				if err != nil {
					b.Fatal(err)
				}
				if total, _ := q.Len(); total != n {
					b.Fatalf("loaded %d containers, want %d", total, n)
				}
				cpu += cpuTime() - cpu0
				b.StopTimer()
				if err := q.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}
