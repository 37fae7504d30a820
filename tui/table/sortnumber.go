// Texts that are the same words around a number ("position 41 in
// queue"): a text sort orders such rows by a key made of the number,
// their texts never made, and merges two parts' keys (keyMerge).

package table

import (
	"sort"
	"sync"
)

// Numbered is a Reader whose text column may hold, in many rows, the
// same words around a number: a sort by the column reads those rows'
// numbers instead of their texts (making and sorting a million texts
// by their bytes was most of a sort by REASON: BENCHMARKS.md).
type Numbered interface {
	// NumberWords are the words before and after the number in column
	// c's numbered texts; ok is false when c numbers none.
	NumberWords(c int) (head, tail string, ok bool)
	// Number is n > 0 when row i's text in column c is head, n in
	// decimal, then tail; 0 when it is another text (Text).
	Number(i, c int) uint64
}

// numbering is how a text sort orders a column's numbered rows: on when
// the source numbers it, its texts all begin with head, and end says
// where a number's end goes among digits (decimalKey).
type numbering struct {
	on   bool
	head string
	end  uint64
}

// numberingOf is the numbering of rd's column c: none when rd numbers
// none, or when its tail begins with a digit (a number could not then
// be told from the tail's digits by the text).
func numberingOf(rd Reader, c int) numbering {
	nr, ok := rd.(Numbered)
	if !ok {
		return numbering{}
	}
	head, tail, ok := nr.NumberWords(c)
	if !ok || (tail != "" && '0' <= tail[0] && tail[0] <= '9') {
		return numbering{}
	}
	nb := numbering{on: true, head: head, end: endBefore}
	if tail != "" && tail[0] > '9' {
		nb.end = endAfter
	}
	return nb
}

// A decimal key's nibble for the end of its number: before any digit
// when the tail's first byte sorts before digits (a space) or there is
// no tail, after them when it sorts after.
const (
	endBefore = 0
	endAfter  = 15
)

// maxDecimal bounds the numbers decimalKey orders: fifteen digits and
// the end fill its sixteen nibbles. A greater number is read as text.
const maxDecimal = 1e15

// decimalKey is a key that orders the texts head+v+tail (v < maxDecimal)
// as their bytes do: v's decimal digits from the top, each a nibble of
// 1 to 10, then end, then zeros. Texts differ first where the digits or
// one number's end do, so the keys compare there alike. Inverted when
// desc.
func decimalKey(v, end uint64, desc bool) uint64 {
	var digits [16]byte
	n := 0
	for ; v > 0; v /= 10 {
		digits[n] = byte(v % 10)
		n++
	}
	var k uint64
	for j := n - 1; j >= 0; j-- {
		k = k<<4 | uint64(digits[j]+1)
	}
	k = (k<<4 | end) << (4 * (15 - n))
	if desc {
		k = ^k
	}
	return k
}

// keyMerge writes the rows of a and b (each sorted by key) to out in
// their merged order, a's first where keys are equal: a holds the lower
// slots, so that is the order one stable sort of both gives. The two
// halves of out are merged at once, each by its own goroutine, from
// where the merge reaches out's middle (mergeSplit).
func keyMerge(a, b []numKey, out []int32) {
	m := len(out) / 2
	i := mergeSplit(a, b, m)
	var wg sync.WaitGroup
	wg.Go(func() { merge(a[:i], b[:m-i], out[:m]) })
	merge(a[i:], b[m-i:], out[m:])
	wg.Wait()
}

// mergeSplit is how many of a's rows are among the first m of a and b
// merged: the fewest such that the next of a does not go after the
// last of b taken.
func mergeSplit(a, b []numKey, m int) int {
	lo, hi := max(0, m-len(b)), min(m, len(a))
	// For lo <= i < hi, a[i] and b[m-i-1] exist; too few of a are
	// taken while b's last taken is not below a's next.
	return lo + sort.Search(hi-lo, func(k int) bool {
		i := lo + k
		return b[m-i-1].k < a[i].k
	})
}

// merge writes the rows of a and b merged by key into out
// (len(a)+len(b)), a's first where keys are equal.
func merge(a, b []numKey, out []int32) {
	i, j, o := 0, 0, 0
	for i < len(a) && j < len(b) {
		if b[j].k < a[i].k {
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
