//go:build !linux

// Giving back the file pages a load or writes read (elsewhere than Linux: left to
// the kernel).

package boltstore

import bolt "go.etcd.io/bbolt"

// releaseMapped does nothing here: see release_linux.go.
func (s *Store) releaseMapped() {}

// update runs fn in a write transaction: see release_linux.go.
func (s *Store) update(_ bool, fn func(*bolt.Tx) error) error { return s.db.Update(fn) }

// wrote does nothing here: see release_linux.go.
func (s *Store) wrote() {}
