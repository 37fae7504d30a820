package queue

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

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
			path := filepath.Join(b.TempDir(), "queue.db")
			seedFile(b, path, tc.n)
			q, err := Open(Options{Path: path, Clock: clock.NewFake(t0), NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { q.Close() })
			if err := q.db.Update(func(tx *bolt.Tx) error { return foldJournal(tx, len(q.byID)) }); err != nil { // rebuilds the migrated store
				b.Fatal(err)
			}
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
	if err := q.db.Update(func(tx *bolt.Tx) error { return foldJournal(tx, len(q.byID)) }); err != nil { // rebuilds the migrated store
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
