// A filter's memory of its answers for text that many rows share: cells
// that are a function of a small key (a number, a size, an age), and
// strings that rows hold one copy of. A million rows take few such
// values, and each is made and searched once per filter, not per row.

package table

import "unsafe"

// memoBits and sharedBits size a Fold's two memories (entries, as
// powers of two): a few columns of a few hundred values each, and the
// states, reasons, label sets and instance ids rows share.
const (
	memoBits   = 10
	sharedBits = 11
)

// The keys below smallKeys of the slots below smallSlots have their
// answers in a byte each (Fold.small): most rows' are a few small
// numbers, then read from a few cache lines, not from one each.
const (
	smallSlots = 16
	smallKeys  = 256
)

// memoEntry is one answer kept by Remember: the key, and in tag the slot
// plus one (0: none kept) above the answer's bit.
type memoEntry struct {
	key uint64
	tag uint32
}

// sharedEntry is one answer kept by InShared, with its string: kept, the
// string's bytes cannot be freed and reused by another while the entry
// says what they hold.
type sharedEntry struct {
	s    string
	held bool
}

// A small key's answer (Fold.small); 0 is none kept.
const (
	notHeldSmall = 1 + iota
	heldSmall
)

// hashWord spreads x over a word's high bits (Fibonacci hashing).
func hashWord(x uint64) uint64 { return x * 0x9e3779b97f4a7c15 }

// memoAt is the entry of (slot, key).
func (f *Fold) memoAt(slot int, key uint64) *memoEntry {
	h := hashWord(key+uint64(slot)*0x632be59bd9b4e019) >> (64 - memoBits)
	return &f.memo[h]
}

// Known reports what Remember kept for key of slot, and whether it kept
// it (it keeps the last key of each place of a small table).
func (f *Fold) Known(slot int, key uint64) (held, ok bool) {
	// Small enough to be inlined: a filter asks a few times a row.
	if key < smallKeys && uint(slot) < smallSlots && f.small != nil {
		a := f.small[slot][key]
		return a == heldSmall, a != 0
	}
	return f.knownWide(slot, key)
}

// knownWide is Known of a key Fold.small does not hold.
func (f *Fold) knownWide(slot int, key uint64) (held, ok bool) {
	if key < smallKeys && uint(slot) < smallSlots || f.memo == nil {
		return false, false
	}
	e := f.memoAt(slot, key)
	if e.key != key || e.tag>>1 != uint32(slot)+1 {
		return false, false
	}
	return e.tag&1 != 0, true
}

// Remember keeps held, whether the filter is in the text of key in slot:
// a small number (a column) the caller names a kind of text by, whose
// text is a function of key alone.
func (f *Fold) Remember(slot int, key uint64, held bool) {
	if key < smallKeys && uint(slot) < smallSlots {
		if f.small == nil {
			f.small = new([smallSlots][smallKeys]uint8)
		}
		f.small[slot][key] = notHeldSmall
		if held {
			f.small[slot][key] = heldSmall
		}
		return
	}
	if f.memo == nil {
		f.memo = new([1 << memoBits]memoEntry)
	}
	tag := uint32(slot+1) << 1
	if held {
		tag |= 1
	}
	*f.memoAt(slot, key) = memoEntry{key: key, tag: tag}
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
