// The filter's pass over the rows: each row matched without allocating,
// a large table's rows split between the machine's cores.

package table

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// matcher matches rows against the filter, reusing its buffers for
// every row: a row's match allocates nothing.
type matcher struct {
	match func([]byte) bool
	col   int // the column filtered on, -1 for the whole row
	// byCell matches the first cells (cellsAlone) apart, the rest of
	// the row only when they do not match (byCell).
	byCell bool
	// fold is the filter when it is plain ASCII without a space
	// (byCell): a row is then searched for it cell by cell without
	// case, as its text is, not lowered first. nil for the general path.
	fold        *Fold
	text, spare []byte
}

// newMatcher is the matcher of w's filter.
func newMatcher(w *work) matcher {
	m := matcher{match: w.match, col: w.matchCol, byCell: w.matchCol < 0 && byCell(w.matchLow)}
	if m.byCell {
		m.fold = foldOf(w.matchLow)
	}
	return m
}

// foldOf is the Fold of low, lower-case text, or nil where a row is not
// matched by one: low is not ASCII, or holds a space (byCell).
func foldOf(low string) *Fold {
	if !byCell(low) || !ascii(low) {
		return nil
	}
	return newFold(low)
}

// NewFold is the Fold of the plain text pat (any case), as a filter of
// it searches a FoldReader's rows; nil where that filter does not.
func NewFold(pat string) *Fold { return foldOf(strings.ToLower(pat)) }

// byCell reports whether the plain text low (lower-case; "" for a regular
// expression) matches a row exactly when it matches one of its cells or
// its hidden text alone: when it holds no space, the one byte that
// joins them in the row's search text (appendSearch).
func byCell(low string) bool { return low != "" && !strings.Contains(low, " ") }

// matches reports whether row i matches, before any inversion.
func (m *matcher) matches(rd Reader, i int) bool {
	switch {
	case m.fold != nil:
		return m.matchesFold(rd, i)
	case m.col >= 0:
		m.text = rd.AppendText(m.text[:0], i, m.col)
	case m.byCell:
		// The first cells (an id, a name: what is most often looked
		// for), and only if they do not match the rest.
		n := min(rd.Cells(i), cellsAlone)
		m.text = m.text[:0]
		for c := range n {
			m.text = append(rd.AppendText(m.text, i, c), ' ')
		}
		if m.match(lower(m.text, &m.spare)) {
			return true
		}
		m.text = appendSearch(m.text[:0], rd, i, n)
	default:
		m.text = appendSearch(m.text[:0], rd, i, 0)
	}
	return m.match(lower(m.text, &m.spare))
}

// matchesFold is matches for a Fold on a Reader that is no FoldReader
// (filterPart asks one itself): its cells made one at a time, in order,
// but for those that cannot hold it.
func (m *matcher) matchesFold(rd Reader, i int) bool {
	f := m.foldReady(rd)
	for c := range rd.Cells(i) {
		if !f.Skip(c) && f.InBytes(rd.AppendText(m.text[:0], i, c)) {
			return true
		}
	}
	return f.In(rd.Hidden(i))
}

// foldReady is the matcher's Fold, its skipped columns read from rd the
// first time.
func (m *matcher) foldReady(rd Reader) *Fold {
	if m.fold.skip == nil {
		m.fold.skip = skipped(rd, m.fold.low)
	}
	return m.fold
}

// Fold is a filter of plain ASCII text without a space, which a row
// matches when one of its cells or its hidden text holds it without case:
// it cannot span the space that ends a cell, so each cell is searched
// apart, as it is, neither lowered nor joined to the others (a filter
// searches a million rows at a time).
type Fold struct {
	low  string // lower-case
	lowb []byte // low, for the search of lowered text
	// key is the byte of low searched for first (containsFold), at at:
	// its first that is no letter, or else its first letter, then
	// searched in either case.
	key byte
	at  int
	// want is key in each byte of a word, setCase the bit that makes
	// an upper-case letter lower in each (0 unless letter).
	want, setCase uint64
	// out: low holds a letter that one outside ASCII lowers to
	// (foldsToASCII), so text that is not ASCII is lowered and searched
	// again when the search without case did not find it there.
	out bool
	// skip says, by column, that low cannot be in that column's text
	// (Alphabets; set from the first Reader).
	skip        []bool
	text, spare []byte
	// memo and shared are its answers kept for text many rows share
	// (Known, InShared), made at their first use: a Fold is one
	// goroutine's for one filter.
	memo   *memo
	shared *[1 << sharedBits]sharedEntry
}

