// Sorting: the sort column and direction, and the numeric keys and
// radix sort a numeric column is ordered by.

package table

import "math"

// SortBy sorts by the column whose SortKey is key; sorting by the same
// column again inverts it. It reports whether a column has that key.
func (t *Table) SortBy(key string) bool {
	for i, c := range t.cols {
		if c.SortKey != "" && c.SortKey == key {
			if t.sortCol == i {
				t.sortDesc = !t.sortDesc
			} else {
				t.sortCol, t.sortDesc = i, false
				t.relayout() // the sorted column is never dropped
			}
			t.dirtySort = true
			t.hdr = ""
			return true
		}
	}
	return false
}

// Sort returns the sorted column (-1 = none) and whether it is descending.
func (t *Table) Sort() (int, bool) { return t.sortCol, t.sortDesc }

// SetSort sets the sort directly (col -1 = source order).
func (t *Table) SetSort(col int, desc bool) {
	if col != t.sortCol {
		t.relayout()
	}
	t.sortCol, t.sortDesc = col, desc
	t.dirtySort = true
	t.hdr = ""
}

// numKey is a row index and its number as orderedBits.
type numKey struct {
	k uint64
	i int32
}

// orderedBits maps f to an integer in the same order as cmp.Compare puts
// floats (NaN first, -0 equal to 0), inverted for a descending sort.
func orderedBits(f float64, desc bool) uint64 {
	if f == 0 {
		f = 0 // -0 too
	}
	u := math.Float64bits(f)
	switch {
	case f != f:
		u = 0
	case u>>63 == 1:
		u = ^u
	default:
		u |= 1 << 63
	}
	if desc {
		u = ^u
	}
	return u
}

// radixSort sorts ks by k, equal keys in their order (LSD, a byte per
// pass). A byte every key shares costs no pass: small integers such as
// priorities sort in two or three. tmp is scratch of the same length; the
// sorted slice is ks or tmp.
func radixSort(ks, tmp []numKey) []numKey {
	if len(ks) == 0 {
		return ks
	}
	// The bytes in which some key differs from the first: only those
	// need a pass.
	var diff uint64
	for _, k := range ks {
		diff |= k.k ^ ks[0].k
	}
	for b := range 8 {
		shift := uint(8 * b)
		if byte(diff>>shift) == 0 {
			continue
		}
		var count [256]int
		c := &count
		for _, k := range ks {
			c[byte(k.k>>shift)]++
		}
		pos := 0
		for d := range c {
			pos, c[d] = pos+c[d], pos
		}
		for _, k := range ks {
			d := byte(k.k >> shift)
			tmp[c[d]] = k
			c[d]++
		}
		ks, tmp = tmp, ks
	}
	return ks
}

type strKey struct {
	k string
	i int32
}
