// The cluster id in the meta bucket, beside the pause flag.

package boltstore

import (
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

var keyClusterID = []byte("cluster_id")

// ClusterID returns the cluster id the meta bucket keeps, "" while none.
func (s *Store) ClusterID() (string, error) {
	var id string
	err := s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketMeta); b != nil {
			id = string(b.Get(keyClusterID))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("read the cluster id: %w", err)
	}
	return id, nil
}

// KeepClusterID keeps id unless the meta bucket holds one; it returns the
// one held. It may run before Load, so it makes the bucket itself.
func (s *Store) KeepClusterID(id string) (string, error) {
	kept := id
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if v := b.Get(keyClusterID); v != nil {
			kept = string(v)
			return nil
		}
		return b.Put(keyClusterID, []byte(id))
	})
	if err != nil {
		return "", fmt.Errorf("keep the cluster id: %w", err)
	}
	return kept, nil
}

// PartNames returns the parts that have a bucket, sorted.
func (s *Store) PartNames() ([]string, error) {
	var names []string
	prefix := string(partBucket(""))
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if n, ok := strings.CutPrefix(string(name), prefix); ok {
				if k, _ := b.Cursor().First(); k == nil {
					return nil // emptied
				}
				names = append(names, n)
			}
			return nil
		})
	})
	slices.Sort(names)
	return names, err
}
