// The sort by a text column of a large table on two cores: each half of
// the slots read and radix-sorted by its own goroutine, then the halves
// merged, stably, into the order.

package table

import (
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
)

// textOrder sets r.order to the source's rows that are not gone, sorted
// by the text of column c (descending when w.sortDesc), rows of equal
// text in slot order. Each row is read once, for whether it is gone and
// its text: a million rows read twice was a tenth of a sort. A table of
// splitMin rows or more is sorted in two halves at once, then merged
// (sortMerge). Where the source numbers the column's texts (Numbered),
// its numbered rows are ordered by their numbers, their texts never
// made. It reports false when it stopped, superseded.
func (w *work) textOrder(r *result, c int) bool {
	var n int
	var nb numbering
	w.src.Read(func(rd Reader) { n, nb = rd.Len(), numberingOf(rd, c) })
	if ok, done := w.textOrderNumbered(r, c, n, nb); done {
		return ok
	}
	// A text the numbers cannot be placed around: every row's text.
	ok, _ := w.textOrderNumbered(r, c, n, numbering{})
	return ok
}

// textOrderNumbered is textOrder, the rows nb numbers ordered by their
// numbers. done is false, with nothing set, when a row's own text begins
// with nb's head: the numbered rows are then not one run in the order.
func (w *work) textOrderNumbered(r *result, c, n int, nb numbering) (ok, done bool) {
	if cap(r.buf) < n || cap(r.tmp) < n {
		r.buf, r.tmp = make([]numKey, n), make([]numKey, n)
	}
	parts := 1
	if n >= splitMin && runtime.GOMAXPROCS(0) >= 2 {
		parts = 2
	}
	// Part p reads and sorts slots [lo, hi) (readTexts). The texts by
	// slot are made only when a part reads more than a few (textSet).
	tx := &slotTexts{n: n}
	got := make([]textPart, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*n/parts, (p+1)*n/parts
		wg.Go(func() { got[p] = w.readTexts(r, c, lo, hi, parts > 1, nb, tx) })
	}
	wg.Wait()
	live, nums, first := 0, 0, 0
	for _, g := range got {
		switch {
		case g.clash:
			return false, false
		case !g.done:
			return false, true
		}
		live += len(g.keys) + len(g.nums)
		nums += len(g.nums)
		first += g.before
	}
	if cap(r.order) >= live {
		r.order = r.order[:live]
	} else {
		r.order = make([]int32, live)
	}
	// The rows read by text, then those after the numbered ones moved
	// past where these go.
	texts := r.order[:live-nums]
	switch {
	case parts == 1:
		for j, x := range got[0].keys {
			texts[j] = x.i
		}
	case got[0].few != nil && got[1].few != nil:
		rankTogether(got[0], got[1], w.sortDesc)
		keyMerge(got[0].keys, got[1].keys, texts)
	default:
		for _, g := range got {
			g.spell(tx, w.sortDesc)
		}
		sortMerge(tx.all(), got[0].keys, got[1].keys, texts, w.sortDesc)
	}
	copy(r.order[first+nums:], r.order[first:live-nums])
	if parts == 1 {
		for j, x := range got[0].nums {
			r.order[first+j] = x.i
		}
	} else {
		keyMerge(got[0].nums, got[1].nums, r.order[first:first+nums])
	}
	return !w.stopped(), true
}

// textPart is one part's rows of a text sort, each sorted: keys those
// read by text, nums those numbered (numbering).
type textPart struct {
	keys, nums []numKey
	// few are the part's distinct texts in their order when it read few
	// (textSet): a key's k is then its text's there. nil when it read
	// more: its texts are then in the slotTexts.
	few []string
	// before is how many of keys go before every numbered row; clash
	// that one begins with the numbered rows' head (textOrderNumbered).
	before int
	clash  bool
	done   bool // false: stopped, superseded
}

// spell puts the texts of a part that read few into tx, by slot, and
// keys them as sortTexts does, for sortMerge.
func (g textPart) spell(tx *slotTexts, desc bool) {
	if g.few == nil {
		return
	}
	texts := tx.all()
	for j, x := range g.keys {
		texts[x.i] = g.few[x.k]
		g.keys[j].k = textChunk(g.few[x.k], 0, desc)
	}
}

// slotTexts is a text sort's texts by slot, made when first needed and
// then shared by its parts (each writes its own slots).
type slotTexts struct {
	once  sync.Once
	n     int
	texts []string
}

func (t *slotTexts) all() []string {
	t.once.Do(func() { t.texts = make([]string, t.n) })
	return t.texts
}

