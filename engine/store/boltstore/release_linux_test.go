package boltstore

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/store"
)

// TestLoadGivesBackTheMappedFile: after a load has read every record
// through bbolt's mapping, the file's pages are no longer resident in the
// process (they were the daemon's largest share of RSS after the heap),
// and the records still read back.
func TestLoadGivesBackTheMappedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	seeded := openSeeded(t, 20000, path)
	if err := seeded.db.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{Path: path, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n atomic.Int64 // decodes may run on the load's own goroutines
	count := store.RecordFunc(func(body []byte) (uint64, string, error) {
		n.Add(1)
		return decodeSeq(body)
	})
	if _, err := s.Load(1, count, noEvent); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 20000 {
		t.Fatalf("loaded %d records, want 20000", n.Load())
	}
	if rss := mappedRSS(t, path); rss > fi.Size()/8 {
		t.Errorf("after the load %d KiB of the %d KiB file stay resident in the mapping, want at most an eighth", rss>>10, fi.Size()>>10)
	}
	// What the mapping gave back reads again from the page cache.
	if _, err := s.Load(1, store.RecordFunc(decodeSeq), noEvent); err != nil {
		t.Fatalf("a second load after the pages were given back: %v", err)
	}
}

// TestWritesGiveBackTheMappedFile: flushes that rewrite records all over
// a large store (the journal folded into the containers bucket in place)
// leave no more of the file resident in the mapping than about twice the
// ReleaseAfter bytes of pages they write between releases, however much
// they write (a million priority changes left the whole file resident in a
// daemon), and every write still reads back.
func TestWritesGiveBackTheMappedFile(t *testing.T) {
	const n, after = 20000, 1 << 20
	path := filepath.Join(t.TempDir(), "queue.db")
	seeded := openSeeded(t, n, path)
	if err := seeded.db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{Path: path, NoSync: true, RebuildMax: 1000, JournalKeep: 200, ReleaseAfter: after})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Load(1, store.RecordFunc(decodeSeq), noEvent); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// Every record rewritten twice, 100 a flush, spread over the file.
	var b store.Batch
	for round := range 2 * n / 100 {
		b.Reset()
		b.Records = n
		for i := range 100 {
			seq := uint64((i*(n/100) + round) % n)
			b.EndRecord(appendSeedRecord(t, b.BeginRecord(seq), seq, round%5))
		}
		if err := s.Flush(&b); err != nil {
			t.Fatal(err)
		}
	}
	if rss, most := mappedRSS(t, path), int64(3*after); rss > most {
		t.Errorf("after %d records rewritten %d KiB of the %d KiB file stay resident in the mapping, want at most %d KiB", 2*n, rss>>10, fi.Size()>>10, most>>10)
	}
	var got atomic.Int64
	count := store.RecordFunc(func(body []byte) (uint64, string, error) {
		got.Add(1)
		return decodeSeq(body)
	})
	if _, err := s.Load(1, count, noEvent); err != nil || got.Load() != n {
		t.Fatalf("a load after the writes: %d records, %v; want %d", got.Load(), err, n)
	}
}

// mappedRSS is the resident size of this process's mappings of path, in
// bytes (/proc/self/smaps).
func mappedRSS(t *testing.T, path string) int64 {
	t.Helper()
	// smaps names the file by its real path: make test's TMPDIR is a
	// symbolic link to tmpfs, and a path through it matched no mapping
	// (every bound held with nothing measured).
	path, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = strings.HasSuffix(line, " "+path)
			continue
		}
		if in && len(fields) == 3 && fields[0] == "Rss:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			total += kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}

// TestReleaseWhileGivesBackAtEachTick: while a flush folds in place, its
// pages are given back at every tick, beside the write (Store.update):
// the commit reads the old page of every record the fold put, so a
// release after the flush came too late for its peak. Here the file is
// mapped whole by a read, a tick gives it back, and stop ends the
// goroutine; a write transaction open meanwhile is no obstacle.
func TestReleaseWhileGivesBackAtEachTick(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	s := openSeeded(t, 20000, path)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	readAll := func() {
		t.Helper()
		if err := s.db.View(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketContainers).ForEach(func(k, v []byte) error { return nil })
		}); err != nil {
			t.Fatal(err)
		}
	}
	readAll()
	if rss := mappedRSS(t, path); rss < fi.Size()/2 {
		t.Fatalf("after a read of every record only %d KiB of the %d KiB file are mapped: the test cannot see a release", rss>>10, fi.Size()>>10)
	}
	tick := make(chan time.Time)
	stop := s.releaseWhile(tick)
	stopped := false
	// A write transaction stays open across the release, as a flush's does.
	tx, err := s.db.Begin(true)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { // on a failure, before the store's Close waits for tx
		if !stopped {
			_ = tx.Rollback()
			stop()
		}
	}()
	if err := tx.Bucket(bucketMeta).Put([]byte("release-test"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	tick <- time.Now()
	wait.With{Seen: func() string { return fmt.Sprintf("%d KiB mapped", mappedRSS(t, path)>>10) }}.
		Until(t, "the tick's release", 10*time.Second, func() bool { return mappedRSS(t, path) <= fi.Size()/8 })
	stopped = true
	stop()
	if err := tx.Commit(); err != nil {
		t.Fatalf("the write transaction open across the release: %v", err)
	}
	readAll() // what was given back reads again
	if rss := mappedRSS(t, path); rss < fi.Size()/2 {
		t.Errorf("a read after the release mapped %d KiB of the %d KiB file, want it read back whole", rss>>10, fi.Size()>>10)
	}
}
