// Giving back the file pages a load read through bbolt's mapping (Linux).

package boltstore

import (
	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// releaseMapped drops the process's mapping of the file's pages, which a
// load has just read every one of: at a million containers they are
// 600 MB of the daemon's RSS that nothing reads again (the records are in
// memory, and writes go through the file). The pages stay in the page
// cache, and a later read through the mapping finds them there. Inside a
// read transaction, which holds bbolt's mapping in place (a remap waits
// for it): the range is the mapping's, never memory it gave back. Best
// effort: a failure only leaves the pages mapped.
func (s *Store) releaseMapped() {
	_ = s.db.View(func(tx *bolt.Tx) error {
		info := s.db.Info()
		size := int(tx.Size())
		if info.Data == 0 || size <= 0 {
			return nil
		}
		// The mapping starts on a page and is at least the file's size;
		// the address is bbolt's, passed as the number it gave.
		unix.Syscall(unix.SYS_MADVISE, info.Data, uintptr(size), unix.MADV_DONTNEED)
		return nil
	})
}
