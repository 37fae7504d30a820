// The scheduling order, kept sorted incrementally.

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
// pass of copies — instead of re-sorting all N containers.
// At 100,000 queued with steady churn the full sort was most of a pass.
//
// The searches compare packed keys (q.keys, parallel to q.active), not the
// records: each record is 512 bytes, so at 100,000 and more a comparison
// through the pointer was a cache miss or two. Both the old places and the
// new ones are searched in key order from where the previous search ended,
// doubling the step (galloping), so a large moved set costs about a linear
// walk of the keys and a small one a few binary searches. One
// rearrangement then takes the moved out and puts them back, copying each
// entry that shifts once.

// orderSlot records where a container sits in q.active: the rank and
// priority it was placed with (its current ones may differ until the next
// sortLocked), so q.active stays sorted by these and can be binary searched.
type orderSlot struct {
	rank   int8
	placed bool // in q.active, at the place of rank and the record's pend.ordPrio
	moved  bool // in q.moved, to be re-placed by the next sortLocked
	// stale is set when the container started or ended after its entry's
	// pending reason was set (entries.go): the reason no longer applies.
	stale bool
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

// fsEpoch is where the first-seen code starts: 2000-01-01 UTC, in Unix
// seconds.
const fsEpoch = 946684800

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
	sec := fs.Unix() - fsEpoch
	if sec < 0 {
		return orderKey{hi: hi}
	}
	f := uint64(fsMax)
	if sec < fsMax/1_000_000_000 { // no overflow below
		if d := uint64(sec)*1_000_000_000 + uint64(fs.Nanosecond()); d < fsMax-1 {
			f = d + 1
		}
	}
	k := orderKey{hi: hi | f>>30, lo: (f & (1<<30 - 1)) << seqBits}
	if f != fsMax {
		k.lo |= min(seq, seqMax)
	}
	return k
}

