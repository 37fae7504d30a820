package queue

import (
	"cmp"
	"slices"
	"time"
)

// The scheduling order (q.active) is kept incrementally: a container whose
// sort key changes (a state of another rank, a new priority, a submit, an
// end) is queued in q.moved, and sortLocked takes only those out and puts
// them back in their new places — O(moved · log N) comparisons and one
// memmove of the pointer slice — instead of re-sorting all N containers.
// At 100,000 queued with steady churn the full sort was most of a pass.
//
// The searches compare packed keys (q.keys, parallel to q.active), not the
// records: each record is 512 bytes, so at 100,000 and more a comparison
// through the pointer was a cache miss or two. Both the old places and the
// new ones are searched in key order from where the previous search ended,
// doubling the step (galloping), so a large moved set costs about a linear
// walk of the keys and a small one a few binary searches.

// orderSlot records where a container sits in q.active: the rank and
// priority it was placed with (its current ones may differ until the next
// sortLocked), so q.active stays sorted by these and can be binary searched.
type orderSlot struct {
	rank   int8
	placed bool // in q.active, at the place of rank and the record's ordPrio
	moved  bool // in q.moved, to be re-placed by the next sortLocked
}

// orderKey packs a placed container's sort key (rank, priority descending,
// first seen, Seq) into 128 bits, compared as (hi, lo):
//
//	hi: rank (2 bits) | priority code (30) | first-seen code, high 32 of 62
//	lo: first-seen code, low 30 of 62 | Seq code (34)
//
// Each field code keeps the values of a realistic range exactly (priority
// 0 to about 10^9, first seen in 2000–2146 to the nanosecond, Seq below
// 2^34) and clamps the others to a sentinel at the end of its range; the
// fields after a clamped one are left zero. So a key that is less is the
// container that comes first, and two containers with equal keys (only
// possible once a field is clamped) are compared through their records.
type orderKey struct{ hi, lo uint64 }

const (
	prioBits = 30
	fsBits   = 62
	seqBits  = 34
	prioMax  = 1<<prioBits - 1
	fsMax    = 1<<fsBits - 1
	seqMax   = 1<<seqBits - 1
)

// fsEpoch is where the first-seen code starts.
var fsEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// makeKey is the key of a container of rank r, priority prio, first seen
// at fs, with sequence number seq.
func makeKey(r int8, prio int, fs time.Time, seq uint64) orderKey {
	hi := uint64(r) << 62
	switch {
	case prio < 0: // after every valid priority
		return orderKey{hi: hi | prioMax<<32}
	case prio > prioMax-2: // before
		return orderKey{hi: hi}
	}
	hi |= uint64(prioMax-1-prio) << 32
	if fs.Before(fsEpoch) {
		return orderKey{hi: hi}
	}
	f := uint64(fsMax)
	if d := fs.Sub(fsEpoch); d < fsMax-1 { // Sub saturates far beyond fsMax
		f = uint64(d) + 1
	}
	k := orderKey{hi: hi | f>>30, lo: (f & (1<<30 - 1)) << seqBits}
	if f != fsMax {
		k.lo |= min(seq, seqMax)
	}
	return k
}

// placedKey is c's key by the rank and priority it was placed with.
func placedKey(c *Container) orderKey {
	return makeKey(c.ord.rank, c.ordPrio, c.FirstSeenAt, c.Seq)
}

// less orders keys; equal keys leave the order to the records (compareTied).
func (k orderKey) less(o orderKey) bool { return k.hi < o.hi || k.hi == o.hi && k.lo < o.lo }

// compareTied orders containers placed with equal keys.
func compareTied(a, b *Container) int {
	if a == b {
		return 0
	}
	return comparePlaced(a, b)
}

// keyed is a container with the key it is (to be) placed with.
type keyed struct {
	k orderKey
	c *Container
}

