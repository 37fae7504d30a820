package boltstore

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/store"
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
			s := openSeeded(b, tc.n)
			s.opts.FoldMin = 2 * tc.entries // no fold while the journal fills
			s.opts.RebuildMax = 2 * tc.n    // a rebuild, whatever the size
			rng := rand.New(rand.NewPCG(1, 2))
			for b.Loop() {
				b.StopTimer()
				fillJournal(b, s, tc.n, rng, tc.entries)
				b.StartTimer()
				if err := s.fold(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpenJournal times opening a queue on a store of n containers
// whose journal is empty and one whose journal is full (as many entries
// as containers, the fold threshold: the most a start-up after a crash
// replays).
func BenchmarkOpenJournal(b *testing.B) {
	const n = 1_000_000
	path := filepath.Join(b.TempDir(), "queue.db")
	s := openSeeded(b, n, path)
	for _, entries := range []int{0, n} {
		s.opts.FoldMin = 2 * n    // no fold while the journal fills
		s.opts.RebuildMax = 2 * n // nor a fold of the oldest: the journal as a crash at the threshold leaves it
		rng := rand.New(rand.NewPCG(1, 2))
		fillJournal(b, s, n, rng, entries-s.journalLen)
		if err := s.db.Close(); err != nil { // no fold
			b.Fatal(err)
		}
		opts := Options{Path: path, NoSync: true, FoldMin: 2 * n, RebuildMax: 2 * n, FoldByHand: true} // closed with no fold
		b.Run(fmt.Sprintf("containers=%d/journal=%d", n, entries), func(b *testing.B) {
			for b.Loop() {
				var err error
				if s, err = Open(opts); err != nil {
					b.Fatal(err)
				}
				if _, err := queue.Open(queue.Options{Store: s, Clock: clock.NewFake(t0)}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := s.db.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
		var err error
		if s, err = Open(opts); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Load(1, store.RecordFunc(decodeSeq), noEvent); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
}

// fillJournal flushes new versions of random records of the n seeded
// ones (seedRecord), 2,000 a flush, until about entries more are in the
// journal.
func fillJournal(b *testing.B, s *Store, n int, rng *rand.Rand, entries int) {
	b.Helper()
	var batch store.Batch
	for done := 0; done < entries; done += 2000 {
		batch.Reset()
		batch.Records = n
		for range 2000 {
			seq := uint64(rng.IntN(n))
			batch.EndRecord(appendSeedRecord(b, batch.BeginRecord(seq), seq, 1+rng.IntN(5)))
		}
		if err := s.Flush(&batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFlushChurn times a scheduler pass's flush in a store of 100,000
// containers, as the churning pass makes it: 3,000 changed records (the
// pass's 2,000 and the 1,000 a thousand verbs journal between passes) and
// 2,000 events, and a rebuild once the journal reaches the threshold
// (every ~33 flushes), whose cost the flushes share. The records and
// events are encoded before the timer starts: what is timed is the store.
func BenchmarkFlushChurn(b *testing.B) {
	const n, changed, events = 100_000, 3000, 2000
	s := openSeeded(b, n)
	rng := rand.New(rand.NewPCG(1, 2))
	now := t0
	next := uint64(1)
	var cpu time.Duration
	var batch store.Batch
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		batch.Reset()
		batch.Pass, batch.Records = true, n
		for range changed {
			seq := uint64(rng.IntN(n))
			batch.EndRecord(appendSeedRecord(b, batch.BeginRecord(seq), seq, 1+rng.IntN(5)))
		}
		for i := range events {
			j, err := json.Marshal(queue.Event{Seq: next, Time: now, Actor: "scheduler", Kind: "state", Target: fmt.Sprintf("c-%010d", i), Action: "lock"})
			if err != nil {
				b.Fatal(err)
			}
			batch.EndEvent(next, append(batch.BeginEvent(), j...))
			next++
		}
		now = now.Add(time.Second)
		b.StartTimer()
		cpu0 := cpuTime()
		if err := s.Flush(&batch); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - cpu0
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's CPU time so far (user and system, every thread:
// the collector's work counts): on a shared machine it says more than
// wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
