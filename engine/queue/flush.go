// Flushing: what changed in memory (records, events, drops, the pause
// flag) goes to the store in one transaction.

package queue

import (
	"encoding/binary"
	"fmt"
	"math"

	bolt "go.etcd.io/bbolt"
)

// Flush writes every changed record and new event in one transaction.
// Records are encoded under q.mu (the scheduler changes them under it),
// into a buffer reused from flush to flush (flushMu), and appended to the
// journal (journal.go). The write is committed (and synced, unless NoSync)
// before Flush returns.
func (q *Queue) Flush() error { return q.flush(false) }

// flush is Flush; a scheduler pass's (pass) also folds the journal once it
// has reached its threshold, so the fold's cost falls on the pass that
// does it, never on a user's verb (which folds only past twice that).
func (q *Queue) flush(pass bool) error {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	parts, nparts, err := q.takeParts()
	if err != nil {
		return err
	}
	q.mu.Lock()
	nrec := len(q.byID)
	foldAt := q.foldThreshold(nrec)
	if !pass {
		foldAt *= 2
	}
	// A large store never rebuilds: it folds its oldest entries beyond
	// the window at every flush instead (journal.go).
	large := nrec > q.rebuildLimit()
	if large {
		foldAt = math.MaxInt
	}
	window := q.journalWindow()
	if len(q.dirty) == 0 && len(q.newEvents) == 0 && nparts == 0 && !q.overFinishedLocked() && q.journalLen < foldAt {
		q.mu.Unlock()
		return nil
	}
	// The records are encoded as one journal batch (journal.go): each
	// entry's Seq, the JSON's length (filled in once encoded), the JSON.
	buf := append(q.flushBuf[:0], batchMarker, 0, 0, 0, 0)
	recs := q.flushRecs[:0]
	for _, c := range q.dirty {
		start := len(buf)
		buf = binary.BigEndian.AppendUint64(buf, c.Seq)
		buf = append(buf, 0, 0, 0, 0)
		var err error
		if buf, err = appendContainer(buf, c); err != nil {
			q.mu.Unlock()
			q.unwriteParts(parts)
			return fmt.Errorf("encode container %s: %w", c.ID, err)
		}
		binary.BigEndian.PutUint32(buf[start+8:], uint32(len(buf)-start-entryHeader))
		c.dirty = false
		recs = append(recs, c)
	}
	clear(q.dirty)
	q.dirty = q.dirty[:0]
	drop := q.dropFinishedLocked()
	events := q.newEvents
	q.newEvents = q.spareEvents[:0] // the previous flush's array, if any
	q.spareEvents = nil
	paused := q.paused
	q.mu.Unlock()

	// Tombstones: the Seq, and a length of 0.
	for _, c := range drop {
		buf = binary.BigEndian.AppendUint64(buf, c.Seq)
		buf = append(buf, 0, 0, 0, 0)
	}
	binary.BigEndian.PutUint32(buf[1:], uint32(len(recs)+len(drop)))
	batch := buf[:len(buf):len(buf)]
	jlen, jnext := q.journalLen, q.journalNext
	err = q.db.Update(func(tx *bolt.Tx) error {
		if err := putParts(tx, parts); err != nil {
			return err
		}
		if len(recs)+len(drop) > 0 {
			jb := tx.Bucket(bucketJournal)
			jb.FillPercent = appendFill
			var err error
			if jnext, err = putBatches(jb, jnext, batch, len(recs)+len(drop), q.batchLimit()); err != nil {
				return err
			}
		}
		for _, c := range drop {
			if err := tx.Bucket(bucketLogs).Delete([]byte(c.ID)); err != nil {
				return err
			}
		}
		jlen += len(recs) + len(drop)
		eb := tx.Bucket(bucketEvents)
		var err error
		if buf, err = putEvents(eb, events, buf); err != nil {
			return err
		}
		if n := len(events); n > 0 && q.opts.EventRetention > 0 {
			if err := pruneEvents(eb, events[n-1].Seq, uint64(q.opts.EventRetention)); err != nil {
				return err
			}
		}
		if paused != q.pausedStored {
			v := "false"
			if paused {
				v = "true"
			}
			if err := tx.Bucket(bucketMeta).Put(keyPaused, []byte(v)); err != nil {
				return err
			}
		}
		switch {
		case jlen >= foldAt:
			if err := foldJournal(tx, nrec, jlen); err != nil {
				return err
			}
			jlen, jnext = 0, 0
		case large && jlen > window:
			n, err := foldOldest(tx, jlen-window)
			if err != nil {
				return err
			}
			jlen -= n
		}
		return nil
	})
	if err != nil {
		// Put the work back so a later flush retries it.
		q.mu.Lock()
		for _, c := range recs {
			q.markDirtyLocked(c)
		}
		q.newEvents = append(events, q.newEvents...)
		q.undropLocked(drop)
		q.writeFailedLocked(err)
		q.mu.Unlock()
		q.unwriteParts(parts)
		return fmt.Errorf("write store: %w", err)
	}
	q.journalLen, q.journalNext = jlen, jnext
	q.pausedStored = paused
	// bbolt has copied the values into its pages at commit: the buffers
	// are free for the next flush (kept unless a burst made them large).
	if cap(buf) <= maxKeptFlushBuf {
		q.flushBuf = buf[:0]
	}
	clear(recs)
	if cap(recs) <= maxKeptFlushBuf/64 {
		q.flushRecs = recs[:0]
	}
	// events' array is ours again: the next flush's events may fill it
	// instead of growing a new one event by event.
	q.mu.Lock()
	if cap(events) <= maxKeptFlushBuf/64 {
		clear(events)
		q.spareEvents = events[:0]
	}
	q.wroteLocked()
	q.mu.Unlock()
	return nil
}

// maxKeptFlushBuf bounds the encoding buffer a queue keeps between
// flushes (a start-up or bulk submit may have needed far more).
const maxKeptFlushBuf = 8 << 20
