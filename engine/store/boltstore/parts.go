// Parts: other packages' records (store.PartWrite), each part in a bucket
// of its own, written in the flush's transaction.

package boltstore

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"dispatch-tui/engine/store"
)

// partBucket is the bucket of part name: prefixed, so that no part can
// take one of the store's own buckets.
func partBucket(name string) []byte { return []byte("part:" + name) }

// LoadPart calls fn with each record of part name, in the byte order of
// their keys.
func (s *Store) LoadPart(name string, fn func(key, value []byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(partBucket(name))
		if b == nil {
			return nil // nothing written yet
		}
		if err := b.ForEach(fn); err != nil {
			return fmt.Errorf("load %s: %w", name, err)
		}
		return nil
	})
}

// putParts writes ws in tx.
func putParts(tx *bolt.Tx, ws []store.PartWrite) error {
	for _, w := range ws {
		b, err := tx.CreateBucketIfNotExists(partBucket(w.Name))
		if err != nil {
			return fmt.Errorf("create bucket of %s: %w", w.Name, err)
		}
		for i, k := range w.Keys {
			if w.Values[i] == nil {
				err = b.Delete([]byte(k))
			} else {
				err = b.Put([]byte(k), w.Values[i])
			}
			if err != nil {
				return fmt.Errorf("write %s record %s: %w", w.Name, k, err)
			}
		}
	}
	return nil
}
