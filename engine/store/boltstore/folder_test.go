// The folder: a flush leaves a fold to it and returns, unless the journal
// has outgrown twice its bound; it folds everything, and Close stops it
// mid-fold with nothing lost.

package boltstore

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/store"
)

// TestFlushLeavesTheFoldToTheFolder: with the folder held at its gate, a
// pass's flush that starts a fold and a verb's flush after it return
// having run none of its transactions; let go, the folder folds it all,
// each record reading back as last written; a flush past twice the
// journal's bound folds the rest itself; and Close stops a folder held
// mid-fold, its values still in the journal, folded by Close.
func TestFlushLeavesTheFoldToTheFolder(t *testing.T) {
	gate := make(chan struct{})
	fs := openFolding(t, gate)
	s, path, n, changed, chunk := fs.s, fs.path, folderN, folderChanged, folderChunk
	var chunks atomic.Int64
	s.foldHook = func() error { chunks.Add(1); return nil }
	flush := func(prio int, pass bool) {
		t.Helper()
		if err := fs.flush(prio, pass); err != nil {
			t.Fatal(err)
		}
	}
	state := fs.state

	flush(1, true)
	if on, jlen := state(); !on || jlen != changed {
		t.Fatalf("after a pass's flush of %d records: fold on %v, journal %d entries; want a fold on, %d entries", changed, on, jlen, changed)
	}
	flush(2, false)
	if got := chunks.Load(); got != 0 {
		t.Fatalf("two flushes ran %d of the fold's transactions themselves, want 0 (the folder's)", got)
	}

	close(gate) // the folder goes on
	wait.With{Seen: func() string {
		on, jlen := state()
		return fmt.Sprintf("fold on %v, journal %d entries, %d transactions", on, jlen, chunks.Load())
	}}.Until(t, "the folder's fold of the oldest batch", 30*time.Second, func() bool {
		on, jlen := state()
		return !on && jlen == changed
	})
	if want := int64(changed / chunk); chunks.Load() < want {
		t.Errorf("the folder folded %d records in %d transactions, want at least %d", changed, chunks.Load(), want)
	}
	readBack(t, s.db, n, changed, 1) // the second batch is in the journal's window

	// Held again: past 1 + 4·312 entries a flush folds the rest itself.
	s.stopFolder()
	s.opts.foldGate = make(chan struct{})
	s.startFolder()
	before := chunks.Load()
	flush(3, true) // 1,200 entries: starts a fold the folder does not run
	if on, _ := state(); !on || chunks.Load() != before {
		t.Fatalf("a flush within twice the bound: fold on %v, %d transactions run; want on, 0", on, chunks.Load()-before)
	}
	flush(4, false) // 1,800 entries: past the bound
	if on, jlen := state(); on || jlen != changed || chunks.Load() == before {
		t.Fatalf("a flush past twice the bound: fold on %v, journal %d entries after %d transactions; want it folded, %d left", on, jlen, chunks.Load()-before, changed)
	}
	readBack(t, s.db, n, changed, 3)

	// Held mid-fold: Close stops the folder, then folds everything.
	flush(7, true)
	if on, _ := state(); !on {
		t.Fatal("no fold in progress before Close")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := journalLenInFile(t, path); got != 0 {
		t.Errorf("%d journal entries in the file after Close, want 0", got)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	readBack(t, db, n, changed, 7)
}

// TestFoldFailureIsTheNextFlushs: a transaction of the folder's that fails
// drops the fold; the next flush returns its error and writes nothing; the
// one after writes, starts the fold again, and the folder finishes it.
func TestFoldFailureIsTheNextFlushs(t *testing.T) {
	fs := openFolding(t, nil)
	s := fs.s
	var fail atomic.Bool
	fail.Store(true)
	s.foldHook = func() error {
		if fail.Load() {
			return errors.New("injected")
		}
		return nil
	}
	if err := fs.flush(1, true); err != nil {
		t.Fatal(err)
	}
	failed := func() bool {
		s.flushMu.Lock()
		defer s.flushMu.Unlock()
		return s.foldErr != nil
	}
	wait.Until(t, "the folder's failure kept for the next flush", 30*time.Second, failed)
	if on, _ := fs.state(); on {
		t.Fatal("the fold is still on after its transaction failed")
	}
	if !s.Due(folderN, false) {
		t.Error("Due is false with a failure to report: a quiet queue would never see it")
	}
	fail.Store(false)
	_, before := fs.state()
	err := fs.flush(2, false)
	if err == nil || !strings.Contains(err.Error(), "fold the journal's oldest entries: ") || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("the flush after the folder failed returned %v, want the fold's failure", err)
	}
	if _, jlen := fs.state(); jlen != before {
		t.Fatalf("the flush that returned the fold's failure wrote: journal %d entries, was %d", jlen, before)
	}
	if err := fs.flush(2, true); err != nil {
		t.Fatalf("the flush after the one that reported the failure: %v", err)
	}
	wait.Until(t, "the fold started again, finished", 30*time.Second, func() bool {
		on, jlen := fs.state()
		return !on && jlen == 0 // both batches, the one the failed fold left and this one
	})
	readBack(t, s.db, folderN, folderChanged, 2)
}

// The folder tests' store: folderN records, of which flushes change
// folderChanged, folded folderChunk a transaction. foldAfter is n/16 =
// 312 beyond a window of 1: a flush of 600 starts a fold, and past 1 +
// 4·312 entries a flush folds the rest itself.
const folderN, folderChanged, folderChunk = 5000, 600, 10

// folding is an open store for the folder tests, its folder held at gate
// (nil: not held).
type folding struct {
	t    *testing.T
	s    *Store
	path string
}

func openFolding(t *testing.T, gate chan struct{}) *folding {
	t.Helper()
	path := filepath.Join(t.TempDir(), "queue.db")
	s := reopenSeeded(t, folderN, Options{Path: path, NoSync: true, RebuildMax: 1000, JournalKeep: 1, FoldChunk: folderChunk, foldGate: gate})
	return &folding{t: t, s: s, path: path}
}

// flush writes the changed records with priority prio, as a pass's flush
// or a verb's.
func (f *folding) flush(prio int, pass bool) error {
	var b store.Batch
	b.Reset()
	b.Records, b.Pass = folderN, pass
	for i := range folderChanged {
		seq := uint64(i * (folderN / folderChanged))
		b.EndRecord(appendSeedRecord(f.t, b.BeginRecord(seq), seq, prio))
	}
	return f.s.Flush(&b)
}

// state is whether a fold is in progress and the journal's length.
func (f *folding) state() (on bool, jlen int) {
	f.s.flushMu.Lock()
	defer f.s.flushMu.Unlock()
	return f.s.folding.on, f.s.journalLen
}

// readBack fails t unless each of the changed records of a store of n
// reads back from db's containers bucket with priority prio.
func readBack(t *testing.T, db *bolt.DB, n, changed, prio int) {
	t.Helper()
	wrong := 0
	err := db.View(func(tx *bolt.Tx) error {
		cb := tx.Bucket(bucketContainers)
		for i := range changed {
			seq := uint64(i * (n / changed))
			if !bytes.Equal(cb.Get(containerKey(seq)), appendSeedRecord(t, nil, seq, prio)) {
				wrong++
			}
		}
		return nil
	})
	if err != nil || wrong > 0 {
		t.Fatalf("%d of the %d records changed do not read back in the containers bucket with priority %d (%v)", wrong, changed, prio, err)
	}
}
