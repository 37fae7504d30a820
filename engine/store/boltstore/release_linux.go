// Giving back the file pages a load or writes read through bbolt's mapping (Linux).

package boltstore

import (
	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// releaseAfter is how many bytes of pages written (by flushes, folds,
// submits, stored output: every write transaction) bring the next release
// of the mapping's pages. A write reads the pages it changes through
// bbolt's mapping, where they stay resident: a million priority changes
// left 686 MB of the file in the daemon's RSS (BENCHMARKS.md). A read
// fault maps far more than its page (touching one page a MiB of a 300 MB
// file mapped 58 MB of it, MADV_RANDOM or not; BENCHMARKS.md, helper mem),
// so a fold of thousands of records scattered over the file maps most of
// it: the release must follow that flush, not wait for later ones. A fold
// writes about a page a record, so this is a release after any flush that
// folds a thousand records or more.
const releaseAfter = 4 << 20

// releaseNow gives the mapping's pages back at once (after each of a
// fold's transactions, foldOldest) and counts the pages written so far as
// given back, so that wrote does not release them again.
func (s *Store) releaseNow() {
	st := s.db.Stats()
	s.released.Store(st.TxStats.GetPageAlloc())
	s.releaseMapped()
}

// wrote gives the mapping's pages back when the pages written since the
// last time reach releaseAfter (or the tests' ReleaseAfter).
func (s *Store) wrote() {
	after := int64(orDefault(s.opts.ReleaseAfter, releaseAfter))
	st := s.db.Stats()
	total := st.TxStats.GetPageAlloc()
	last := s.released.Load()
	if total-last < after || !s.released.CompareAndSwap(last, total) {
		return // not yet, or a concurrent writer releases
	}
	s.releaseMapped()
}

// releaseMapped drops the process's mapping of the file's pages, which a
// load has just read every one of, or writes many: at a million
// containers they are 600 MB of the daemon's RSS that nothing reads again
// soon (the records are in memory, and writes go through the file). The
// pages stay in the page cache, and a later read through the mapping finds
// them there. Inside a read transaction, which holds bbolt's mapping in
// place (a remap waits for it): the range is the mapping's, never memory
// it gave back. Best effort: a failure only leaves the pages mapped.
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
