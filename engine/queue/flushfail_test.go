package queue

import (
	"testing"
	"time"
)

// A record that cannot be encoded fails the flush without unmarking the
// records encoded before it: each is still listed once, marked, for the
// next flush to write, however often it changes in between.
func TestFlushEncodeErrorKeepsEarlierRecordsMarked(t *testing.T) {
	e := newEnv(t, nil)
	a := e.submit(spec("true")).ID
	b := e.submit(spec("true")).ID
	q := e.q
	q.mu.Lock()
	ca, cb := q.byID.get(a), q.byID.get(b)
	q.markDirtyLocked(ca)
	q.markDirtyLocked(cb)
	seen := cb.FirstSeenAt
	cb.FirstSeenAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) // JSON cannot hold the year
	q.mu.Unlock()
	if err := q.Flush(); err == nil {
		t.Fatal("flush of a record dated year 10000 succeeded; want an encode error")
	}
	q.mu.Lock()
	cb.FirstSeenAt = seen
	q.markDirtyLocked(ca) // changed again before the next flush
	n := 0
	for _, c := range q.dirty {
		if c == ca {
			n++
		}
	}
	marked := ca.dirty
	q.mu.Unlock()
	if n != 1 || !marked {
		t.Fatalf("after the failed flush %s is listed %d times, marked %v; want once, marked", a, n, marked)
	}
	if err := q.Flush(); err != nil {
		t.Fatalf("flush after the record was mended: %v", err)
	}
	e.reopen()
	if e.get(a).ID != a || e.get(b).ID != b {
		t.Fatalf("after reopening: %+v, %+v", e.get(a), e.get(b))
	}
}
