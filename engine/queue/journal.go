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
// A fold moves the journal into the containers bucket (the latest entry
// per Seq, in key order, so each page is visited once however many of its
// records changed) and drops the bucket, freeing its pages at once. A
// scheduler pass's flush folds when the journal has reached foldAt entries;
// Close folds what is left, so a cleanly closed store has an empty journal
// and an older binary, which knows nothing of it, reads everything.
var bucketJournal = []byte("journal")

// Fold threshold: the journal is folded once it holds this many entries
// per container in the queue, within [minFoldEntries, maxFoldEntries].
// A fold's cost is bounded by the pages of the containers bucket it
// rewrites; the more passes between folds, the more of each page's
// changes one write carries. The cap bounds the worst fold (and the
// journal a start-up replays) on a very large queue.
const (
	foldPerContainer = 0.25
	minFoldEntries   = 4096
	maxFoldEntries   = 65536
)

// foldThreshold is the number of journal entries at which a pass folds,
// for a queue of n containers.
func foldThreshold(n int) int {
	return min(max(int(float64(n)*foldPerContainer), minFoldEntries), maxFoldEntries)
}

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
		if len(v) < 8 {
			return fmt.Errorf("journal entry %x: %d bytes, want at least 8", k, len(v))
		}
		e := journalEntry{seq: binary.BigEndian.Uint64(v)}
		if len(v) > 8 {
			e.body = v[8:]
		}
		all = append(all, e)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	n := len(all)
	// Stable: entries of one Seq stay in journal order, and the last wins.
	slices.SortStableFunc(all, func(a, b journalEntry) int { return cmp.Compare(a.seq, b.seq) })
	out := all[:0]
	for i, e := range all {
		if i+1 < len(all) && all[i+1].seq == e.seq {
			continue
		}
		out = append(out, e)
	}
	return out, n, nil
}

// foldJournal moves the journal into the containers bucket and recreates
// it empty, in the caller's transaction.
func foldJournal(tx *bolt.Tx) error {
	latest, _, err := readJournal(tx.Bucket(bucketJournal))
	if err != nil {
		return err
	}
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
	if _, err := tx.CreateBucket(bucketJournal); err != nil {
		return fmt.Errorf("fold journal: %w", err)
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
	if err := q.db.Update(foldJournal); err != nil {
		return err
	}
	q.journalLen, q.journalNext = 0, 0
	return nil
}