// newFold is the Fold of low, lower-case ASCII without a space.
func newFold(low string) *Fold {
	f := &Fold{low: low, lowb: []byte(low), out: strings.ContainsAny(low, foldsToASCII),
		at: strings.IndexFunc(low, func(r rune) bool { return !('a' <= r && r <= 'z') })}
	if f.at < 0 {
		f.at, f.setCase = 0, eachCase
	}
	f.key = low[f.at]
	f.want = uint64(f.key) * eachLow
	return f
}

// FoldReader is a Reader that searches a row's cells for a Fold itself:
// it knows which of them it holds as text already, and makes only the
// others.
type FoldReader interface {
	// ContainsFold reports whether f is in (f.In) the text, as
	// AppendText makes it, of one of row i's cells that f does not
	// skip (f.Skip), or in its hidden text.
	ContainsFold(i int, f *Fold) bool
}

// Skip reports whether the text of column c cannot hold the filter: it
// is made of bytes the filter's are not all among (Alphabets).
func (f *Fold) Skip(c int) bool { return c < len(f.skip) && f.skip[c] }

// In reports whether s holds the filter without case.
func (f *Fold) In(s string) bool {
	if containsFold(s, f) {
		return true
	}
	if f.out && !ascii(s) {
		f.text = append(f.text[:0], s...)
		return bytes.Contains(lower(f.text, &f.spare), f.lowb)
	}
	return false
}

// InBytes is In for text in a buffer, which it does not change.
func (f *Fold) InBytes(b []byte) bool {
	// A view of b as a string, read and dropped within In: no copy of a
	// cell made for its search.
	return f.In(unsafe.String(unsafe.SliceData(b), len(b)))
}

// foldsToASCII are the ASCII letters that a letter outside ASCII lowers
// to (U+0130 to i, U+212A to k; TestFoldsToASCII reads the tables).
const foldsToASCII = "ik"

// skipped is, by column of rd, whether low cannot be in its text: it
// holds a byte the column's alphabet (Alphabets) does not.
func skipped(rd Reader, low string) []bool {
	skip := []bool{}
	a, ok := rd.(Alphabets)
	if !ok {
		return skip
	}
	for c := range a.Columns() {
		abc := a.Alphabet(c)
		skip = append(skip, abc != "" && strings.IndexFunc(low, func(r rune) bool { return !strings.ContainsRune(abc, r) }) >= 0)
	}
	return skip
}

// Alphabets is a Reader whose columns' text may be made of a few bytes
// only (numbers, ages): a plain filter holding a byte outside a column's
// alphabet cannot match in it, and its text is not made.
type Alphabets interface {
	// Columns is how many columns Alphabet answers for.
	Columns() int
	// Alphabet is every byte column c's text can hold, lower-case; ""
	// when it can hold any.
	Alphabet(c int) string
}

