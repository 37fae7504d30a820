// The journal: where a flush appends its changed records, folded into the
// containers bucket from time to time.

package boltstore

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	bolt "go.etcd.io/bbolt"

	"dispatch-tui/engine/store"
)

// The journal: a flush does not put changed records back into the
// containers bucket, where they are keyed by Seq and scattered (a pass's
// 2,000 changes touched some 1,500 leaf pages, each read, re-spilled and
// written). It appends them instead to the journal bucket, as one batch
// (putBatch) under an increasing counter, so the flush writes a few
// contiguous new pages. A batch entry is a record's Seq and its stored
// JSON, or a tombstone (the container was dropped). The store's state is
// the containers bucket with the journal applied in order: later wins, a
// tombstone deletes.
//
// A fold moves the journal into the containers bucket (foldJournal) and
// drops the journal bucket, freeing its pages at once. A scheduler pass's
// flush folds when the journal has reached foldThreshold entries (other
// flushes only past twice that, so that a user's verb does not wait for a
// fold); Close folds what is left, so a cleanly closed store has an empty journal
// and an older binary, which knows nothing of it, reads everything.
var bucketJournal = []byte("journal")

// foldThreshold is the number of journal entries at which a pass folds,
// for a queue of n containers: as many as there are containers, so the
// journal is at most about the size of the containers bucket (the file at
// most twice the records' size, and an open reads at most twice as much).
// A fold rebuilds the whole containers bucket, whatever the journal holds
// (BenchmarkFold: ~0.2 s at 100,000 containers), so the more passes
// between folds, the less each pays: with 3,000 entries a pass (the churn
// benchmark at 100,000), a fold every ~33 passes.
func (s *Store) foldThreshold(n int) int {
	return orDefault(s.opts.FoldMin, max(n, minFoldEntries))
}

// rebuildMaxRecords bounds the stores folded by a rebuild. A rebuild
// rewrites every record (BenchmarkFold: ~0.2 s at 100,000, 4.6 s at a
// million), so above this a pass that folds would hold every start and
// verb for seconds. A larger store instead keeps its journal at
// journalKeep entries and a share of the store beyond (foldsOldest): a
// flush past that folds the oldest batches beyond journalKeep in place
// (foldOldest), so it pays for about the records they hold, less those
// that share a leaf, and none pays for the whole store.
const rebuildMaxRecords = 250_000

// journalKeep is how many entries a store above rebuildMaxRecords keeps in
// its journal: a few passes' worth, whose repeated changes of one record
// are folded once.
const journalKeep = 16384

// rebuildLimit and journalWindow are rebuildMaxRecords and journalKeep,
// or the tests' values.
func (s *Store) rebuildLimit() int {
	return orDefault(s.opts.RebuildMax, rebuildMaxRecords)
}

// batchLimit is maxBatchBytes, or the tests' value.
func (s *Store) batchLimit() int {
	return orDefault(s.opts.BatchMax, maxBatchBytes)
}

func (s *Store) journalWindow() int {
	return orDefault(s.opts.JournalKeep, journalKeep)
}

// foldOldest folds the journal's oldest values holding at least n entries
// into the containers bucket in place (the latest of each record among
// them, in Seq order) and deletes them; it returns how many entries it
// folded. A batch is folded whole. The newer entries left in the journal
// still win at replay.
//
// The fold runs in transactions of its own, foldChunk records each, the
// mapping's pages given back after each commit (a transaction reads the
// leaf page of every record it puts, and its commit reads each again,
// each fault mapping 64 KiB around its page: a fold of 5,000 scattered
// records mapped a third of a million's file, and giving the pages back
// during a transaction made it fault them in again, BENCHMARKS.md, helper
// daemon). The first reads the oldest values and keeps, for the latest
// entry of each Seq among them, where its JSON lies in its value (which
// no write changes until the fold deletes it); each puts the next
// foldChunk of those, reading only their JSON; the last deletes the
// values. A crash between chunks leaves the values in the journal, whose
// entries still win over what the chunks put.
func (s *Store) foldOldest(n int) (int, error) {
	s.startFold(n)
	folded, _, err := s.foldChunks(math.MaxInt)
	return folded, err
}

