// The sort by a text column of a large table on two cores: each half of
// the slots read by its own goroutine, then the rows split by a pivot of
// their texts' first chunks and each side sorted by its own goroutine,
// so that the halves need no merge by text.

package table

import (
	"runtime"
	"slices"
	"strings"
	"sync"
)

// textOrder sets r.order to the source's rows that are not gone, sorted
// by the text of column c (descending when w.sortDesc), rows of equal
// text in slot order. Each row is read once, for whether it is gone and
// its text: a million rows read twice was a tenth of a sort. A table of
// splitMin rows or more is read in two halves at once and sorted in two
// sides at once (splitByChunk). Where the source numbers the column's
// texts (Numbered), its numbered rows are ordered by their numbers,
// their texts never made. It reports false when it stopped, superseded.
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
	// Part p reads slots [lo, hi) (readTexts), its keys left in r.buf.
	// The texts by slot are made only when a part reads more than a few
	// (textSet).
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
	// The numbered rows in their run, then the others around it: r.tmp
	// is free.
	if parts == 1 {
		for j, x := range got[0].nums {
			r.order[first+j] = x.i
		}
	} else {
		keyMerge(got[0].nums, got[1].nums, r.order[first:first+nums])
	}
	var others []numKey
	switch {
	case parts == 1:
		others = got[0].keys
		if got[0].few == nil { // else sorted by rank already (readTexts)
			sortChunks(tx.all(), others, r.tmp[:len(others)], 0, w.sortDesc)
		}
	case got[0].few != nil && got[1].few != nil:
		// Ranked alike, then one stable pass of both: the first
		// half's go first among equal texts.
		rankTogether(got[0], got[1], w.sortDesc)
		others = append(append(r.tmp[:0], got[0].keys...), got[1].keys...)
		others = radixSort(others, r.buf[:len(others)])
	default:
		for _, g := range got {
			g.spell(tx, w.sortDesc)
		}
		texts := tx.all()
		off := sharedChunks(texts, got[0].keys, got[1].keys, w.sortDesc)
		others = r.tmp[:live-nums]
		m := splitByChunk(got[0].keys, got[1].keys, others)
		if w.stopped() {
			return false, true
		}
		wg.Go(func() { sortChunks(texts, others[:m], r.buf[:m], off, w.sortDesc) })
		sortChunks(texts, others[m:], r.buf[m:len(others)], off, w.sortDesc)
		wg.Wait()
	}
	for j, x := range others {
		if j >= first {
			j += nums
		}
		r.order[j] = x.i
	}
	return !w.stopped(), true
}

// sharedChunks is where the texts of a and b (keyed by their first
// chunks) first differ, when every one of them is alike in its first
// chunk and longer: then it keys them by their chunk from there, as a
// split by the first chunk would put them all on one side (names such as
// etl-pipeline-customer-data-shard-0001234). Else 0.
func sharedChunks(texts []string, a, b []numKey, desc bool) int {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	k := a[0].k
	for _, ks := range [][]numKey{a, b} {
		for _, x := range ks {
			if x.k != k {
				return 0
			}
		}
	}
	first := texts[a[0].i]
	if len(first) <= chunkBytes {
		return 0 // all the same text
	}
	end := commonPrefix(texts, a, first, chunkBytes, len(first))
	end = commonPrefix(texts, b, first, chunkBytes, end)
	for _, ks := range [][]numKey{a, b} {
		for j := range ks {
			ks[j].k = textChunk(texts[ks[j].i], end, desc)
		}
	}
	return end
}

// splitByChunk moves the keys of a and b (each keyed by its text's first
// chunk, textChunk) into out: those of a side of a pivot chunk first,
// each side in a's order and then b's, and returns how many went first.
// Sorted each by its own goroutine (a stable sort), the two sides are
// the rows' order: nothing need be merged by text, which read a
// million texts' bytes far apart in memory (BENCHMARKS.md).
func splitByChunk(a, b, out []numKey) int {
	// The pivot: the middle of a sample, and whether keys equal to it
	// go first or second, whichever leaves the sides nearer even.
	n := len(a) + len(b)
	if n == 0 {
		return 0
	}
	var sample []uint64
	for j := 0; j < n; j += max(1, n/255) {
		if j < len(a) {
			sample = append(sample, a[j].k)
		} else {
			sample = append(sample, b[j-len(a)].k)
		}
	}
	slices.Sort(sample)
	pivot := sample[len(sample)/2]
	lt, _ := slices.BinarySearch(sample, pivot)
	le := lt
	for le < len(sample) && sample[le] == pivot {
		le++
	}
	withPivot := le-len(sample)/2 < len(sample)/2-lt
	below := func(k uint64) bool { return k < pivot || (withPivot && k == pivot) }
	m := 0
	for _, x := range a {
		if below(x.k) {
			m++
		}
	}
	for _, x := range b {
		if below(x.k) {
			m++
		}
	}
	lo, hi := 0, m
	for _, ks := range [][]numKey{a, b} {
		for _, x := range ks {
			if below(x.k) {
				out[lo] = x
				lo++
			} else {
				out[hi] = x
				hi++
			}
		}
	}
	return m
}

// textPart is one part's rows of a text sort: keys those read by text
// (sorted when it read few), nums those numbered (numbering), sorted.
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
// keys them by their first chunks, as a part that read more is.
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

// readTexts reads part [lo, hi) of a text sort of column c into r.buf:
// rows read by text keyed by their first chunk (textChunk) from lo up,
// in slot order, numbered ones from hi down, then sorted. A part that
// read few texts sorts its keys by rank (textSet); the rest are sorted
// by textOrderNumbered.
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
				for j, x := range ks {
					t := set.strs[x.k]
					texts[x.i], ks[j].k = t, textChunk(t, 0, w.sortDesc)
				}
				set = nil
			}
			texts[i] = t
			ks = append(ks, numKey{textChunk(t, 0, w.sortDesc), int32(i)})
		}
	}) || g.clash {
		return g
	}
	slices.Reverse(nums) // read from hi down: now in slot order, for a stable sort
	g.nums = inPlace(radixSort(nums, r.tmp[hi-len(nums):hi]), nums)
	g.keys = ks
	if set != nil {
		g.few = set.rank(ks, w.sortDesc)
		g.keys = inPlace(radixSort(ks, r.tmp[lo:lo+len(ks)]), ks)
	}
	g.done = true
	return g
}

// inPlace is sorted, a radix sort's result, in ks (its input): the
// table's scratch is then free for the next step.
func inPlace(sorted, ks []numKey) []numKey {
	if len(ks) > 0 && &sorted[0] != &ks[0] {
		copy(ks, sorted)
	}
	return ks
}