// ascii reports whether s is ASCII.
func ascii[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// containsFold reports whether s holds f's text with its ASCII letters
// compared without case: candidates are the places of its key byte (a
// letter in either case), found eight bytes at a time, and the rest
// compared. The search is written out here, not called: a filter makes
// a few calls a cell, and the calls were a sixth of its instructions.
func containsFold(s string, f *Fold) bool {
	// The key's places for all of low to fit in s: at to end.
	end := len(s) - len(f.low) + f.at + 1
	i := f.at
	if len(s) >= 8 && end > i {
		// Whole words of s, the last ending at its end: a text of
		// eight bytes or a few more is searched a word, not a byte, at
		// a time too (a queue's ids).
		last := len(s) - 8
		b := unsafe.Slice(unsafe.StringData(s), len(s))
		for w := i; ; w += 8 {
			// The last word, over bytes searched already: those are
			// not candidates again.
			w = min(w, last)
			x := (binary.LittleEndian.Uint64(b[w:]) | f.setCase) ^ f.want
			// The high bit of each byte of x that is zero; a borrow
			// may flag bytes above one that is, which the comparison
			// rejects.
			for zero := (x - eachLow) &^ x & eachHigh; zero != 0; zero &= zero - 1 {
				if p := w + bits.TrailingZeros64(zero)/8; p >= i && p < end && equalFold(s[p-f.at:p-f.at+len(f.low)], f.low) {
					return true
				}
			}
			if w == last {
				return false
			}
			i = w + 8
		}
	}
	for ; i < end; i++ {
		if x := s[i] | byte(f.setCase); x == f.key && equalFold(s[i-f.at:i-f.at+len(f.low)], f.low) {
			return true
		}
	}
	return false
}

// Bytes repeated in each byte of a word, for containsFold.
const (
	eachLow  = 0x0101010101010101
	eachHigh = 0x8080808080808080
	eachCase = 0x2020202020202020 // the bit that is set in a lower-case letter
)

// equalFold reports whether b is low (lower-case ASCII) but for the case
// of its ASCII letters.
func equalFold(b, low string) bool {
	for k := range len(low) {
		x := b[k]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if x != low[k] {
			return false
		}
	}
	return true
}

// cellsAlone is how many of a row's first cells a filter by cell matches
// before the rest.
const cellsAlone = 2

// appendSearch appends what the filter matches of row i from its cell
// from on: each cell and then its hidden text, each followed by a space.
func appendSearch(dst []byte, rd Reader, i, from int) []byte {
	for c := from; c < rd.Cells(i); c++ {
		dst = append(rd.AppendText(dst, i, c), ' ')
	}
	return append(append(dst, rd.Hidden(i)...), ' ')
}

// splitMin is the fewest rows a filter splits between goroutines: under
// it one goroutine is done within a few milliseconds.
var splitMin = 1 << 16 // a variable for the tests

// filter returns the rows of from that the filter keeps, in from's
// order; false when it stopped, superseded. A large from is split into
// one part per core (at most maxParts), each matched by its own
// goroutine, all of them joined before it returns; when it is in an
// order of its own (a sort's), its rows are matched in slot order
// (filterBySlot).
func (w *work) filter(from []int32) ([]int32, bool) {
	if len(from) >= splitMin && !slices.IsSorted(from) {
		return w.filterBySlot(from)
	}
	return w.filterList(from)
}

// filterBySlot is filter of rows in an order of their own: they are
// matched in slot order, as they lie in the source's memory, and kept
// in from's. Matched in a sort's order, each row's read missed the
// caches: a filter of a million rows sorted by REASON took twice as
// long as of the same rows unsorted (BENCHMARKS.md).
func (w *work) filterBySlot(from []int32) ([]int32, bool) {
	var n int
	w.src.Read(func(rd Reader) { n = rd.Len() })
	in := make([]uint64, (n+63)/64)
	for _, i := range from {
		in[i/64] |= 1 << (i % 64)
	}
	slots := make([]int32, 0, len(from))
	for k, word := range in {
		for ; word != 0; word &= word - 1 {
			slots = append(slots, int32(64*k+bits.TrailingZeros64(word)))
		}
	}
	kept, ok := w.filterList(slots)
	if !ok {
		return nil, false
	}
	clear(in)
	for _, i := range kept {
		in[i/64] |= 1 << (i % 64)
	}
	v := make([]int32, 0, len(kept))
	for _, i := range from {
		if in[i/64]&(1<<(i%64)) != 0 {
			v = append(v, i)
		}
	}
	return v, true
}

// filterList is filter of from as it is, split between the cores.
func (w *work) filterList(from []int32) ([]int32, bool) {
	parts := 1
	if len(from) >= splitMin {
		parts = min(runtime.GOMAXPROCS(0), maxParts, len(from)/(splitMin/2))
	}
	if parts == 1 {
		return w.filterPart(from, false)
	}
	views := make([][]int32, parts)
	oks := make([]bool, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*len(from)/parts, (p+1)*len(from)/parts
		wg.Go(func() { views[p], oks[p] = w.filterPart(from[lo:hi], true) })
	}
	wg.Wait()
	n := 0
	for p := range parts {
		if !oks[p] {
			return nil, false
		}
		n += len(views[p])
	}
	v := make([]int32, 0, n)
	for _, pv := range views {
		v = append(v, pv...)
	}
	return v, true
}

// maxParts bounds the goroutines of one filter.
const maxParts = 8

// filterPart is filter on one goroutine; yield lets other goroutines (the
// console's, drawing the next frame) run between chunks of rows.
func (w *work) filterPart(from []int32, yield bool) ([]int32, bool) {
	// Room for every row: growing by doubling copied a million rows'
	// indexes three times over; a view far smaller is copied to fit.
	v := make([]int32, 0, len(from))
	m := newMatcher(w)
	if !w.chunks(len(from), yield, func(rd Reader, lo, hi int) {
		if fr, ok := rd.(FoldReader); ok && m.fold != nil {
			// The reader's own search, asked once a chunk.
			m.foldReady(rd)
			for _, i := range from[lo:hi] {
				if fr.ContainsFold(int(i), m.fold) != w.invert {
					v = append(v, i)
				}
			}
			return
		}
		for _, i := range from[lo:hi] {
			if m.matches(rd, int(i)) != w.invert {
				v = append(v, i)
			}
		}
	}) {
		return nil, false
	}
	if len(v) < cap(v)/4 {
		v = append([]int32(nil), v...)
	}
	return v, true
}