// foldState is a fold of the journal's oldest values in progress
// (foldOldest), which the folder goes on with one transaction at a time
// (foldChunks, folder.go): at a million a fold is ~60 of them, a second or
// more of CPU that every flush (a user's verb, a pass) waited behind when
// flushes ran them (BENCHMARKS.md, helper daemon and "The fold off the
// flush"). Later flushes only append values after the oldest. Under
// flushMu.
type foldState struct {
	on    bool
	n     int            // the oldest values hold at least n entries
	read  bool           // the fold's first transaction has read them (readOldest)
	count int            // how many entries they hold (read)
	vals  []foldValue    // their keys, in journal order (read)
	todo  []journalEntry // the latest entry of each Seq among them, in Seq order, without its body (read)
	next  int            // where the next chunk starts in todo
}

// foldValue is one of the values a fold folds: its key (a copy), and
// whether it is a bucket (bigvalue.go).
type foldValue struct {
	k      []byte
	bucket bool
}

// startFold starts a fold of the journal's oldest values holding at least
// n entries.
func (s *Store) startFold(n int) {
	f := &s.folding
	*f = foldState{on: true, n: n, vals: f.vals[:0], todo: f.todo[:0]}
}

// foldChunks runs up to limit transactions of the fold in progress and
// reports whether it is done, with how many entries it folded then. An
// error drops the fold: the next starts anew from the values left.
func (s *Store) foldChunks(limit int) (folded int, done bool, err error) {
	f := &s.folding
	chunk := s.foldChunk()
	for range limit {
		err := s.db.Update(func(tx *bolt.Tx) error {
			jb := tx.Bucket(bucketJournal)
			if !f.read {
				if err := s.readOldest(jb); err != nil {
					return err
				}
			}
			part := f.todo[f.next:min(f.next+chunk, len(f.todo))]
			vals := s.foldVals[:0]
			defer func() {
				clear(vals) // they point into this transaction's pages
				s.foldVals = vals[:0]
			}()
			cb := tx.Bucket(bucketContainers)
			for _, e := range part {
				var err error
				if e.size == 0 {
					err = cb.Delete(containerKey(e.seq))
				} else if vals, err = s.foldValueAt(jb, vals, int(e.val)); err == nil {
					err = cb.Put(containerKey(e.seq), vals[e.val][e.off:e.off+e.size])
				}
				if err != nil {
					return fmt.Errorf("fold journal: %w", err)
				}
			}
			if s.foldHook != nil {
				if err := s.foldHook(); err != nil {
					return err
				}
			}
			if f.next+len(part) < len(f.todo) {
				return nil
			}
			// The bodies put above point into the values' pages, which
			// stay mapped, and are not reused, until the transaction ends.
			for _, v := range f.vals {
				if err := deleteAlone(jb, v.k, v.bucket); err != nil {
					return fmt.Errorf("fold journal: %w", err)
				}
			}
			folded, done = f.count, true
			return nil
		})
		s.releaseNow()
		if err != nil {
			f.on = false
			return 0, false, err
		}
		if done {
			f.on = false
			return folded, true, nil
		}
		f.next += chunk
	}
	return 0, false, nil
}

// readOldest reads the journal's oldest values holding at least f.n
// entries: their keys into f.vals, and the latest entry of each Seq among
// them into f.todo, each with where its JSON lies in its value but not
// the JSON (the transaction's pages, given back once it ends). s's
// scratch list of entries and f's lists are kept for the next fold.
func (s *Store) readOldest(jb *bolt.Bucket) error {
	f := &s.folding
	entries, vals := s.foldEntries[:0], f.vals[:0]
	defer func() {
		clear(entries) // the bodies point into this transaction's pages
		s.foldEntries = entries[:0]
	}()
	cur := jb.Cursor()
	for k, v := cur.First(); k != nil && len(entries) < f.n; k, v = cur.Next() {
		from := len(entries)
		var err error
		if entries, err = appendJournalValue(entries, jb, k, v); err != nil {
			return err
		}
		for i := range entries[from:] {
			entries[from+i].val = uint32(len(vals))
		}
		vals = append(vals, foldValue{k: slices.Clone(k), bucket: v == nil})
	}
	f.count, f.vals = len(entries), vals
	f.todo = append(f.todo[:0], latestPerSeq(entries)...)
	for i := range f.todo {
		f.todo[i].body = nil
	}
	f.read = true
	return nil
}

