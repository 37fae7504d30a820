// A filter's memory of its answers for text that many rows share: cells
// that are a function of a small key (a number, a size, an age), and
// strings that rows hold one copy of. A million rows take few such
// values, and each is made and searched once per filter, not per row.

package table

import "unsafe"

// sharedBits sizes a Fold's memory of shared strings (entries, as a
// power of two): the states, reasons, label sets and instance ids rows
// share.
const sharedBits = 11

// MemoSlots is how many slots Known and Remember keep answers in, and
// memoKeys how many keys each: a slot's keys below it each have their
// own place (a few small numbers are most rows'), larger ones a place
// by their bytes.
const (
	MemoSlots = 16
	memoKeys  = 256
)

// memo is a Fold's answers kept by Remember, by slot and place: the key,
// and whether it holds the filter (ansNo, ansYes; 0 for none kept).
type memo struct {
	keys [MemoSlots][memoKeys]uint64
	ans  [MemoSlots][memoKeys]uint8
}

// A key's answer in memo.ans.
const (
	ansNo = 1 + iota
	ansYes
)

// sharedEntry is one answer kept by InShared, with its string: kept, the
// string's bytes cannot be freed and reused by another while the entry
// says what they hold.
type sharedEntry struct {
	s    string
	held bool
}

// hashWord spreads x over a word's high bits (Fibonacci hashing).
func hashWord(x uint64) uint64 { return x * 0x9e3779b97f4a7c15 }

// memoPlace is key's place in its slot: the XOR of its bytes, which is
// the key itself below memoKeys.
func memoPlace(key uint64) uint8 {
	key ^= key >> 32
	key ^= key >> 16
	return uint8(key ^ key>>8)
}

// Known reports what Remember kept for key of slot (false for none),
// and whether it kept it (it keeps the last key of each place). Small
// enough to be inlined: a filter asks a few times a row.
func (f *Fold) Known(slot int, key uint64) (held, ok bool) {
	if f.memo == nil || uint(slot) >= MemoSlots {
		return false, false
	}
	p := memoPlace(key)
	if f.memo.keys[slot][p] != key {
		return false, false
	}
	a := f.memo.ans[slot][p]
	return a == ansYes, a != 0
}

// Remember keeps held, whether the filter is in the text of key in slot
// (below MemoSlots): a small number (a column) the caller names a kind
// of text by, whose text is a function of key alone.
func (f *Fold) Remember(slot int, key uint64, holds bool) {
	if uint(slot) >= MemoSlots {
		return
	}
	if f.memo == nil {
		f.memo = new(memo)
	}
	p := memoPlace(key)
	f.memo.keys[slot][p], f.memo.ans[slot][p] = key, ansNo
	if holds {
		f.memo.ans[slot][p] = ansYes
	}
}

// InSmall is InBytes for a short text, kept by its bytes in slot (as
// Remember): a text of at most seven bytes is its own key.
func (f *Fold) InSmall(slot int, b []byte) bool {
	switch {
	case len(b) == 0:
		return false // a Fold's text is never empty
	case len(b) > 7:
		return f.InBytes(b)
	}
	key := uint64(len(b)) << 56
	for k, x := range b {
		key |= uint64(x) << (8 * k)
	}
	if held, ok := f.Known(slot, key); ok {
		return held
	}
	held := f.InBytes(b)
	f.Remember(slot, key, held)
	return held
}

// InShared is In for a string that many rows hold the same copy of (an
// interner's): the answer is kept by the string's address and length,
// so each copy is searched once. s must be a string's own bytes, never a
// view of a buffer that changes (InBytes).
func (f *Fold) InShared(s string) bool {
	if s == "" { // most rows' labels, instance and reason
		return false // a Fold's text is never empty
	}
	return f.inShared(s)
}

// inShared is InShared of a string that is not empty.
func (f *Fold) inShared(s string) bool {
	if f.shared == nil {
		f.shared = new([1 << sharedBits]sharedEntry)
	}
	p := unsafe.StringData(s)
	e := &f.shared[hashWord(uint64(uintptr(unsafe.Pointer(p))))>>(64-sharedBits)]
	if unsafe.StringData(e.s) == p && len(e.s) == len(s) {
		return e.held
	}
	held := f.In(s)
	*e = sharedEntry{s: s, held: held}
	return held
}
