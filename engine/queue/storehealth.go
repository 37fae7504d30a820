// Store health: whether the store can write the queue's records and events,
// kept in one place that every such write reports to (docs/design.md §10.1).

package queue

import (
	"errors"
	"maps"
	"slices"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/store"
	"dispatch-tui/engine/view"
)

// StoreHealth says whether the store can write. While it cannot (a full
// disk, a read-only remount, a database server down), the queue keeps its
// changes in memory and retries them: a pass's flush with a growing
// back-off (clock.Backoff from Options.StoreRetry), any other flush (a verb's) at once; nothing is lost
// unless the dispatcher stops before a write gets through.
type StoreHealth struct {
	// UnavailableSince is when the current run of failed writes began;
	// zero while writes succeed.
	UnavailableSince time.Time
	// Err is the last failed write's error while unavailable, else nil;
	// ErrKind its kind (store.KindOf).
	Err     error
	ErrKind view.StoreErrorKind
	// WriteFailures counts the writes of records and events that failed
	// since the store was opened; FailuresByKind counts them by kind.
	WriteFailures  uint64
	FailuresByKind map[view.StoreErrorKind]uint64
	// Flushes is how long the store took to write each flush.
	Flushes FlushHistogram
}

// FlushHistogram counts flushes by how long the store took to write them
// (wall time: a measurement, whatever the queue's clock): Counts[i] is
// how many took at most FlushBuckets[i] seconds.
type FlushHistogram struct {
	Counts []uint64
	Count  uint64
	Sum    float64 // seconds
}

// FlushBuckets are FlushHistogram's upper bounds, in seconds.
var FlushBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// observe adds a flush that took d.
func (h *FlushHistogram) observe(d time.Duration) {
	if h.Counts == nil {
		h.Counts = make([]uint64, len(FlushBuckets))
	}
	s := d.Seconds()
	for i, le := range FlushBuckets {
		if s <= le {
			h.Counts[i]++
		}
	}
	h.Count++
	h.Sum += s
}

// Writes of containers' output are not counted here: a failed one is the
// container's logs_error and is retried on its own (engine/output.go), and
// while the records still get through the store is not unavailable.

// Store-health events: one when writes start failing, one when they get
// through again, whatever the number of failed writes between.
const (
	StoreEventKind        = "store"
	StoreEventUnavailable = "unavailable"
	StoreEventAvailable   = "available"
)

// storeHealth is the queue's record behind StoreHealth; q.mu guards it.
type storeHealth struct {
	since    time.Time
	err      error
	failures uint64
	byKind   map[view.StoreErrorKind]uint64
	flushes  FlushHistogram
	// tries counts the failed writes since since; a pass's flush does not
	// try the store again before retryAt (zero: at once).
	tries   int
	retryAt time.Time
}

// MaxStoreRetry caps the wait between a pass's attempts to write while the
// store cannot: a pass may run twenty times a second, and a server that is
// down gains nothing from being asked that often, but once it is back the
// queue's changes should not wait long.
const MaxStoreRetry = 30 * time.Second

// ErrStoreRetryLater is a pass's flush not tried because the store failed
// the last write and its back-off has not run out (StoreHealth says since
// when); what it would have written stays in memory for a later flush.
var ErrStoreRetryLater = errors.New("write store: the store cannot write; retried later with a growing back-off")

// retryLaterLocked reports whether a pass's flush must wait for the
// back-off.
func (q *Queue) retryLaterLocked() bool {
	h := &q.health
	return !h.retryAt.IsZero() && q.clock.Now().Before(h.retryAt)
}

// StoreHealth returns whether the store can write.
func (q *Queue) StoreHealth() StoreHealth {
	q.mu.Lock()
	defer q.mu.Unlock()
	h := q.health
	flushes := h.flushes
	flushes.Counts = slices.Clone(flushes.Counts)
	out := StoreHealth{UnavailableSince: h.since, Err: h.err, WriteFailures: h.failures, FailuresByKind: maps.Clone(h.byKind), Flushes: flushes}
	if h.err != nil {
		out.ErrKind = store.KindOf(h.err)
	}
	return out
}

// StoreUnavailable reports, during a pass, whether the store's last write
// of records failed: the scheduler starts nothing it could not record
// (docs/design.md §10.1).
func (tx *Tx) StoreUnavailable() bool { return !tx.q.health.since.IsZero() }

// writeFailedLocked records a failed write of records or events. The first
// of a run marks the store unavailable with an event; the event waits in
// memory with the rest, so readers of the event log see it at once and the
// store gets it once it can write.
func (q *Queue) writeFailedLocked(err error) {
	h := &q.health
	h.failures++
	if h.byKind == nil {
		h.byKind = map[view.StoreErrorKind]uint64{}
	}
	h.byKind[store.KindOf(err)]++
	h.err = err
	now := q.clock.Now()
	h.tries++
	if first := q.opts.StoreRetry; first > 0 {
		h.retryAt = now.Add(clock.Backoff(first, MaxStoreRetry, h.tries))
	}
	if !h.since.IsZero() {
		return
	}
	h.since = now.UTC()
	q.addEventLocked(h.since, "store", StoreEventKind, "store", StoreEventUnavailable,
		"cannot write: "+err.Error()+"; changes are kept in memory and retried, less often the longer it lasts (at most every "+
			MaxStoreRetry.String()+")")
	q.notifyLocked()
}

// wroteLocked records a flush that got through: everything pending is on
// disk, so a run of failures is over, said with one event.
func (q *Queue) wroteLocked() {
	h := &q.health
	h.tries, h.retryAt = 0, time.Time{}
	if h.since.IsZero() {
		return
	}
	now := q.clock.Now().UTC()
	q.addEventLocked(now, "store", StoreEventKind, "store", StoreEventAvailable,
		"writes again after "+now.Sub(h.since).Round(time.Second).String()+" unavailable; what was kept in memory is written")
	h.since, h.err = time.Time{}, nil
	q.notifyLocked()
}

// eventsUnwritten is Events when the flush before reading the file failed:
// the store still has what it wrote, and the events it could not write
// wait in q.newEvents (the store-unavailable one among them), so the log
// reads whole while the store cannot write. flushMu keeps a flush from
// taking the waiting ones out between the two reads.
func (q *Queue) eventsUnwritten(since uint64, limit int) ([]Event, error) {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	out, err := q.storedEvents(since, limit)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range q.newEvents { // in Seq order
		if len(out) >= limit {
			break
		}
		if e.Seq > since && (len(out) == 0 || e.Seq > out[len(out)-1].Seq) {
			out = append(out, e)
		}
	}
	return out, nil
}