// foldValueAt returns vals with the value of the fold's j-th key read
// into it (in this transaction) if it was not yet.
func (s *Store) foldValueAt(jb *bolt.Bucket, vals [][]byte, j int) ([][]byte, error) {
	if j < len(vals) && vals[j] != nil {
		return vals, nil
	}
	if j >= len(vals) {
		vals = append(vals, make([][]byte, j+1-len(vals))...)
	}
	fv := s.folding.vals[j]
	var v []byte
	if fv.bucket {
		if sub := jb.Bucket(fv.k); sub != nil {
			v = sub.Get(aloneKey)
		}
	} else {
		v = jb.Get(fv.k)
	}
	if v == nil {
		return vals, fmt.Errorf("journal value %x is gone in the middle of its fold", fv.k)
	}
	vals[j] = v
	return vals, nil
}

// foldChunk is how many records a transaction of a fold in place puts
// (foldOldest): at most 64 KiB of the file mapped for each (the kernel's
// fault-around) before the commit gives them back, 64 MiB, where the
// daemon's peak at a million had some 80 MiB to spare (BENCHMARKS.md).
const foldChunk = 1024

// foldAfterShare: a large store's journal gathers 1/foldAfterShare of its
// records' worth of entries beyond the window before a pass's flush folds
// them (foldOldest; any flush past twice that), so that a fold puts many
// records at once and those that share a leaf page write it once: the
// churn's flushes of 5,000 records a hundred Seqs apart shared none, a page
// written a record, where a fold of a sixteenth of the store shares leaves
// with the flushes around it (BENCHMARKS.md, helper daemon).
const foldAfterShare = 16

// foldAfter is how many entries beyond the window the journal of a store
// of n records gathers before a pass's flush folds them, or the tests'
// value.
func (s *Store) foldAfter(n int) int {
	return orDefault(s.opts.FoldAfter, n/foldAfterShare)
}

// foldChunk is foldChunk, or the tests' value.
func (s *Store) foldChunk() int {
	return orDefault(s.opts.FoldChunk, foldChunk)
}

// orDefault is v, a test's setting, when set (above 0), else d.
func orDefault(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}

// inPlaceFold: a journal with fewer distinct records than 1/inPlaceFold of
// the store's is folded by updating them in place, not by a rebuild (a
// leaf page holds some 8 records: below that, the scattered updates write
// fewer pages than the rebuild).
const inPlaceFold = 8

// minFoldEntries keeps a small queue from folding at every pass.
const minFoldEntries = 4096

func journalKey(n uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], n)
	return k[:]
}

// A flush writes its records and tombstones as one batch, a single value
// under one journal key (the layout of store.Batch): one Put, where one
// per record seeked down the tree each and spread the flush over ~200
// leaf pages, each its own write. An entry of the layout before batches
// (the Seq, then the JSON) starts with the Seq's high byte, 0 for any Seq
// below 2^56, so the two are told apart (store.BatchMarker is 1) and a
// store a crash left with old entries replays them, before the batches
// that follow them.
//
// A batch is stored by putAlone (bigvalue.go): a verb's small one as the
// journal key's value, a pass's in a bucket of its own under the key, so
// that it is written once, to a contiguous run of pages, and freed whole
// when it is folded.

// maxBatchBytes bounds a batch: a flush of more (a start-up's, a bulk
// change's) is cut into several, so that neither bbolt's copy of a value
// at commit nor its limit on a value's size (2 GiB) depends on how many
// records one flush writes.
const maxBatchBytes = 16 << 20

// putBatches stores batch (n entries) under the journal keys from next
// on, cut into batches of at most limit bytes (one entry may exceed it),
// and returns the next free key.
func putBatches(jb *bolt.Bucket, next uint64, batch []byte, n, limit int) (uint64, error) {
	if len(batch) <= limit {
		return next + 1, putBatch(jb, next, batch)
	}
	var part []byte // values stay valid until commit: a new array each
	count := 0
	flush := func() error {
		binary.BigEndian.PutUint32(part[1:], uint32(count))
		err := putBatch(jb, next, part)
		next++
		part, count = nil, 0
		return err
	}
	p := batch[store.BatchHeader:]
	for range n {
		size := store.EntryHeader + int(binary.BigEndian.Uint32(p[8:]))
		if count > 0 && len(part)+size > limit {
			if err := flush(); err != nil {
				return next, err
			}
		}
		if part == nil {
			part = append(make([]byte, 0, min(limit, store.BatchHeader+len(p))), store.BatchMarker, 0, 0, 0, 0)
		}
		part = append(part, p[:size]...)
		p = p[size:]
		count++
	}
	return next, flush()
}

