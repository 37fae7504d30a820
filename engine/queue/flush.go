// Flushing: what changed in memory (records, events, drops, the pause
// flag) goes to the store as one batch, in one transaction.

package queue

import (
	"fmt"
	"time"

	"dispatch-tui/engine/store"
)

// Flush writes every changed record and new event in one transaction.
// Records are encoded under q.mu (the scheduler changes them under it),
// into a batch reused from flush to flush (flushMu). The write is durable
// before Flush returns.
func (q *Queue) Flush() error { return q.flush(false) }

// flush is Flush; pass says it is a scheduler pass's, which the store may
// do its own upkeep in (bbolt folds its journal), so that its cost falls
// on the pass, never on a user's verb.
func (q *Queue) flush(pass bool) error {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	parts, nparts, err := q.takeParts()
	if err != nil {
		return err
	}
	q.mu.Lock()
	nrec := q.byID.len()
	if len(q.dirty) == 0 && len(q.newEvents) == 0 && nparts == 0 && !q.overFinishedLocked() && !q.store.Due(nrec, pass) {
		q.mu.Unlock()
		return nil
	}
	if pass && q.retryLaterLocked() {
		// The last failure rides along: a caller that must act on its
		// kind (a fenced leader stops) still sees it.
		err := fmt.Errorf("%w (last failure: %w)", ErrStoreRetryLater, q.health.err)
		q.mu.Unlock()
		q.unwriteParts(parts)
		return err
	}
	b := &q.flushBatch
	b.Reset()
	b.Pass, b.Records = pass, nrec
	b.Parts = append(b.Parts, parts...)
	recs := q.flushRecs[:0]
	for _, c := range q.dirty {
		if err := encodeRecord(b, c); err != nil {
			// The records before it stay listed: mark them again, or a
			// later change would list them twice.
			for _, r := range recs {
				r.dirty = true
			}
			q.mu.Unlock()
			q.unwriteParts(parts)
			return err
		}
		c.dirty = false
		recs = append(recs, c)
	}
	clear(q.dirty)
	q.dirty = q.dirty[:0]
	drop := q.dropFinishedLocked()
	events := q.newEvents
	q.newEvents = q.spareEvents[:0] // the previous flush's array, if any
	q.spareEvents = nil
	b.Paused = q.paused
	q.mu.Unlock()

	for _, c := range drop {
		b.Drop(c.Seq, c.ID)
	}
	err = encodeEvents(b, events)
	if err == nil {
		start := time.Now() // wall time: how long the store took
		err = q.store.Flush(b)
		took := time.Since(start)
		q.mu.Lock()
		q.health.flushes.observe(took)
		q.mu.Unlock()
	}
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
	clear(recs)
	if cap(recs) <= maxKeptFlushRecs {
		q.flushRecs = recs[:0]
	}
	// events' array is ours again: the next flush's events may fill it
	// instead of growing a new one event by event.
	q.mu.Lock()
	if cap(events) <= maxKeptFlushRecs {
		clear(events)
		q.spareEvents = events[:0]
	}
	q.wroteLocked()
	q.mu.Unlock()
	return nil
}

// maxKeptFlushRecs bounds the lists of records and events a queue keeps
// between flushes (a start-up or bulk change may have needed far more).
const maxKeptFlushRecs = 128 << 10

// encodeRecord adds c's record to b.
func encodeRecord(b *store.Batch, c *Container) error {
	buf, err := appendContainer(b.BeginRecord(c.Seq), c)
	if err != nil {
		return fmt.Errorf("encode container %s: %w", c.ID, err)
	}
	b.EndRecord(buf)
	return nil
}

// encodeRecords adds recs to b.
func encodeRecords(b *store.Batch, recs []*Container) error {
	for _, c := range recs {
		if err := encodeRecord(b, c); err != nil {
			return err
		}
	}
	return nil
}

// encodeEvents adds events (in Seq order) to b.
func encodeEvents(b *store.Batch, events []Event) error {
	for i := range events {
		buf, err := appendEvent(b.BeginEvent(), &events[i])
		if err != nil {
			return fmt.Errorf("encode event %d: %w", events[i].Seq, err)
		}
		b.EndEvent(events[i].Seq, buf)
	}
	return nil
}
