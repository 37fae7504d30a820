// A text column of few values (a reason, a state): the distinct texts a
// sort reads, found by the address of their bytes, ranked, and the rows
// sorted by rank in one pass, no text compared byte by byte.

package table

import (
	"slices"
	"strings"
	"unsafe"
)

// textSet is the distinct texts of a part of a text sort, up to fewMax
// of them. Texts are told apart by where their bytes are: a source
// shares one string between the rows that show the same text, and each
// of those is read without reading its bytes. The same text in two
// places is two entries, ranked alike (rank).
type textSet struct {
	at   [4 * fewMax]int16 // 1 + the text's index in strs, 0 for none
	strs [fewMax]string
	n    int
}

// id is s's index in the set, added if new; false when the set is full.
func (t *textSet) id(s string) (int, bool) {
	p := textAddr(s)
	h := int(((uint64(p) ^ uint64(len(s))<<48) * 0x9e3779b97f4a7c15) >> 54) // 10 bits: len(t.at)
	for t.at[h] != 0 {
		if o := t.strs[t.at[h]-1]; textAddr(o) == p && len(o) == len(s) {
			return int(t.at[h] - 1), true
		}
		h = (h + 1) & (len(t.at) - 1)
	}
	if t.n == fewMax {
		return 0, false
	}
	t.strs[t.n] = s
	t.n++
	t.at[h] = int16(t.n)
	return t.n - 1, true
}

// textAddr is where s's bytes are; 0 for every empty text.
func textAddr(s string) uintptr {
	if s == "" {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.StringData(s)))
}

// rank sets each key's k from its text's index in the set to its text's
// rank in the sort's order (descending when desc; one rank for each
// distinct text), and returns the texts by rank.
func (t *textSet) rank(ks []numKey, desc bool) []string {
	byText := make([]int, t.n)
	for j := range byText {
		byText[j] = j
	}
	slices.SortFunc(byText, func(a, b int) int { return textCmp(t.strs[a], t.strs[b], desc) })
	var ranks [fewMax]uint64
	texts := make([]string, 0, t.n) // not nil: the part read few (textPart.few)
	for j, id := range byText {
		if j == 0 || t.strs[id] != texts[len(texts)-1] {
			texts = append(texts, t.strs[id])
		}
		ranks[id] = uint64(len(texts) - 1)
	}
	for j := range ks {
		ks[j].k = ranks[ks[j].k]
	}
	return texts
}

// textCmp compares a and b in a sort's order.
func textCmp(a, b string, desc bool) int {
	if desc {
		return strings.Compare(b, a)
	}
	return strings.Compare(a, b)
}

// rankTogether ranks the keys of two parts that each read few texts by
// the texts of both (each part's k is its rank in its own few), so that
// the parts merge by key.
func rankTogether(a, b textPart, desc bool) {
	ra, rb := make([]uint64, len(a.few)), make([]uint64, len(b.few))
	var i, j int
	for rank := uint64(0); i < len(a.few) || j < len(b.few); rank++ {
		switch {
		case j == len(b.few) || (i < len(a.few) && textCmp(a.few[i], b.few[j], desc) < 0):
			ra[i] = rank
			i++
		case i == len(a.few) || textCmp(a.few[i], b.few[j], desc) > 0:
			rb[j] = rank
			j++
		default: // the same text in both
			ra[i], rb[j] = rank, rank
			i, j = i+1, j+1
		}
	}
	for k := range a.keys {
		a.keys[k].k = ra[a.keys[k].k]
	}
	for k := range b.keys {
		b.keys[k].k = rb[b.keys[k].k]
	}
}