// putBatch stores batch under the journal key n.
func putBatch(jb *bolt.Bucket, n uint64, batch []byte) error {
	return putAlone(jb, journalKey(n), batch)
}

// journalEntry is one entry read back: the record's Seq and its JSON (nil
// for a tombstone).
type journalEntry struct {
	seq  uint64
	body []byte
	pos  int // the entry's place in the journal (latestPerSeq)
	// Where body lies in its value, and which of a fold's values that is
	// (readOldest), so that a fold's later transactions read it again
	// there.
	off, size, val uint32
}

// appendJournalValue appends the entries of the journal value under key k
// (v, nil for a batch in a bucket of its own) to out. The bodies point
// into the transaction's pages.
func appendJournalValue(out []journalEntry, jb *bolt.Bucket, k, v []byte) ([]journalEntry, error) {
	v, err := storedAlone(jb, k, v)
	if err != nil {
		return out, fmt.Errorf("journal: %w", err)
	}
	if len(v) > 0 && v[0] == store.BatchMarker {
		return appendBatch(out, k, v)
	}
	// An entry of the layout before batches: one record.
	if len(v) < 8 {
		return out, fmt.Errorf("journal entry %x: %d bytes, want at least 8", k, len(v))
	}
	e := journalEntry{seq: binary.BigEndian.Uint64(v), off: 8, size: uint32(len(v) - 8)}
	if len(v) > 8 {
		e.body = v[8:]
	}
	return append(out, e), nil
}