// compareKeyed orders a and b, placed with keys a.k and b.k; it reads the
// records only when the keys are equal.
func compareKeyed(a, b keyed) int {
	if a.k != b.k {
		if a.k.less(b.k) {
			return -1
		}
		return 1
	}
	return compareTied(a.c, b.c)
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
	// Where each moved container sits now, found by the key it was placed
	// with, in key order; then the active list without them.
	old := q.oldBuf[:0]
	for _, c := range q.moved {
		if c.ord.placed {
			old = append(old, keyed{placedKey(c), c})
		}
	}
	slices.SortFunc(old, compareKeyed)
	pos := q.posBuf[:0]
	from := 0
	for _, e := range old {
		i := seekForward(q.keys, q.active, from, e)
		if i == len(q.active) || q.active[i] != e.c {
			// Cannot happen while every key change goes through
			// markMovedLocked; a full sort is still right.
			q.oldBuf, q.posBuf = releaseBuf(old), pos[:0]
			q.fullSortLocked()
			return
		}
		pos = append(pos, i)
		from = i + 1
	}
	q.oldBuf = releaseBuf(old)
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
			ins = append(ins, keyed{placedKey(c), c})
		}
	}
	q.resetMovedLocked()
	slices.SortFunc(ins, compareKeyed)
	q.mergeLocked(ins)
	q.insBuf = releaseBuf(ins)
}

// releaseBuf empties a scratch buffer for reuse, giving it back when a mass
// submit made it large.
func releaseBuf(b []keyed) []keyed {
	if cap(b) > 1<<16 {
		return nil
	}
	clear(b)
	return b[:0]
}

// seekForward returns the first index i ≥ from of the sorted (keys, cs)
// whose entry is not before e: it steps from `from` by doubling strides,
// then binary searches the last stride.
func seekForward(keys []orderKey, cs []*Container, from int, e keyed) int {
	before := func(i int) bool {
		if k := keys[i]; k != e.k {
			return k.less(e.k)
		}
		return compareTied(cs[i], e.c) < 0
	}
	lo, hi, step := from, from, 1
	for hi < len(keys) && before(hi) {
		lo = hi + 1
		hi = lo + step
		step <<= 1
	}
	hi = min(hi, len(keys))
	// Entries before lo are before e; the one at hi (if any) is not.
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if before(m) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// seekBackward returns how many entries of the sorted (keys, cs) are
// before e (which is not among them), stepping down from the end by
// doubling strides, then binary searching the last stride.
func seekBackward(keys []orderKey, cs []*Container, e keyed) int {
	before := func(i int) bool {
		if k := keys[i]; k != e.k {
			return k.less(e.k)
		}
		return compareTied(cs[i], e.c) < 0
	}
	lo, hi, step := len(keys), len(keys), 1
	for lo > 0 && !before(lo-1) {
		hi = lo - 1
		lo = hi - step
		step <<= 1
	}
	lo = max(lo, 0)
	// Entries before lo are before e (lo-1 was tested, or lo is 0);
	// those from hi on are not.
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if before(m) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// removeAtLocked deletes q.active[p] (and its key) for each p of pos
// (ascending), moving final containers to q.finished in that order, in one
// pass of copies. The removed keep ord.placed, which tells sortLocked they
// were already seen.
func (q *Queue) removeAtLocked(pos []int) {
	if len(pos) == 0 {
		return
	}
	a, ks := q.active, q.keys
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
		copy(ks[w:], ks[p+1:end])
		w += copy(a[w:], a[p+1:end])
	}
	clear(a[w:])
	q.active, q.keys = a[:w], ks[:w]
}

// mergeLocked inserts ins (sorted, not in q.active) into q.active, from the
// back, so each element of q.active is copied at most once.
func (q *Queue) mergeLocked(ins []keyed) {
	if len(ins) == 0 {
		return
	}
	hi := len(q.active)
	n := hi + len(ins)
	a := slices.Grow(q.active, len(ins))[:n]
	ks := slices.Grow(q.keys, len(ins))[:n]
	w := n
	for j := len(ins) - 1; j >= 0; j-- {
		e := ins[j]
		p := seekBackward(ks[:hi], a[:hi], e)
		m := hi - p
		copy(ks[w-m:w], ks[p:hi])
		copy(a[w-m:w], a[p:hi])
		w -= m + 1
		a[w], ks[w] = e.c, e.k
		hi = p
	}
	q.active, q.keys = a, ks
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
	// Sorting (key, pointer) pairs reads each record once, not once per
	// comparison.
	all := make([]keyed, len(q.active))
	for i, c := range q.active {
		place(c)
		all[i] = keyed{placedKey(c), c}
	}
	slices.SortFunc(all, compareKeyed)
	ks := slices.Grow(q.keys[:0], len(all))[:len(all)]
	for i, e := range all {
		q.active[i], ks[i] = e.c, e.k
	}
	q.keys = ks
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
