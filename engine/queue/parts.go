// Parts: other packages' records kept in the queue's store, each in its own
// bucket, read at Open and written in the queue's flushes, in the same
// transaction as the containers (the cost ledger's, engine/cost).

package queue

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Part is a set of records another package keeps in the store.
type Part interface {
	// PartBucket names the part's bucket.
	PartBucket() string
	// LoadRecord is given each stored record at Open.
	LoadRecord(key, value []byte) error
	// PendingRecords returns the records changed since its last call (a
	// nil value deletes the key).
	PendingRecords() (keys []string, values [][]byte, err error)
	// Unwritten gives back keys a flush took but could not write.
	Unwritten(keys []string)
}

// partWrites is what one flush writes for the parts.
type partWrites struct {
	part   Part
	keys   []string
	values [][]byte
}

// loadParts creates the parts' buckets and reads their records (in load's
// transaction).
func (q *Queue) loadParts(tx *bolt.Tx) error {
	for _, p := range q.opts.Parts {
		b, err := tx.CreateBucketIfNotExists([]byte(p.PartBucket()))
		if err != nil {
			return fmt.Errorf("create bucket %s: %w", p.PartBucket(), err)
		}
		if err := b.ForEach(p.LoadRecord); err != nil {
			return err
		}
	}
	return nil
}

// takeParts collects what the parts have to write; n is how many records.
func (q *Queue) takeParts() (w []partWrites, n int, err error) {
	for _, p := range q.opts.Parts {
		keys, values, err := p.PendingRecords()
		if err != nil {
			q.unwriteParts(w)
			return nil, 0, err
		}
		if len(keys) > 0 {
			w = append(w, partWrites{part: p, keys: keys, values: values})
			n += len(keys)
		}
	}
	return w, n, nil
}

// putParts writes them in the flush's transaction.
func putParts(tx *bolt.Tx, ws []partWrites) error {
	for _, w := range ws {
		b := tx.Bucket([]byte(w.part.PartBucket()))
		for i, k := range w.keys {
			var err error
			if w.values[i] == nil {
				err = b.Delete([]byte(k))
			} else {
				err = b.Put([]byte(k), w.values[i])
			}
			if err != nil {
				return fmt.Errorf("write %s record %s: %w", w.part.PartBucket(), k, err)
			}
		}
	}
	return nil
}

// unwriteParts gives the parts back what a failed flush took.
func (q *Queue) unwriteParts(ws []partWrites) {
	for _, w := range ws {
		w.part.Unwritten(w.keys)
	}
}
