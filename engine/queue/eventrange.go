// The range of sequence numbers the event log holds.

package queue

// EventRange: the sequence numbers the event log holds, so that a reader
// of the newest events knows where to start and how many there are.

// EventRange returns the oldest and newest sequence numbers of the events
// kept (the store's, and those not yet written); ok is false while there
// are none. Seqs are consecutive but for those of writes that failed.
func (q *Queue) EventRange() (first, last uint64, ok bool) {
	q.mu.Lock()
	last = q.nextEvent - 1
	if len(q.recent) > 0 {
		first = q.recent[0].Seq
	}
	q.mu.Unlock()
	if last == 0 || first == 0 {
		return 0, 0, false
	}
	if f, ok := q.store.FirstEvent(); ok {
		first = min(first, f)
	}
	return first, last, true
}
