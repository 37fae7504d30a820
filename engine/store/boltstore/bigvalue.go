// Large values in bbolt, each stored alone so that appends do not rewrite them.

package boltstore

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Batches (a flush's journal records, its events) are large values
// appended under increasing keys. bbolt rewrites a touched leaf whole and
// never splits a leaf of four entries or fewer, so a large value in the
// leaf the next key is appended to would be written again by every later
// write. putAlone therefore stores a value larger than a few entries as
// the only value of a bucket of its own under its key: one leaf, written
// once in one write to contiguous pages, and freed whole when deleted.
// Small values (a verb's) stay plain values: bbolt would inline a bucket
// that small into the leaf anyway.

// maxInline is the largest value putAlone stores as a plain value.
const maxInline = 2048

// aloneKey is the key of the one value in a bucket made by putAlone.
var aloneKey = []byte("v")

// putAlone stores v under k in b, in a bucket of its own if large.
func putAlone(b *bolt.Bucket, k, v []byte) error {
	if len(v) <= maxInline {
		return b.Put(k, v)
	}
	sub, err := b.CreateBucket(k)
	if err != nil {
		return fmt.Errorf("bucket for %x: %w", k, err)
	}
	return sub.Put(aloneKey, v)
}

// storedAlone returns the value putAlone stored under k, given the
// cursor's value v there (nil for a bucket).
func storedAlone(b *bolt.Bucket, k, v []byte) ([]byte, error) {
	if v != nil {
		return v, nil
	}
	if sub := b.Bucket(k); sub != nil {
		if v := sub.Get(aloneKey); v != nil {
			return v, nil
		}
	}
	return nil, fmt.Errorf("value %x: an empty bucket", k)
}

// deleteAlone deletes what putAlone stored under k (bucket: whether it
// is a bucket, the cursor's value there being nil).
func deleteAlone(b *bolt.Bucket, k []byte, bucket bool) error {
	if bucket {
		return b.DeleteBucket(k)
	}
	return b.Delete(k)
}
