// The sort by a text column of a large table on two cores: each half of
// the slots read and radix-sorted by its own goroutine, then the halves
// merged, stably, into the order.

package table

import (
	"runtime"
	"sort"
	"sync"
)

// textOrder sets r.order to the source's rows that are not gone, sorted
// by the text of column c (descending when w.sortDesc), rows of equal
// text in slot order. Each row is read once, for whether it is gone and
// its text: a million rows read twice was a tenth of a sort. A table of
// splitMin rows or more is sorted in two halves at once, then merged
// (sortMerge). It reports false when it stopped, superseded.
func (w *work) textOrder(r *result, c int) bool {
	var n int
	w.src.Read(func(rd Reader) { n = rd.Len() })
	if cap(r.buf) < n || cap(r.tmp) < n {
		r.buf, r.tmp = make([]numKey, n), make([]numKey, n)
	}
	parts := 1
	if n >= splitMin && runtime.GOMAXPROCS(0) >= 2 {
		parts = 2
	}
	// Part p reads slots [p*n/parts, (p+1)*n/parts) into ks from its
	// first slot on, and sorts them with the scratch of that place.
	ks := make([]strKey, n)
	got := make([][]strKey, parts)
	done := make([]bool, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*n/parts, (p+1)*n/parts
		wg.Go(func() {
			k := ks[lo:lo]
			if !w.span(lo, hi, parts > 1, func(rd Reader, from, to int) {
				for i := from; i < to; i++ {
					if !rd.Gone(i) {
						k = append(k, strKey{rd.Text(i, c), int32(i)})
					}
				}
			}) {
				return
			}
			sortTexts(k, w.sortDesc, r.buf[lo:lo+len(k)], r.tmp[lo:lo+len(k)])
			got[p], done[p] = k, true
		})
	}
	wg.Wait()
	live := 0
	for p, k := range got {
		if !done[p] {
			return false
		}
		live += len(k)
	}
	if cap(r.order) >= live {
		r.order = r.order[:live]
	} else {
		r.order = make([]int32, live)
	}
	if parts == 1 {
		for j, x := range got[0] {
			r.order[j] = x.i
		}
	} else {
		sortMerge(got[0], got[1], r.order, w.sortDesc)
	}
	return !w.stopped()
}

// sortMerge writes the rows of a and b (each sorted by text, descending
// when desc) to out in their merged order, a's before b's where texts are
// equal: a holds the lower slots, so that is the order one stable sort of
// both gives. The two halves of out are merged at once, each by its own
// goroutine, from where the merge reaches out's middle (mergeSplit).
func sortMerge(a, b []strKey, out []int32, desc bool) {
	m := len(out) / 2
	i := mergeSplit(a, b, m, desc)
	var wg sync.WaitGroup
	wg.Go(func() { merge(a[:i], b[:m-i], out[:m], desc) })
	merge(a[i:], b[m-i:], out[m:], desc)
	wg.Wait()
}

// before reports whether y goes strictly before x in the order: a b
// row goes before an a row only when its text does (sortMerge).
func before(y, x strKey, desc bool) bool {
	if desc {
		return y.k > x.k
	}
	return y.k < x.k
}

// mergeSplit is how many of a's rows are among the first m of a and b
// merged: the fewest such that the next of a does not go after the
// last of b taken.
func mergeSplit(a, b []strKey, m int, desc bool) int {
	lo, hi := max(0, m-len(b)), min(m, len(a))
	// For lo <= i < hi, a[i] and b[m-i-1] exist; too few of a are
	// taken while b's last taken does not go strictly before a's next.
	return lo + sort.Search(hi-lo, func(k int) bool {
		i := lo + k
		return before(b[m-i-1], a[i], desc)
	})
}

// merge writes the rows of a and b merged into out (len(a)+len(b)).
func merge(a, b []strKey, out []int32, desc bool) {
	i, j, o := 0, 0, 0
	for i < len(a) && j < len(b) {
		if before(b[j], a[i], desc) {
			out[o] = b[j].i
			j++
		} else {
			out[o] = a[i].i
			i++
		}
		o++
	}
	for ; i < len(a); i, o = i+1, o+1 {
		out[o] = a[i].i
	}
	for ; j < len(b); j, o = j+1, o+1 {
		out[o] = b[j].i
	}
}
