// Package boltstore is the embedded store: the queue's records, events,
// stored output and pause flag in one bbolt file in the state dir
// (docs/design.md §3, Persistence). It implements store.Store.
package boltstore

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"dispatch-tui/engine/store"
)

var (
	bucketContainers = []byte("containers")
	bucketMeta       = []byte("meta")
	bucketLogs       = []byte("logs")
	keyPaused        = []byte("paused")
)

// Containers are keyed by their sequence number (big-endian), not their
// random id: submits then append at the end of the tree, pages fill up
// (appendFill), and a write touches only the pages of the records it
// changes, so the store's file and the pages mapped from it stay small.
func containerKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// appendFill is the page fill for buckets written in key order (bbolt's
// default of half-full pages suits random inserts).
const appendFill = 0.95

// Options configure a Store.
type Options struct {
	Path string // the bbolt file; its directory is created
	// EventRetention is how many of the newest events the store keeps
	// (0 = all); older ones are deleted as new ones are written.
	EventRetention int
	// NoSync skips fsync on commit: for benchmarks, which measure the
	// store's code, not the disk. Nothing outside _test.go files sets it:
	// the engine's store always syncs, and make test puts the tests'
	// files on tmpfs, where a sync costs nothing.
	NoSync bool
	// ReadOnly opens the file to read what it keeps (Load, which may
	// migrate, and writes fail), and fails at once with ErrInUse while a
	// dispatcher holds it.
	ReadOnly bool
	// The journal's limits (journal.go), 0 for the defaults; tests set
	// small ones to make folds and cut batches happen.
	FoldMin, RebuildMax, JournalKeep, BatchMax, FoldChunk, FoldAfter int
	// FoldByHand starts no folder (folder.go): a fold in progress goes on
	// only when the caller runs foldStep (tests, which choose when).
	FoldByHand bool
	// foldGate, if set, has the folder take a value from it (or see it
	// closed) before each of its transactions (tests).
	foldGate chan struct{}
	// ReleaseAfter is how many bytes of pages are written between two
	// releases of the mapping's pages (release_linux.go), 0 for
	// releaseAfter.
	ReleaseAfter int
}

// Store is the bbolt store. flushMu serialises the writes of records
// (flushes and folds), so that a later one never lands before an
// earlier one; it guards the journal's counters and pausedStored.
type Store struct {
	db    *bolt.DB
	opts  Options
	group *groupCommit // submits and stored output

	flushMu sync.Mutex
	// journalLen is how many entries the journal bucket holds and
	// journalNext the key of the next (journal.go).
	journalLen  int
	journalNext uint64
	// pausedStored is the pause flag as the file holds it: a flush puts
	// it only when it changed, not rewriting meta's page each time.
	pausedStored bool
	// records is how many containers the store holds, as of the last
	// load, flush or submit: the fold's measure.
	records atomic.Int64
	// released is how many bytes of pages the file's write transactions
	// had allocated when the mapping's pages were last given back (wrote).
	released atomic.Int64
	// foldEntries and foldVals are the fold's scratch lists, kept
	// between its transactions (under flushMu), empty between them;
	// foldHook, if set, is called in each transaction after the puts,
	// its error the transaction's (tests).
	foldEntries []journalEntry
	foldVals    [][]byte
	foldHook    func() error
	// folding is the fold of the journal's oldest values in progress
	// (journal.go), and foldErr the folder's failure for the next flush
	// to return; both under flushMu.
	folding foldState
	foldErr error
	// folder goes on with the fold in progress (folder.go): nil when read
	// only, folded by hand, or closed.
	folder *folder
}

var _ store.Store = (*Store)(nil)

// Open opens (or creates) the store at opts.Path.
func Open(opts Options) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(opts.Path), 0o700); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	bo := &bolt.Options{Timeout: 2 * time.Second, NoSync: opts.NoSync, InitialMmapSize: initialMmap}
	if opts.ReadOnly {
		bo.ReadOnly, bo.Timeout, bo.InitialMmapSize = true, 100*time.Millisecond, 0
	}
	db, err := bolt.Open(opts.Path, 0o600, bo)
	if opts.ReadOnly && errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("open store %s: %w", opts.Path, ErrInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w (is another dispatcher using this state_dir?)", opts.Path, err)
	}
	s := &Store{db: db, opts: opts, group: &groupCommit{db: db}}
	if !opts.ReadOnly && !opts.FoldByHand {
		s.startFolder()
	}
	return s, nil
}

// DB is the open file, for tests and tools that look inside it.
func (s *Store) DB() *bolt.DB { return s.db }