// placedKey is c's key by the rank and priority it was placed with.
func placedKey(c *Container) orderKey {
	return makeKey(c.ord.rank, int(c.pend.ordPrio), c.FirstSeenAt, c.Seq)
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

// comparePlacedNew orders a, by the key it is placed with, and b, by its
// current one (the same container compares by its old and new key).
func comparePlacedNew(a, b *Container) int {
	return compareVals(a.ord.rank, int(a.pend.ordPrio), a, int8(rank(b.State)), int(clamp32(b.Priority)), b)
}

// keyed is a container with the key it is (to be) placed with.
type keyed struct {
	k orderKey
	c *Container
}

// compareKeyed orders a and b, placed with keys a.k and b.k; it reads the
// records only when the keys are equal.
func compareKeyed(a, b keyed) int {
	if c := a.k.compare(b.k); c != 0 {
		return c
	}
	return compareTied(a.c, b.c)
}

// compareNew is compareKeyed for keys of containers not yet placed with them
// (ties compare current keys).
func compareNew(a, b keyed) int {
	if c := a.k.compare(b.k); c != 0 {
		return c
	}
	return compareContainers(a.c, b.c)
}

// compare orders two keys: -1, 0 or 1.
func (k orderKey) compare(o orderKey) int {
	switch {
	case k == o:
		return 0
	case k.less(o):
		return -1
	}
	return 1
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
	return compareVals(a.ord.rank, int(a.pend.ordPrio), a, b.ord.rank, int(b.pend.ordPrio), b)
}

// compareVals orders a of rank ra and priority pa and b of rank rb and
// priority pb (placed or current ones).
func compareVals(ra int8, pa int, a *Container, rb int8, pb int, b *Container) int {
	if c := cmp.Compare(ra, rb); c != 0 {
		return c
	}
	if c := cmp.Compare(pb, pa); c != 0 {
		return c
	}
	if c := a.FirstSeenAt.Compare(b.FirstSeenAt); c != 0 {
		return c
	}
	return cmp.Compare(a.Seq, b.Seq)
}

// place records c's current sort key as the one it is placed with.
func place(c *Container) {
	c.ord, c.pend.ordPrio = orderSlot{rank: int8(rank(c.State)), placed: true}, clamp32(c.Priority)
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
	// with, in key order.
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
		i := seekForward(q.keys, q.active, from, e, compareTied)
		if i == len(q.active) || q.active[i] != e.c {
			// Cannot happen while every key change goes through
			// markMovedLocked; a full sort is still right.
			q.oldBuf, q.posBuf = releaseBuf(old), releaseBuf(pos)
			q.fullSortLocked()
			return
		}
		pos = append(pos, i)
		from = i + 1
	}
	q.oldBuf = releaseBuf(old)

	// Where each that stays active goes among the entries as they are now
	// (before the one at gap[j]), by its current key. The records keep
	// the keys they were placed with until then, as the searches compare
	// them when keys tie.
	ins := q.insBuf[:0]
	for _, c := range q.moved {
		if !c.State.Final() {
			ins = append(ins, keyed{makeKey(int8(rank(c.State)), c.Priority, c.FirstSeenAt, c.Seq), c})
		}
	}
	slices.SortFunc(ins, compareNew)
	gap := q.gapBuf[:0]
	from = 0
	for _, e := range ins {
		from = seekForward(q.keys, q.active, from, e, comparePlacedNew)
		gap = append(gap, from)
	}

	// Containers that ended leave in the order they held: placed ones by
	// position, then new ones in submission order. Those that stay keep
	// the reason the last pass left them (entries.go) in their new place.
	for _, p := range pos {
		c := q.active[p]
		if c.State.Final() {
			q.finished = append(q.finished, c)
		} else if e := q.side[p]; e.reason != reasonNone && !c.ord.stale {
			q.carry[c] = e
		}
	}
	insSide := q.insSideBuf[:0]
	for _, e := range ins {
		insSide = append(insSide, entryFor(e.c, q.carried(e.c)))
	}
	for _, c := range q.moved {
		c.ord.moved = false
		switch {
		case !c.State.Final():
			place(c)
		case !c.ord.placed:
			q.finished = append(q.finished, c)
			fallthrough
		default:
			c.ord = orderSlot{}
		}
	}
	q.resetMovedLocked()
	q.rearrangeLocked(pos, ins, insSide, gap)
	q.posBuf, q.gapBuf = releaseBuf(pos), releaseBuf(gap)
	q.insBuf, q.insSideBuf = releaseBuf(ins), releaseBuf(insSide)
	clear(q.carry)
}

// carried is the entry whose pending reason c keeps as it is re-placed:
// the one the last pass left, while it waits (a started container's is
// moot).
func (q *Queue) carried(c *Container) entry {
	if !c.State.Waiting() {
		return entry{}
	}
	return q.carry[c]
}

// releaseBuf empties a scratch buffer for reuse, giving it back when a mass
// submit made it large.
func releaseBuf[T any](b []T) []T {
	if cap(b) > 1<<16 {
		return nil
	}
	clear(b)
	return b[:0]
}

// seekForward returns the first index i ≥ from of the sorted (keys, cs)
// whose entry is not before e, tie ordering the records of equal keys: it
// steps from `from` by doubling strides, then binary searches the last
// stride.
func seekForward(keys []orderKey, cs []*Container, from int, e keyed, tie func(a, b *Container) int) int {
	lo, hi, step := from, from, 1
	for hi < len(keys) && before(keys, cs, hi, e, tie) {
		lo = hi + 1
		hi = lo + step
		step <<= 1
	}
	return searchKeys(keys, cs, lo, min(hi, len(keys)), e, tie)
}

