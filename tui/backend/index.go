// Rows' index by id: 4 bytes a slot of an open-addressed table of row
// slots, the ids read from the rows themselves (a map from id to slot
// held a string header, the slot and the map's overhead: about 45 bytes
// a container, 45 MB at a million).

package backend

import "hash/maphash"

// index finds a row's slot by its id; each entry is a slot of the pages
// it was given, and the row in that slot must keep the id it was put
// with until it is taken out (del) or put again at another slot.
type index struct {
	slots []int32 // a row's slot + 1; 0 is empty
	n     int
	seed  maphash.Seed
}

// newIndex makes an index with room for n ids.
func newIndex(n int) index {
	x := index{seed: maphash.MakeSeed()}
	x.slots = make([]int32, tableSize(n))
	return x
}

// tableSize is the table for n ids: a power of two at least twice n, so
// that probes stay short.
func tableSize(n int) int {
	size := 16
	for size < 2*n {
		size *= 2
	}
	return size
}

func (x *index) len() int { return x.n }

func (x *index) home(id string) int {
	return int(maphash.String(x.seed, id) & uint64(len(x.slots)-1))
}

// find returns the table position of id's entry, or of the empty one
// where it would go (found false).
func (x *index) find(ps *pages, id string) (pos int, found bool) {
	mask := len(x.slots) - 1
	for j := x.home(id); ; j = (j + 1) & mask {
		s := x.slots[j]
		if s == 0 {
			return j, false
		}
		if ps.at(int(s-1)).ID == id {
			return j, true
		}
	}
}

// get is the slot of the row of id.
func (x *index) get(ps *pages, id string) (int32, bool) {
	if x.n == 0 {
		return 0, false
	}
	j, ok := x.find(ps, id)
	if !ok {
		return 0, false
	}
	return x.slots[j] - 1, true
}

// put makes id's entry slot i (the row in slot i has that id).
func (x *index) put(ps *pages, id string, i int32) {
	if len(x.slots) == 0 || 2*(x.n+1) > len(x.slots) {
		x.grow(ps)
	}
	j, ok := x.find(ps, id)
	if !ok {
		x.n++
	}
	x.slots[j] = i + 1
}

// grow doubles the table (or makes the first one).
func (x *index) grow(ps *pages) {
	old := x.slots
	if x.seed == (maphash.Seed{}) {
		x.seed = maphash.MakeSeed()
	}
	x.slots = make([]int32, tableSize(max(2*x.n, 8)))
	mask := len(x.slots) - 1
	for _, s := range old {
		if s == 0 {
			continue
		}
		j := x.home(ps.at(int(s - 1)).ID)
		for x.slots[j] != 0 {
			j = (j + 1) & mask
		}
		x.slots[j] = s
	}
}

// del takes id's entry out, moving back the entries after it that
// would otherwise no longer be found (no tombstones: a long-lived copy
// with churn would fill up with them).
func (x *index) del(ps *pages, id string) {
	if x.n == 0 {
		return
	}
	j, ok := x.find(ps, id)
	if !ok {
		return
	}
	mask := len(x.slots) - 1
	x.slots[j] = 0
	x.n--
	for k := (j + 1) & mask; x.slots[k] != 0; k = (k + 1) & mask {
		h := x.home(ps.at(int(x.slots[k] - 1)).ID)
		// The entry at k stays if its home lies cyclically in (j, k].
		if (j < k && j < h && h <= k) || (k < j && (j < h || h <= k)) {
			continue
		}
		x.slots[j], x.slots[k] = x.slots[k], 0
		j = k
	}
}

// reset empties the index, keeping its table.
func (x *index) reset() {
	clear(x.slots)
	x.n = 0
}