// appendBatch appends the entries of batch v (under key k) to out.
func appendBatch(out []journalEntry, k, v []byte) ([]journalEntry, error) {
	if len(v) >= store.BatchHeader {
		out = slices.Grow(out, store.EntryCount(v))
	}
	err := store.EachEntryAt(v, func(seq uint64, off, n int) error {
		e := journalEntry{seq: seq, off: uint32(off), size: uint32(n)}
		if n > 0 {
			e.body = v[off : off+n : off+n]
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("journal batch %x: %w", k, err)
	}
	return out, nil
}

// readJournal returns the journal's latest entry per Seq, in Seq order, and
// how many entries (records and tombstones) it holds. The bodies point
// into the transaction's pages. entries is about how many it holds, if
// known (0: not): the list is made that large at once, where growing it
// batch by batch copied it some fifteen times in a fold of 100,000.
func readJournal(jb *bolt.Bucket, entries int) ([]journalEntry, int, error) {
	all := make([]journalEntry, 0, entries)
	cur := jb.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		var err error
		if all, err = appendJournalValue(all, jb, k, v); err != nil {
			return nil, 0, err
		}
	}
	n := len(all)
	return latestPerSeq(all), n, nil
}

// latestPerSeq returns the last entry of each Seq among entries (in
// journal order), in Seq order. It may reorder entries.
func latestPerSeq(entries []journalEntry) []journalEntry {
	if len(entries) == 0 {
		return entries
	}
	lo, hi := entries[0].seq, entries[0].seq
	for _, e := range entries {
		lo, hi = min(lo, e.seq), max(hi, e.seq)
	}
	if hi-lo < denseSeqs*uint64(len(entries)) {
		// The Seqs are dense (a journal as long as the store, or a window
		// of a few passes over it): a table by Seq of the latest entry's
		// place finds them in one pass, where a sort of 100,000 entries
		// takes some 30 ms.
		last := make([]uint32, hi-lo+1) // place+1 of the latest; 0: none
		for i, e := range entries {
			last[e.seq-lo] = uint32(i + 1)
		}
		out := make([]journalEntry, 0, len(entries))
		for _, p := range last {
			if p != 0 {
				out = append(out, entries[p-1])
			}
		}
		return out
	}
	// Entries of one Seq must stay in journal order, for the last to win:
	// each is tagged with its place and the sort breaks ties by it (a
	// stable sort's merges rotate the slice, several times slower).
	for i := range entries {
		entries[i].pos = i
	}
	slices.SortFunc(entries, func(a, b journalEntry) int {
		if c := cmp.Compare(a.seq, b.seq); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	})
	out := entries[:0]
	for i, e := range entries {
		if i+1 < len(entries) && entries[i+1].seq == e.seq {
			continue
		}
		out = append(out, e)
	}
	return out
}

// denseSeqs: latestPerSeq uses a table by Seq when the Seqs span less than
// denseSeqs times the entries (4 bytes a Seq: at most 16 an entry).
const denseSeqs = 4

// foldJournal moves the journal into the containers bucket and recreates
// it empty, in the caller's transaction. The containers bucket is rebuilt
// rather than updated in place: its records, merged with the journal's
// latest in Seq order, are appended to a new bucket, whose pages are each
// filled and written once. (Updating the scattered records in place costs
// a leaf page read, spilt and written per changed record, much as the
// flushes the journal saved would have.) n is about how many records the
// store holds (the merge's capacity), entries about how many the journal
// holds (readJournal; 0: not known).
func foldJournal(tx *bolt.Tx, n, entries int) error {
	latest, _, err := readJournal(tx.Bucket(bucketJournal), entries)
	if err != nil {
		return err
	}
	if len(latest) < n/inPlaceFold {
		// Few records changed (a Close soon after a fold): updating them
		// in place touches at most one page each, far fewer than a
		// rebuild writes.
		cb := tx.Bucket(bucketContainers)
		for _, e := range latest {
			k := containerKey(e.seq)
			if e.body == nil {
				err = cb.Delete(k)
			} else {
				err = cb.Put(k, e.body)
			}
			if err != nil {
				return fmt.Errorf("fold journal: %w", err)
			}
		}
		if err := tx.DeleteBucket(bucketJournal); err != nil {
			return fmt.Errorf("fold journal: %w", err)
		}
		_, err := tx.CreateBucket(bucketJournal)
		return err
	}
	type kv struct{ k, v []byte }
	old := tx.Bucket(bucketContainers)
	all := make([]kv, 0, n)
	cur := old.Cursor()
	j := 0
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		seq := binary.BigEndian.Uint64(k)
		for ; j < len(latest) && latest[j].seq < seq; j++ {
			if latest[j].body != nil {
				all = append(all, kv{containerKey(latest[j].seq), latest[j].body})
			}
		}
		if j < len(latest) && latest[j].seq == seq {
			v = latest[j].body
			j++
		}
		if v != nil {
			all = append(all, kv{k, v})
		}
	}
	for ; j < len(latest); j++ {
		if latest[j].body != nil {
			all = append(all, kv{containerKey(latest[j].seq), latest[j].body})
		}
	}
	// The keys and values point into the old bucket's pages, which stay
	// mapped (and are not reused) until the transaction ends.
	for _, name := range [][]byte{bucketContainers, bucketJournal} {
		if err := tx.DeleteBucket(name); err != nil {
			return fmt.Errorf("fold journal: %w", err)
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return fmt.Errorf("fold journal: %w", err)
		}
	}
	nb := tx.Bucket(bucketContainers)
	nb.FillPercent = appendFill
	for _, r := range all {
		if err := nb.Put(r.k, r.v); err != nil {
			return fmt.Errorf("fold journal: %w", err)
		}
	}
	return nil
}

// fold moves the whole journal into the containers bucket (Close): in a
// transaction of its own, or a large store's in foldOldest's.
func (s *Store) fold() error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	if s.journalLen == 0 {
		return nil
	}
	n := int(s.records.Load())
	if n > s.rebuildLimit() {
		// A large store's journal holds up to a share of its records
		// (foldsOldest), more than one transaction should put at once
		// (foldOldest): folded as a flush folds it, the whole of it (a
		// fold in progress starts over with the rest).
		folded, err := s.foldOldest(s.journalLen)
		s.journalLen -= folded
		return err
	}
	s.folding.on = false
	if err := s.db.Update(func(tx *bolt.Tx) error { return foldJournal(tx, n, s.journalLen) }); err != nil {
		return err
	}
	s.journalLen, s.journalNext = 0, 0
	return nil
}
