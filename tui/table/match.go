// The filter's pass over the rows: each row matched without allocating,
// a large table's rows split between the machine's cores.

package table

import (
	"runtime"
	"strings"
	"sync"
)

// matcher matches rows against the filter, reusing its buffers for
// every row: a row's match allocates nothing.
type matcher struct {
	match func([]byte) bool
	col   int // the column filtered on, -1 for the whole row
	// byCell matches the first cells (cellsAlone) apart, the rest of
	// the row only when they do not match (byCell).
	byCell      bool
	text, spare []byte
}

// byCell reports whether the plain text low (lower-case; "" for a regular
// expression) matches a row exactly when it matches one of its cells or
// its hidden text alone: when it holds no space, the one byte that
// joins them in the row's search text (appendSearch).
func byCell(low string) bool { return low != "" && !strings.Contains(low, " ") }

// matches reports whether row i matches, before any inversion.
func (m *matcher) matches(rd Reader, i int) bool {
	switch {
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
	m := matcher{match: w.match, col: w.matchCol, byCell: w.matchCol < 0 && byCell(w.matchLow)}
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
