// What the queue keeps beside each waiting container: pending reason and pass hints.

package queue

import (
	"slices"
	"sync"
	"time"

	"dispatch-tui/engine/view"
)

// Beside each entry of the scheduling order (q.active, with q.keys) the
// queue keeps an entry: which reason the last pass left for the container
// — the common one, "position N", entirely — and what a pass needs to see
// that a waiting container simply waits its turn, copied from the record
// when it is placed. At 100,000 waiting containers a pass that wrote each
// one's position into its record, and read the record to decide it, spent
// most of its time on the cache misses of loading 512-byte records
// scattered over the heap; the entries are read and written in order, 16
// bytes apart.
type entry struct {
	n      int         // N of a position reason
	reason entryReason // which reason the container has
	flags  entryFlags
	shape  uint16 // the record's shape id (shapes), 0 for none
}

// entryReason says where a container's pending reason is.
type entryReason uint8

const (
	reasonNone     entryReason = iota // none
	reasonPosition                    // "position n"
	reasonInRecord                    // another, in the record (Container.pend)
)

// pending is the reason e (c's entry) says c has.
func (e *entry) pending(c *Container) Pending {
	switch e.reason {
	case reasonPosition:
		return Pending{Code: ReasonPosition, N: e.n}
	case reasonInRecord:
		return c.pend.get()
	}
	return Pending{}
}

// setPending gives c, whose entry e is, the reason p, and reports whether
// that changed it. A position (most calls, and most of those change only
// N) is a store or two into the entry, without touching the record.
func (e *entry) setPending(c *Container, p Pending) bool {
	switch {
	case p.Code == ReasonPosition && p.Arg == "":
		if e.reason == reasonPosition && e.n == p.N {
			return false
		}
		e.reason, e.n = reasonPosition, p.N
	case p == (Pending{}):
		if e.reason == reasonNone {
			return false
		}
		e.reason = reasonNone
	default:
		if e.reason == reasonInRecord && c.pend.is(p) {
			return false
		}
		e.reason = reasonInRecord
		c.pend.set(p)
	}
	return true
}

// entryFlags are the record's fields, other than its state and priority
// (in its key), that decide whether a waiting container is plain.
type entryFlags uint8

const (
	entryHeld entryFlags = 1 << iota
	entryLabels
	entrySupervisor
)

// entryFor is c's entry as placed now, with the reason of carried (c's
// entry before it was re-placed, or none). Everything it copies
// either never changes after submission (labels, supervisor, shape) or
// re-places the record when it does (Held: Hold and Release mark it moved).
func entryFor(c *Container, carried entry) entry {
	var f entryFlags
	if c.Held {
		f |= entryHeld
	}
	if c.hints&hintConstraints != 0 {
		f |= entryLabels
	}
	if c.hints&hintSupervisor != 0 {
		f |= entrySupervisor
	}
	return entry{n: carried.n, reason: carried.reason, flags: f, shape: c.shape}
}

// maxShapes bounds the shapes a queue numbers; records of later shapes get
// id 0 and go the slow way through a pass.
const maxShapes = 1<<16 - 1

// shapeLocked returns rc's shape id, numbering it if it is new: records of
// one shape fit the same instance types, so a pass decides a fit once per
// shape, not once per record.
func (q *Queue) shapeLocked(rc Constraints) uint16 {
	if id, ok := q.shapeIDs[rc]; ok {
		return id
	}
	if len(q.shapes) >= maxShapes {
		return 0
	}
	if len(q.shapes) == 0 {
		q.shapes = append(q.shapes, Constraints{}) // id 0: none
	}
	id := uint16(len(q.shapes))
	q.shapes = append(q.shapes, rc)
	q.shapeIDs[rc] = id
	return id
}

// indexLocked returns where c sits in q.active, or -1 if it is not placed
// there (new since the last sortLocked, or final and moved out).
func (q *Queue) indexLocked(c *Container) int {
	if !c.ord.placed {
		return -1
	}
	// A plain binary search on the keys: galloping from 0 (seekForward)
	// would take twice the steps.
	if i := searchKeys(q.keys, q.active, 0, len(q.keys), keyed{placedKey(c), c}, compareTied); i < len(q.active) && q.active[i] == c {
		return i
	}
	return -1
}

