// Giving back the file pages a load or writes read through bbolt's mapping (Linux).

package boltstore

import (
	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// releaseAfter is how many records written (journaled, folded or
// submitted) bring the next release of the mapping's pages. A write reads
// the pages it changes through bbolt's mapping, where they stay resident:
// a million priority changes left 686 MB of the file in the daemon's RSS
// (BENCHMARKS.md). A record touches a page or two (4 KiB each), so this
// bounds what writes add to 64–128 MiB, for one release (a few
// milliseconds: BENCHMARKS.md, helper mem) every 16,384 records.
const releaseAfter = 1 << 14

// wrote counts n records written, and gives the mapping's pages back
// when the count since the last time reaches releaseAfter (or the tests'
// ReleaseAfter).
func (s *Store) wrote(n int) {
	after := int64(releaseAfter)
	if s.opts.ReleaseAfter > 0 {
		after = int64(s.opts.ReleaseAfter)
	}
	if s.written.Add(int64(n)) < after || s.written.Swap(0) < after {
		return // not yet, or a concurrent writer took the count
	}
	s.releaseMapped()
}

// releaseMapped drops the process's mapping of the file's pages, which a
// load has just read every one of, or writes many: at a million
// containers they are 600 MB of the daemon's RSS that nothing reads again
// soon (the records are in memory, and writes go through the file). The pages stay in the page
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
