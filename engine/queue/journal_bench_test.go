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
// the containers bucket of a store of n.
func BenchmarkFold(b *testing.B) {
	for _, tc := range []struct{ n, entries int }{
		{100_000, 25_000},
		{100_000, 100_000},
		{100_000, 300_000},
		{1_000_000, 65_536},
		{1_000_000, 300_000},
	} {
		b.Run(fmt.Sprintf("containers=%d/entries=%d", tc.n, tc.entries), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "queue.db")
			seedFile(b, path, tc.n)
			q, err := Open(Options{Path: path, Clock: clock.NewFake(t0), NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { q.Close() })
			if err := q.fold(); err != nil { // the migrated store
				b.Fatal(err)
			}
			all := q.bySeq
			rng := rand.New(rand.NewPCG(1, 2))
			for b.Loop() {
				b.StopTimer()
				for done := 0; done < tc.entries; done += 2000 {
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
				q.db.View(func(tx *bolt.Tx) error {
					st := tx.Bucket(bucketContainers).Stats()
					js := tx.Bucket(bucketJournal).Stats()
					b.Logf("containers: %d leaf pages (%d overflow), %d B in use of %d; journal %d leaf pages, %d keys", st.LeafPageN, st.LeafOverflowN, st.LeafInuse, st.LeafAlloc, js.LeafPageN, js.KeyN)
					return nil
				})
				b.StartTimer()
				if err := q.fold(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