// Load reads every record (the containers bucket with the journal
// applied), the newest events and the pause flag, creating the buckets of
// a new file and migrating older layouts in the same transaction.
func (s *Store) Load(recentEvents int, recs store.Records, ev func(seq uint64, body []byte) error) (store.Loaded, error) {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.records.Store(0)
	var out store.Loaded
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketContainers, bucketEvents, bucketMeta, bucketLogs, bucketJournal} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("create bucket %s: %w", b, err)
			}
		}
		// The journal is read first (at most about as many entries as
		// records: foldThreshold), so that a record it holds a later
		// version of is decoded once, from there.
		latest, jn, err := readJournal(tx.Bucket(bucketJournal), 0)
		if err != nil {
			return fmt.Errorf("load journal: %w", err)
		}
		s.journalLen, s.journalNext, s.folding.on = jn, 0, false
		if cur := tx.Bucket(bucketJournal).Cursor(); jn > 0 {
			k, _ := cur.Last()
			s.journalNext = binary.BigEndian.Uint64(k) + 1
		}
		journaled := func(seq uint64) (journalEntry, bool) {
			i, ok := slices.BinarySearchFunc(latest, seq, func(e journalEntry, s uint64) int { return cmp.Compare(e.seq, s) })
			if !ok {
				return journalEntry{}, false
			}
			return latest[i], true
		}
		// Records of an earlier layout, keyed by id, are moved to their
		// Seq's key.
		type oldRecord struct {
			k   []byte
			seq uint64
		}
		var old []oldRecord
		p := store.NewPipeline(recs, func(k []byte, seq uint64, id string, err error) error {
			if err != nil {
				return fmt.Errorf("load container %x: %w", k, err)
			}
			s.records.Add(1)
			if len(k) != 8 {
				if id != string(k) {
					return fmt.Errorf("load container %s: the record's id does not match its key", k)
				}
				old = append(old, oldRecord{slices.Clone(k), seq})
			}
			return nil
		})
		defer p.Close()
		cb := tx.Bucket(bucketContainers)
		var inBucket []uint64 // journaled Seqs also in the bucket
		err = cb.ForEach(func(k, v []byte) error {
			if len(k) == 8 {
				if e, ok := journaled(binary.BigEndian.Uint64(k)); ok {
					inBucket = append(inBucket, e.seq)
					if e.body == nil {
						return nil // dropped
					}
					v = e.body
				}
			}
			return p.Put(k, v)
		})
		if err != nil {
			return err
		}
		// A journaled record not in the bucket (not written there by
		// this version, which puts submits in the bucket, but allowed).
		for _, e := range latest {
			if _, ok := slices.BinarySearch(inBucket, e.seq); !ok && e.body != nil {
				if err := p.Put(journalKey(e.seq), e.body); err != nil {
					return err
				}
			}
		}
		if err := p.Close(); err != nil {
			return err
		}
		for _, o := range old {
			body := cb.Get(o.k)
			if err := cb.Put(containerKey(o.seq), slices.Clone(body)); err != nil {
				return fmt.Errorf("migrate container %s: %w", o.k, err)
			}
			if err := cb.Delete(o.k); err != nil {
				return fmt.Errorf("migrate container %s: %w", o.k, err)
			}
		}
		if out.NextEvent, err = loadEvents(tx, recentEvents, ev); err != nil {
			return err
		}
		out.Paused = string(tx.Bucket(bucketMeta).Get(keyPaused)) == "true"
		s.pausedStored = out.Paused
		return nil
	})
	if err == nil {
		s.releaseMapped()
	}
	return out, err
}

// Close stops the folder, folds the journal into the containers bucket
// (journal.go), so that a cleanly closed store has none, and closes the
// file.
func (s *Store) Close() error {
	if s.opts.ReadOnly {
		return s.db.Close()
	}
	s.stopFolder()
	return errors.Join(s.fold(), s.db.Close())
}

// ErrInUse is a read-only open of a file a dispatcher holds.
var ErrInUse = errors.New("a running dispatcher holds it")

// PutOutputs stores outputs in one transaction, shared with concurrent
// submits and other outputs (group.go).
func (s *Store) PutOutputs(ids []string, outputs [][]byte) error {
	err := s.group.write(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLogs)
		for i, id := range ids {
			if err := b.Put([]byte(id), outputs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		s.wrote()
	}
	return err
}

// Output returns the output PutOutputs stored for id, if any.
func (s *Store) Output(id string) ([]byte, bool, error) {
	var out []byte
	found := false
	err := s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketLogs).Get([]byte(id)); v != nil {
			out = append([]byte(nil), v...)
			found = true
		}
		return nil
	})
	return out, found, err
}

// Events calls fn with the stored events of Seq > since, oldest first.
func (s *Store) Events(since uint64, fn func(seq uint64, body []byte) (bool, error)) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return readEvents(tx.Bucket(bucketEvents), since, fn)
	})
}

// FirstEvent returns the oldest stored event's Seq.
func (s *Store) FirstEvent() (seq uint64, ok bool) {
	s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketEvents).Cursor().First(); k != nil {
			seq, _, ok = batchRange(k)
		}
		return nil
	})
	return seq, ok
}

// initialMmap is the store's first memory map. bbolt maps the file anew
// whenever it outgrows the map (doubling up to 1 GiB), and a remap first
// copies out every node the write transaction holds — inside a fold, the
// whole containers bucket (~170 ms at 150,000 records) — while readers
// wait. Mapping 1 GiB from the start costs address space only (the pages
// are the file's, read on demand), so a store below that never remaps.
const initialMmap = 1 << 30
