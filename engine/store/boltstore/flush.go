// Writes: a flush's batch appended to the journal with its events, drops
// and pause flag in one transaction; a submit's records put in the
// containers bucket, group-committed.

package boltstore

import (
	"fmt"
	"math"

	bolt "go.etcd.io/bbolt"

	"dispatch-tui/engine/store"
)

// foldAt is the journal length at which a flush folds: a pass's at the
// threshold, other flushes only past twice that, so that the fold's cost
// falls on the pass that does it, never on a user's verb. A large store
// never rebuilds (it folds its oldest entries beyond the window instead:
// foldsOldest); large reports which.
func (s *Store) foldAt(records int, pass bool) (at int, large bool) {
	at = s.foldThreshold(records)
	if !pass {
		at *= 2
	}
	if records > s.rebuildLimit() {
		return math.MaxInt, true
	}
	return at, false
}

// Due reports whether the journal is due a fold: a rebuild, or a large
// store's fold of its oldest entries (foldsOldest) when none is in
// progress (the folder has that one), or a fold left to a failed flush to
// report.
func (s *Store) Due(records int, pass bool) bool {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	at, large := s.foldAt(records, pass)
	return s.journalLen >= at || large && !s.folding.on && s.foldsOldest(records, pass, s.journalLen) || s.foldErr != nil
}

// foldsOldest reports whether a flush (a pass's, or not) of a large store
// of n records leaving jlen entries in its journal folds the oldest beyond
// the window: a pass's past foldAfter entries beyond it, other flushes
// past twice that, so that a user's verb seldom waits for a fold.
func (s *Store) foldsOldest(n int, pass bool, jlen int) bool {
	after := s.foldAfter(n)
	if !pass {
		after *= 2
	}
	return jlen > s.journalWindow()+after
}

// Flush writes b in one transaction: its records and drops as journal
// batches (journal.go), the drops' output deleted, its events, the pause
// flag if changed, and a rebuild if one is due. It is committed (and
// synced, unless NoSync) before Flush returns. A large store's fold of its
// oldest entries, once due, is left to the folder (folder.go), unless the
// journal has outgrown twice its bound: then this flush folds the rest.
// A fold the folder failed is this flush's error, b not written.
func (s *Store) Flush(b *store.Batch) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	if err := s.foldErr; err != nil {
		s.foldErr = nil
		return err
	}
	foldAt, large := s.foldAt(b.Records, b.Pass)
	window := s.journalWindow()
	batch, n := b.Entries()
	jlen, jnext := s.journalLen, s.journalNext
	rebuilt := false
	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := putParts(tx, b.Parts); err != nil {
			return err
		}
		if n > 0 {
			jb := tx.Bucket(bucketJournal)
			jb.FillPercent = appendFill
			var err error
			if jnext, err = putBatches(jb, jnext, batch, n, s.batchLimit()); err != nil {
				return err
			}
		}
		for _, d := range b.Drops() {
			if err := tx.Bucket(bucketLogs).Delete([]byte(d.ID)); err != nil {
				return err
			}
		}
		jlen += n
		if err := s.putEvents(tx, b); err != nil {
			return err
		}
		if b.Paused != s.pausedStored {
			v := "false"
			if b.Paused {
				v = "true"
			}
			if err := tx.Bucket(bucketMeta).Put(keyPaused, []byte(v)); err != nil {
				return err
			}
		}
		if jlen >= foldAt {
			if err := foldJournal(tx, b.Records, jlen); err != nil {
				return err
			}
			jlen, jnext, rebuilt = 0, 0, true
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.journalLen, s.journalNext = jlen, jnext
	s.pausedStored = b.Paused
	s.records.Store(int64(b.Records))
	if rebuilt {
		s.folding.on = false // no value of a fold in progress is left
	}
	if large && !s.folding.on && s.foldsOldest(b.Records, b.Pass, jlen) {
		s.startFold(jlen - window)
	}
	s.wrote()
	if !s.folding.on {
		return nil
	}
	// The batch is committed: the fold of the oldest values, in
	// transactions of their own, only moves what the journal holds. The
	// folder goes on with it; once the journal has outgrown twice its
	// bound, as if the folder could not keep up, this flush folds the rest.
	if jlen <= window+4*s.foldAfter(b.Records) {
		s.nudgeFolder()
		return nil
	}
	n, done, err := s.foldChunks(math.MaxInt)
	if done {
		s.journalLen -= n
	}
	if err != nil {
		return fmt.Errorf("fold the journal's oldest entries after the flush: %w", err)
	}
	return nil
}

// Submit puts b's new records straight into the containers bucket (new,
// increasing Seqs: appends) with their events, in a transaction shared
// with concurrent submits (group.go).
func (s *Store) Submit(b *store.Batch) error {
	err := s.group.write(func(tx *bolt.Tx) error {
		cb := tx.Bucket(bucketContainers)
		cb.FillPercent = appendFill
		err := b.EachRecord(func(seq uint64, body []byte) error {
			if body == nil {
				return fmt.Errorf("submit of container %d without a record", seq)
			}
			return cb.Put(containerKey(seq), body)
		})
		if err != nil {
			return err
		}
		return s.putEvents(tx, b)
	})
	if err == nil {
		_, n := b.Entries()
		s.records.Add(int64(n))
		s.wrote()
	}
	return err
}

// putEvents writes b's events and applies the retention.
func (s *Store) putEvents(tx *bolt.Tx, b *store.Batch) error {
	n := b.Events()
	if n == 0 {
		return nil
	}
	eb := tx.Bucket(bucketEvents)
	if err := putEvents(eb, b); err != nil {
		return err
	}
	if s.opts.EventRetention > 0 {
		return pruneEvents(eb, b.EventSeq(n-1), uint64(s.opts.EventRetention))
	}
	return nil
}