// readTexts reads and sorts part [lo, hi) of a text sort of column c:
// rows read by text keyed from lo up, numbered ones from hi down.
func (w *work) readTexts(r *result, c, lo, hi int, yield bool, nb numbering, tx *slotTexts) (g textPart) {
	ks, nums := r.buf[lo:lo], r.buf[hi:hi]
	set := &textSet{}
	var texts []string
	if !w.span(lo, hi, yield, func(rd Reader, from, to int) {
		var nr Numbered
		if nb.on {
			nr = rd.(Numbered)
		}
		for i := from; i < to; i++ {
			if rd.Gone(i) {
				continue
			}
			if nr != nil {
				if v := nr.Number(i, c); v > 0 && v < maxDecimal {
					nums = r.buf[hi-len(nums)-1 : hi]
					nums[0] = numKey{decimalKey(v, nb.end, w.sortDesc), int32(i)}
					continue
				}
			}
			t := rd.Text(i, c)
			if nb.on {
				g.clash = g.clash || strings.HasPrefix(t, nb.head)
				if (w.sortDesc && t > nb.head) || (!w.sortDesc && t < nb.head) {
					g.before++
				}
			}
			if set != nil {
				if id, ok := set.id(t); ok {
					ks = append(ks, numKey{uint64(id), int32(i)})
					continue
				}
				// More than a few texts: those of the rows read so
				// far, by slot, and the rest as they are read.
				texts = tx.all()
				for _, x := range ks {
					texts[x.i] = set.strs[x.k]
				}
				set = nil
			}
			texts[i] = t
			ks = append(ks, numKey{i: int32(i)})
		}
	}) || g.clash {
		return g
	}
	slices.Reverse(nums) // read from hi down: now in slot order, for a stable sort
	g.nums = radixSort(nums, r.tmp[hi-len(nums):hi])
	if set != nil {
		g.few = set.rank(ks, w.sortDesc)
		g.keys = radixSort(ks, r.tmp[lo:lo+len(ks)])
	} else {
		sortTexts(texts, ks, r.tmp[lo:lo+len(ks)], w.sortDesc)
		g.keys = ks
	}
	g.done = true
	return g
}

// sortMerge writes the rows of a and b (each sorted by their texts,
// descending when desc) to out in their merged order (mergeHalves).
func sortMerge(texts []string, a, b []numKey, out []int32, desc bool) {
	mergeHalves(a, b, out, func(y, x numKey) bool { return before(texts, y, x, desc) })
}

// before reports whether row y's text goes strictly before row x's: a b
// row goes before an a row only when its text does (sortMerge). Their
// keys are their first chunks (sortTexts), which tell most texts apart
// without reading them: a million texts compared by their bytes, far
// apart in memory, were a third of a sort by NAME (BENCHMARKS.md).
func before(texts []string, y, x numKey, desc bool) bool {
	if y.k != x.k {
		return y.k < x.k
	}
	if desc {
		return texts[y.i] > texts[x.i]
	}
	return texts[y.i] < texts[x.i]
}

// mergeHalves writes the rows of a and b (each sorted) to out in their
// merged order, a's before b's unless a b row goes strictly before (by
// before(b row, a row)): a holds the lower slots, so that is the order
// one stable sort of both gives. The two halves of out are merged at
// once, each by its own goroutine, from where the merge reaches out's
// middle (mergeSplit).
func mergeHalves(a, b []numKey, out []int32, before func(y, x numKey) bool) {
	m := len(out) / 2
	i := mergeSplit(a, b, m, before)
	var wg sync.WaitGroup
	wg.Go(func() { merge(a[:i], b[:m-i], out[:m], before) })
	merge(a[i:], b[m-i:], out[m:], before)
	wg.Wait()
}

// mergeSplit is how many of a's rows are among the first m of a and b
// merged: the fewest such that the next of a does not go after the
// last of b taken.
func mergeSplit(a, b []numKey, m int, before func(y, x numKey) bool) int {
	lo, hi := max(0, m-len(b)), min(m, len(a))
	// For lo <= i < hi, a[i] and b[m-i-1] exist; too few of a are
	// taken while b's last taken does not go strictly before a's next.
	return lo + sort.Search(hi-lo, func(k int) bool {
		i := lo + k
		return before(b[m-i-1], a[i])
	})
}

// merge writes the rows of a and b merged into out (len(a)+len(b)).
func merge(a, b []numKey, out []int32, before func(y, x numKey) bool) {
	i, j, o := 0, 0, 0
	for i < len(a) && j < len(b) {
		if before(b[j], a[i]) {
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
