package queue

import (
	"cmp"
	"slices"
)

// The scheduling order (q.active) is kept incrementally: a container whose
// sort key changes (a state of another rank, a new priority, a submit, an
// end) is queued in q.moved, and sortLocked takes only those out and puts
// them back in their new places — O(moved · log N) comparisons and one
// memmove of the pointer slice — instead of re-sorting all N containers.
// At 100,000 queued with steady churn the full sort was most of a pass.

// orderSlot records where a container sits in q.active: the rank and
// priority it was placed with (its current ones may differ until the next
// sortLocked), so q.active stays sorted by these and can be binary searched.
type orderSlot struct {
	rank   int8
	placed bool // in q.active, at the place of rank and the record's ordPrio
	moved  bool // in q.moved, to be re-placed by the next sortLocked
}

// markMovedLocked notes that c's sort key changed (or that it is new or
// ended), for the next sortLocked.
func (q *Queue) markMovedLocked(c *Container) {
	if c.ord.moved {
		return
	}
	c.ord.moved = true
	q.moved = append(q.moved, c)
}

// comparePlaced orders containers by the keys they were placed with; for a
// container about to be placed these are its current ones (see place).
func comparePlaced(a, b *Container) int {
	if c := cmp.Compare(a.ord.rank, b.ord.rank); c != 0 {
		return c
	}
	if c := cmp.Compare(b.ordPrio, a.ordPrio); c != 0 {
		return c
	}
	if c := a.FirstSeenAt.Compare(b.FirstSeenAt); c != 0 {
		return c
	}
	return cmp.Compare(a.Seq, b.Seq)
}

// place records c's current sort key as the one it is placed with.
func place(c *Container) {
	c.ord, c.ordPrio = orderSlot{rank: int8(rank(c.State)), placed: true}, c.Priority
}

// sortLocked moves containers that ended from the active list to the end of
// q.finished and restores the scheduling order of the rest.
func (q *Queue) sortLocked() {
	if q.unsorted {
		q.fullSortLocked()
		return
	}
	if len(q.moved) == 0 {
		return
	}
	// Where each moved container sits now, found by the key it was
	// placed with; then the active list without them.
	pos := q.posBuf[:0]
	for _, c := range q.moved {
		if !c.ord.placed {
			continue
		}
		i, found := slices.BinarySearchFunc(q.active, c, comparePlaced)
		if !found || q.active[i] != c {
			// Cannot happen while every key change goes through
			// markMovedLocked; a full sort is still right.
			q.fullSortLocked()
			return
		}
		pos = append(pos, i)
	}
	slices.Sort(pos)
	q.posBuf = pos
	q.removeAtLocked(pos)

	// Containers that ended leave in the order they held: placed ones by
	// position (done above), then new ones in submission order.
	ins := q.insBuf[:0]
	for _, c := range q.moved {
		c.ord.moved = false
		switch {
		case c.State.Final():
			if !c.ord.placed {
				q.finished = append(q.finished, c)
			}
			c.ord = orderSlot{}
		default:
			place(c)
			ins = append(ins, c)
		}
	}
	q.resetMovedLocked()
	slices.SortFunc(ins, comparePlaced)
	q.mergeLocked(ins)
	clear(ins)
	q.insBuf = ins[:0]
}

// removeAtLocked deletes q.active[p] for each p of pos (ascending), moving
// final containers to q.finished in that order, in one pass of copies. The
// removed keep ord.placed, which tells sortLocked they were already seen.
func (q *Queue) removeAtLocked(pos []int) {
	if len(pos) == 0 {
		return
	}
	a := q.active
	w := pos[0]
	for k, p := range pos {
		c := a[p]
		if c.State.Final() {
			q.finished = append(q.finished, c)
		}
		end := len(a)
		if k+1 < len(pos) {
			end = pos[k+1]
		}
		w += copy(a[w:], a[p+1:end])
	}
	clear(a[w:])
	q.active = a[:w]
}

// mergeLocked inserts ins (sorted, not in q.active) into q.active, from the
// back, so each element of q.active is copied at most once.
func (q *Queue) mergeLocked(ins []*Container) {
	if len(ins) == 0 {
		return
	}
	hi := len(q.active)
	a := slices.Grow(q.active, len(ins))[:hi+len(ins)]
	w := len(a)
	for j := len(ins) - 1; j >= 0; j-- {
		c := ins[j]
		p, _ := slices.BinarySearchFunc(a[:hi], c, comparePlaced)
		n := hi - p
		copy(a[w-n:w], a[p:hi])
		w -= n + 1
		a[w] = c
		hi = p
	}
	q.active = a
}

// fullSortLocked rebuilds the order from scratch: after a load, or should
// the incremental order ever find itself inconsistent.
func (q *Queue) fullSortLocked() {
	for _, c := range q.moved {
		c.ord.moved = false
		if !c.ord.placed {
			q.active = append(q.active, c)
		}
	}
	q.resetMovedLocked()
	q.active = slices.DeleteFunc(q.active, func(c *Container) bool {
		if c.State.Final() {
			q.finished = append(q.finished, c)
			c.ord = orderSlot{}
			return true
		}
		return false
	})
	for _, c := range q.active {
		place(c)
	}
	slices.SortFunc(q.active, comparePlaced)
	q.unsorted = false
}

// resetMovedLocked empties q.moved, giving back its array when a load or a
// mass submit made it large (8 MB at a million).
func (q *Queue) resetMovedLocked() {
	if cap(q.moved) > 1<<16 {
		q.moved = nil
		return
	}
	clear(q.moved)
	q.moved = q.moved[:0]
}