// pendingLocked is the reason the last pass left on c. Only a waiting
// container (Queued or Locked) has one, and only until it starts or ends
// (stale): then its entry keeps the reason, unread, until the next
// sortLocked re-places or removes it.
func (q *Queue) pendingLocked(c *Container) Pending {
	if !hasPending(c) {
		return Pending{}
	}
	if i := q.indexLocked(c); i >= 0 {
		return q.side[i].pending(c)
	}
	return Pending{}
}

// hasPending reports whether c may have a pending reason: it is placed in
// the order, waiting, and has not started or ended since its reason was set.
func hasPending(c *Container) bool { return c.ord.placed && !c.ord.stale && c.State.Waiting() }

// viewLocked is c's view with its pending reason.
func (q *Queue) viewLocked(c *Container) view.Container { return c.view(q.pendingLocked(c)) }

// viewsLocked sets out[i] to cs[i]'s view with its pending reason. The
// waiting ones' reasons are looked up in key order, each search going
// forward from the last hit (a page of 10,000 of 100,000 costs about a walk
// of the keys, not 10,000 binary searches); the views are then made in cs's
// order, which is the order of the records in memory for a page in
// submission order.
func (q *Queue) viewsLocked(cs []*Container, out []view.Container) {
	q.eachViewLocked(cs, new(viewScratch), func(i int, c *Container, p Pending) { out[i] = c.view(p) })
}

// viewScratch is the space views are made in: the views themselves for a
// reader that hands them over a chunk at a time (ChangesEach), and the
// look-ups of their pending reasons. A read of changes reuses one
// (viewScratches): its chunk was half a kilobyte of garbage a view.
type viewScratch struct {
	views   []view.Container
	look    []viewLookup
	pending []Pending
}

// viewScratches are the viewScratch of reads of changes, kept between them.
var viewScratches = sync.Pool{New: func() any { return new(viewScratch) }}

// viewLookup is a waiting record whose pending reason a view needs, at
// index at of the records being viewed.
type viewLookup struct {
	keyed
	at int
}

// eachViewLocked calls set with each of cs, its index and its pending
// reason, found as viewsLocked says, with sc's look-ups.
func (q *Queue) eachViewLocked(cs []*Container, sc *viewScratch, set func(i int, c *Container, p Pending)) {
	look := sc.look[:0]
	for i, c := range cs {
		if hasPending(c) {
			look = append(look, viewLookup{keyed{placedKey(c), c}, i})
		}
	}
	var pending []Pending
	if len(look) > 0 {
		pending = slices.Grow(sc.pending[:0], len(cs))[:len(cs)]
		clear(pending)
		slices.SortFunc(look, func(a, b viewLookup) int { return compareKeyed(a.keyed, b.keyed) })
		from := 0
		for _, l := range look {
			if i := seekForward(q.keys, q.active, from, l.keyed, compareTied); i < len(q.active) && q.active[i] == l.c {
				pending[l.at], from = q.side[i].pending(l.c), i+1
			}
		}
		sc.pending = pending
	}
	clear(look) // no records kept past the call
	sc.look = look[:0]
	for i, c := range cs {
		var p Pending
		if pending != nil {
			p = pending[i]
		}
		set(i, c, p)
	}
}

// Index returns where c sits in Active, or -1 if it is not there.
func (tx *Tx) Index(c *Container) int { return tx.q.indexLocked(c) }

// Pending returns the reason the pass (or the last one) left on c.
func (tx *Tx) Pending(c *Container) Pending { return tx.q.pendingLocked(c) }

// Shapes returns the resource shapes of the queue's containers, by shape
// id (id 0 is none, for records past maxShapes). The list only grows.
func (tx *Tx) Shapes() []Constraints { return tx.q.shapes }

