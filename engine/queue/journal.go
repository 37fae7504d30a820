package queue

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// The journal: a flush does not put changed records back into the
// containers bucket, where they are keyed by Seq and scattered (a pass's
// 2,000 changes touched some 1,500 leaf pages, each read, re-spilled and
// written). It appends them instead to the journal bucket, keyed by an
// increasing counter, so the flush writes a few contiguous new pages. An
// entry's value is the record's Seq (8 bytes, big-endian) followed by its
// stored JSON; an entry of the Seq alone is a tombstone (the container was
// dropped). The store's state is the containers bucket with the journal
// applied in order: later wins, a tombstone deletes.
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
func (q *Queue) foldThreshold(n int) int {
	if q.foldMin > 0 { // tests
		return q.foldMin
	}
	return max(n, minFoldEntries)
}

// rebuildMaxRecords bounds the stores folded by a rebuild. A rebuild
// rewrites every record (BenchmarkFold: ~0.2 s at 100,000, 4.6 s at a
// million), so above this a pass that folds would hold every start and
// verb for seconds. A larger store instead keeps its journal at
// journalKeep entries: each flush folds the oldest beyond that in place
// (foldOldest), so it pays for about the records it appended — as much as
// before the journal, less what the window merges — and none pays for the
// whole store.
const rebuildMaxRecords = 250_000

// journalKeep is how many entries a store above rebuildMaxRecords keeps in
// its journal: a few passes' worth, whose repeated changes of one record
// are folded once.
const journalKeep = 16384

// rebuildLimit and journalWindow are rebuildMaxRecords and journalKeep,
// or the tests' values.
func (q *Queue) rebuildLimit() int {
	if q.rebuildMax > 0 {
		return q.rebuildMax
	}
	return rebuildMaxRecords
}

func (q *Queue) journalWindow() int {
	if q.keepJournal > 0 {
		return q.keepJournal
	}
	return journalKeep
}

// foldOldest folds the journal's n oldest entries into the containers
// bucket in place (the latest of each record among them, in Seq order) and
// deletes them. The newer entries left in the journal still win at replay.
func foldOldest(tx *bolt.Tx, n int) error {
	jb := tx.Bucket(bucketJournal)
	entries := make([]journalEntry, 0, n)
	keys := make([]byte, 0, 8*n)
	cur := jb.Cursor()
	for k, v := cur.First(); k != nil && len(entries) < n; k, v = cur.Next() {
		e, err := parseJournalEntry(k, v)
		if err != nil {
			return err
		}
		entries = append(entries, e)
		keys = append(keys, k...)
	}
	entries = latestPerSeq(entries)
	cb := tx.Bucket(bucketContainers)
	for _, e := range entries {
		var err error
		if e.body == nil {
			err = cb.Delete(containerKey(e.seq))
		} else {
			err = cb.Put(containerKey(e.seq), e.body)
		}
		if err != nil {
			return fmt.Errorf("fold journal: %w", err)
		}
	}
	for i := 0; i < len(keys); i += 8 {
		if err := jb.Delete(keys[i : i+8 : i+8]); err != nil {
			return fmt.Errorf("fold journal: %w", err)
		}
	}
	return nil
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

// journalEntry is one entry read back: the record's Seq and its JSON (nil
// for a tombstone).
type journalEntry struct {
	seq  uint64
	body []byte
}

// readJournal returns the journal's latest entry per Seq, in Seq order, and
// how many entries it holds. The bodies point into the transaction's pages.
func readJournal(jb *bolt.Bucket) ([]journalEntry, int, error) {
	var all []journalEntry
	err := jb.ForEach(func(k, v []byte) error {
		e, err := parseJournalEntry(k, v)
		all = append(all, e)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	n := len(all)
	return latestPerSeq(all), n, nil
}

// parseJournalEntry reads the entry stored under key k.
func parseJournalEntry(k, v []byte) (journalEntry, error) {
	if len(v) < 8 {
		return journalEntry{}, fmt.Errorf("journal entry %x: %d bytes, want at least 8", k, len(v))
	}
	e := journalEntry{seq: binary.BigEndian.Uint64(v)}
	if len(v) > 8 {
		e.body = v[8:]
	}
	return e, nil
}

// latestPerSeq sorts entries (in journal order) by Seq and keeps the last
// of each Seq, in place.
func latestPerSeq(entries []journalEntry) []journalEntry {
	// Stable: entries of one Seq stay in journal order, and the last wins.
	slices.SortStableFunc(entries, func(a, b journalEntry) int { return cmp.Compare(a.seq, b.seq) })
	out := entries[:0]
	for i, e := range entries {
		if i+1 < len(entries) && entries[i+1].seq == e.seq {
			continue
		}
		out = append(out, e)
	}
	return out
}

// foldJournal moves the journal into the containers bucket and recreates
// it empty, in the caller's transaction. The containers bucket is rebuilt
// rather than updated in place: its records, merged with the journal's
// latest in Seq order, are appended to a new bucket, whose pages are each
// filled and written once. (Updating the scattered records in place costs
// a leaf page read, spilt and written per changed record, much as the
// flushes the journal saved would have.) n is about how many records the
// store holds (the merge's capacity).
func foldJournal(tx *bolt.Tx, n int) error {
	latest, _, err := readJournal(tx.Bucket(bucketJournal))
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

// fold moves the whole journal into the containers bucket in its own
// transaction (Close; tests).
func (q *Queue) fold() error {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	if q.journalLen == 0 {
		return nil
	}
	q.mu.Lock()
	n := len(q.byID)
	q.mu.Unlock()
	if err := q.db.Update(func(tx *bolt.Tx) error { return foldJournal(tx, n) }); err != nil {
		return err
	}
	q.journalLen, q.journalNext = 0, 0
	return nil
}
