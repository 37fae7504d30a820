// The filter's pass over the rows: each row matched without allocating,
// a large table's rows split between the machine's cores.

package table

import (
	"runtime"
	"sync"
)

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