// WaitInLine gives the plain waiting containers of Active, from index from
// on and in a row, the reason "position" with N = position+1,
// position+2, …, and returns how many it gave one and the earliest first
// seen among them (zero if none). A container is plain if it was placed
// Queued and has not changed since the pass began, is not held, has a
// priority above 0, no labels, is not a supervisor, and its shape id (see
// Shapes) has fits[id] set. WaitInLine stops at the first that is not, at
// index limit, or at the end; it reads the entries beside the order, not
// the records.
func (tx *Tx) WaitInLine(from, limit, position int, fits []bool) (int, time.Time) {
	q := tx.q
	limit = min(limit, len(q.active))
	if from >= limit {
		return 0, time.Time{}
	}
	if next := tx.nextChanged(from); next < limit {
		limit = next
	}
	queuedRank := uint64(rank(Queued))
	const prioZero = prioMax - 1
	keys, side := q.keys[from:limit], q.side[from:limit]
	oldest := uint64(fsMax)
	changed := false
	n := 0
	for ; n < len(keys); n++ {
		k, e := keys[n], &side[n]
		if k.hi>>62 != queuedRank || e.flags != 0 || int(e.shape) >= len(fits) || !fits[e.shape] {
			break
		}
		if pc := k.hi >> 32 & prioMax; pc >= prioZero || pc == 0 {
			break // priority 0, or past the key's range (clamped)
		}
		f := (k.hi&(1<<32-1))<<30 | k.lo>>seqBits
		if f == 0 || f == fsMax {
			break // first seen past the key's range: left to the record
		}
		oldest = min(oldest, f)
		position++
		if e.reason != reasonPosition {
			// A new reason: readers of changes see it (changes.go).
			q.changedLocked(q.active[from+n])
		}
		if e.reason != reasonPosition || e.n != position {
			e.reason, e.n = reasonPosition, position
			changed = true
		}
	}
	if changed {
		q.gen++
	}
	if n == 0 {
		return 0, time.Time{}
	}
	d := oldest - 1 // nanoseconds since fsEpoch (makeKey)
	return n, time.Unix(fsEpoch+int64(d/1e9), int64(d%1e9)).UTC()
}

// nextChanged returns the first index ≥ from in Active of a container
// placed Queued whose state, priority or hold changed since the pass began
// (moved: its key and entry are stale), or len(Active). The indices are
// found once per container, as the pass moves them; from must not go
// backwards from call to call within a pass.
func (tx *Tx) nextChanged(from int) int {
	q := tx.q
	if tx.movedSeen < len(q.moved) {
		for _, c := range q.moved[tx.movedSeen:] {
			// Those placed before from are behind every later call's
			// from too (the walk only goes forward): no need to find them.
			if c.ord.placed && c.ord.rank == int8(rank(Queued)) && !placedKey(c).less(q.keys[from]) {
				if i := q.indexLocked(c); i >= 0 {
					tx.changedAt = append(tx.changedAt, i)
				}
			}
		}
		tx.movedSeen = len(q.moved)
		slices.Sort(tx.changedAt)
	}
	if i, _ := slices.BinarySearch(tx.changedAt, from); i < len(tx.changedAt) {
		return tx.changedAt[i]
	}
	return len(q.active)
}

// SetPending records a container's pending reason (memory only).
func (tx *Tx) SetPending(c *Container, p Pending) {
	tx.SetPendingAt(-1, c, p)
}

// SetPendingAt is SetPending for the container at index i of Active, which
// spares looking it up; with any other i it looks c up.
func (tx *Tx) SetPendingAt(i int, c *Container, p Pending) {
	q := tx.q
	if i < 0 || i >= len(q.active) || q.active[i] != c {
		if i = q.indexLocked(c); i < 0 {
			return // not placed: a pass only sees placed ones
		}
	}
	c.ord.stale = false
	wasPosition := q.side[i].reason == reasonPosition
	if q.side[i].setPending(c, p) {
		if wasPosition && q.side[i].reason == reasonPosition {
			q.gen++ // only the number: readers number the line themselves (changes.go)
		} else {
			q.changedLocked(c) // visible in the container's reason
		}
	}
}
