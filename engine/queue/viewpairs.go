// A view read with its labels and constraints left as text (Pairs), for a
// reader that keeps no maps of them: an attached console, which makes one
// string of them a row (ReadViewPairs).

package queue

import (
	"bytes"
	"slices"

	"dispatch-tui/engine/view"
)

// Pairs are the labels and constraints of one view as ReadViewPairs read
// them, in the order read (a key written twice is there twice: the last
// is the one a map keeps). An attached console made two maps a change
// only to make one string of them, most of what reading a change
// allocated (BENCHMARKS.md, helper apply).
type Pairs struct {
	text  []byte
	pairs []pair
}

// pair is one key and value: their ends in Pairs.text.
type pair struct {
	constraint bool
	k, v, end  int32 // key at text[k:v], value at text[v:end]
}

// Reset empties p, keeping its memory.
func (p *Pairs) Reset() { p.text, p.pairs = p.text[:0], p.pairs[:0] }

// add appends key k and value v.
func (p *Pairs) add(constraint bool, k, v string) {
	at := int32(len(p.text))
	p.text = append(append(p.text, k...), v...)
	p.pairs = append(p.pairs, pair{constraint: constraint, k: at, v: at + int32(len(k)), end: int32(len(p.text))})
}

// addMap appends m's entries.
func (p *Pairs) addMap(constraint bool, m map[string]string) {
	for k, v := range m {
		p.add(constraint, k, v)
	}
}

// AppendTags appends the view's labels and constraints as "k=v", sorted
// as strings, joined by spaces (each map's entries once, as a map holds
// them), to dst. It orders p's pairs in place: call it once.
func (p *Pairs) AppendTags(dst []byte) []byte {
	key := func(e pair) []byte { return p.text[e.k:e.v] }
	// One entry a key of each map: the last, as json.Unmarshal keeps.
	ents := p.pairs
	slices.SortStableFunc(ents, func(a, b pair) int {
		if a.constraint != b.constraint {
			if a.constraint {
				return 1
			}
			return -1
		}
		return bytes.Compare(key(a), key(b))
	})
	kept := ents[:0]
	for i, e := range ents {
		if i+1 < len(ents) && ents[i+1].constraint == e.constraint && bytes.Equal(key(ents[i+1]), key(e)) {
			continue // a later one of the same key
		}
		kept = append(kept, e)
	}
	// "k=v" sorts as its bytes, not by key and then value: a key may
	// hold a byte below '='.
	kv := func(e pair, i int) byte {
		if n := int(e.v - e.k); i < n {
			return p.text[int(e.k)+i]
		} else if i == n {
			return '='
		}
		return p.text[int(e.v)+i-int(e.v-e.k)-1]
	}
	slices.SortStableFunc(kept, func(a, b pair) int {
		la, lb := int(a.end-a.k)+1, int(b.end-b.k)+1
		for i := 0; i < la && i < lb; i++ {
			if x, y := kv(a, i), kv(b, i); x != y {
				return int(x) - int(y)
			}
		}
		return la - lb
	})
	for i, e := range kept {
		if i > 0 {
			dst = append(dst, ' ')
		}
		dst = append(append(append(dst, p.text[e.k:e.v]...), '='), p.text[e.v:e.end]...)
	}
	return dst
}

// ReadViewPairs is ReadView with v's labels and constraints put in p
// (reset first) instead of maps: v.Labels and v.Scheduling.Constraints
// are nil. It reports false, v and p untouched but for p's reset, when j
// is for encoding/json (then TakeMaps).
func ReadViewPairs(j []byte, v *view.Container, p *Pairs) bool {
	p.Reset()
	var c Container
	r := recordReader{b: j, view: true, pairs: p}
	if !r.record(&c) {
		p.Reset()
		return false
	}
	*v = viewOf(&c, &r)
	return true
}

// SetMaps empties p and puts v's labels and constraints in it, leaving v
// as it is.
func (p *Pairs) SetMaps(v *view.Container) {
	p.Reset()
	p.addMap(false, v.Labels)
	p.addMap(true, v.Scheduling.Constraints)
}

// TakeMaps empties p and moves v's labels and constraints into it, as
// ReadViewPairs leaves them (a view read by encoding/json).
func (p *Pairs) TakeMaps(v *view.Container) {
	p.SetMaps(v)
	v.Labels, v.Scheduling.Constraints = nil, nil
}
