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
	// Part p reads slots [p*n/parts, (p+1)*n/parts): their texts into
	// texts, by slot, and a key of each row that is not gone into the
	// scratch from its first slot on, then sorts those keys.
	texts := make([]string, n)
	got := make([][]numKey, parts)
	done := make([]bool, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*n/parts, (p+1)*n/parts
		wg.Go(func() {
			ks := r.buf[lo:lo]
			if !w.span(lo, hi, parts > 1, func(rd Reader, from, to int) {
				for i := from; i < to; i++ {
					if !rd.Gone(i) {
						texts[i] = rd.Text(i, c)
						ks = append(ks, numKey{i: int32(i)})
					}
				}
			}) {
				return
			}
			sortTexts(texts, ks, r.tmp[lo:lo+len(ks)], w.sortDesc)
			got[p], done[p] = ks, true
		})
	}
	wg.Wait()
	live := 0
	for p, ks := range got {
		if !done[p] {
			return false
		}
		live += len(ks)
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
		sortMerge(texts, got[0], got[1], r.order, w.sortDesc)
	}
	return !w.stopped()
}

// sortMerge writes the rows of a and b (each sorted by their texts,
// descending when desc) to out in their merged order, a's before b's
// where texts are equal: a holds the lower slots, so that is the order
// one stable sort of both gives. The two halves of out are merged at
// once, each by its own goroutine, from where the merge reaches out's
// middle (mergeSplit).
func sortMerge(texts []string, a, b []numKey, out []int32, desc bool) {
	m := len(out) / 2
	i := mergeSplit(texts, a, b, m, desc)
	var wg sync.WaitGroup
	wg.Go(func() { merge(texts, a[:i], b[:m-i], out[:m], desc) })
	merge(texts, a[i:], b[m-i:], out[m:], desc)
	wg.Wait()
}

// before reports whether row y's text goes strictly before row x's: a b
// row goes before an a row only when its text does (sortMerge).
func before(texts []string, y, x numKey, desc bool) bool {
	if desc {
		return texts[y.i] > texts[x.i]
	}
	return texts[y.i] < texts[x.i]
}

// mergeSplit is how many of a's rows are among the first m of a and b
// merged: the fewest such that the next of a does not go after the
// last of b taken.
func mergeSplit(texts []string, a, b []numKey, m int, desc bool) int {
	lo, hi := max(0, m-len(b)), min(m, len(a))
	// For lo <= i < hi, a[i] and b[m-i-1] exist; too few of a are
	// taken while b's last taken does not go strictly before a's next.
	return lo + sort.Search(hi-lo, func(k int) bool {
		i := lo + k
		return before(texts, b[m-i-1], a[i], desc)
	})
}

// merge writes the rows of a and b merged into out (len(a)+len(b)).
func merge(texts []string, a, b []numKey, out []int32, desc bool) {
	i, j, o := 0, 0, 0
	for i < len(a) && j < len(b) {
		if before(texts, b[j], a[i], desc) {
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
