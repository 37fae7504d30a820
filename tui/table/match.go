// The filter's pass over the rows: each row matched without allocating,
// a large table's rows split between the machine's cores.

package table

import (
	"bytes"
	"runtime"
	"strings"
	"sync"
	"unicode/utf8"
)

// matcher matches rows against the filter, reusing its buffers for
// every row: a row's match allocates nothing.
type matcher struct {
	match func([]byte) bool
	col   int // the column filtered on, -1 for the whole row
	// byCell matches the first cells (cellsAlone) apart, the rest of
	// the row only when they do not match (byCell).
	byCell bool
	// fold is the filter's text when it is plain ASCII without a space
	// (byCell): a row is then searched for it without case as its text
	// is (containsFold), not lowered first, and the cells it cannot be
	// in (Alphabets) are not made. "" for the general path.
	fold string
	// foldOut: fold holds a letter that one outside ASCII lowers to
	// (foldsToASCII).
	foldOut bool
	// skip says, by column, that fold cannot be in that column's text
	// (set from the first Reader).
	skip        []bool
	text, spare []byte
}

// newMatcher is the matcher of w's filter.
func newMatcher(w *work) matcher {
	m := matcher{match: w.match, col: w.matchCol, byCell: w.matchCol < 0 && byCell(w.matchLow)}
	if m.byCell && ascii(w.matchLow) {
		m.fold = w.matchLow
		m.foldOut = strings.ContainsAny(m.fold, foldsToASCII)
	}
	return m
}

// byCell reports whether the plain text low (lower-case; "" for a regular
// expression) matches a row exactly when it matches one of its cells or
// its hidden text alone: when it holds no space, the one byte that
// joins them in the row's search text (appendSearch).
func byCell(low string) bool { return low != "" && !strings.Contains(low, " ") }

// matches reports whether row i matches, before any inversion.
func (m *matcher) matches(rd Reader, i int) bool {
	switch {
	case m.fold != "":
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

// matchesFold is matches for a plain ASCII text without a space: the
// first cells, then the rest of the row but the cells that cannot hold
// it, each searched without case as it is. A row whose text has other
// letters is lowered and searched as the general path does when the
// search without case did not find it, as two of them lower to ASCII
// letters (foldsToASCII).
func (m *matcher) matchesFold(rd Reader, i int) bool {
	if m.skip == nil {
		m.skip = skipped(rd, m.fold)
	}
	cells := rd.Cells(i)
	n := min(cells, cellsAlone)
	m.text = m.text[:0]
	for c := range n {
		m.text = append(rd.AppendText(m.text, i, c), ' ')
	}
	if containsFold(m.text, m.fold) {
		return true
	}
	// The text holds no space: it cannot match across the space that
	// ends a cell, so only what follows is searched.
	from := len(m.text)
	for c := n; c < cells; c++ {
		if c >= len(m.skip) || !m.skip[c] {
			m.text = append(rd.AppendText(m.text, i, c), ' ')
		}
	}
	m.text = append(append(m.text, rd.Hidden(i)...), ' ')
	if containsFold(m.text[from:], m.fold) {
		return true
	}
	if m.foldOut && !ascii(m.text) {
		return m.match(lower(m.text, &m.spare))
	}
	return false
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

// containsFold reports whether s holds low (lower-case ASCII, not empty)
// with its ASCII letters compared without case: candidates are found by
// bytes.IndexByte of low's first byte that is no letter, or else of its
// first letter in either case, and the rest compared.
func containsFold(s []byte, low string) bool {
	at := strings.IndexFunc(low, func(r rune) bool { return !('a' <= r && r <= 'z') })
	if at < 0 {
		return containsFoldLetter(s, low)
	}
	c := low[at]
	for i := at; i <= len(s)-len(low)+at; {
		j := bytes.IndexByte(s[i:len(s)-len(low)+at+1], c)
		if j < 0 {
			return false
		}
		start := i + j - at
		if equalFold(s[start:start+len(low)], low) {
			return true
		}
		i += j + 1
	}
	return false
}

// containsFoldLetter is containsFold for a low that starts with a letter.
func containsFoldLetter(s []byte, low string) bool {
	c, u := low[0], low[0]-('a'-'A')
	last := len(s) - len(low)
	for i := 0; i <= last; {
		w := s[i : last+1]
		j := bytes.IndexByte(w, c)
		lim := len(w)
		if j >= 0 {
			lim = j
		}
		if k := bytes.IndexByte(w[:lim], u); k >= 0 {
			j = k
		}
		if j < 0 {
			return false
		}
		at := i + j
		if equalFold(s[at+1:at+len(low)], low[1:]) {
			return true
		}
		i = at + 1
	}
	return false
}

// equalFold reports whether b is low (lower-case ASCII) but for the case
// of its ASCII letters.
func equalFold(b []byte, low string) bool {
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
// goroutine, all of them joined before it returns.
func (w *work) filter(from []int32) ([]int32, bool) {
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
