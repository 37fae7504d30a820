// Sorting: the sort column and direction, and the radix sorts a column
// is ordered by, of numbers and of texts.

package table

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"unsafe"
)

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
	differ := 0
	for b := range 8 {
		if byte(diff>>(8*b)) != 0 {
			differ++
		}
	}
	if differ > 2 && len(ks) >= fewMin {
		// When the keys take few values, one pass by their rank among
		// them (and two looks in a table a key) is cheaper than a pass
		// a byte that differs, from three such bytes on.
		if sorted, ok := fewKeys(ks, tmp); ok {
			return sorted
		}
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

// fewMax is the most values of the keys fewKeys sorts by rank, and
// fewMin the fewest keys it is tried on (its table costs a pass of a few
// thousand).
const (
	fewMax = 256
	fewMin = 1 << 12
)

// fewKeys sorts ks as radixSort does, into tmp, when the keys take at
// most fewMax values (a text column's first chunk: a few reasons; a
// priority): their values are found through a small hash table, sorted,
// and the keys placed by their value's rank in one pass. It reports
// false, having moved nothing, when they take more.
func fewKeys(ks, tmp []numKey) ([]numKey, bool) {
	var t fewTable
	for _, k := range ks {
		if h := t.find(k.k); t.at[h] == 0 {
			if t.n == fewMax {
				return nil, false
			}
			t.vals[t.n] = k.k
			t.n++
			t.at[h] = int16(t.n)
		}
	}
	// The values' ranks, then where each rank's keys begin.
	var byVal, rank, count [fewMax]int32
	for j := range t.n {
		byVal[j] = int32(j)
	}
	slices.SortFunc(byVal[:t.n], func(a, b int32) int { return cmp.Compare(t.vals[a], t.vals[b]) })
	for r, j := range byVal[:t.n] {
		rank[j] = int32(r)
	}
	for _, k := range ks {
		count[rank[t.at[t.find(k.k)]-1]]++
	}
	var pos int32
	for r := range count {
		pos, count[r] = pos+count[r], pos
	}
	for _, k := range ks {
		r := rank[t.at[t.find(k.k)]-1]
		tmp[count[r]] = k
		count[r]++
	}
	return tmp, true
}

// fewTable is fewKeys' hash table of the keys' values.
type fewTable struct {
	at   [4 * fewMax]int16 // 1 + the value's index in vals, 0 for none
	vals [fewMax]uint64
	n    int
}

// find is the place of k in at: where it is, or the empty one where it
// would go.
func (t *fewTable) find(k uint64) int {
	h := int((k * 0x9e3779b97f4a7c15) >> 54) // 10 bits: len(t.at)
	for t.at[h] != 0 && t.vals[t.at[h]-1] != k {
		h = (h + 1) & (len(t.at) - 1)
	}
	return h
}

// strKey is a text and the index of its key.
type strKey struct {
	k string
	i int32
}

// sortTexts sorts ks by the texts they index (texts[k.i]), descending
// when desc, keys of equal texts in their order in ks; each key's k is
// scratch. It is a most-significant-first radix sort, chunkBytes of the
// texts at a time (textChunk): a comparison sort of a million texts took
// 400-500 ms, and a key press wants its rows within 100 ms. Only the
// keys move, never the texts: a run alike in one chunk reads its next
// chunk through its keys, and the sort allocates nothing (a million
// texts moved with their keys took 48 MB a sort, which the attached
// console's collector, at GOGC 25, paid for in each: BENCHMARKS.md).
// tmp is scratch of len(ks).
func sortTexts(texts []string, ks, tmp []numKey, desc bool) {
	sortTextsFrom(texts, ks, tmp, 0, desc)
}

// sortTextsFrom is sortTexts of keys whose texts' first off bytes are
// the same.
func sortTextsFrom(texts []string, ks, tmp []numKey, off int, desc bool) {
	n := len(ks)
	if n < radixTexts {
		// Compared next to their keys: fetched through them at each
		// comparison, a million texts' small runs took half as long
		// again.
		var near [radixTexts]strKey
		ts := near[:n]
		for j, x := range ks {
			ts[j] = strKey{texts[x.i][off:], x.i}
		}
		dir := 1
		if desc {
			dir = -1
		}
		slices.SortStableFunc(ts, func(a, b strKey) int { return dir * strings.Compare(a.k, b.k) })
		for j, x := range ts {
			ks[j].i = x.i
		}
		return
	}
	for j := range ks {
		ks[j].k = textChunk(texts[ks[j].i], off, desc)
	}
	sortChunks(texts, ks, tmp, off, desc)
}

// sortChunks is sortTextsFrom of keys that hold their texts' chunk from
// off (textChunk) already.
func sortChunks(texts []string, ks, tmp []numKey, off int, desc bool) {
	n := len(ks)
	if n == 0 {
		return
	}
	inPlace(radixSort(ks, tmp), ks)
	// Runs of texts alike in this chunk and longer than it are ordered by
	// what follows, each with the scratch of its own place.
	for lo := 0; lo < n; {
		k := ks[lo].k
		hi := lo + 1
		for hi < n && ks[hi].k == k {
			hi++
		}
		if hi-lo > 1 && len(texts[ks[lo].i])-off > chunkBytes {
			next := off + chunkBytes
			if hi-lo == n {
				// Every text alike in this chunk: they may share
				// much more ("etl-pipeline-shard-…"), which one
				// pass finds, where a pass a chunk read every
				// text again for each.
				first := texts[ks[0].i]
				next = commonPrefix(texts, ks, first, next, len(first))
			}
			sortTextsFrom(texts, ks[lo:hi], tmp[lo:hi], next, desc)
		}
		lo = hi
	}
}

// commonPrefix is how long a prefix, of at most end bytes, the texts of
// ks share with first, knowing that they share its first from bytes and
// are all longer.
func commonPrefix(texts []string, ks []numKey, first string, from, end int) int {
	for _, x := range ks {
		t := texts[x.i]
		j := from
		for j < end && j < len(t) && t[j] == first[j] {
			j++
		}
		if end = j; end == from {
			break
		}
	}
	return end
}

// radixTexts is the fewest texts sortTextsFrom sorts by radix: fewer are
// compared (a radix pass costs its 256 counts whatever the texts).
const radixTexts = 64

// chunkBytes is how many bytes of a text one key holds.
const chunkBytes = 7

// textChunk is the key of s's chunkBytes from off on: those bytes (zero
// past its end), then how many there are, chunkBytes+1 for more. Keys
// order as the texts do, a text before those it begins, and are equal
// only for texts alike in those bytes that are either as long or both
// longer (then ordered by their next chunk). Inverted when desc.
func textChunk(s string, off int, desc bool) uint64 {
	rest := s[min(off, len(s)):]
	var k uint64
	if len(rest) > chunkBytes {
		// Eight bytes read at once; the last makes room for the length.
		k = binary.BigEndian.Uint64(unsafe.Slice(unsafe.StringData(rest), 8))>>8<<8 | (chunkBytes + 1)
	} else {
		for b := range chunkBytes {
			k <<= 8
			if b < len(rest) {
				k |= uint64(rest[b])
			}
		}
		k = k<<8 | uint64(len(rest))
	}
	if desc {
		k = ^k
	}
	return k
}