// searchKeys returns the first index i in [lo, hi) of the sorted (keys, cs)
// whose entry is not before e, or hi; entries before lo must be before e.
func searchKeys(keys []orderKey, cs []*Container, lo, hi int, e keyed, tie func(a, b *Container) int) int {
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if before(keys, cs, m, e, tie) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// before reports whether the entry at i of (keys, cs) comes before e, tie
// ordering the records of equal keys.
func before(keys []orderKey, cs []*Container, i int, e keyed, tie func(a, b *Container) int) bool {
	if k := keys[i]; k != e.k {
		return k.less(e.k)
	}
	return tie(cs[i], e.c) < 0
}

// orderRun is a run of entries of q.active, [from, to), that rearrangeLocked
// moves by shift places.
type orderRun struct{ from, to, shift int }

// rearrangeLocked takes the entries at pos (ascending) out of q.active,
// q.keys and q.side and puts ins (sorted, placed, not among the entries
// kept; with their side entries insSide) in, each before the entry now at
// its gap, copying each entry that moves once: the
// runs between two changes move by as many places as there are inserts
// before them less removals. Runs that move down are copied first, in
// order, then those that move up, in reverse order: no copy then
// overwrites an entry still to be copied.
func (q *Queue) rearrangeLocked(pos []int, ins []keyed, insSide []entry, gap []int) {
	a, ks, sd := q.active, q.keys, q.side
	n := len(a)
	runs := q.runBuf[:0]
	x, shift, r, j := 0, 0, 0, 0
	for x < n {
		for j < len(gap) && gap[j] <= x {
			shift++
			j++
		}
		if r < len(pos) && pos[r] == x {
			shift--
			r++
			x++
			continue
		}
		end := n
		if r < len(pos) {
			end = pos[r]
		}
		if j < len(gap) && gap[j] < end {
			end = gap[j]
		}
		if shift != 0 {
			runs = append(runs, orderRun{x, end, shift})
		}
		x = end
	}
	n2 := n - len(pos) + len(ins)
	if n2 > n {
		a = slices.Grow(a, n2-n)[:n2]
		ks = slices.Grow(ks, n2-n)[:n2]
		sd = slices.Grow(sd, n2-n)[:n2]
	}
	move := func(u orderRun) {
		copy(a[u.from+u.shift:u.to+u.shift], a[u.from:u.to])
		copy(ks[u.from+u.shift:u.to+u.shift], ks[u.from:u.to])
		copy(sd[u.from+u.shift:u.to+u.shift], sd[u.from:u.to])
	}
	for _, u := range runs {
		if u.shift < 0 {
			move(u)
		}
	}
	for k := len(runs) - 1; k >= 0; k-- {
		if runs[k].shift > 0 {
			move(runs[k])
		}
	}
	r = 0
	for j, e := range ins {
		for r < len(pos) && pos[r] < gap[j] {
			r++
		}
		w := gap[j] + j - r
		a[w], ks[w], sd[w] = e.c, e.k, insSide[j]
	}
	if n2 < n {
		clear(a[n2:n])
		clear(sd[n2:n])
		a, ks, sd = a[:n2], ks[:n2], sd[:n2]
	}
	q.active, q.keys, q.side = a, ks, sd
	q.runBuf = releaseBuf(runs)
}

// fullSortLocked rebuilds the order from scratch: after a load, or should
// the incremental order ever find itself inconsistent.
func (q *Queue) fullSortLocked() {
	// The entries so far are q.active's first ones (none after a load).
	for i, e := range q.side {
		if c := q.active[i]; e.reason != reasonNone && !c.ord.stale {
			q.carry[c] = e
		}
	}
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
	// The keys and entries get the room q.active has, so the three grow
	// together.
	ks := slices.Grow(q.keys[:0], cap(q.active))[:len(all)]
	sd := slices.Grow(q.side[:0], cap(q.active))[:len(all)]
	for i, e := range all {
		q.active[i], ks[i], sd[i] = e.c, e.k, entryFor(e.c, q.carried(e.c))
	}
	q.keys, q.side = ks, sd
	clear(q.carry)
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
