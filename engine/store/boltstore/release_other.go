//go:build !linux

// Giving back the file pages a load or writes read (elsewhere than Linux: left to
// the kernel).

package boltstore

// releaseMapped does nothing here: see release_linux.go.
func (s *Store) releaseMapped() {}

// releaseNow does nothing here: see release_linux.go.
func (s *Store) releaseNow() {}

// wrote does nothing here: see release_linux.go.
func (s *Store) wrote() {}
