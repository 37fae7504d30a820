package queue

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"dispatch-tui/engine/clock"
)

// BenchmarkFold times a fold of a journal of entries records changed at
// random (each flush journals 2,000 of them, as a churning pass does) into
// the containers bucket of a store of n: the fold threshold at n.
func BenchmarkFold(b *testing.B) {
	for _, tc := range []struct{ n, entries int }{
		{100_000, 100_000},
		{1_000_000, 1_000_000},
	} {
		b.Run(fmt.Sprintf("containers=%d/entries=%d", tc.n, tc.entries), func(b *testing.B) {
			q := openSeededFolded(b, tc.n)
			q.foldMin = 2 * tc.entries // no fold while the journal fills
			q.rebuildMax = 2 * tc.n    // a rebuild, whatever the size
			all := q.bySeq
			rng := rand.New(rand.NewPCG(1, 2))
			for b.Loop() {
				b.StopTimer()
				fillJournal(b, q, all, rng, tc.entries)
				b.StartTimer()
				if err := q.fold(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpenJournal times opening a store of n containers whose journal
// is empty and one whose journal is full (as many entries as containers,
// the fold threshold: the most a start-up after a crash replays).
func BenchmarkOpenJournal(b *testing.B) {
	const n = 1_000_000
	path := filepath.Join(b.TempDir(), "queue.db")
	seedFile(b, path, n)
	opts := Options{Path: path, Clock: clock.NewFake(t0), NoSync: true}
	q, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	if err := q.db.Update(func(tx *bolt.Tx) error { return foldJournal(tx, len(q.byID), 0) }); err != nil { // rebuilds the migrated store
		b.Fatal(err)
	}
	for _, entries := range []int{0, n} {
		q.foldMin = 2 * n    // no fold while the journal fills
		q.rebuildMax = 2 * n // nor a fold of the oldest: the journal as a crash at the threshold leaves it
		all := q.bySeq
		rng := rand.New(rand.NewPCG(1, 2))
		fillJournal(b, q, all, rng, entries-q.journalLen)
		if err := q.db.Close(); err != nil { // no fold
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("containers=%d/journal=%d", n, entries), func(b *testing.B) {
			for b.Loop() {
				if q, err = Open(opts); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := q.db.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
		if q, err = Open(opts); err != nil {
			b.Fatal(err)
		}
	}
	q.Close()
}

// fillJournal re-prioritises random containers of all, 2,000 a flush, until
// about n more entries are in the journal.
func fillJournal(b *testing.B, q *Queue, all []*Container, rng *rand.Rand, n int) {
	b.Helper()
	for done := 0; done < n; done += 2000 {
		q.mu.Lock()
		for range 2000 {
			c := all[rng.IntN(len(all))]
			c.Priority = 1 + rng.IntN(5)
			q.markDirtyLocked(c)
		}
		q.mu.Unlock()
		if err := q.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFlushChurn times a scheduler pass's flush in a store of 100,000
// containers, as the churning pass makes it: 3,000 changed records (the
// pass's 2,000 and the 1,000 a thousand verbs journal between passes) and
// 2,000 events, and a rebuild once the journal reaches the threshold
// (every ~33 flushes), whose cost the flushes share.
func BenchmarkFlushChurn(b *testing.B) {
	const n, changed, events = 100_000, 3000, 2000
	q := openSeededFolded(b, n)
	all := q.bySeq
	rng := rand.New(rand.NewPCG(1, 2))
	now := t0
	var cpu time.Duration
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		q.mu.Lock()
		for range changed {
			c := all[rng.IntN(len(all))]
			c.Priority = 1 + rng.IntN(5)
			q.markDirtyLocked(c)
		}
		for i := range events {
			q.addEventLocked(now, "scheduler", "state", all[i].ID, "lock", "")
		}
		q.mu.Unlock()
		now = now.Add(time.Second)
		b.StartTimer()
		cpu0 := cpuTime()
		if err := q.flush(true); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - cpu0
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's CPU time so far (user and system, every thread:
// the collector's work counts).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// openSeededFolded opens a store seeded with n containers (seedFile) and
// rebuilt into the current layout, with an empty journal, without sync.
func openSeededFolded(tb testing.TB, n int) *Queue {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "queue.db")
	seedFile(tb, path, n)
	q, err := Open(Options{Path: path, Clock: clock.NewFake(t0), NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { q.Close() })
	if err := q.db.Update(func(tx *bolt.Tx) error { return foldJournal(tx, len(q.byID), 0) }); err != nil { // rebuilds the migrated store
		tb.Fatal(err)
	}
	return q
}
