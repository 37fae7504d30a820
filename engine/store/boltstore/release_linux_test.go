package boltstore

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"

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
	// Folded by hand after each flush, as the folder would, so that no
	// transaction of a fold holds pages when the mapping is measured.
	s := reopenSeeded(t, n, Options{Path: path, NoSync: true, RebuildMax: 1000, JournalKeep: 200, ReleaseAfter: after, FoldByHand: true})
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
		for s.foldStep() {
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

// TestFoldGivesBackEachChunk: a large store's flush folds the journal's
// oldest entries in place in transactions of FoldChunk records each, the
// mapping's pages given back after each commit: while a transaction puts
// its records, about its own records' pages are mapped (a fault maps 64
// KiB around its page), never the pages of the whole fold, which a commit
// reads again (given back during the transaction, they were faulted in
// anew); and every record reads back after.
func TestFoldGivesBackEachChunk(t *testing.T) {
	const n, changed, chunk = 20000, 2000, 8
	path := filepath.Join(t.TempDir(), "queue.db")
	s := reopenSeeded(t, n, Options{Path: path, NoSync: true, RebuildMax: 1000, JournalKeep: 1, FoldChunk: chunk, FoldByHand: true})
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var chunks int
	var peak int64
	s.foldHook = func() error {
		chunks++
		peak = max(peak, mappedRSS(t, path))
		return nil
	}
	// A pass's flush of records spread over the whole file, past the
	// window and foldAfter: folded at once.
	var b store.Batch
	b.Reset()
	b.Records, b.Pass = n, true
	for i := range changed {
		seq := uint64(i * (n / changed))
		b.EndRecord(appendSeedRecord(t, b.BeginRecord(seq), seq, 3))
	}
	if err := s.Flush(&b); err != nil {
		t.Fatal(err)
	}
	// The folder's work, a transaction at a time.
	for i := 0; s.foldStep(); i++ {
		if i > changed {
			t.Fatalf("the fold is still on after %d transactions", i)
		}
	}
	if want := changed / chunk; chunks < want {
		t.Fatalf("the fold of %d records ran %d transactions, want %d of %d records", changed, chunks, want, chunk)
	}
	if most := fi.Size() / 8; peak > most {
		t.Errorf("during the fold %d KiB of the %d KiB file were mapped, want at most %d KiB", peak>>10, fi.Size()>>10, most>>10)
	}
	if s.journalLen != 0 {
		t.Errorf("after the fold the journal holds %d entries, want 0", s.journalLen)
	}
	got := map[uint64]bool{}
	err = s.db.View(func(tx *bolt.Tx) error {
		cb := tx.Bucket(bucketContainers)
		for i := range changed {
			seq := uint64(i * (n / changed))
			if !bytes.Equal(cb.Get(containerKey(seq)), appendSeedRecord(t, nil, seq, 3)) {
				got[seq] = true
			}
		}
		return nil
	})
	if err != nil || len(got) > 0 {
		t.Fatalf("after the fold %d of the %d records changed do not read back as written (%v)", len(got), changed, err)
	}
}

// TestLargeCloseFoldsInChunks: a large store's journal may hold a share of
// its records (foldsOldest), so Close folds it as a flush folds its oldest
// entries, FoldChunk records a transaction, and leaves none in the file,
// every record as last written.
func TestLargeCloseFoldsInChunks(t *testing.T) {
	const n, changed, chunk = 5000, 600, 100
	path := filepath.Join(t.TempDir(), "queue.db")
	s := reopenSeeded(t, n, Options{Path: path, NoSync: true, RebuildMax: 1000, JournalKeep: 10000, FoldChunk: chunk})
	var b store.Batch
	for round := range 2 {
		b.Reset()
		b.Records = n
		for i := range changed {
			seq := uint64(i * (n / changed))
			b.EndRecord(appendSeedRecord(t, b.BeginRecord(seq), seq, round))
		}
		if err := s.Flush(&b); err != nil {
			t.Fatal(err)
		}
	}
	if s.journalLen != 2*changed {
		t.Fatalf("before Close the journal holds %d entries, want %d (no fold)", s.journalLen, 2*changed)
	}
	chunks := 0
	s.foldHook = func() error { chunks++; return nil }
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if want := changed / chunk; chunks != want {
		t.Errorf("Close folded the %d records in %d transactions, want %d", changed, chunks, want)
	}
	if got := journalLenInFile(t, path); got != 0 {
		t.Errorf("%d journal entries in the file after Close, want 0", got)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	wrong := 0
	err = db.View(func(tx *bolt.Tx) error {
		cb := tx.Bucket(bucketContainers)
		for i := range changed {
			seq := uint64(i * (n / changed))
			if !bytes.Equal(cb.Get(containerKey(seq)), appendSeedRecord(t, nil, seq, 1)) {
				wrong++
			}
		}
		return nil
	})
	if err != nil || wrong > 0 {
		t.Fatalf("after Close %d of the %d records changed do not read back as last written (%v)", wrong, changed, err)
	}
}
