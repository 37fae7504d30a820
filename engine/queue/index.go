// The index of records by id, laid out so that the collector does not walk
// it: a map without pointers to slots of one slice (docs/design.md §9.1).

package queue

import "iter"

// idIndex finds a container's record by its id. A map of a million string
// keys and record pointers was two thirds of each collection's CPU at
// 300,000 containers (BENCHMARKS.md, "helper churn"): the collector reads
// it in hash order, and each of its pointers costs a cache miss on the
// page of the object it names. Here the ids the queue makes (newID: "c-"
// and 16 lowercase hex digits) are kept as their 64-bit numbers, in a map
// with no pointers that the collector never reads, whose values are slots
// of recs: one slice, filled in the order records arrive, which the
// collector reads straight through like the records' own pages. Any other
// id (another version's store, tests) is kept by its text in other.
type idIndex struct {
	nums  map[uint64]uint32
	other map[string]uint32
	recs  []*Container // by slot; nil in a free one
	free  []uint32     // free slots of recs, reused before it grows
}

func newIDIndex() idIndex {
	return idIndex{nums: map[uint64]uint32{}, other: map[string]uint32{}}
}

// idNumber is the number newID spelled id with, if it is spelled that way.
func idNumber(id string) (uint64, bool) {
	if len(id) != 18 || id[0] != 'c' || id[1] != '-' {
		return 0, false
	}
	var n uint64
	for i := 2; i < len(id); i++ {
		d := id[i]
		switch {
		case '0' <= d && d <= '9':
			d -= '0'
		case 'a' <= d && d <= 'f':
			d -= 'a' - 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(d)
	}
	return n, true
}

// slot is id's slot, if it is in the index.
func (x *idIndex) slot(id string) (uint32, bool) {
	if n, ok := idNumber(id); ok {
		s, found := x.nums[n]
		return s, found
	}
	s, found := x.other[id]
	return s, found
}

// lookup is the record of id, if it is in the index.
func (x *idIndex) lookup(id string) (*Container, bool) {
	s, ok := x.slot(id)
	if !ok {
		return nil, false
	}
	return x.recs[s], true
}

// get is the record of id, or nil.
func (x *idIndex) get(id string) *Container {
	c, _ := x.lookup(id)
	return c
}

// put indexes c under its id, in place of any record indexed under it.
func (x *idIndex) put(c *Container) {
	if s, ok := x.slot(c.ID); ok {
		x.recs[s] = c
		return
	}
	var s uint32
	if n := len(x.free); n > 0 {
		s = x.free[n-1]
		x.free = x.free[:n-1]
		x.recs[s] = c
	} else {
		s = uint32(len(x.recs))
		x.recs = append(x.recs, c)
	}
	if n, ok := idNumber(c.ID); ok {
		x.nums[n] = s
	} else {
		x.other[c.ID] = s
	}
}

// remove takes id out of the index.
func (x *idIndex) remove(id string) {
	s, ok := x.slot(id)
	if !ok {
		return
	}
	if n, ok := idNumber(id); ok {
		delete(x.nums, n)
	} else {
		delete(x.other, id)
	}
	x.recs[s] = nil
	x.free = append(x.free, s)
}

// len is how many records the index holds.
func (x *idIndex) len() int { return len(x.nums) + len(x.other) }

// all yields every indexed record, in no particular order.
func (x *idIndex) all() iter.Seq[*Container] {
	return func(yield func(*Container) bool) {
		for _, c := range x.recs {
			if c != nil && !yield(c) {
				return
			}
		}
	}
}
